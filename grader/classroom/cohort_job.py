"""One cohort grading job, on a Dask worker (grader.classroom.cohort drives it): `nbgrader
autograde ASSIGNMENT --student S` with the course's own config, in a scratch copy of the course
(its config, a gradebook snapshot, the assignment's source, one submission) under /tmp of the
worker's machine; what nbgrader wrote comes back as bytes and rows, and the scratch course goes.

The job's nbgrader runs in its own process session and dies with the worker (PR_SET_PDEATHSIG);
past its time limit, or at the end, its whole process group is killed, so the sandboxed kernels
and the trusted grader it started cannot outlive it.
"""
from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path


def tar_folder(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as t:
        for p in sorted(folder.rglob("*")):  # regular files only: a link a submission left is not followed
            if p.is_file() and not p.is_symlink() and ".ipynb_checkpoints" not in p.parts \
                    and "__pycache__" not in p.parts:
                t.add(p, arcname=str(p.relative_to(folder)), recursive=False)
    return buf.getvalue()


def untar(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        # 'tar' keeps the modes nbgrader set (read-only notebooks) and refuses paths outside dest
        t.extractall(dest, filter="tar") if hasattr(tarfile, "tar_filter") else t.extractall(dest)


# The job's config: the course's, then this. Paths are the scratch course's; the hidden list is
# the real course's private paths (its gradebook, sources, every student's folders), which the
# scratch course's own config would not know to hide.
JOB_CONFIG = """

# ---- grader.classroom.cohort: this file is a job's scratch copy of the course config
c.CourseDirectory.root = {root!r}
c.CourseDirectory.source_directory = {source!r}
c.CourseDirectory.db_url = {db_url!r}
c.SandboxedKernelManager.hidden = {hidden!r}
c.TrustedGrade.extra_hidden = {hidden!r}
"""


# The job's first seconds, before nbgrader: die with the worker that started it (PR_SET_PDEATHSIG,
# Linux), set in the fresh process rather than in a preexec_fn of the threaded worker.
LAUNCH = ("import ctypes, os, sys\n"
          "ctypes.CDLL(None).prctl(1, 9)\n"
          "if os.getppid() != int(sys.argv[1]):\n    os._exit(1)\n"
          "os.execv(sys.executable, [sys.executable, '-m', 'nbgrader', *sys.argv[2:]])\n")


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except Exception:
        return f"pid{os.getpid()}"


def _rows(db: Path, assignment: str, student: str) -> dict | None:
    """What `nbgrader autograde` writes to the gradebook for one submission (Autograde.init_assignment,
    SaveAutoGrades, AssignLatePenalties): the submission's timestamp, each grade's auto_score and
    needs_manual_grade, each comment's auto_comment, each notebook's late penalty."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{db}") as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return None
        return dict(
            timestamp=sub.timestamp.isoformat() if sub.timestamp else None,
            notebooks={nb.name: dict(late_submission_penalty=nb.late_submission_penalty,
                                     grades={g.name: dict(auto_score=g.auto_score, manual_score=g.manual_score,
                                                          needs_manual_grade=g.needs_manual_grade)
                                             for g in nb.grades},
                                     comments={c.name: dict(auto_comment=c.auto_comment) for c in nb.comments})
                       for nb in sub.notebooks})


def _sweep(base: Path) -> None:
    """Remove scratch courses whose worker is gone (killed before it could clean up)."""
    for d in base.glob("job-*"):
        try:
            os.kill(int((d / "owner").read_text()), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (OSError, ValueError):
            pass


def grade_job(shared: bytes, assignment: str, student: str, submission: bytes, layout: dict,
              hidden: list[str], timeout: float) -> dict:
    """One submission, on a worker: `nbgrader autograde` in a scratch course. Returns the status,
    the log's tail, and (when nbgrader ran to its end, success or not) what it wrote."""
    t0 = time.time()
    # Under /tmp whatever TMPDIR says: every sandbox mounts an empty /tmp, so no job can see another
    # job's scratch course, kernel sockets or connection files (its own are bound back in).
    base = Path("/tmp") / f"tc-cohort-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    _sweep(base)
    scratch = Path(tempfile.mkdtemp(prefix="job-", dir=base))
    (scratch / "owner").write_text(str(os.getpid()))
    out = dict(student=student, worker=_worker_name(), device=os.environ.get("CUDA_VISIBLE_DEVICES"),
               host=os.uname().nodename, start=t0)
    try:
        untar(shared, scratch)
        untar(submission, scratch / layout["submitted"])
        with open(scratch / "nbgrader_config.py", "a") as f:
            f.write(JOB_CONFIG.format(root=str(scratch), source=str(scratch / "source"),
                                      db_url=f"sqlite:///{scratch / 'gradebook.db'}", hidden=hidden))
        (scratch / "tmp").mkdir()  # the job's TMPDIR: its kernel's sockets and connection file live there
        env = dict(os.environ, TC_SOURCE_DIR=str(scratch / "source"), PYTHONUNBUFFERED="1", TMPDIR=str(scratch / "tmp"))
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader runs `alembic`
        log = scratch / "job.log"
        with open(log, "wb") as lf:
            proc = subprocess.Popen([sys.executable, "-c", LAUNCH, str(os.getpid()), "autograde", assignment,
                                     "--student", student, "--create"], cwd=scratch, env=env, stdout=lf,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                rc = None
            finally:  # the job's whole process group: kernels and graders it left behind
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        out["log"] = log.read_bytes()[-20000:].decode(errors="replace")
        if rc is None:
            out.update(status="timed out", why=f"no result after {timeout:.0f} s: killed")
        elif rc < 0:
            out.update(status="killed", why=f"nbgrader was killed by signal {-rc} ({signal.Signals(-rc).name})")
        else:
            # nbgrader ran to its end: what it wrote is the result, also when it refused the
            # submission (exit 1: gradebook rows, no autograded folder, as plain autograde leaves them)
            out["rows"] = _rows(scratch / "gradebook.db", assignment, student)
            dest = scratch / layout["autograded"]
            out["autograded"] = tar_folder(dest) if dest.is_dir() else None
            out["status"] = "graded" if rc == 0 and dest.is_dir() else "failed"
            if out["status"] == "failed":
                errs = [ln for ln in out["log"].splitlines() if "ERROR" in ln or "Error" in ln]
                out["why"] = f"nbgrader exit {rc}: " + (errs[-1].strip()[:300] if errs else "see the log")
        return out
    finally:
        out["seconds"] = time.time() - t0
        shutil.rmtree(scratch, ignore_errors=True)
