"""A limit reached is named however short the run (grader.runtime.sandbox.Box.look): a sandbox
that fills its sized /tmp and ends before the watch's next poll is still named, from the /tmp
its first process handed out open; the watch's polls are switched off here (one an hour) to show
the naming no longer needs them. An honest run is named for nothing, and a sandbox whose /tmp
cannot be handed over runs nothing of the student's (fail closed)."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest

from grader.runtime import sandbox
from grader.runtime.sandbox_watch import Watch

pytestmark = pytest.mark.skipif(sandbox.tool() is None, reason="needs bubblewrap")

# writes 1 MB at a time into `where` until the filesystem is full, says so, and ends at once
FILL = """
import sys
b = b"x" * (1 << 20)
f = open(sys.argv[1], "wb")
try:
    for _ in range(200):
        f.write(b)
        f.flush()
except OSError as e:
    print("ENOSPC" if e.errno == 28 else e)
"""
NO_POLL = "Watch.watch = functools.partialmethod(Watch.watch, every=3600)"


@pytest.fixture
def no_poll(monkeypatch):
    monkeypatch.setattr(Watch, "watch", functools.partialmethod(Watch.watch, every=3600))


def _box(**kw) -> sandbox.Box:
    box = sandbox.Box(limits=sandbox.Limits.from_env(disk_mb=16, file_mb=512), **kw)
    if not box.in_memory:
        box.close()
        pytest.skip("this bwrap sizes no /tmp (0.10+): /tmp is a folder on disk, scanned by the watch")
    return box


def test_a_filled_tmp_is_named_after_the_run(no_poll):
    box = _box()
    try:
        code, out, _, why = sandbox.run([sys.executable, "-I", "-c", FILL, "/tmp/fill"], timeout=60, box=box)
    finally:
        box.close()
    assert "ENOSPC" in out  # the program met the full disk and ended: no poll could have seen it
    assert code is None and why == "it wrote more than 15 MB, reaching 16 MB (the limit for one submission)"


def test_what_it_still_holds_is_named_before_it_is_stopped(no_poll):
    """A file deleted while open fills /tmp only while its process lives: read just before the
    sandbox is stopped (as the notebook kernel's shutdown does), it is named."""
    box = _box()
    hold = FILL.replace('f = open(sys.argv[1], "wb")', 'import os; f = open(sys.argv[1], "wb"); os.unlink(sys.argv[1])')
    hold += "print('held', flush=True)\nimport time; time.sleep(60)\n"
    proc = subprocess.Popen(box.argv([sys.executable, "-I", "-c", hold, "/tmp/gone"]), stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        box.watch(proc.kill, pid=proc.pid)
        assert proc.stdout.readline().strip() == "ENOSPC"
        assert proc.stdout.readline().strip() == "held"
        assert box.look() == "it wrote more than 15 MB, reaching 16 MB (the limit for one submission)"
    finally:
        from grader.runtime import proctree

        proctree.stop(proc)
        proc.stdout.close()
        box.close()


def test_a_nested_box_names_the_enclosing_tmp_it_filled(no_poll):
    """The answers' sandbox inside the trusted grader's: its scratch lies in the enclosing sized
    /tmp, which its writes fill (the trusted grader removes that scratch afterwards)."""
    inner = f"""
import functools, json, shutil, sys, tempfile
from grader.runtime import sandbox
from grader.runtime.sandbox_watch import Watch
{NO_POLL}
scratch = tempfile.mkdtemp(prefix="tc-answers-")  # in this sandbox's own sized /tmp
box = sandbox.Box(writable=[scratch])
code, out, err, why = sandbox.run([sys.executable, "-I", "-c", {FILL!r}, "fill"], timeout=60, box=box, cwd=scratch)
box.close()
shutil.rmtree(scratch)
print(json.dumps([out.strip(), why, err[-300:]]))
"""
    boot = f"import sys; sys.path[:0] = {[p for p in sys.path if p]!r}; exec({inner!r})"
    env = {**os.environ, "TC_LIMIT_DISK_MB": "16", "TC_BWRAP": sandbox.tool()}
    box = _box()
    try:
        code, out, err, why = sandbox.run([sys.executable, "-I", "-c", boot], timeout=120, box=box, env=env)
    finally:
        box.close()
    # (the outer one's /tmp is empty again once it ends; its polls, off here, could have seen it full)
    assert code == 0 and why is None, (code, why, err[-2000:])
    said, inner_why, inner_err = json.loads(out.strip().splitlines()[-1])
    assert said == "ENOSPC", inner_err
    assert inner_why == "it wrote more than 15 MB, reaching 16 MB (the limit for one submission)"


def test_an_honest_run_is_named_for_nothing(no_poll):
    box = _box()
    try:
        code, out, _, why = sandbox.run([sys.executable, "-I", "-c", "open('/tmp/x', 'wb').write(b'x' * (8 << 20)); "
                                         "open('/dev/shm/y', 'wb').write(b'y' * (4 << 20)); print('done')"],
                                        timeout=60, box=box)
    finally:
        box.close()
    assert (code, out, why) == (0, "done\n", None)


def test_no_handover_no_run(tmp_path):
    """Where the Box cannot be handed the sandbox's /tmp, nothing of the command runs."""
    box = _box(writable=[tmp_path])
    try:
        os.unlink(box._handoff.getsockname())  # where the launcher would hand them
        r = subprocess.run(box.argv(["sh", "-c", f"touch {tmp_path}/ran"]), capture_output=True, text=True,
                           timeout=60)
    finally:
        box.close()
    assert r.returncode != 0 and "nothing was run" in r.stderr, r.stderr
    assert not (tmp_path / "ran").exists()
