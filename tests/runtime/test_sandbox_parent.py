"""A sandbox dies with the process that started it (issue 39's spirit: nothing of a hand-in runs on
after its grading). When nbgrader is killed from outside (an out-of-memory killer, an impatient
admin, a cohort's kill of a stuck job), the sandbox launcher it started is orphaned; it must then end
the sandbox and everything in it, or a hostile notebook's kernel spins on for good (2026-11-27: a
`time.sleep(3600)` kernel of test_cohort's killed job was found running 25 minutes later)."""
import os
import signal
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from grader.runtime import sandbox

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="prctl and /proc"),
              pytest.mark.skipif(sandbox.tool() is None, reason="no sandbox tool here")]

PARENT = r"""
import subprocess, sys, time
from grader.runtime import sandbox
box = sandbox.Box()
proc = subprocess.Popen(box.argv([sys.executable, "-c", sys.argv[1]]))
print(proc.pid, flush=True)
time.sleep(3600)
"""


def _marked(marker: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in a for a in (p.info["cmdline"] or [])):
                out.append(p)
        except psutil.Error:
            pass
    return out


def test_a_sandbox_ends_when_the_process_that_started_it_is_killed():
    marker = f"tc-orphan-{uuid.uuid4().hex}"
    student = f"import time  # {marker}\nwhile True: time.sleep(0.1)"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, student], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=os.getcwd()))
    launcher = int(parent.stdout.readline())
    try:
        deadline = time.time() + 60
        while not [p for p in _marked(marker) if p.pid not in (parent.pid, launcher)] and time.time() < deadline:
            time.sleep(0.2)
        inside = [p for p in _marked(marker) if p.pid not in (parent.pid, launcher)]
        assert inside, "the sandboxed student code never started"
        parent.send_signal(signal.SIGKILL)  # the grader dies; nothing reaps the launcher but pid 1
        parent.wait()
        gone_by = time.time() + 10
        while _marked(marker) and time.time() < gone_by:
            time.sleep(0.2)
        left = [(p.pid, p.name()) for p in _marked(marker) if p.is_running()]
        assert not left, f"still running 10 s after the grader was killed: {left}"
    finally:
        for p in _marked(marker):
            try:
                p.kill()
            except psutil.Error:
                pass
