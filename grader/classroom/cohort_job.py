"""One cohort grading job, on a Dask worker (grader.classroom.cohort drives it): `nbgrader
autograde ASSIGNMENT --student S` with the course's own config, in a scratch copy of the course
(its config, a gradebook snapshot, the assignment's source, one submission) under /tmp of the
worker's machine; what nbgrader wrote comes back as bytes and rows, and the scratch course goes.

No start-up per submission (issue #28): each worker keeps one fork server, a process that has
imported nbgrader, Jupyter's client and the course's pipeline once and holds no student's anything;
a job is a fork of it that runs nbgrader's own command-line entry point (`nbgrader autograde A
--student S --create`, the same code the guide's command runs) in the job's scratch course, so a
job costs what one submission costs inside a plain `nbgrader autograde`. Students' code never
runs in the server or in the fork (it runs in the sandboxed kernel and the trusted grader's
sandbox, fresh processes as before), and a fork shares nothing with the next one.

The job's nbgrader (the fork) runs in its own process session and dies with the server, the server
with the worker (PR_SET_PDEATHSIG); past its time limit, or at the end, the fork's whole process
group is killed, so the sandboxed kernels and the trusted grader it started cannot outlive it.
TC_COHORT_FORK=0 runs each job as a fresh `python -m nbgrader` process instead (the earlier way).

A job also sends back what it used (Usage: its processes' CPU seconds and peak memory) and its
step times (grader.classroom.phases, recorded in the scratch course and appended at its end to the
instructor's TC_PHASES file, if one is named): `--jobs-per-gpu auto` is chosen from them
(grader.classroom.cohort_concurrency).
"""
from __future__ import annotations

import glob
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from grader.classroom import phases
from grader.runtime import gpulock, proctree


def tar_folder(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as t:
        for p in sorted(folder.rglob("*")):  # regular files only: a link a submission left is not followed
            if p.is_file() and not p.is_symlink() and ".ipynb_checkpoints" not in p.parts \
                    and "__pycache__" not in p.parts:
                t.add(p, arcname=str(p.relative_to(folder)), recursive=False)
    return buf.getvalue()


def _rejection(scratch: Path, assignment: str, student: str) -> str | None:
    """Why the job's nbgrader refused the hand-in (grader.classroom.handin_check's record in the
    scratch course's autograded/), or None when it did not."""
    from grader.classroom.handin_check import NOT_GRADED

    for p in scratch.glob(f"*/{NOT_GRADED}/{glob.escape(student)}/{glob.escape(assignment)}.txt"):
        return p.read_text(errors="replace")[:4000]
    return None


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


# The fork server: its first seconds die with the worker (as LAUNCH), then it imports what every
# job needs, once, and forks one child per request line {"cwd", "env", "argv", "log", "pidfile"; "err":
# its stderr apart, optional}
# on stdin, answering {"pid"} at once and {"rc"} when the child ends (on its own protocol fd;
# its stdout and stderr go to /dev/null).
SERVER = r"""
import ctypes, json, os, sys, tempfile, traceback
libc = ctypes.CDLL(None)
libc.prctl(1, 9)
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
proto = os.fdopen(os.dup(1), "w", buffering=1)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 1)
os.dup2(null, 2)
# what every job imports: nbgrader's command line and converters, Jupyter's kernel client, the
# course's pipeline (its config imports these) -- no student's code, no GPU context
import nbgrader.apps.nbgraderapp, nbgrader.converters.autograde, nbgrader.preprocessors, nbgrader.api
import nbclient, nbconvert, jupyter_client, nbformat, psutil
import grader.classroom.autograde, grader.classroom.hardening, grader.classroom.phases
import grader.classroom.sandbox_kernel, grader.classroom.nbgrader_ext, grader.classroom.scores
import grader.classroom.regrade, grader.classroom.late, grader.classroom.feedback, grader.classroom.export
# SQLAlchemy builds nbgrader's mappers and statements on first use: once here, on a throw-away
# gradebook (no student's anything), not in every fork
try:
    import shutil
    from nbgrader.api import Gradebook
    warm = tempfile.mkdtemp(prefix="tc-warm-")
    with Gradebook("sqlite:///" + os.path.join(warm, "gradebook.db")) as gb:
        gb.add_assignment("a")
        gb.add_student("s")
        gb.add_submission("a", "s")
        gb.find_submission("a", "s")
        gb.update_or_create_student("s")
    shutil.rmtree(warm, ignore_errors=True)
except Exception:
    pass
proto.write(json.dumps({"ready": True}) + "\n")
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()
            libc.prctl(1, 9)  # dies with the server
            proto.close()
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            tempfile.tempdir = None  # TMPDIR is the job's
            log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(log, 1)
            os.dup2(os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if req.get("err") else log, 2)
            os.dup2(null, 0)
            sys.stdin = open(os.devnull)
            with open(req["pidfile"], "w") as f:
                f.write(str(os.getpid()))
            sys.argv = ["nbgrader", *req["argv"]]
            nbgrader.apps.nbgraderapp.main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush(); sys.stderr.flush()
            finally:
                os._exit(code)
    proto.write(json.dumps({"pid": pid}) + "\n")
    # wait4: the fork's CPU seconds, its reaped descendants' included (kernels, trusted grader)
    _, status, ru = os.wait4(pid, 0)
    proto.write(json.dumps({"rc": os.waitstatus_to_exitcode(status), "cpu": ru.ru_utime + ru.ru_stime}) + "\n")
"""


class Usage:
    """What one job's processes used (its nbgrader and every process under it: the sandboxed
    kernel, the trusted grader, their kernel processes): CPU seconds (wait4 of the job, or the
    worker's children's rusage, so only processes that were reaped count) and the peak of their
    resident memory added up, sampled every EVERY seconds (shared pages counted in each process:
    an upper bound). The cohort sizes its jobs per GPU from these (grader.classroom.cohort_concurrency)."""

    EVERY = 0.5

    def __init__(self):
        self.cpu: float | None = None
        self.peak = 0

    def sample(self, pid: int) -> None:
        try:
            import psutil

            root = psutil.Process(pid)
            total = 0
            for p in [root, *root.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
        except Exception:  # gone, or no psutil: a measurement never stops a grading
            pass


class ForkServer:
    """This worker's fork server (started at its first job, again after one was lost)."""

    def __init__(self, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(os.getpid())], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1, start_new_session=True)
        # its imports are done before a job's clock starts (they are no job's time)
        if (self._read(timeout=300) or {}).get("ready") is not True:
            self.close()
            raise EOFError("the fork server did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self, timeout: float | None) -> dict | None:
        import select

        if timeout is not None and not select.select([self.proc.stdout], [], [], max(timeout, 0))[0]:
            return None
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError("the fork server ended")
        return json.loads(line)

    def run(self, argv: list[str], *, cwd: Path, env: dict, log: Path, timeout: float,
            usage: Usage | None = None, err: Path | None = None, pidfile: Path | None = None) -> int | None:
        """Run `nbgrader *argv` as a fork; its exit status (negative: killed by that signal), or
        None past `timeout` (then it is killed). `usage` gets its CPU seconds and peak memory; `err`:
        its stderr apart from `log`."""
        req = dict(cwd=str(cwd), env=env, argv=argv, log=str(log), pidfile=str(pidfile or cwd / "nbgrader.pid"))
        if err is not None:
            req["err"] = str(err)
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        pid = (self._read(timeout=30) or {})["pid"]
        got = None
        try:
            while got is None and time.monotonic() < deadline:
                if usage is not None:
                    usage.sample(pid)
                got = self._read(timeout=min(Usage.EVERY, deadline - time.monotonic()))
            if got is not None and usage is not None:
                usage.cpu = got.get("cpu")
            return None if got is None else got["rc"]
        finally:  # the fork's whole process group: kernels and graders it left behind
            if got is None:  # past its limit: the whole tree (sandboxes in sessions of their own too), reaped
                proctree.stop(pid)
            for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except (ProcessLookupError, PermissionError):
                    pass
            if got is None and self._read(timeout=30) is None:  # its answer for the killed fork, else
                self.close()  # a server that does not answer: the next job starts a new one

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()


_SERVER: ForkServer | None = None


def _server(env: dict) -> ForkServer:
    global _SERVER
    if _SERVER is None or not _SERVER.alive():
        _SERVER = ForkServer(env)
    return _SERVER


def _fresh_process(argv: list[str], *, cwd: Path, env: dict, log: Path, timeout: float,
                   usage: Usage | None = None) -> int | None:
    """TC_COHORT_FORK=0: `python -m nbgrader *argv` as a fresh process (each job pays its start-up)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # a worker runs one job at a time
    with open(log, "ab") as lf:
        proc = subprocess.Popen([sys.executable, "-c", LAUNCH, str(os.getpid()), *argv], cwd=cwd, env=env, stdout=lf,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        try:
            while True:
                if usage is not None:
                    usage.sample(proc.pid)
                try:
                    rc = proc.wait(timeout=max(min(Usage.EVERY, deadline - time.monotonic()), 0.01))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= deadline:
                        raise
            if usage is not None:
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                usage.cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
            return rc
        except subprocess.TimeoutExpired:
            proctree.stop(proc)  # the whole tree (sandboxes in sessions of their own too), reaped
            return None
        finally:  # the job's whole process group: kernels and graders it left behind
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except Exception:
        return f"pid{os.getpid()}"


def _rows(db: Path, assignment: str, student: str) -> dict | None:
    """What `nbgrader autograde` writes to the gradebook for one submission (Autograde.init_assignment,
    SaveAutoGrades, AssignLatePenalties): the submission's timestamp, each grade's auto_score and
    needs_manual_grade, each comment's auto_comment, each notebook's late penalty; and the course's
    record of what each cell's result rests on."""
    from nbgrader.api import Gradebook, MissingEntry

    from grader.classroom import scores

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
                                     comments={c.name: dict(auto_comment=c.auto_comment) for c in nb.comments},
                                     # what each cell's result rests on (grader.classroom.scores)
                                     graded_against=scores.stored(gb, assignment, student, nb.name))
                       for nb in sub.notebooks})


def _manual_scores(db: Path, assignment: str, student: str) -> dict[str, dict]:
    """notebook -> cell -> the manual score in the job's snapshot of the gradebook, before grading: the
    merge tells a manual score the job judged from one given in the formgrader while the job ran."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{db}") as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return {}
        return {nb.name: {g.name: g.manual_score for g in nb.grades} for nb in sub.notebooks}


def _phases(path: Path) -> list[dict]:
    """The job's step records; appended as they are to the instructor's TC_PHASES file, if named."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    mine = os.environ.get(phases.ENV)
    if mine and data:
        try:
            fd = os.open(mine, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)  # one append: other jobs' lines never interleave with these
            finally:
                os.close(fd)
        except OSError:
            pass
    return phases.load(path)


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
              hidden: list[str], timeout: float, threads: int | None = None) -> dict:
    """One submission, on a worker: `nbgrader autograde` in a scratch course. Returns the status,
    the log's tail, and (when nbgrader ran to its end, success or not) what it wrote. `threads`:
    its BLAS/OpenMP threads (its share of the cores; None: the worker's setting)."""
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
        from grader.classroom.standing import HANDIN_DIGEST, handin_digest

        # the hand-in as the course holds it, before this job's nbgrader repairs its copy (the
        # course's own file is not repaired): what standing.handin_replaced compares with
        handed = handin_digest(scratch / layout["submitted"])
        with open(scratch / "nbgrader_config.py", "a") as f:
            f.write(JOB_CONFIG.format(root=str(scratch), source=str(scratch / "source"),
                                      db_url=f"sqlite:///{scratch / 'gradebook.db'}", hidden=hidden))
        (scratch / "tmp").mkdir()  # the job's TMPDIR: its kernel's sockets and connection file live there
        env = dict(os.environ, TC_SOURCE_DIR=str(scratch / "source"), PYTHONUNBUFFERED="1", TMPDIR=str(scratch / "tmp"))
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader runs `alembic`
        # the job's step times (grader.classroom.phases) come back with its result: the cohort sizes
        # its jobs per GPU from them; a TC_PHASES file the instructor named gets them too (below)
        env[phases.ENV] = str(scratch / "phases.jsonl")
        if threads:
            from grader.classroom.cohort_engines import THREAD_VARS

            env.update({k: str(threads) for k in THREAD_VARS})
        # this GPU's lock (grader.runtime.gpulock): jobs sharing a GPU time their kernels one at a time
        lock = os.environ.get(gpulock.ENV + "_DIR") or str(base / "locks")
        if out["device"]:
            env[gpulock.ENV] = gpulock.lock_file(lock, out["device"])
        log = scratch / "job.log"
        manual_before = _manual_scores(scratch / "gradebook.db", assignment, student)
        # one argument, the id as a literal: nbgrader reads --student as a glob, and a separate value
        # that starts with "-" as an option of its own (a student "-h" got nbgrader's help, not a grading)
        argv = ["autograde", assignment, f"--student={glob.escape(student)}", "--create"]
        server = None
        if os.environ.get("TC_COHORT_FORK", "1") != "0":
            try:
                server = _server(dict(os.environ))
            except Exception as e:  # it could not start: this job the earlier way, saying so
                with open(log, "a") as lf:
                    lf.write(f"# the worker's fork server did not start ({type(e).__name__}: {e}): a fresh process\n")
        usage = Usage()
        if server is not None:
            try:
                rc = server.run(argv, cwd=scratch, env=env, log=log, timeout=timeout, usage=usage)
            except Exception as e:  # the server died under the job (or answered nonsense)
                rc = -signal.SIGKILL
                with open(log, "a") as lf:
                    lf.write(f"\n# the worker's fork server was lost: {type(e).__name__}: {e}\n")
                if _SERVER is not None:
                    _SERVER.close()
        else:
            rc = _fresh_process(argv, cwd=scratch, env=env, log=log, timeout=timeout, usage=usage)
        out.update(cpu_seconds=usage.cpu, peak_memory=usage.peak or None, phases=_phases(scratch / "phases.jsonl"))
        out["log"] = log.read_bytes()[-20000:].decode(errors="replace") if log.exists() else ""
        if rc is None:
            out.update(status="timed out", why=f"no result after {timeout:.0f} s: killed")
        elif rc < 0:
            out.update(status="killed", why=f"nbgrader was killed by signal {-rc} ({signal.Signals(-rc).name})")
        else:
            # nbgrader ran to its end: what it wrote is the result, also when it refused the
            # submission (exit 1: gradebook rows, no autograded folder, as plain autograde leaves them)
            out["rows"] = _rows(scratch / "gradebook.db", assignment, student)
            if out["rows"] is not None:
                for name, nbrow in out["rows"]["notebooks"].items():
                    nbrow["manual_before"] = manual_before.get(name, {})
            out["rejected"] = _rejection(scratch, assignment, student)
            dest = scratch / layout["autograded"]
            if dest.is_dir():
                (dest / HANDIN_DIGEST).write_text(handed + "\n")
            out["autograded"] = tar_folder(dest) if dest.is_dir() else None
            out["status"] = "graded" if rc == 0 and dest.is_dir() else "failed"
            if out["status"] == "failed":
                errs = [ln for ln in out["log"].splitlines() if "ERROR" in ln or "Error" in ln]
                out["why"] = f"nbgrader exit {rc}: " + (errs[-1].strip()[:300] if errs else "see the log")
        return out
    finally:
        out["seconds"] = time.time() - t0
        shutil.rmtree(scratch, ignore_errors=True)
