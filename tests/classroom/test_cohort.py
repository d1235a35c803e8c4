"""Cohort autograde (grader.classroom.cohort, issue #17) on CPU: the same command an instructor
runs, on a handful of submissions of 01-memory-layout with the emulator and 2 workers.

The slow part grades the same three submissions (the solution, a partly wrong one whose kernel
does not compile either, a notebook that kills its own kernel), trimmed to the cells they are
graded from (the first code cell, the answers, the tests: the lesson cells only cost time), twice: with one sequential `nbgrader autograde`
in one course, with the cohort command in another, and compares what nbgrader recorded. A fourth
submission hangs: the test kills its job from outside (as an OOM killer would), then a rerun
with a short --timeout must skip the three done ones and time the hang out.
"""
import csv
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from grader.classroom import cohort
from grader.classroom import workflow as classroom

A = "01-memory-layout"
GRADED = ["crashing", "partly", "solution"]


# ------------------------------------------------------------------ fast checks
def test_gpu_ids_follow_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert cohort.gpu_ids("all") == ["2", "3"]
    assert cohort.gpu_ids("1") == ["2"]
    assert cohort.gpu_ids("0,2") == ["0", "2"]
    with pytest.raises(SystemExit):
        cohort.gpu_ids("3")  # more than there are
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cohort.gpu_ids("all") == []


@pytest.fixture(scope="module")
def small_course(tmp_path_factory):
    return classroom.new_course(tmp_path_factory.mktemp("cohort-small") / "course")


def test_done_means_what_nbgrader_skips(small_course):
    """Done: autograded/S/A exists and the submission is not newer; --force redoes it."""
    course = cohort.load_course(small_course)
    sub = small_course / "submitted" / "alice" / A
    sub.mkdir(parents=True)
    (sub / f"{A}.ipynb").write_text("{}")
    (sub / "timestamp.txt").write_text("2026-11-22 12:00:00.000000 UTC")
    assert cohort.submissions(course, A) == ["alice"]
    assert not cohort.is_done(course, A, "alice")  # nothing autograded yet
    dest = small_course / "autograded" / "alice" / A
    dest.mkdir(parents=True)
    (dest / "timestamp.txt").write_text("2026-11-22 12:00:00.000000 UTC")
    assert cohort.is_done(course, A, "alice")
    assert not cohort.is_done(course, A, "alice", force=True)
    (sub / "timestamp.txt").write_text("2026-11-23 09:00:00.000000 UTC")  # a resubmission
    assert not cohort.is_done(course, A, "alice")


def test_unknown_or_unreleased_assignment_is_refused(small_course):
    assert cohort.main(["autograde", "nope", "--course", str(small_course), "--workers", "1"]) == 2
    with pytest.raises(SystemExit, match="generate_assignment"):
        cohort.main(["autograde", A, "--course", str(small_course), "--workers", "1"])


# ------------------------------------------------------------------ the cohort, end to end (slow)
def _submissions(work: Path) -> dict[str, Path]:
    sol = classroom.SOLUTIONS / A / f"{A}.ipynb"

    def trimmed():
        nb = nbformat.read(sol, as_version=4)
        first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        nb.cells = [c for i, c in enumerate(nb.cells) if i == first or c.metadata.get("nbgrader", {}).get("solution")
                    or c.metadata.get("nbgrader", {}).get("grade")]
        return nb

    nb0 = trimmed()
    index = next(i for i, c in enumerate(nb0.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "index-functions")
    kernel = next(i for i, c in enumerate(nb0.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "transpose-kernel")
    first = next(i for i, c in enumerate(nb0.cells) if c.cell_type == "code")

    def variant(*edits):
        nb = trimmed()
        for edit in edits:
            edit(nb)
        return nb

    def wrong_col_major(nb):  # col_major_offset answers row-major: half the index points
        src = nb.cells[index].source
        assert "return j * ld + i" in src
        nb.cells[index].source = src.replace("return j * ld + i", "return i * ld + j")

    def no_semicolon(nb):  # the transpose kernel does not compile
        src = nb.cells[kernel].source
        assert "__syncthreads();" in src
        nb.cells[kernel].source = src.replace("__syncthreads();", "__syncthreads()", 1)

    def insert(code):
        return lambda nb: nb.cells.insert(first + 1, nbformat.v4.new_code_cell(code))

    def crash_with_wrong_answers(nb):  # its kernel dies early; graded all the same, from its text
        nb.cells[index].source = ("def row_major_offset(i, j, ld):\n    return 0\n\n\n"
                                  "def col_major_offset(i, j, ld):\n    return 0\n\n\n"
                                  "def byte_strides(shape, itemsize, order='C'):\n    return ()\n")
        insert("import os\nos._exit(1)")(nb)

    made = {"solution": variant(),
            "partly": variant(wrong_col_major, no_semicolon), "crashing": variant(crash_with_wrong_answers),
            "hang": variant(insert("import time\ntime.sleep(3600)"))}
    out = {}
    for name, nb in made.items():
        path = work / name / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        out[name] = path
    return out


def _guide_command(workers: int) -> list[str]:
    """The guide's CPU-only line ("Grading a whole cohort"), for this assignment and worker count."""
    text = (classroom.ROOT / "course" / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text[text.index("## Grading a whole cohort"):], re.S).group(1)
    line = next(ln for ln in block.splitlines() if "--workers" in ln)
    argv = shlex.split(line.split("#")[0].replace("$A", A))
    assert argv[:4] == ["python", "-m", "grader.classroom.cohort", "autograde"], argv
    argv[argv.index("--workers") + 1] = str(workers)
    return [sys.executable, *argv[1:]]


def _cohort(course: Path, *args: str, workers: int = 2, kill: str | None = None, limit: float = 240) -> dict:
    """Run the guide's command in the course folder; with `kill`, SIGKILL that student's job once
    it has run 2 s (as an out-of-memory killer or an impatient admin would)."""
    import psutil

    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    report = course / f"report-{time.monotonic_ns()}.json"
    cmd = [*_guide_command(workers), "--report", str(report), *args]
    proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.time() + limit
    base = Path("/tmp") / f"tc-cohort-{os.getuid()}"
    while kill and killed is None and proc.poll() is None and time.time() < deadline:
        # the job's nbgrader (a fork of its worker's server) names itself in its scratch course
        for pidfile in base.glob("job-*/nbgrader.pid"):
            try:
                if not (pidfile.parent / "submitted" / kill).is_dir() or time.time() - pidfile.stat().st_mtime < 2:
                    continue
                p = psutil.Process(int(pidfile.read_text()))
            except (OSError, ValueError, psutil.Error):
                continue
            p.send_signal(signal.SIGKILL)
            killed = p.pid
            break
        time.sleep(0.2)
    out, err = proc.communicate(timeout=max(deadline - time.time(), 1))
    return dict(rc=proc.returncode, stdout=out, stderr=err, killed=killed,
                report=json.loads(report.read_text()) if report.exists() else None)


def _gradebook_rows(course: Path, student: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission(A, student)
        return dict(timestamp=sub.timestamp, score=sub.score,
                    notebooks={nb.name: (nb.late_submission_penalty,
                                         sorted((g.name, g.auto_score, g.manual_score, g.needs_manual_grade)
                                                for g in nb.grades),
                                         sorted((c.name, c.auto_comment) for c in nb.comments))
                               for nb in sub.notebooks})


def _export(course: Path) -> list[dict]:
    classroom.nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv") as f:
        return sorted(csv.DictReader(f), key=lambda r: r["student_id"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("cohort")
    subs = _submissions(work / "subs")
    seq = classroom.new_course(work / "seq")
    classroom.release(seq, A)
    par = work / "par"
    shutil.copytree(seq, par)  # the same release and gradebook, before any grading
    (par / "nbgrader_config.py").write_text((seq / "nbgrader_config.py").read_text())
    for name in GRADED:
        classroom.submit(seq, name, A, [subs[name]])
        classroom.submit(par, name, A, [subs[name]])
    classroom.submit(par, "hang", A, [subs["hang"]])

    def sequential():  # the guide's command: one nbgrader process, one submission after another
        t0 = time.time()
        classroom.nbgrader(seq, "autograde", A, "--create")
        return time.time() - t0

    # The two courses share nothing, so the sequential baseline runs beside the cohort's first run
    # (saves the wall time of start-ups and waits; the CPU stays shared).
    with ThreadPoolExecutor(1) as pool:
        baseline = pool.submit(sequential)
        first = _cohort(par, "--timeout", "300", kill="hang")
        seq_seconds = baseline.result()
    rerun = _cohort(par, "--timeout", "6", workers=1)
    return dict(seq=seq, par=par, first=first, rerun=rerun, seq_seconds=seq_seconds)


@pytest.mark.slow
def test_same_scores_as_sequential_autograde(runs):
    seq, par = classroom.scores(runs["seq"], A), classroom.scores(runs["par"], A)
    assert set(seq) == set(GRADED)
    assert {s: par.get(s) for s in GRADED} == seq
    assert seq["solution"] == (3.0, 4.0), seq  # CPU: all but the speed point
    cells = {s: classroom.cell_scores(runs["seq"], A, s) for s in GRADED}
    # the four differ cell by cell, so results merged under the wrong student would show
    assert len({tuple(sorted(c.items())) for c in cells.values()}) == len(GRADED), cells
    for s in GRADED:
        assert classroom.cell_scores(runs["par"], A, s) == cells[s], s


@pytest.mark.slow
def test_gradebook_rows_as_nbgrader_writes_them(runs):
    for s in GRADED:
        assert _gradebook_rows(runs["par"], s) == _gradebook_rows(runs["seq"], s), s


@pytest.mark.slow
def test_feedback_and_export_work_unchanged(runs):
    par = runs["par"]
    with ThreadPoolExecutor(3) as pool:  # three single-threaded nbgrader commands share the cores
        feedback = pool.submit(classroom.nbgrader, par, "generate_feedback", A)
        exports = pool.submit(_export, par), pool.submit(_export, runs["seq"])
        feedback.result()
    for s in GRADED:
        page = par / "feedback" / s / A / f"{A}.html"
        assert page.exists(), s
        assert "trusted grader" in page.read_text()
    assert not (par / "feedback" / ".cohort-logs").exists()  # the logs are no student
    par_rows, seq_rows = exports[0].result(), exports[1].result()
    # the hand-in whose jobs were killed and timed out is listed, flagged, never a 0 (issue 33)
    hang = [r for r in par_rows if r["student_id"] == "hang"]
    assert len(hang) == 1 and hang[0]["status"].startswith("NOT GRADED") and hang[0]["score"] == "", hang
    assert [r for r in par_rows if r["student_id"] != "hang"] == seq_rows


@pytest.mark.slow
def test_jobs_ran_in_parallel_on_both_workers(runs):
    first = runs["first"]["report"]["results"]
    assert {r["worker"] for r in first} == {"cpu0", "cpu1"}
    spans = sorted((r["start"], r["start"] + r["seconds"]) for r in first)
    assert any(b0 < a1 for (_, a1), (b0, _) in zip(spans, spans[1:])), spans  # two jobs overlapped


@pytest.mark.slow
def test_killed_job_costs_only_its_submission(runs):
    first, par = runs["first"], runs["par"]
    assert first["killed"], "the hang's job was never seen running"
    by = {r["student"]: r for r in first["report"]["results"]}
    assert by["hang"]["status"] == "killed", by["hang"]
    assert all(by[s]["status"] == "graded" for s in GRADED), by
    assert first["rc"] == 1  # a failure is reported in the exit code
    assert not (par / "autograded" / "hang").exists()
    assert "hang" not in classroom.scores(par, A)
    assert "killed" in (par / "autograded" / ".cohort-logs" / A / "hang.log").read_text()


@pytest.mark.slow
def test_rerun_skips_what_is_done_and_times_out_a_hang(runs):
    rerun = runs["rerun"]
    rep = rerun["report"]
    assert sorted(rep["skipped"]) == GRADED
    assert [(r["student"], r["status"]) for r in rep["results"]] == [("hang", "timed out")]
    assert rep["results"][0]["seconds"] < 60
    assert rerun["rc"] == 1


@pytest.mark.slow
def test_progress_and_summary(runs):
    first = runs["first"]
    assert "cpu0:" in first["stderr"] and "cpu1:" in first["stderr"] and "4/4 done" in first["stderr"], first["stderr"]
    out = first["stdout"]
    for needle in ("| submissions | 4: 3 graded now, 0 already done", "| failures | 1 |", "| time per submission |",
                   "| worker-hours (emulator) |", '| cpu0 | "" (no GPU: the emulator) |', "- hang: killed"):
        assert needle in out, (needle, out)
    print(f"\nsequential nbgrader autograde of {len(GRADED)}: {runs['seq_seconds']:.1f} s; cohort (4 with the "
          f"hang, 2 workers, beside it): {runs['first']['report']['wall_seconds']:.1f} s")


# ------------------------------------------------------------------ jobs per GPU measured (issue #37)
@pytest.fixture(scope="module")
def auto_run(tmp_path_factory):
    """The cohort's `--jobs-per-gpu auto` path through the real pipeline, on CPU: two emulator
    workers stand in for one GPU's workers (a GPU's group), so its first submission is graded
    alone, its figures choose how many of the two grade the rest."""
    import io

    work = tmp_path_factory.mktemp("cohort-auto")
    subs = _submissions(work / "subs")
    course = classroom.new_course(work / "course")
    classroom.release(course, A)
    for name in GRADED:
        classroom.submit(course, name, A, [subs[name]])
    engine = cohort.LocalEngine([], 2)
    engine.auto, engine.groups = True, {"emu": list(engine.labels)}
    out = io.StringIO()
    try:
        results, _, _ = cohort.autograde(cohort.load_course(course), A, engine=engine, out=out, timeout=300)
    finally:
        engine.close()
    return dict(course=course, results=results, out=out.getvalue(), choice=engine.choice, labels=engine.labels)


@pytest.mark.slow
def test_auto_jobs_per_gpu_measures_first_then_grades_the_rest(auto_run, runs):
    from grader.classroom import cohort_concurrency as cc

    results, choice = auto_run["results"], auto_run["choice"]
    assert sorted((r["student"], r["status"]) for r in results) == [(s, "graded") for s in GRADED], results
    first, *rest = sorted(results, key=lambda r: r["start"])
    assert first["worker"] == "cpu0"  # the group's first worker
    assert all(r["start"] >= first["start"] + first["seconds"] - 0.5 for r in rest), results  # it ran alone
    assert choice["measured"] and choice["submissions"] == 1 and 1 <= choice["n"] <= 2, choice
    assert choice["seconds"] > 0 and choice["cpu"] > 0 and choice["memory"] > 50 * 2 ** 20, choice
    assert auto_run["labels"] == ["cpu0", "cpu1"][:choice["n"]]
    assert {r["worker"] for r in rest} <= set(auto_run["labels"]), results
    assert f"cohort: jobs per GPU: {cc.describe(choice)}" in auto_run["out"], auto_run["out"]
    # every score as plain nbgrader's (the sequential course of `runs`)
    assert classroom.scores(auto_run["course"], A) == classroom.scores(runs["seq"], A)
    for s in GRADED:
        assert classroom.cell_scores(auto_run["course"], A, s) == classroom.cell_scores(runs["seq"], A, s), s


@pytest.mark.slow
def test_jobs_report_what_they_used(runs):
    graded = [r for r in runs["first"]["report"]["results"] if r["status"] == "graded"]
    assert graded and all(r["cpu_seconds"] > 0.5 and r["peak_memory"] > 50 * 2 ** 20 for r in graded), graded
    assert all("phases" not in r for r in runs["first"]["report"]["results"])  # they go to TC_PHASES, if named


# ------------------------------------------------------------------ sharing a GPU fairly (issue #28)
LOCK_CHILD = r"""
import json, os, sys, time
from grader.runtime import gpulock, timing

spans, me = [], sys.argv[1]

def fake_bench(f, **kw):  # a timed call: what the lock must keep apart from every other job's GPU work
    t0 = time.time(); time.sleep(0.05); spans.append(("X", me, t0, time.time()))
    return timing.Timing(timing.np.asarray([1.0, 1.0, 1.0]), flushed=False)

for _ in range(2):
    with gpulock.held(exclusive=False):  # untimed GPU work (a correctness run, a notebook's execution)
        t0 = time.time(); time.sleep(0.15); spans.append(("S", me, t0, time.time()))
        timing.paired(lambda: None, lambda: None, rounds=2, bench=fake_bench)  # converts to exclusive
        t0 = time.time(); time.sleep(0.05); spans.append(("S", me, t0, time.time()))
json.dump(spans, sys.stdout)
"""


def _lock_spans(tmp_path, lock: str | None, n: int = 3) -> list:
    env = dict(os.environ, PYTHONPATH=str(classroom.ROOT))
    env.pop("TC_GPU_LOCK", None)
    if lock:
        env["TC_GPU_LOCK"] = lock
    procs = [subprocess.Popen([sys.executable, "-c", LOCK_CHILD, f"job{i}"], env=env, stdout=subprocess.PIPE, text=True)
             for i in range(n)]
    spans = []
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        spans += json.loads(out)
    return spans


def _overlaps(spans) -> list:
    """Pairs of spans of different jobs that overlap, where at least one is a timed (X) span."""
    bad = []
    for a in spans:
        for b in spans:
            if a[1] < b[1] and "X" in (a[0], b[0]) and a[2] < b[3] and b[2] < a[3]:
                bad.append((a, b))
    return bad


def test_gpu_lock_keeps_timed_runs_apart(tmp_path):
    """Real processes (as the jobs sharing a GPU are): with the cohort's lock, no timed call of one
    overlaps any GPU work of another; without it (plain nbgrader) nothing is locked."""
    from grader.runtime import gpulock

    lock = gpulock.lock_file(tmp_path / "locks", "GPU-0")
    assert oct(os.stat(lock).st_mode & 0o777) == "0o644"  # a sandbox's uid opens it read-only
    locked = _lock_spans(tmp_path, lock)
    assert sum(s[0] == "X" for s in locked) == 3 * 2 * 4
    assert not _overlaps(locked), _overlaps(locked)[:3]
    shared = [(a, b) for a in locked for b in locked if a[1] < b[1] and a[0] == b[0] == "S"
              and a[2] < b[3] and b[2] < a[3]]
    assert shared, "untimed GPU work of two jobs never ran at once: the shared mode serialised it"
    assert _overlaps(_lock_spans(tmp_path, None)), "without TC_GPU_LOCK the jobs should not wait for each other"


def test_gpu_lock_reaches_into_the_sandbox(tmp_path):
    """The trusted grader runs in a sandbox: the lock file bound into it (read-only) is the same
    lock (flock follows the file across bind mounts)."""
    import fcntl

    from grader.runtime import gpulock, sandbox

    try:
        sandbox.self_test()
    except Exception as e:
        pytest.skip(f"no sandbox here: {e}")
    lock = gpulock.lock_file(tmp_path / "locks", "0")
    probe = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
             "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('got it')\n"
             "except BlockingIOError:\n    print('busy')\n")
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # a job's untimed GPU work, outside
        box = sandbox.Box(readable=[lock])
        try:
            r = subprocess.run(box.argv([sys.executable, "-I", "-S", "-c", probe, lock]), capture_output=True,
                               text=True, timeout=60)
        finally:
            box.close()
    finally:
        os.close(fd)
    assert r.stdout.strip() == "busy", (r.stdout, r.stderr[-2000:])


def test_summary_states_plain_nbgrader_time_not_its_own_jobs():
    results = [dict(student=f"s{i}", status="graded", seconds=30.0, worker=f"gpu{i % 2}", device=str(i % 2),
                    start=100.0 + i) for i in range(8)]
    logs = Path("/nonexistent")
    text = cohort.summary("03-cuda-core-gemm", results, [], 100.0, ["gpu0", "gpu1"], True, logs,
                          baseline=dict(seconds=24.6, source="--baseline-seconds"), command_wall=110.0, n_gpus=2)
    assert "over one job at a time" not in text
    assert "| plain `nbgrader autograde`, one GPU | 24.6 s per submission (--baseline-seconds)" in text
    assert "| speed-up over plain nbgrader | 1.79x on 2 GPU(s) |" in text  # 8 x 24.6 / 110
    assert "13.8 s of wall time (110 s / 8)" in text
    text = cohort.summary("03-cuda-core-gemm", results, [], 100.0, ["gpu0", "gpu1"], True, logs)
    assert "not stated: no plain `nbgrader autograde` time given" in text


def test_baseline_recorded_per_assignment_and_gpu(tmp_path, small_course):
    course = cohort.load_course(small_course)
    f = tmp_path / "baseline.json"
    f.write_text(json.dumps({A: {"NVIDIA H200": {"seconds_per_submission": 24.6, "submissions": 8},
                                 "NVIDIA H100 80GB HBM3": {"seconds_per_submission": 30.1}}}))
    assert cohort.load_baseline(str(f), course, A, "NVIDIA H100 80GB HBM3")["seconds"] == 30.1
    assert cohort.load_baseline(str(f), course, A, "NVIDIA H200")["seconds"] == 24.6
    assert cohort.load_baseline("12.5", course, A, None) == dict(seconds=12.5, source="--baseline-seconds")
    assert cohort.load_baseline(None, course, A, None) is None  # nothing recorded in the course


def test_phase_times_summarised():
    from grader.classroom import phases

    rows = [dict(phase=phases.STARTUP, seconds=3.0, student="*")]
    for st, ex in (("a", 4.0), ("b", 6.0)):
        rows += [dict(phase=phases.SETUP, seconds=0.5, student=st),
                 dict(phase=phases.EXECUTE, seconds=ex, student=st, notebook="n"),
                 dict(phase=phases.TRUSTED, seconds=10.0, student=st, notebook="n"),
                 dict(phase="trusted: timed runs", seconds=4.0, student=st, notebook="n"),
                 dict(phase="notebook (total)", seconds=ex + 11.0, student=st, notebook="n")]
    s = phases.summarise(rows)
    assert s["students"] == 2 and s["startup"] == [3.0]
    med = s["per_submission"]
    assert med[phases.EXECUTE] == 5.0 and med[phases.OTHER] == 1.0
    assert med["trusted: the rest (sandbox, I/O, waits)"] == 6.0
    assert "| trusted grading (total) | 10.00 |" in phases.table(s)


def test_kernel_process_tells_its_parent_about_a_lock_wait(tmp_path, monkeypatch):
    """A wait for another job's timed run is no step's time: the kernel process says when it
    starts waiting and when it holds the lock (grader.checking.isolate), so its parent neither
    times the check out meanwhile nor counts the wait as compiling or timing."""
    from grader.checking import isolate
    from grader.runtime import gpulock

    class Conn:
        sent: list = []

        def send(self, msg):
            self.sent.append(msg)

    monkeypatch.delenv("TC_GPU_LOCK", raising=False)
    with isolate._locked(Conn(), exclusive=True):
        pass
    assert Conn.sent == []  # plain nbgrader: no lock, the protocol unchanged
    monkeypatch.setenv("TC_GPU_LOCK", gpulock.lock_file(tmp_path, "0"))
    with isolate._locked(Conn(), exclusive=True) as waited:
        assert [m[0] for m in Conn.sent] == ["waiting", "clock"] and waited >= 0


def test_a_notebook_sharing_its_gpu_gets_a_share_of_its_memory(monkeypatch):
    """Cohort jobs on one GPU (TC_GPU_LOCK set): each sandboxed notebook's CuPy pool stops at a
    share of the GPU (CUPY_GPU_MEMORY_LIMIT), so a careless notebook cannot take what a neighbour's
    trusted pass needs; alone on its GPU (plain nbgrader) a notebook is not limited. Its caches stay
    in its scratch folder either way."""
    from grader.classroom.sandbox_kernel import NOTEBOOK_GPU_MEMORY, notebook_env

    monkeypatch.delenv("TC_GPU_LOCK", raising=False)
    alone = notebook_env("/tmp/tc-scratch", "/shared")
    assert "CUPY_GPU_MEMORY_LIMIT" not in alone and alone["CUPY_CACHE_DIR"].startswith("/tmp/tc-scratch")
    monkeypatch.setenv("TC_GPU_LOCK", "/tmp/locks/gpu-0.lock")
    shared = notebook_env("/tmp/tc-scratch", "/shared")
    share = shared["CUPY_GPU_MEMORY_LIMIT"]
    assert share == NOTEBOOK_GPU_MEMORY and share.endswith("%") and 2 * float(share[:-1]) < 100
    monkeypatch.setenv("TC_NOTEBOOK_GPU_MEMORY", "25%")
    assert notebook_env("/tmp/tc-scratch", "/shared")["CUPY_GPU_MEMORY_LIMIT"] == "25%"


@pytest.mark.gpu
def test_on_the_gpu_cupy_stops_a_notebook_at_its_share():
    """What the share above relies on, on a real GPU: CuPy with CUPY_GPU_MEMORY_LIMIT at the
    notebook's share refuses an array of more than that share (OutOfMemoryError in the notebook,
    its own error), and gives one under it."""
    import subprocess
    import sys

    from grader.classroom.sandbox_kernel import NOTEBOOK_GPU_MEMORY

    share = float(NOTEBOOK_GPU_MEMORY[:-1]) / 100
    code = ("import cupy as cp\n"
            "total = cp.cuda.Device().mem_info[1]\n"
            f"a = cp.empty(int(total * {share} * 0.8), cp.uint8); del a\n"
            "try:\n"
            f"    b = cp.empty(int(total * {share} * 1.2), cp.uint8); print('given')\n"
            "except cp.cuda.memory.OutOfMemoryError:\n"
            "    print('refused')\n")
    env = dict(os.environ, CUPY_GPU_MEMORY_LIMIT=NOTEBOOK_GPU_MEMORY)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "refused", (out.stdout, out.stderr[-2000:])


def test_a_student_id_cannot_break_the_summarys_table_or_add_markup(tmp_path):
    """A student id is a folder name: '|', a line break or HTML in it must stay one cell's text."""
    from grader.classroom.cohort_report import summary

    sid = "eve|x\n## graded 3/3 <img src=x onerror=alert(1)> `y`"
    results = [dict(student=sid, status="failed", why="see <b>log</b>\n| forged |", seconds=5.0, worker="cpu0",
                    device="")]
    text = summary("01-memory-layout", results, [], 5.0, ["cpu0"], False, tmp_path)
    rows = [ln for ln in text.splitlines() if ln.startswith("| time per submission")]
    assert len(rows) == 1 and rows[0].count("|") == 3, rows  # the id did not split the cell
    assert "\n## graded" not in text and "<img" not in text and "<b>" not in text and "`y`" not in text
    fail = [ln for ln in text.splitlines() if ln.startswith("- ")]
    assert len(fail) == 1 and "eve" in fail[0] and "&lt;img" in fail[0], fail
