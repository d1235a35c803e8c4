"""One GPU shared by several grading jobs, fairly: a timed measurement holds the GPU alone.

Off unless TC_GPU_LOCK names a lock file (the cohort command sets it per GPU when it runs more
than one job on a GPU, course/README.md "Grading a whole cohort"); plain `nbgrader autograde`
never sets it and nothing here changes its behaviour.

The lock is a reader-writer lock on that file (flock(2): it follows the file across the
sandboxes' bind mounts, and the kernel drops it when its holder dies, however it dies):
- `held(exclusive=False)` (shared): GPU work that is not timed -- a kernel's correctness runs
  (grader.checking.isolate), a notebook's execution (grader.classroom.autograde.CourseExecute);
  any number of jobs at once;
- `held(exclusive=True)`: a timed measurement (grader.runtime.timing.paired); it waits until
  no other job holds the lock in either mode, and no job starts GPU work while it runs.
One open file per process: flock locks belong to an open file, so a second open in the same
process would wait for itself. A process that holds the shared lock and asks for the exclusive
one converts its lock (flock converts by release-then-lock: another job's timed run may go first,
which is fair). Nested calls are counted.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time

ENV = "TC_GPU_LOCK"

_mutex = threading.Lock()
_fd: int | None = None
_path: str | None = None
_levels: list[bool] = []  # the modes held, outermost first (True: exclusive)
waited_s = 0.0  # seconds this process spent waiting for the lock (reported with phase times)


def path() -> str | None:
    """The lock file this process uses, or None: not set, or not visible here (a sandbox that
    was not given it), in which case nothing is locked."""
    p = os.environ.get(ENV, "")
    return p if p and os.path.exists(p) else None


def _mode() -> int | None:
    if not _levels:
        return None
    return fcntl.LOCK_EX if any(_levels) else fcntl.LOCK_SH


@contextlib.contextmanager
def held(exclusive: bool = True):
    """Hold this GPU's lock (exclusive for timed work, shared for other GPU work); yields the
    seconds spent waiting. A no-op where TC_GPU_LOCK is unset or its file is not visible."""
    global _fd, _path, waited_s
    p = path()
    if p is None:
        yield 0.0
        return
    with _mutex:
        if _fd is None or _path != p:
            _fd, _path = os.open(p, os.O_RDONLY | os.O_CLOEXEC), p  # flock needs no write access
        before = _mode()
        _levels.append(exclusive)
        want = _mode()
        t0 = time.monotonic()
        if want != before:
            fcntl.flock(_fd, want)
        waited = time.monotonic() - t0
        waited_s += waited
    try:
        yield waited
    finally:
        with _mutex:
            _levels.pop()
            after = _mode()
            if after is None:
                fcntl.flock(_fd, fcntl.LOCK_UN)
            elif after != want:
                fcntl.flock(_fd, after)  # back to shared: other jobs' untimed GPU work goes on


def lock_file(folder: str | os.PathLike, gpu: str) -> str:
    """The lock file of GPU `gpu` (a CUDA_VISIBLE_DEVICES entry) under `folder`, created readable
    by everyone (a sandbox's unprivileged uid opens it read-only to lock it)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in gpu) or "none"
    f = os.path.join(folder, f"gpu-{safe}.lock")
    fd = os.open(f, os.O_CREAT | os.O_RDONLY, 0o644)
    os.close(fd)
    os.chmod(f, 0o644)
    return f
