"""Jobs per GPU from a measurement (grader.classroom.cohort_concurrency, issue #37): the choice
from a submission's measured figures, its caps, the line the summary shows, and the command
line. The cohort's run that measures (its first submissions graded alone, then the rest) is
tested through the real pipeline in tests/classroom/test_cohort.py (test_auto_jobs_per_gpu_*)."""
import subprocess
import sys
import time

import pytest

from grader.checking import compile_cache, isolate
from grader.classroom import cohort, phases
from grader.classroom import cohort_concurrency as cc
from grader.classroom.cohort_job import Usage

GiB = 2 ** 30
PLENTY = 100 * GiB


def fig(seconds=36.0, exclusive=9.0, cpu=30.0, memory=1.5 * GiB):
    return cc.Figures(seconds=seconds, exclusive=exclusive, cpu=cpu, memory=memory, submissions=2)


def test_gpu_bound_submission_gets_one_job_per_gpu():
    c = cc.choose(fig(seconds=30.0, exclusive=29.0, cpu=2.0), cores_per_gpu=32, memory_per_gpu=PLENTY)
    assert c["n"] == 1 and c["limit"] == "GPU"


def test_gpu_share_sets_the_jobs_when_cores_are_plenty():
    # the GPU held alone a quarter of the time: four jobs fill it, a fifth would only wait
    c = cc.choose(fig(seconds=36.0, exclusive=9.0, cpu=20.0), cores_per_gpu=32, memory_per_gpu=PLENTY)
    assert c["n"] == 4 and c["limit"] == "GPU"
    # a little over a whole number does not start one more job
    assert cc.choose(fig(seconds=30.5, exclusive=10.0, cpu=5.0), 32, PLENTY)["n"] == 3
    assert cc.choose(fig(seconds=32.0, exclusive=10.0, cpu=5.0), 32, PLENTY)["n"] == 4


def test_cpu_bound_submission_gets_more_jobs_with_more_cores():
    light_gpu = fig(seconds=40.0, exclusive=1.0, cpu=40.0)  # one core busy the whole time, the GPU barely
    got = {k: cc.choose(light_gpu, cores_per_gpu=k, memory_per_gpu=PLENTY, upper=64) for k in (1, 2, 4, 8, 16)}
    assert [got[k]["n"] for k in (1, 2, 4, 8, 16)] == [1, 2, 4, 8, 16]
    assert all(got[k]["limit"] == "CPU" for k in (2, 4, 8, 16))
    # two cores busy per submission: half as many jobs as cores
    assert cc.choose(fig(seconds=40.0, exclusive=1.0, cpu=80.0), 16, PLENTY, upper=64)["n"] == 8


def test_capped_by_cores_memory_and_workers_started():
    no_gpu_no_cpu = fig(seconds=40.0, exclusive=0.0, cpu=1.0, memory=2 * GiB)
    c = cc.choose(no_gpu_no_cpu, cores_per_gpu=3, memory_per_gpu=PLENTY, upper=64)
    assert (c["n"], c["limit"]) == (3, "cores per GPU")
    c = cc.choose(no_gpu_no_cpu, cores_per_gpu=32, memory_per_gpu=10 * GiB, upper=64)  # 80% of 10 GiB / 2 GiB
    assert (c["n"], c["limit"]) == (4, "memory")
    c = cc.choose(no_gpu_no_cpu, cores_per_gpu=32, memory_per_gpu=1 * GiB, upper=64)  # not even one fits: still one
    assert c["n"] == 1
    c = cc.choose(no_gpu_no_cpu, cores_per_gpu=32, memory_per_gpu=PLENTY, upper=6)
    assert (c["n"], c["limit"]) == (6, "workers started")
    assert cc.most(16) == min(cc.MOST, 16) and cc.most(0.5) == 1 and cc.most(2) == 2


def test_nothing_measured_takes_the_default_and_says_why():
    c = cc.choose(None, cores_per_gpu=16, memory_per_gpu=PLENTY, upper=8, why_none="none graded within 120 s")
    assert c["n"] == cc.FALLBACK and not c["measured"]
    assert cc.describe(c) == f"{cc.FALLBACK} (not measured: none graded within 120 s; {cc.FALLBACK}, the default)"
    assert cc.choose(None, 16, PLENTY, upper=1)["n"] == 1  # never more than the workers started


def _result(student, status="graded", whole=40.0, timed=10.0, setup=4.0, cpu=25.0, memory=GiB):
    rows = [dict(phase=phases.STARTUP, seconds=0.5, student=student),
            dict(phase=phases.EXECUTE, seconds=14.0, student=student, notebook="n"),
            dict(phase="trusted: " + isolate.HELD_ALONE, seconds=timed, student=student, notebook="n"),
            dict(phase="trusted: " + isolate.SHARED_SETUP, seconds=setup, student=student, notebook="n"),
            dict(phase="trusted: correctness runs", seconds=0.5, student=student, notebook="n"),
            dict(phase=phases.WHOLE, seconds=whole, student=student)]
    return dict(student=student, status=status, seconds=whole + 3.0, cpu_seconds=cpu, peak_memory=memory,
                phases=rows)


def test_figures_are_medians_of_the_graded_first_jobs():
    results = [_result("a", whole=40.0, timed=6.0, cpu=20.0), _result("b", whole=30.0, timed=2.0, cpu=30.0),
               _result("c", whole=50.0, timed=10.0, cpu=40.0, memory=3 * GiB),
               _result("d", status="timed out", whole=999.0), dict(student="e", status="lost", seconds=0.0)]
    f = cc.figures(results)
    # E: the timed rounds alone (6, 2, 10 s); their set-up ran with the GPU shared and is not counted
    assert (f.seconds, f.exclusive, f.cpu, f.memory, f.submissions) == (40.0, 6.0, 30.0, GiB, 3)
    # the whole run's record is the job's time; without it, the job's own seconds
    no_whole = _result("a")
    no_whole["phases"] = [p for p in no_whole["phases"] if p["phase"] != phases.WHOLE]
    assert cc.figures([no_whole]).seconds == 43.0
    assert cc.figures([_result("x", status="failed"), dict(student="y", status="graded", seconds=3.0)]) is None
    # the run's compile cache filled while the first submission waited: once, not its steady cost
    filled = _result("a")
    filled["phases"].append(dict(phase="trusted: " + compile_cache.PHASE, seconds=25.0, student="a", notebook="n"))
    assert cc.figures([filled]).seconds == 40.0 - 25.0


def test_summary_and_phases_say_how_many_and_from_what():
    c = cc.choose(cc.figures([_result("a"), _result("b")]), cores_per_gpu=16, memory_per_gpu=60 * GiB)
    line = cc.describe(c)
    assert c["n"] == 4  # 40 s a submission, 10 s of it holding the GPU alone
    for part in ("4 (measured on 2 submission(s) graded alone on a GPU", "GPU held 25% of a 40.0 s submission",
                 "25.0 CPU-s of it (0.6 cores busy), 16 cores per GPU", "1.0 GiB per job of 60 GiB available per GPU",
                 "limited by: GPU", "jobs per GPU each bound allows: GPU 4.0, CPU 25.6"):
        assert part in line, (part, line)
    # a cap below the bounds (the workers started) says how far the bounds would have gone
    capped = cc.describe(cc.choose(cc.figures([_result("a"), _result("b")]), cores_per_gpu=16,
                                   memory_per_gpu=60 * GiB, upper=2))
    assert "2 (measured" in capped and "limited by: workers started; jobs per GPU each bound allows: GPU 4.0" in capped, capped
    results = [dict(student=f"s{i}", status="graded", seconds=30.0, worker=f"gpu0.{i % 4 + 1}", device="0",
                    start=100.0 + i) for i in range(8)]
    text = cohort.summary("03-cuda-core-gemm", results, [], 100.0, ["gpu0.1", "gpu0.2", "gpu0.3", "gpu0.4"], True,
                          None, n_gpus=1, jobs_per_gpu=c)
    assert f"| jobs per GPU | {line} |" in text
    assert "| wall time | 1m40s on 1 GPU(s), 4 job(s) at a time: gpu0.1, gpu0.2, gpu0.3, gpu0.4 |" in text
    text = cohort.summary("03-cuda-core-gemm", results, [], 100.0, ["gpu0.1"], True, None,
                          jobs_per_gpu=dict(n=3, given=True))
    assert "| jobs per GPU | 3 (--jobs-per-gpu 3) |" in text


def test_command_line_takes_auto_or_a_number():
    ap = cohort.parser()
    assert ap.parse_args(["autograde", "03"]).jobs_per_gpu == "auto"  # the default
    assert ap.parse_args(["autograde", "03", "--jobs-per-gpu", "auto"]).jobs_per_gpu == "auto"
    assert ap.parse_args(["autograde", "03", "--jobs-per-gpu", "3"]).jobs_per_gpu == 3
    for bad in ("0", "-1", "two", "2.5"):
        with pytest.raises(SystemExit):
            ap.parse_args(["autograde", "03", "--jobs-per-gpu", bad])
    r = subprocess.run([sys.executable, "-m", "grader.classroom.cohort", "autograde", "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "--jobs-per-gpu auto|N" in r.stdout, r.stdout


def test_usage_adds_up_the_memory_of_a_jobs_processes():
    # a parent holding ~64 MB and a child holding ~64 MB: the peak counts both
    code = ("import subprocess, sys, time\nb = bytearray(64 << 20)\n"
            "subprocess.run([sys.executable, '-c', 'import time; b = bytearray(64 << 20); time.sleep(3)'])\n")
    p = subprocess.Popen([sys.executable, "-c", code])
    u = Usage()
    try:
        t0 = time.time()
        while p.poll() is None and time.time() - t0 < 30:
            u.sample(p.pid)
            time.sleep(0.2)
    finally:
        p.wait()
    assert u.peak > 128 * 2 ** 20, u.peak
    Usage().sample(p.pid)  # a process that is gone: no error
