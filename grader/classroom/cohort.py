"""Grade a whole cohort: every submission of an assignment, --jobs-per-gpu grading jobs per GPU
at a time (default: measured), spread by Dask distributed over this host's GPUs or a cluster's (issues
#17, #28; course/README.md, "Grading a whole cohort").

    python -m grader.classroom.cohort autograde ASSIGNMENT [--gpus all|N|0,2 | --workers N |
        --scheduler ADDRESS] [--jobs-per-gpu auto|N] [--student GLOB] [--force] [--timeout S]
        [--course DIR] [--report FILE] [--baseline-seconds S | --baseline FILE]

--jobs-per-gpu auto (the default) measures how many jobs one GPU pays for on this machine from the
first submissions, graded alone on each GPU (grader.classroom.cohort_concurrency has the rule).

Jobs that share a GPU share it only outside timed runs: every timed measurement holds that GPU's
lock exclusively, every other GPU use (a notebook's execution, a kernel's correctness runs) holds
it shared (grader.runtime.gpulock). A worker grades its jobs as forks of one process that has
imported nbgrader once (grader.classroom.cohort_job), so a job costs what a submission costs
inside a plain `nbgrader autograde`. The summary states the speed-up only against plain
`nbgrader autograde`'s time per submission (--baseline-seconds, or a recorded baseline.json),
never against its own jobs.

Each job (grader.classroom.cohort_job) is a plain `nbgrader autograde ASSIGNMENT --student S` with
the course's own config, so it is sandboxed and trusted-graded exactly as the guide's command is
(grader.classroom.autograde), but in a scratch copy of the course: its own gradebook (a snapshot of the course's), the
assignment's source and one submission, with CUDA_VISIBLE_DEVICES naming its GPU. The job sends
back what nbgrader wrote (the autograded folder, the submission's gradebook rows); this process,
the only writer, puts them into the course through nbgrader's API, as each job ends. One writer
is enough: a job's nbgrader takes seconds to minutes, a merge milliseconds, so SQLite never
becomes the bottleneck, and no database server has to be run and secured beside the course.
It holds the course's autograde lock (grader.classroom.course_lock) while it runs, so no plain
autograde writes beside it. A manual score given or taken back in the formgrader after the
snapshot was taken stands over what its job found (merge).

Why Dask: the engine's wheels are 2.5 MB of pure Python (dask, distributed, tblib, zict, partd,
locket; 3.4 MB with the few small packages Jupyter does not already bring) against about 70 MB for
Ray's; the GPU test machine takes 64 MiB of carried files per call and the Jupyter/nbgrader wheels
already fill 48 MB. Dask gives what this needs and nothing more:
per-worker resources (GPU=1, each worker one GPU through CUDA_VISIBLE_DEVICES, the way dask-cuda
does it), a task that dies with its worker is retried elsewhere, and the same script runs on one
host (a local cluster started here) or a cluster (dask-jobqueue for Slurm, dask-kubernetes), by
pointing --scheduler at it.

Done means what nbgrader's own skip means: autograded/S/ASSIGNMENT exists and the submission is
not newer (timestamp.txt), unless --force. A job that crashes, hangs past --timeout or is killed
changes nothing in the gradebook and leaves that student's earlier result (if any) in place; the
student is pending (autograded/.cohort-logs/ASSIGNMENT/pending.json), so the next run grades it
again, and it costs nobody else anything. A submission with no result at all is flagged in the
summary and in grades.csv (grader.classroom.export), never exported as a 0. Job logs: autograded/.cohort-logs/ASSIGNMENT/ (hidden from every
sandbox, like the rest of autograded/).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from grader.classroom import cohort_concurrency as concurrency
from grader.classroom import cohort_refusals as refusals
from grader.classroom import course_lock, phases, regrade
from grader.classroom.cohort_engines import LocalEngine, RemoteEngine, _workers, gpu_ids
from grader.classroom.cohort_job import grade_job, tar_folder, untar
from grader.classroom.cohort_report import Progress, gpu_name, load_baseline, summary
from grader.classroom.standing import LOGS, job_log
from grader.classroom.workflow import ROOT
DEFAULT_TIMEOUT = 1200.0  # seconds per submission; a GPU autograde takes 12-48 s (RESULTS-grader.md)
TICK = 1.0  # seconds between progress redraws
# Jobs per GPU at a time (--jobs-per-gpu). A submission's grading is mostly CPU work (nbgrader,
# the kernel's and the trusted grader's start, compiles, references): a second job uses the GPU
# while the first one does that, and every timed run still holds the GPU alone (gpulock). "auto":
# as many as the first submissions, graded alone, measure to pay (grader.classroom.cohort_concurrency).
DEFAULT_JOBS_PER_GPU = "auto"


def jobs_per_gpu(text: str) -> int | str:
    """--jobs-per-gpu: "auto" or a whole number of at least 1."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is neither auto nor a number of jobs (1 or more)")
    return n


# ------------------------------------------------------------------ the course, as nbgrader sees it
@dataclass
class Course:
    root: Path
    coursedir: object  # nbgrader.coursedir.CourseDirectory
    config_text: str

    @property
    def db_path(self) -> Path:
        url = self.coursedir.db_url
        if not url.startswith("sqlite:///"):
            raise SystemExit(f"cohort: the gradebook must be nbgrader's SQLite file (db_url is {url}): the "
                             "jobs grade against a copy of it")
        return Path(url[len("sqlite:///"):])

    def path(self, step: str, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(getattr(self.coursedir, step), student, assignment))

    def logs(self, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.autograded_directory, ".", ".")) / LOGS / assignment


def load_course(root: Path) -> Course:
    """The course's nbgrader config, read as nbgrader reads it from that folder (with the
    TC_SOURCE_DIR a course made by grader.classroom.workflow.new_course keeps in .source)."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    root = root.resolve()
    cfg_file = root / "nbgrader_config.py"
    if not cfg_file.is_file():
        raise SystemExit(f"cohort: no nbgrader_config.py in {root} (run it in the course folder, or pass --course)")
    saved = os.environ.get("TC_SOURCE_DIR")
    if (root / ".source").exists():
        os.environ["TC_SOURCE_DIR"] = (root / ".source").read_text()
    try:
        cfg = PyFileConfigLoader(cfg_file.name, path=str(root)).load_config()
    finally:
        if saved is None:
            os.environ.pop("TC_SOURCE_DIR", None)
        else:
            os.environ["TC_SOURCE_DIR"] = saved
    cd = CourseDirectory(config=cfg)
    if not cd.root or Path(cd.root).resolve() != root:
        cd.root = str(root)
    return Course(root=root, coursedir=cd, config_text=cfg_file.read_text())


def resolve(course: Course, name: str) -> str:
    """An assignment of the course's source folder, by name or unique prefix ("03")."""
    source = Path(course.coursedir.format_path(course.coursedir.source_directory, ".", "."))
    known = sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
    name = name.rstrip("/")
    hits = [name] if name in known else [a for a in known if a.startswith(name)]
    if len(hits) != 1:
        why = "matches " + ", ".join(hits) if hits else f"is not in {source}"
        raise ValueError(f"assignment '{name}' {why}; the assignments are: {', '.join(known)}")
    return hits[0]


def released(course: Course, assignment: str) -> None:
    """The gradebook must know the assignment (nbgrader generate_assignment), as plain autograde requires:
    ValueError saying what to run where it does not."""
    from nbgrader.api import Gradebook, MissingEntry

    if not course.db_path.exists():
        raise ValueError(f"no gradebook in {course.root}: run `nbgrader generate_assignment {assignment}` first")
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise ValueError(f"no assignment '{assignment}' in the gradebook: run "
                             f"`nbgrader generate_assignment {assignment}` first") from None


def check_released(course: Course, assignment: str) -> None:
    """released(), stopping the cohort command with its message."""
    try:
        released(course, assignment)
    except ValueError as e:
        raise SystemExit(f"cohort: {e}") from None


def submissions(course: Course, assignment: str, pattern: str = "*") -> list[str]:
    """Students with a notebook under submitted/<student>/<assignment>/ (what nbgrader autograde globs)."""
    base = Path(course.coursedir.format_path(course.coursedir.submitted_directory, ".", "."))
    out = []
    for d in sorted(base.iterdir()) if base.is_dir() else []:
        if d.is_dir() and not d.name.startswith(".") and fnmatch(d.name, pattern) \
                and any(course.path("submitted_directory", d.name, assignment).glob("*.ipynb")):
            out.append(d.name)
    return out


def _pending_file(course: Course, assignment: str) -> Path:
    return course.logs(assignment) / "pending.json"


def pending(course: Course, assignment: str) -> set[str]:
    """Students whose regrade was asked for but did not finish (a stopped --force, a job that
    failed): their earlier result stays in place until a run grades them."""
    f = _pending_file(course, assignment)
    try:
        return set(json.loads(f.read_text()))
    except (OSError, ValueError):
        return set()


def _set_pending(course: Course, assignment: str, students: set[str]) -> None:
    f = _pending_file(course, assignment)
    if students:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(sorted(students)))
    elif f.exists():
        f.unlink()


def is_done(course: Course, assignment: str, student: str, force: bool = False) -> bool:
    """nbgrader's own rule (BaseConverter.init_destination): done when the autograded folder
    exists and the submission is not newer than it; --force redoes everything, and a regrade
    that did not finish (pending), or a folder that is no finished grading (regrade.not_done), is done again."""
    if force or student in pending(course, assignment):
        return False
    dest = course.path("autograded_directory", student, assignment)
    if not dest.is_dir() or regrade.not_done(course.coursedir, assignment, student):
        return False
    new = course.coursedir.get_existing_timestamp(str(course.path("submitted_directory", student, assignment)))
    old = course.coursedir.get_existing_timestamp(str(dest))
    return not (new is not None and old is not None and new > old)


# ------------------------------------------------------------------ what travels to a job
def bundle(course: Course, assignment: str) -> bytes:
    """What every job of this run shares: the course config (and its skip tag), a consistent
    snapshot of the gradebook, and the assignment's source folder."""
    source = Path(course.coursedir.format_path(course.coursedir.source_directory, ".", assignment))
    with tempfile.TemporaryDirectory(prefix="tc-cohort-bundle-") as tmp:
        tmp = Path(tmp)
        (tmp / "nbgrader_config.py").write_text(course.config_text)
        if (course.root / ".skip_tag").exists():
            shutil.copy(course.root / ".skip_tag", tmp / ".skip_tag")
        src, dst = sqlite3.connect(course.db_path), sqlite3.connect(tmp / "gradebook.db")
        with dst:
            src.backup(dst)  # consistent even while something reads the course's file
        src.close()
        dst.close()
        shutil.copytree(source, tmp / "source" / assignment,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        return tar_folder(tmp)


# ------------------------------------------------------------------ the single writer
def merge(gb, course: Course, assignment: str, result: dict, out=sys.stderr) -> None:
    """Put one job's result into the course, as `nbgrader autograde` would have left it: the new
    folder unpacked beside the old one, the gradebook rows, then the swap (the student is pending
    meanwhile, so an interrupted merge is redone by the next run)."""
    student = result["student"]
    if "rejected" in result:  # the job's nbgrader read the hand-in: its refusal (or none) into the course
        from grader.classroom import handin_check

        if result["rejected"]:
            handin_check.record_rejection(course.coursedir, assignment, student, result["rejected"])
        else:
            handin_check.clear_rejection(course.coursedir, assignment, student)
    dest = course.path("autograded_directory", student, assignment)
    if result.get("status") != "graded" and dest.is_dir():
        return  # a regrade that failed: the earlier result stays (and is pending, see autograde)
    _set_pending(course, assignment, pending(course, assignment) | {student})
    new = None
    if result.get("autograded") is not None:
        new = dest.parent / f".{dest.name}.cohort-{uuid.uuid4().hex[:8]}"
        untar(result["autograded"], new)
    rows = result.get("rows")
    if rows is not None:
        gb.update_or_create_student(student)
        gb.update_or_create_submission(assignment, student,
                                       **({"timestamp": rows["timestamp"]} if rows["timestamp"] else {}))
        from grader.classroom import scores

        for name, nbrow in rows["notebooks"].items():
            snb = gb.find_submission_notebook(name, assignment, student)
            snb.late_submission_penalty = nbrow["late_submission_penalty"]
            # what each cell's result rests on, as the job's ReconcileManualScores recorded it
            records = dict(nbrow.get("graded_against") or {})
            for g in snb.grades:
                if g.name in nbrow["grades"]:
                    stands = scores.from_job(g, nbrow["grades"][g.name], nbrow.get("manual_before", {}).get(g.name))
                    if stands:  # given while the job ran: so does the record of the result it was given against
                        records.pop(g.name, None)
                        print(f"cohort: {student} {assignment} {g.name}: {stands}", file=out, flush=True)
            for c in snb.comments:
                if c.name in nbrow["comments"]:
                    c.auto_comment = nbrow["comments"][c.name]["auto_comment"]
            scores.store(gb, assignment, student, name, records)
        gb.db.commit()
        # the hand-in's time and penalty as the course computes them (its record of times and the
        # assignment's opening are in the course, not in the job's scratch copy)
        from grader.classroom import standing

        standing.refresh(gb, course.coursedir, gb.find_submission(assignment, student))
        gb.db.commit()
    if dest.exists():
        shutil.rmtree(dest)
    if new is not None:
        os.replace(new, dest)


def forget(course: Course, assignment: str, student: str) -> None:
    """A job that did not finish: whatever result the student had stays in place (its feedback
    too), and the student is pending, so the next run, --force or not, grades it again."""
    _set_pending(course, assignment, pending(course, assignment) | {student})


# ------------------------------------------------------------------ the command
def _same(x):
    return x


def _outcome(future, student: str) -> dict:
    if future.status != "finished":  # the engine could not run it: its worker died twice, say
        try:
            exc = future.exception(timeout=5)
        except Exception as e:  # cancelled
            exc = e
        return dict(student=student, status="lost", why=f"{type(exc).__name__}: {str(exc)[:300]}", seconds=0.0,
                    worker="?", device=None, log="")
    return future.result()


def autograde(course: Course, assignment: str, *, engine, force: bool = False, pattern: str = "*",
              timeout: float = DEFAULT_TIMEOUT, out=sys.stderr, stopped: list | None = None
              ) -> tuple[list[dict], list[str], float]:
    """Grade every pending submission through `engine`; returns (results, skipped, wall seconds).
    Interrupted (KeyboardInterrupt), it returns what was merged and lists the rest in `stopped`."""
    stopped = [] if stopped is None else stopped
    from distributed import TimeoutError as DaskTimeout
    from distributed import wait
    from nbgrader.api import Gradebook

    from grader.classroom.sandbox_kernel import private_paths

    check_released(course, assignment)
    refusals.sanitize(course, assignment, out)
    students = submissions(course, assignment, pattern)
    skipped = [s for s in students if is_done(course, assignment, s, force)]
    todo = [s for s in students if s not in skipped]
    refused = refusals.refuse_oversized(course, assignment, todo, out)
    todo = [s for s in todo if s not in refused]
    sizing = bool(engine.auto and engine.groups)
    where = (f"on {len(engine.groups)} GPU(s): the first submission on each alone, then as many jobs per GPU as it "
             f"measures to pay (at most {max(map(len, engine.groups.values()))})" if sizing
             else f"on {len(engine.labels)} worker(s): {', '.join(engine.labels)}")
    print(f"cohort: {assignment}: {len(students)} submission(s), {len(skipped)} already done, {len(todo)} to grade "
          f"{where}", file=out, flush=True)
    logs = course.logs(assignment)
    logs.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results: list[dict] = []
    if not todo:
        return results, skipped, 0.0
    client = engine.client
    # The shared bundle as a task, not scattered data: if the worker holding it dies, the
    # scheduler makes it again (scattered data would be lost, cancelling every job that needs it).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ll]arge.*")  # a big gradebook: sent once, on purpose
        shared = client.submit(_same, bundle(course, assignment), key=f"bundle-{uuid.uuid4().hex[:8]}", pure=False)
    hidden = private_paths(course.coursedir)
    rel = lambda step, s: str(course.path(step, s, assignment).relative_to(course.root))  # noqa: E731
    keys = {}
    futures = []

    # hand-ins are packed (each read whole) as their jobs go, a few ahead of the workers: never a whole class at once
    ahead = 2 * max(len(engine.labels), 1)
    queue: list[tuple] = []  # (student, its workers or None, threads) not submitted yet
    waiting: set = set()  # unfinished jobs (not `pending`: that is the function of the students still to grade)

    def top_up() -> set:
        new = set()
        while queue and len(waiting) + len(new) < ahead:
            s, where_s, threads = queue.pop(0)
            key = f"grade-{uuid.uuid4().hex[:8]}"
            keys[key] = s
            new.add(client.submit(grade_job, shared, assignment, s,
                                  tar_folder(course.path("submitted_directory", s, assignment)),
                                  dict(submitted=rel("submitted_directory", s), autograded=rel("autograded_directory", s)),
                                  hidden, timeout, threads, key=key, pure=False, resources=engine.resources or None,
                                  retries=0, **(dict(workers=where_s, allow_other_workers=True) if where_s else {})))
        futures.extend(new)
        return new

    def submit(students: list[str], where: list[list[str]] | None = None, threads: int | None = None) -> set:
        """Queue their jobs (top_up submits them); where[i]: student i's workers (others only if all are gone)."""
        queue.extend((s, where[i] if where else None, threads) for i, s in enumerate(students))
        return top_up()

    # --jobs-per-gpu auto: the first submissions one per GPU, each alone on its GPU (its first
    # worker); the rest once their figures say how many jobs a GPU pays for (cohort_concurrency)
    probes: set = set()
    later: list[str] = []
    shown = list(engine.labels)
    if sizing:
        shown = [labels[0] for labels in engine.groups.values()][:len(todo)]
        firsts = engine.addresses(shown)
        # alone on its GPU, a first job gets the threads it would have at the default jobs per GPU
        probes = submit(todo[:len(firsts)], [[a] for a in firsts], engine.threads(concurrency.FALLBACK))
        waiting |= probes
        later = todo[len(firsts):]
        engine.labels = shown
        engine.choice = dict(n=1, measured=False, why="no more submissions than GPUs: each graded alone on its GPU")
    else:
        waiting |= submit(todo)
    t_probe = time.time()
    probed: list[dict] = []
    progress = Progress(len(todo), shown, out=out)
    names = {}

    def size() -> None:
        """Enough is measured (every first job ended, or PROBE_WAIT passed): choose, go on with the rest."""
        nonlocal later
        fig = concurrency.figures(probed)
        per_gpu = max(len(labels) for labels in engine.groups.values())
        why = ("no first submission was graded" if len(probed) == len(probes)
               else f"none graded within {concurrency.PROBE_WAIT:.0f} s")
        cores, memory = concurrency.host(len(engine.groups))
        engine.choice = choice = concurrency.choose(fig, cores, memory, upper=per_gpu, why_none=why)
        choice["threads_per_job"] = engine.threads(choice["n"])  # BLAS/OpenMP, for the record
        used = [label for labels in engine.groups.values() for label in labels[:choice["n"]]]
        engine.labels = used
        progress.per = {label: progress.per.get(label, 0) for label in used}  # in GPU order
        line = concurrency.describe(choice)
        print(f"cohort: jobs per GPU: {line}", file=out, flush=True)
        phases.record("cohort: jobs per GPU", 0.0, jobs_per_gpu=choice["n"], how=line)
        rest, later = later, []
        where = engine.addresses(used)
        waiting.update(submit(rest, [where] * len(rest), engine.threads(choice["n"])))

    def running() -> dict[str, str]:
        try:
            info = _workers(client)
            names.update({a: str(w.get("name")) for a, w in info.items()})
            return {names.get(a, a): keys[k] for a, ks in client.processing().items() for k in ks if k in keys}
        except Exception:
            return {}

    try:
        with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
            while waiting or later or queue:
                if later and (len(probed) == len(probes) or time.time() - t_probe > concurrency.PROBE_WAIT):
                    size()
                try:
                    done, waiting = wait(waiting, timeout=TICK, return_when="FIRST_COMPLETED")
                except (DaskTimeout, TimeoutError):
                    progress.draw(running())
                    continue
                except Exception:  # a future was cancelled under us: take it as lost, go on with the rest
                    done = {f for f in waiting if f.status in ("error", "cancelled", "lost")}
                    waiting -= done
                    if not done:
                        raise
                for f in done:
                    r = _outcome(f, keys[f.key])
                    if f in probes:
                        probed.append(dict(r))  # with its step times (dropped from r below)
                    if r["status"] in ("graded", "failed"):
                        merge(gb, course, assignment, r, out)
                    if r["status"] == "graded":
                        _set_pending(course, assignment, pending(course, assignment) - {r["student"]})
                    else:
                        forget(course, assignment, r["student"])
                    try:  # its log is bookkeeping: a write that fails never stops the merging of the rest
                        job_log(logs, r["student"]).write_text(
                            f"# {r['status']} on {r.get('worker')} ({r.get('host', '')}) in {r['seconds']:.1f} s "
                            f"{r.get('why', '')}\n{r.get('log', '')}")
                    except OSError as e:
                        print(f"cohort: {r['student']}: its job's log not written ({e})", file=out, flush=True)
                    for k in ("rows", "autograded", "log", "phases"):  # the phases are in TC_PHASES, if asked
                        r.pop(k, None)
                    results.append(r)
                    progress.finished(r, running())
                    f.release()
                waiting |= top_up()  # as many more as finished
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (main): keep what is merged, stop the rest
        client.cancel(futures)
        finished = {r["student"] for r in results}
        stopped.extend(s for s in todo if s not in finished)
        # nothing is removed: every earlier result stays; a plain rerun regrades what was left
        _set_pending(course, assignment, pending(course, assignment) | set(stopped))
    progress.close()
    return results, skipped, time.time() - t0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m grader.classroom.cohort",
                                 description="Grade every submission of an assignment, --jobs-per-gpu jobs per GPU at a time "
                                             "(course/README.md, 'Grading a whole cohort').")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ag = sub.add_parser("autograde", help="nbgrader autograde of every submission, in parallel")
    ag.add_argument("assignment")
    where = ag.add_mutually_exclusive_group()
    where.add_argument("--gpus", metavar="all|N|LIST",
                       help="the GPUs to grade on: all visible GPUs, the first N, or a list (0,2)")
    where.add_argument("--workers", type=int, metavar="N",
                       help="N jobs at a time on the CPU emulator (no GPU visible to them: speed earns nothing)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="an existing Dask scheduler: tcp://host:8786, or its --scheduler-file")
    ag.add_argument("--min-workers", type=int, default=1, metavar="N",
                    help="with --scheduler: wait (up to 10 min) until N workers have joined")
    ag.add_argument("--student", default="*", metavar="GLOB", help="only these students (default: all)")
    ag.add_argument("--force", action="store_true", help="grade again what is already done")
    ag.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"seconds one submission may take before it is killed (default {DEFAULT_TIMEOUT:.0f})")
    ag.add_argument("--course", type=Path, help="the course folder (default: this folder if it holds "
                                                "nbgrader_config.py, else the repository's course/)")
    ag.add_argument("--report", type=Path, help="also write every job's record as JSON here")
    ag.add_argument("--jobs-per-gpu", type=jobs_per_gpu, default=DEFAULT_JOBS_PER_GPU, metavar="auto|N",
                    help="jobs at a time on each GPU; their timed runs take turns, each holding the GPU alone. "
                         "auto (default): the first submission on each GPU is graded alone, and its measured "
                         "GPU, CPU and memory use set N (capped by the cores per GPU and the memory)")
    base = ag.add_mutually_exclusive_group()
    base.add_argument("--baseline-seconds", metavar="S", dest="baseline",
                      help="plain `nbgrader autograde`'s seconds per submission on one GPU: the summary's "
                           "speed-up is stated against it")
    base.add_argument("--baseline", metavar="FILE", dest="baseline",
                      help="the same, recorded per assignment and GPU model in a JSON file (.ci/gpu-cohort "
                           "writes one; default: autograded/.cohort-logs/ASSIGNMENT/baseline.json if present)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    t_command = time.time()

    root = args.course or (Path.cwd() if (Path.cwd() / "nbgrader_config.py").exists() else ROOT / "course")
    course = load_course(root)
    try:
        assignment = resolve(course, args.assignment)
    except ValueError as e:
        print(f"cohort: {e}", file=sys.stderr)
        return 2
    check_released(course, assignment)
    try:  # the only writer of the course's autograded/ and gradebook: no other autograde beside it
        with course_lock.held(course.coursedir):
            return _graded(args, course, assignment, t_command)
    except course_lock.Busy as e:
        print(f"cohort: {e}", file=sys.stderr)
        return 2


def _graded(args, course: Course, assignment: str, t_command: float) -> int:
    if args.scheduler:
        engine, gpus = RemoteEngine(args.scheduler, args.min_workers), None
    else:
        gpus = gpu_ids(args.gpus or "all") if args.workers is None else []
        if args.gpus and not gpus:
            print("cohort: no GPU found (nvidia-smi -L lists none); on a CPU-only machine use --workers N",
                  file=sys.stderr)
            return 2
        if not gpus:
            workers = args.workers or 1
            print(f"cohort: {workers} emulator worker(s): speed checks need a GPU and award nothing here",
                  file=sys.stderr)
        auto = args.jobs_per_gpu == "auto"
        per_gpu = concurrency.most(concurrency.host(len(gpus))[0]) if auto and gpus else (
            1 if auto else args.jobs_per_gpu)
        engine = LocalEngine(gpus, args.workers or 1, per_gpu, auto=auto)
        if gpus and not auto:
            engine.choice = dict(n=args.jobs_per_gpu, given=True)
    stopped: list[str] = []

    def _term(signum, frame):  # scancel, timeout, kill: stop like Ctrl-C, keeping what is merged
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: `timeout` signals its process group too
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    try:
        results, skipped, wall = autograde(course, assignment, engine=engine, force=args.force,
                                           pattern=args.student, timeout=args.timeout, stopped=stopped)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        engine.close()  # its workers end, and with them any job still running
    on_gpus = bool(gpus) or (args.scheduler is not None and engine.resources.get("GPU"))
    baseline = load_baseline(args.baseline, course, assignment, gpu_name() if on_gpus else None)
    text = summary(assignment, results, skipped, wall, engine.labels, bool(on_gpus), course.logs(assignment),
                   baseline=baseline, command_wall=time.time() - t_command, n_gpus=len(gpus) if gpus else None,
                   jobs_per_gpu=getattr(engine, "choice", None))
    ungraded = [st for st in submissions(course, assignment, args.student)
                if not course.path("autograded_directory", st, assignment).is_dir()]
    if ungraded:
        text += (f"\nNOT GRADED (no result at all; grades.csv says so, never 0): {', '.join(ungraded)}\n")
    if stopped:
        text += (f"\nStopped before the end: {len(stopped)} submission(s) not graded "
                 f"({', '.join(stopped[:10])}{' ...' if len(stopped) > 10 else ''}); run the command again "
                 "(without --force) to finish; their earlier results stay in place until then.\n")
    print(text)
    (course.logs(assignment) / "summary.md").write_text(text)
    if args.report:
        args.report.write_text(json.dumps(dict(assignment=assignment, wall_seconds=wall, skipped=skipped,
                                               command_seconds=time.time() - t_command, baseline=baseline,
                                               stopped=stopped, workers=engine.labels, results=results,
                                               jobs_per_gpu=getattr(engine, "choice", None)), indent=1))
    return 1 if stopped or any(r["status"] != "graded" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
