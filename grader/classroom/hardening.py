"""What nbgrader does with a submission's files, made safe, and autograde that fails closed.

nbgrader copies, reads, writes and chmods files in submitted/ and autograded/ following
symbolic links, so a link a student leaves there (or hands in) would make the instructor's
nbgrader read or overwrite any file it can: a classmate's notebook, the gradebook, the course
config. `install()` (called from course/nbgrader_config.py, and from the guard the course's
environment loads before any course config) changes nbgrader's converters so that:
- before a submission is read (autograde) or an autograded folder is read (feedback), every
  link, FIFO, socket, device and hard-linked file in it is removed and setuid/setgid/world-write
  bits are cleared (`sanitize`), each named in nbgrader's log;
- a hand-in's notebooks are checked, and repaired or refused for that student alone, before
  nbgrader reads them (grader/classroom/handin_check.py);
- feedback copies nothing but the pages it renders (a page for each refused hand-in says why) and
  the two small text files nbgrader's exchange needs beside them (`EXCHANGE_FILES`: without them
  `release_feedback` crashes and a resubmission's page is never made again);
- its walk over a hand-in's files is linear in their number (nbgrader's own is quadratic);
- autograde refuses to start unless the course's sandboxed execution and trusted grader are in
  its pipeline (or TC_NO_SANDBOX=1 says the instructor opted out), and says when the course
  config or the instructor's sources changed since the last autograde (`INTEGRITY`);
- autograde (as its last step) and generate_feedback refuse to run without SafeOutputs, which
  reduces a hand-in's outputs to data; the formgrader's pages always run it and allow no
  script but their own (grader/classroom/safe_outputs.py, formgrader.py).
- one autograde at a time in a course: a second one stops at once, naming the first
  (grader.classroom.course_lock);
- an instructor's command (autograde, export, generate_feedback, db, ...) and the formgrader's
  pages stop outside a course folder, saying where to cd, before they write anything;
- a timestamp.txt is read by the course's one parser (grader.classroom.handin_time).
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import stat
import sys
import time
from pathlib import Path

INTEGRITY = ".tc-integrity.json"  # in the course root, hidden from graded code like the gradebook
NBGRADER: dict = {}  # nbgrader's own functions that install() replaced (tests compare with them)
# What nbgrader reads beside a feedback page: the hand-in's time (generate_feedback makes a page
# again when the hand-in is newer; release_feedback logs it) and the secret `nbgrader submit`
# wrote (release_feedback names the released page by it, fetch_feedback finds it by it). Both are
# a line of text; anything longer is not what nbgrader wrote and is not copied.
EXCHANGE_FILES, EXCHANGE_FILE_MAX = ("timestamp.txt", "submission_secret.txt"), 1024


def not_plain(st: os.stat_result) -> str | None:
    """Why an entry (as lstat sees it) is not a plain file or folder, or None: a link, a FIFO, socket
    or device, or a hard link to a file elsewhere. What sanitize() removes and collect leaves out."""
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (FIFO, socket or device)"
    return "a hard link to a file elsewhere" if st.st_nlink > 1 else None


def sanitize(folder: str | os.PathLike, log=None) -> list[str]:
    """Remove what is not a plain file or folder under `folder` (itself included when it is a
    link); returns what was removed. Never follows a link."""
    removed: list[str] = []
    top = os.fspath(folder)

    def drop(p: str, why: str):
        try:
            os.unlink(p)
        except OSError:
            return
        removed.append(f"{p} ({why})")
        if log is not None:
            log.warning("removed %s from a student's folder: %s", p, why)

    try:
        st = os.lstat(top)
    except FileNotFoundError:
        return removed
    if not stat.S_ISDIR(st.st_mode):
        drop(top, "not a folder")
        return removed
    for dirpath, dirnames, filenames in os.walk(top):
        keep = []
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            why = not_plain(st)
            if why:
                drop(p, why)
                continue
            if stat.S_ISDIR(st.st_mode):
                keep.append(name)
            _plain_mode(p, st.st_mode)
        dirnames[:] = [d for d in dirnames if d in keep]
    return removed


def sanitize_students(top: Path, assignment_id: str, log=None) -> None:
    """sanitize() every student's folder of `assignment_id` (a glob) under `top`; a student's
    folder that is itself a link is removed, never followed."""
    import fnmatch

    if not top.is_dir() or top.is_symlink():
        return
    for entry in os.scandir(top):
        if entry.is_symlink():
            sanitize(entry.path, log)
        elif entry.is_dir(follow_symlinks=False):
            for sub in os.scandir(entry.path):
                if fnmatch.fnmatch(sub.name, assignment_id or "*"):
                    sanitize(sub.path, log)


def _plain_mode(p: str, mode: int) -> None:
    bad = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWOTH
    if mode & bad:  # `p` was lstat'ed as a plain file or folder: chmod cannot follow a link
        os.chmod(p, stat.S_IMODE(mode) & ~bad)


# ----------------------------------------------------------- nbgrader's file walk, linear
def is_ignored(filename: str, ignore_globs=None) -> bool:
    """nbgrader.utils.is_ignored without its cost: nbgrader globs the whole folder once per file
    (glob.glob(dirname/expr), then `filename in` that list), so a hand-in of N files cost N^2
    (8,000 files: 98 s; issue #32). The same answer from the name alone: a glob's wildcard does
    not match a leading dot unless the pattern starts with one."""
    if ignore_globs is None:
        return False
    name = os.path.basename(filename)
    for expr in ignore_globs:
        if "/" in expr:  # a pattern into subfolders: never a plain name's (nbgrader's glob agrees)
            continue
        if name.startswith(".") and not expr.startswith(".") and any(c in expr for c in "*?["):
            continue
        if fnmatch.fnmatchcase(name, expr):
            return True
    return False


def find_all_files(path: str, exclude=None) -> list[str]:
    """nbgrader.utils.find_all_files, linear: the same files in the same order, each name judged
    once (is_ignored above) and the skipped folders kept in a set, not a list."""
    files: list[str] = []
    to_skip: set[str] = set()
    for dirname, dirnames, filenames in os.walk(path):
        if dirname in to_skip or is_ignored(dirname, exclude):
            to_skip.update(os.path.join(dirname, x) for x in dirnames)
            continue
        for filename in filenames:
            fullpath = os.path.join(dirname, filename)
            if not is_ignored(fullpath, exclude):
                files.append(fullpath)
    return files


# ------------------------------------------------------------------------------ nbgrader
def _pipeline_problem(converter) -> str | None:
    """Why this autograde is not the course's safe pipeline, or None."""
    from nbgrader.preprocessors import SaveAutoGrades

    from grader.classroom.autograde import CourseExecute, TrustedGrade, sandbox_opted_out

    pre = list(converter.autograde_preprocessors)
    names = [getattr(p, "__name__", type(p).__name__) for p in pre]
    if TrustedGrade not in pre:
        return f"the course's trusted grader (TrustedGrade) is not in the autograde pipeline ({', '.join(names)})"
    if SaveAutoGrades not in pre or pre.index(TrustedGrade) > pre.index(SaveAutoGrades):
        return "the course's trusted grader must come before SaveAutoGrades in the autograde pipeline"
    if CourseExecute not in pre and not sandbox_opted_out():
        return f"the course's sandboxed execution (CourseExecute) is not in the autograde pipeline ({', '.join(names)})"
    if any(p.__name__ == "Execute" and p is not CourseExecute for p in pre if isinstance(p, type)):
        return "nbgrader's plain Execute (student code with the grader's rights) is in the autograde pipeline"
    return _safe_outputs_problem(pre, "autograde", last=True)


def _safe_outputs_problem(pre: list, where: str, last: bool = False) -> str | None:
    """Why a pipeline could write or show a hand-in's outputs unsanitized, or None."""
    from grader.classroom.safe_outputs import SafeOutputs

    if SafeOutputs not in pre:
        return (f"the course's output sanitizer (SafeOutputs) is not in the {where} pipeline: a student's "
                "outputs could run as script in your browser")
    if last and pre[-1] is not SafeOutputs:
        return f"the course's output sanitizer (SafeOutputs) must come last in the {where} pipeline"
    return None


DIGEST_FORMAT = 2  # names within each watched folder, so a course folder moved or copied elsewhere is unchanged


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for top in paths:
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
        for p in files:
            h.update(str(p.relative_to(top) if p != top else p.name).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _watched(coursedir) -> dict[str, list[Path]]:
    root = Path(coursedir.root)
    source = Path(coursedir.source_directory)
    return {"course config": [root / "nbgrader_config.py"],
            "instructor's sources": [source if source.is_absolute() else root / source]}


def check_integrity(coursedir, log) -> None:
    """Say which watched files changed since the last autograde (nobody but the instructor may
    change them: graded code cannot reach them), then record them as they are now."""
    path = Path(coursedir.root) / INTEGRITY
    try:
        before = json.loads(path.read_text())
    except (OSError, ValueError):
        before = {}
    now = {name: _digest(paths) for name, paths in _watched(coursedir).items()}
    for name, digest in now.items():
        old = before.get(name) if before.get("format") == DIGEST_FORMAT else None  # an older record: kept anew
        if old and old["digest"] != digest:
            log.warning("the %s changed since the last autograde (%s): if you did not change it, stop and check it",
                        name, old["at"])
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    path.write_text(json.dumps({"format": DIGEST_FORMAT, **{k: {"digest": v, "at": stamp} for k, v in now.items()}}))


def _refuse(converter, command: str, why: str, what: str, outcome: str) -> None:
    """Stop an nbgrader command whose pipeline lacks a safeguard, saying how to put it back without
    losing the term's settings (never `git checkout` of the config)."""
    from nbgrader.converters.base import NbGraderException

    msg = (f"{command} refused: {why}. The course's nbgrader_config.py puts {what} there: compare yours with "
           f"the repository's (git diff course/nbgrader_config.py) and put back its {command} lines; keep the "
           f"term's settings at its top, they are yours. {outcome}")
    converter.log.error(msg)
    raise NbGraderException(msg)


def install() -> None:
    """Patch nbgrader's converters (idempotent)."""
    from nbgrader.converters.autograde import Autograde
    from nbgrader.converters.base import NbGraderException
    from nbgrader.converters.generate_feedback import GenerateFeedback

    from nbgrader import utils
    from nbgrader.converters import base

    from grader.classroom import course_lock, handin_check, handin_time, phases

    handin_time.install()  # one parser for timestamp.txt; an unreadable one never stops the command
    phases.install()  # step times, only written where TC_PHASES asks (issue #28)
    if "jupyter_server" in sys.modules:  # the formgrader's server loads this config: its pages too
        from grader.classroom import formgrader

        formgrader.install()
    if getattr(Autograde, "_tc_hardened", False):
        return
    auto_init, auto_start = Autograde.init_assignment, Autograde.start
    feedback_start_nbgrader = GenerateFeedback.start

    def init_assignment(self, assignment_id, student_id):
        for d in (self._format_source(assignment_id, student_id), self._format_dest(assignment_id, student_id)):
            sanitize(d, self.log)
        # a folder past the limits on files or bytes: refused before nbgrader copies it anywhere
        handin_check.check_before_copy(self, assignment_id, student_id)
        done = auto_init(self, assignment_id, student_id)
        # the hand-in's notebooks, checked and repaired or refused for this student alone
        handin_check.check_submission(self, assignment_id, student_id)
        return done

    def start(self):
        why = _pipeline_problem(self)
        if why:
            _refuse(self, "autograde", why, "them", "Nothing was graded.")
        unknown = unknown_assignment(self.coursedir, self.coursedir.assignment_id)
        if unknown:
            self.log.error("%s", unknown)
            raise NbGraderException(unknown)
        missing = missing_sources(self.coursedir, self.coursedir.assignment_id)
        if missing:
            self.log.error("autograde refused: %s", missing)
            raise NbGraderException(missing)
        try:  # one autograde at a time in a course, from its first write to its last
            with course_lock.held(self.coursedir):
                check_integrity(self.coursedir, self.log)
                for d in (self.coursedir.submitted_directory, self.coursedir.autograded_directory):
                    sanitize_students(Path(self.coursedir.root) / d, self.coursedir.assignment_id, self.log)
                handin_check.refuse_empty_handins(self)
                return auto_start(self)
        except course_lock.Busy as e:
            self.log.error("autograde refused: %s", e)
            raise NbGraderException(str(e)) from None

    def feedback_start(self):
        try:
            return feedback_start_nbgrader(self)
        finally:
            handin_check.write_feedback_pages(self)

    def feedback_refuses(self):
        why = _safe_outputs_problem(list(self.preprocessors), "generate_feedback")
        if why:
            _refuse(self, "generate_feedback", why, "it", "No page was written.")
        return feedback_start(self)

    def feedback_init_assignment(self, assignment_id, student_id):
        # the pages nbgrader renders are all a student gets: no file of the autograded folder is
        # copied along (whatever it is, and wherever a link in it would lead) but the exchange's
        # two lines of text, read from plain files only (sanitize removed every link)
        source = Path(self._format_source(assignment_id, student_id))
        sanitize(source, self.log)
        dest = Path(self._format_dest(assignment_id, student_id))
        for name in EXCHANGE_FILES:
            src = source / name
            if not src.is_file() or src.is_symlink():
                continue
            if src.stat().st_size > EXCHANGE_FILE_MAX:
                self.log.warning("not copied to the feedback: %s is not what nbgrader writes (over %d bytes)",
                                 src, EXCHANGE_FILE_MAX)
                continue
            dest.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(src.read_bytes())

    Autograde.init_assignment, Autograde.start = init_assignment, start
    NBGRADER.update(is_ignored=utils.is_ignored, find_all_files=utils.find_all_files)
    utils.is_ignored, utils.find_all_files, base.find_all_files = is_ignored, find_all_files, find_all_files
    GenerateFeedback.init_assignment = feedback_init_assignment
    GenerateFeedback.start = feedback_refuses
    _course_commands_need_a_course()
    Autograde._tc_hardened = True


def unknown_assignment(coursedir, pattern: str) -> str | None:
    """Why no assignment of the gradebook matches `pattern` (a name or a glob; None when one does:
    a typo is said, before anything is written)."""
    import fnmatch

    url = coursedir.db_url
    if not pattern or not url.startswith("sqlite:///") or not Path(url[len("sqlite:///"):]).is_file():
        return None
    from nbgrader.api import Gradebook

    with Gradebook(url, coursedir.course_id) as gb:
        names = sorted(a.name for a in gb.assignments)
    if any(fnmatch.fnmatch(n, pattern) for n in names):
        return None
    return (f"no assignment '{pattern}' in the gradebook (the assignments: {', '.join(names) or 'none yet'}; "
            "a new one needs `nbgrader generate_assignment` first). Nothing was changed.")


def missing_sources(coursedir, pattern: str) -> str | None:
    """Why autograde cannot read the instructor's sources it grades against (None when it can): the
    course folder copied or moved away from the repository's solutions/ (the config looks beside it)."""
    import fnmatch

    src = Path(coursedir.source_directory)
    src = src if src.is_absolute() else Path(coursedir.root) / src
    there = sorted(p.name for p in src.iterdir() if p.is_dir()) if src.is_dir() else []
    if there and (not pattern or any(fnmatch.fnmatch(n, pattern) for n in there)):
        return None
    return (f"the instructor's sources are not at {src}{' for ' + pattern if there else ''} (nbgrader_config.py looks "
            "for solutions/ beside the course folder: was the course folder moved or copied out of the repository?). "
            "Keep course/ in the repository, or give the path: TC_SOURCE_DIR=/path/to/solutions nbgrader autograde "
            "... Nothing was graded.")


# nbgrader's instructor commands: run anywhere but a course folder, they would grade nothing, write
# an empty grades.csv and create a new gradebook.db where they run.
COURSE_COMMANDS = {"AssignApp", "AutogradeApp", "CollectApp", "ExportApp", "FeedbackApp", "FormgradeApp",
                   "GenerateAssignmentApp", "GenerateFeedbackApp", "GenerateSolutionApp", "ReleaseApp",
                   "ReleaseAssignmentApp", "ReleaseFeedbackApp", "ZipCollectApp"}  # and every `nbgrader db`


def not_a_course(root) -> str | None:
    """Why `root` is not a course folder (None when it is one): it holds no nbgrader_config.py."""
    root = Path(root or os.getcwd())
    if (root / "nbgrader_config.py").is_file():
        return None
    near = [root / "course", *root.parents, root.parent / "course"]
    course = next((p for p in near if (p / "nbgrader_config.py").is_file()), None)
    where = f"cd {os.path.relpath(course)}" if course is not None else "cd into the course folder (course/ of the repository)"
    return (f"{root} is not an nbgrader course (it has no nbgrader_config.py): {where} and run it there "
            "(course/README.md). Nothing was changed.")


def _course_commands_need_a_course() -> None:
    """`nbgrader COMMAND` for an instructor's COMMAND, and the formgrader's pages, stop at once
    outside a course folder (no gradebook.db appears, no grades.csv is written)."""
    from nbgrader.apps.nbgraderapp import NbGraderApp
    from nbgrader.server_extensions.formgrader import base

    app_start = NbGraderApp.start

    def start(self):
        sub = self.subapp
        name = type(sub).__name__ if sub is not None else ""
        if name in COURSE_COMMANDS or name.startswith("Db"):
            cd = getattr(sub, "coursedir", None)
            why = not_a_course(getattr(cd, "root", None))
            if why:
                self.log.error("%s", why)
                sys.exit(2)
        return app_start(self)

    NbGraderApp.start = start

    def guarded(prop):
        def get(self):
            why = not_a_course(self.coursedir.root)
            if why:
                from tornado import web

                raise web.HTTPError(500, reason=f"formgrader: {why} Start it with ./course.sh grade.")
            return prop.fget(self)
        return property(get)

    base.BaseHandler.gradebook = guarded(base.BaseHandler.gradebook)
    base.BaseHandler.api = guarded(base.BaseHandler.api)
