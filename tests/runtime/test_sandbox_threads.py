"""The process limit on a many-core host (found on 4 H200s, 2026-11-28, .ci/gpu-accept safety):
RLIMIT_NPROC counts threads. As an ordinary user the grader's own threads were counted as one per
process, so the limit fell below what the user already had and no sandbox started (every student
NOT GRADED); as root, NumPy's one-thread-per-core pools (64 there) met a limit of 64 inside, and the
honest solution scored 0. Here: a grader with many threads still starts its sandboxes, and the
thread pools inside follow the limit, not the cores."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from grader.runtime import sandbox

pytestmark = pytest.mark.skipif(sandbox.tool() is None, reason="needs bubblewrap")

# a grader that already holds `n` threads, then starts one sandbox under a limit of 64
MANY_THREADS = textwrap.dedent("""
    import json, sys, threading, time
    from grader.runtime import sandbox
    stop = threading.Event()
    for _ in range(int(sys.argv[1])):
        threading.Thread(target=stop.wait, daemon=True).start()
    box = sandbox.Box(limits=sandbox.Limits.from_env(processes=64))
    try:
        code, out, err, why = sandbox.run([sys.executable, "-I", "-c", "print(7)"], timeout=60, box=box)
    finally:
        box.close()
    stop.set()
    print(json.dumps(dict(code=code, out=out, err=err[-500:], why=why)))
""")


def _ordinary_user() -> tuple[list[str], list[str], dict] | None:
    """How to run a Python with a working sandbox as an ordinary user here (the command's prefix,
    the Python, its environment), or None. Root's own Python may lie where no other uid reads (a
    pyenv in /root): then the system's, with this checkout and this bwrap."""
    env = {**os.environ, "HOME": "/tmp", "PYTHONPATH": os.getcwd(), "TC_BWRAP": sandbox.tool()}
    if os.geteuid() != 0:
        return [], [sys.executable], env
    if not shutil.which("setpriv"):
        return None
    prefix = ["setpriv", "--reuid=4243", "--regid=4243", "--clear-groups"]
    for py in (sys.executable, "/usr/bin/python3"):
        r = subprocess.run([*prefix, py, "-c", "from grader.runtime import sandbox; sandbox.self_test()"],
                           capture_output=True, cwd="/", env=env)
        if r.returncode == 0:
            return prefix, [py], env
    return None


def test_an_ordinary_user_with_many_threads_still_starts_its_sandbox():
    how = _ordinary_user()
    if how is None:
        pytest.skip("no ordinary user can run a sandbox here")
    prefix, py, env = how
    r = subprocess.run([*prefix, *py, "-c", MANY_THREADS, "200"], capture_output=True, text=True, cwd="/",
                       env=env, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert (got["code"], got["out"], got["why"]) == (0, "7\n", None), got


def test_threads_are_what_the_limit_counts():
    """The count the limit is raised by: every thread of the user's processes. Counted for a uid
    that runs nothing else, so that other tests' processes ending meanwhile (pytest-xdist workers of
    the same user) cannot move it: CI saw 114 before, 154 with 41 more threads running."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("needs root, setpriv and /usr/bin/python3 to run threads as a uid of their own")
    uid = 4244  # no account and no other test uses it
    assert sandbox._uid_tasks(uid) == 0
    p = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/usr/bin/python3",
                          "-I", "-c", "import threading, sys\n"
                          "e = threading.Event()\n"
                          "[threading.Thread(target=e.wait, daemon=True).start() for _ in range(40)]\n"
                          "print('up', flush=True); sys.stdin.read()"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        assert p.stdout.readline().strip() == "up"
        assert sandbox._uid_tasks(uid) == 41  # one process, 41 threads
    finally:
        p.stdin.close()
        p.wait(30)


def test_thread_pools_follow_the_limit_not_the_cores(monkeypatch):
    """On 64 cores under a limit of 64: 8 threads a pool; a smaller size asked for is kept; and
    inside a sandbox that is what NumPy's pools are told."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert sandbox.thread_pools(64, {})["OPENBLAS_NUM_THREADS"] == "8"
    assert sandbox.thread_pools(256, {"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"
    assert sandbox.thread_pools(4, {})["MKL_NUM_THREADS"] == "1"
    monkeypatch.undo()
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "64")  # what a many-core host's pools would take
    box = sandbox.Box(limits=sandbox.Limits.from_env(processes=16))
    try:
        code, out, _, why = sandbox.run([sys.executable, "-I", "-c", "import os; print(os.environ['OPENBLAS_NUM_THREADS'],"
                                         " os.environ['OMP_NUM_THREADS'])"], timeout=60, box=box)
    finally:
        box.close()
    assert code == 0 and why is None
    assert all(1 <= int(v) <= 2 for v in out.split()), out


# two sandboxes of one ordinary user side by side (a cohort's jobs): the first waits, the second starts
# threads until its limit stops it and holds them, then the first starts 20
SIDE_BY_SIDE = textwrap.dedent("""
    import json, subprocess, sys, time
    from grader.runtime import sandbox
    HOLD = ("import threading, sys\\ne = threading.Event()\\nn = 0\\ntry:\\n    while n < 5000:\\n"
            "        threading.Thread(target=e.wait, daemon=True).start(); n += 1\\nexcept Exception: pass\\n"
            "print(n, flush=True)\\nsys.stdin.read()\\n")
    LATER = ("import threading, sys\\nsys.stdin.readline()\\ne = threading.Event()\\nn = 0\\ntry:\\n    while n < 20:\\n"
             "        threading.Thread(target=e.wait, daemon=True).start(); n += 1\\nexcept Exception: pass\\n"
             "print(n, flush=True)\\n")
    lim = sandbox.Limits.from_env(processes=64)
    a, b = sandbox.Box(limits=lim), sandbox.Box(limits=lim)
    pipe = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pa = subprocess.Popen(a.argv([sys.executable, "-I", "-c", LATER]), **pipe)
    time.sleep(2)  # the first one's sandbox is up before the second starts
    pb = subprocess.Popen(b.argv([sys.executable, "-I", "-c", HOLD]), **pipe)
    held = pb.stdout.readline().strip()
    pa.stdin.write("go\\n")
    pa.stdin.flush()
    later = pa.stdout.readline().strip()
    for p in (pa, pb):
        p.stdin.close()
        p.wait(60)
    a.close(), b.close()
    print(json.dumps(dict(held=held, later=later)))
""")


def test_a_sandbox_holding_its_threads_leaves_its_neighbours_theirs():
    """As an ordinary user the limit was set outside the sandbox, on top of the user's threads: it
    counted every thread of the user, so a hand-in that held its share (64) left a sandbox started
    before it none (0 of 20 threads: its checks fail, the honest student scores 0). Set inside the
    sandbox's own user namespace it counts that sandbox's threads alone (Linux 5.14+)."""
    how = _ordinary_user()
    if how is None:
        pytest.skip("no ordinary user can run a sandbox here")
    if not sandbox.nproc_per_namespace():
        pytest.skip("this kernel counts a user's threads across namespaces (before Linux 5.14)")
    prefix, py, env = how
    r = subprocess.run([*prefix, *py, "-c", SIDE_BY_SIDE], capture_output=True, text=True, cwd="/", env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert 30 <= int(got["held"]) <= 64, got  # the hostile one is limited all the same
    assert got["later"] == "20", got
