"""A check that is stopped leaves nothing behind (issue 39): every process it started is ended
and reaped, none is handed to pid 1, and the verdict says it was stopped. On the CPU the
emulator's runner (which forks workers, in a session of its own) hangs like a GPU kernel does.

Each case runs in a fresh interpreter that is a child subreaper (PR_SET_CHILD_SUBREAPER): any
process that escaped the stop is handed to it instead of to pid 1, and is listed afterwards.
The GPU's own case (the CUDA context freed, the GPU idle again) is `.ci/gpu-accept hang`.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from grader.classroom.hang import SPIN, _inject
from grader.runtime import kernels, sandbox

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process trees are read from /proc")

SCRIPT = r"""
import ctypes, json, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # escaped orphans come here, not to pid 1
import numpy as np
from grader.checking import exercises, isolate
from grader.checking.check import check
from grader.runtime import proctree

src, how = sys.argv[1], sys.argv[2]
t0 = time.monotonic()
if how == "check":  # the emulator's own limit stops the runner (grader.emu.launch, sandbox.run)
    v = check("wmma-gemm", src, backend="emu", case_timeout=4.0, speed=False)
    said = [i.message for i in v.items if i.status == "fail"]
else:  # the kernel process's limit stops the kernel process while its runner still spins
    ex = exercises.get("wmma-gemm")
    case = ex.problem.make(ex.cpu_sizes[0], np.random.default_rng(1), {})
    job = dict(exercise=ex.id, source=src, backend="emu", options=ex.problem.options({}), kernel=ex.kernel,
               cases=[case.job()], race_check=False, launch={}, perf=False, case_timeout=120.0)
    res = isolate.run(job, compile_timeout=240, case_timeout=float(sys.argv[3]))
    said = [res["error"].message] if res["error"] is not None else []
seconds = time.monotonic() - t0
time.sleep(0.5)
left = []
for p in proctree.descendants(os.getpid()):
    try:
        stat = open(f"/proc/{p}/stat").read()
    except OSError:
        continue
    left.append(stat[:stat.rfind(")") + 3])
print(json.dumps(dict(said=said, seconds=seconds, left=left)))
"""


def _run(how: str, *extra: str, sandboxed: bool = False) -> dict:
    src = _inject(kernels.source("wmma_gemm_naive"), "wmma_gemm", SPIN)
    env = dict(os.environ, TC_SANDBOX="1" if sandboxed else "0")
    r = subprocess.run([sys.executable, "-c", SCRIPT, src, how, *extra], capture_output=True, text=True,
                       timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandboxed"])
def test_emulator_stop_leaves_no_process(sandboxed):
    """The emulator's limit stops a kernel that never ends: the runner and its forked workers (in
    the autograder, inside the sandbox's own pid namespace) are ended and reaped (no zombie), and
    the verdict says the kernel was stopped."""
    if sandboxed:
        sandbox.require()
    got = _run("check", sandboxed=sandboxed)
    assert got["left"] == [], got
    assert any("did not finish within" in m for m in got["said"]), got["said"]


@pytest.mark.slow
def test_kernel_process_stop_ends_its_whole_tree():
    """The kernel process's own deadline passes while the emulator's runner (in a session of its
    own, with forked workers) still spins: the whole tree is ended and reaped, and the verdict
    says it was stopped and that its processes ended."""
    got = _run("isolate", "8")
    assert got["left"] == [], got
    assert got["said"] and "stopped" in got["said"][0] and "were ended" in got["said"][0], got["said"]
    assert got["seconds"] < 60, got


def test_a_finished_sandbox_leaves_no_zombie():
    """bwrap answers with the command's status before the sandbox's init in its pid namespace has
    ended; that init, orphaned, went to pid 1 (seen <defunct> for good on a GPU machine): the
    sandbox's launcher reaps it, so a sandbox that finished leaves no process at all."""
    sandbox.require()
    script = (SCRIPT.split("src, how")[0] + "from grader.runtime import sandbox\n"
              "with sandbox.Box() as box:\n"
              "    code, out, err, why = sandbox.run([sys.executable, '-I', '-c', 'print(7)'], timeout=60, box=box)\n"
              "time.sleep(0.5)\n"
              "print(json.dumps(dict(out=out, left=[open(f'/proc/{p}/stat').read()[:40] "
              "for p in proctree.descendants(os.getpid())])))\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["out"].strip() == "7" and got["left"] == [], got


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("name", ["spin", "illegal"])
def test_on_the_gpu_a_stopped_or_faulting_kernel_frees_the_gpu(name):
    """On a GPU (`.ci/gpu-accept hang` measures every scenario): a kernel that never ends is stopped
    at its 20 s limit and one that faults fails at once; either way every process that held its
    CUDA context is gone within seconds of the verdict, the GPU idle, no zombie, 0 points."""
    # in a process of its own, as the hang step runs it: this pytest process holds a CUDA context
    # of its own from earlier GPU tests, which the watch (nvidia-smi names host pids in a
    # container, not ours) would count as the GPU still busy (4 H200s, 2026-11-28: idle_s None)
    r = subprocess.run([sys.executable, "-c", "import json, sys; from grader.classroom import hang; "
                        "print(json.dumps(hang.scenario(sys.argv[1], *hang.sources()[sys.argv[1]]), default=str))", name],
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    r = json.loads(r.stdout.strip().splitlines()[-1])
    assert r["score"] == 0 and r["says_stopped"], r
    assert r["verdict_s"] < 45, r  # 20 s limit + start-up; was 100-160 s before issue 39
    assert r["idle_s"] is not None and r["idle_s"] < 10 and not r["zombies"], \
        {k: r.get(k) for k in ("idle_s", "procs", "util", "zombies", "verdict_s")}


def test_the_idle_watch_looks_at_its_own_gpu_only(tmp_path, monkeypatch):
    """.ci/gpu-accept runs its steps at once, one GPU each: the hang step's "idle GPU" must be
    its own (CUDA_VISIBLE_DEVICES), not a neighbour's busy one. A stand-in nvidia-smi answers
    a busy process on GPU 1 only."""
    from grader.classroom import hang

    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\ncase "$*" in\n'
                   '  *"-i 1"*query-compute-apps*) echo "4242, 900" ;;\n'
                   '  *"-i 1"*utilization*) echo 97 ;;\n'
                   '  *"-i 0"*) echo 0 ;;\n'
                   '  *query-compute-apps*) echo "4242, 900" ;;\n'
                   '  *) printf "0\\n97\\n" ;;\nesac\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    mine = hang.gpu_state()
    assert mine["procs"] == {} and mine["util"] == 0, mine
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert hang.gpu_state()["procs"] == {4242: "900"}
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    every = hang.gpu_state()
    assert every["procs"] == {4242: "900"} and every["util"] == 97, every


def test_the_idle_watch_leaves_out_what_held_the_gpu_before_the_scenario(tmp_path, monkeypatch):
    """The caller's own CUDA context (a pytest process that ran GPU tests before) was on the GPU
    before the scenario and stays after it: not the scenario's, so not 'busy'. nvidia-smi names host
    pids in a container, so the caller's pid cannot leave it out (4 H200s, 2026-11-28: idle_s None,
    with the pytest process's context listed). A process that came during the scenario still counts."""
    from grader.classroom import hang

    listed = tmp_path / "apps"
    listed.write_text("25566, 1816\n")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\ncase "$*" in\n  *query-compute-apps*) cat {listed} ;;\n  *) echo 0 ;;\nesac\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(hang, "IDLE_WAIT", 1.5)
    before = hang.gpu_state()
    assert set(before["procs"]) == {25566}
    assert hang.wait_idle(time.monotonic(), dict(zombies=[], procs={}))["idle_s"] is None  # the old watch: busy for good
    got = hang.wait_idle(time.monotonic(), before)
    assert got["idle_s"] is not None and got["procs"] == {}, got
    listed.write_text("25566, 1816\n50703, 586\n")  # a process the scenario left behind
    got = hang.wait_idle(time.monotonic(), before)
    assert got["idle_s"] is None and got["procs"] == {50703: "586"}, got


@pytest.mark.gpu
@pytest.mark.slow
def test_on_the_gpu_a_kernel_that_prints_costs_nothing_but_its_speed():
    """A printf left in one thread of every block of a correct transpose (16k lines a launch at
    2048 x 4096): its correctness runs still pass, its timed launches' output is thrown away
    (isolate._discard_output), and the check ends without being stopped for time or disk (before,
    thousands of timed launches could print GBs into the file the parent reads, and the trusted
    pass's disk limit stopped the whole notebook)."""
    import time

    from grader.checking.check import check
    from grader.checking.exercises import EXERCISES

    ex = EXERCISES["transpose"]
    src = _inject(kernels.source(ex.reference), ex.kernel,
                  'if (threadIdx.x == 0 && threadIdx.y == 0) printf("block %d,%d\\n", blockIdx.x, blockIdx.y);')
    t0 = time.monotonic()
    v = check(ex.id, src, backend="gpu")
    assert time.monotonic() - t0 < 120, v.text()
    assert v.score >= ex.points_correct and "stopped" not in v.text(), v.text()
    assert "block " in v.stdout  # what its correctness runs printed was kept


@pytest.mark.gpu
@pytest.mark.slow
def test_on_the_gpu_a_printf_in_every_thread_is_named_if_it_is_stopped():
    """A printf in every thread: on an H100 (2026-11-27) the 8M-thread case was stopped at its 20 s
    limit under a hint about loops only. Passing is fine; stopped, the hint must name the printing."""
    from grader.checking.check import check
    from grader.checking.exercises import EXERCISES

    ex = EXERCISES["transpose"]
    src = _inject(kernels.source(ex.reference), ex.kernel,
                  'printf("thread %d,%d of block %d,%d\\n", threadIdx.x, threadIdx.y, blockIdx.x, blockIdx.y);')
    v = check(ex.id, src, backend="gpu")
    if "stopped" in v.text():
        assert "printed" in v.text() and "one thread" in v.text(), v.text()
    else:
        assert v.score >= ex.points_correct, v.text()


def test_a_stopped_kernel_that_printed_is_told_about_its_printing():
    """The hint a stopped kernel gets when it printed: its amount, the printf, one thread, and still
    the loop hint (a kernel may both print and never end)."""
    from grader.checking.isolate import printed_hint
    from grader.runtime.errors import KernelTimeout

    big, small = printed_hint(33_500_000), printed_hint(2_000)
    assert "33.5 MB" in big and "2000 bytes" in small
    for h in (big, small):
        assert "printf" in h and "one thread" in h
        assert KernelTimeout.hint[1:] in h  # the loop hint kept, after the printing one


def test_the_zombie_watch_counts_its_own_zombies_only(monkeypatch):
    """The steps of .ci/gpu-accept share one machine: a zombie whose parent is another job's
    (a child its busy parent has not reaped yet) is not this scenario's; one of its own, or one
    orphaned to pid 1, is. (4 H200s, 2026-11-28: the illegal-address test failed on a neighbour's.)"""
    from grader.classroom import hang

    kid = os.fork()
    if kid == 0:
        os._exit(0)
    try:
        for _ in range(100):  # until it is <defunct>
            if open(f"/proc/{kid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
                break
            time.sleep(0.02)
        own = [z for z in hang.zombies() if z.startswith(f"{kid} ")]
        assert own, "the child did not become a zombie"
        neighbour, orphan = "777777 999999 python3", "777778 1 bwrap"
        monkeypatch.setattr(hang, "gpu_state", lambda ignore=(): dict(procs={}, util=0, zombies=[*own, neighbour, orphan]))
        got = hang.wait_idle(time.monotonic(), dict(zombies=[], procs={}))
        assert got["idle_s"] is not None
        assert set(got["zombies"]) == {*own, orphan}, got["zombies"]
    finally:
        os.waitpid(kid, 0)
