"""One autograde at a time in a course folder: plain `nbgrader autograde` and the cohort command.

A regrade keeps each student's earlier result aside and every autograde first puts back whatever
it finds kept aside (grader.classroom.regrade: a run killed outright left it). A second autograde
started while one runs (a colleague's, a TA's `--student` run, a cohort) would take the first one's
copy for such a leftover and put it back over the folder the first one is writing; two regrades
of one student keep their copies in the same place; and the cohort merges into autograded/ and the
gradebook as their only writer. So an autograde holds this lock from its first write to its last
and a second one stops at once, naming the one that runs, having written nothing. It is a `flock`:
the kernel releases it when its holder ends in any way (SIGKILL, a crash), so it never goes stale.
"""
from __future__ import annotations

import fcntl
import getpass
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

LOCK = ".lock"  # in autograded/: nbgrader's globs skip dot-names, and every sandbox is kept out of it


class Busy(RuntimeError):
    """Another autograde holds the course; str(): what to tell the instructor."""


def _who() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no name for this uid (a container)
        user = str(os.getuid())
    prog = sys.argv[0] if sys.argv else "?"
    name = os.path.basename(os.path.dirname(prog) if prog.endswith("__main__.py") else prog).removesuffix(".py")
    command = " ".join([name, *sys.argv[1:]])[:200]  # `nbgrader autograde 02 --student ada`, `cohort autograde 02 ...`
    since = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"`{command}`, pid {os.getpid()} on {os.uname().nodename}, {user}, since {since}"


@contextmanager
def held(coursedir):
    """Hold the course's autograde lock while the block runs; Busy at once if another holds it.
    `coursedir`: nbgrader's CourseDirectory of the course."""
    path = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")) / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited across exec (Python's default)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 1000, 0).decode(errors="replace").strip() or "its process"
            raise Busy(f"another autograde is running in this course ({holder}); nothing was graded: run this "
                       "one again when it has ended") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, _who().encode() + b"\n", 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
