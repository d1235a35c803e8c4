"""A trusted compile cache for the course's own GPU code (issue #37): opt-in, TC_COMPILE_CACHE=FOLDER.

Each trusted grading starts with an empty CuPy cache of its own (grader.classroom.autograde: its
scratch), so every submission compiled again what never changes between students: CuPy's own
element-wise and reduction kernels that frame every checked and timed launch (poison, scale,
sample, count), the library baselines built from kernels/ (03's naive SGEMM), the reference
kernels. With TC_COMPILE_CACHE set (the cohort sets it for its jobs), those are compiled once:

- `ensure(exercises)` fills the folder, once per exercise: a fresh process (no student input, no
  sandbox needed) checks each exercise's reference kernel from kernels/ on the GPU, speed included,
  with a new CuPy cache folder whose cubins are then moved in. So only the course's own sources
  and CuPy's kernels are ever written there, by the grader; one job fills while the others wait
  (a flock on the folder), and a failed fill (no GPU, an error) is recorded and not retried.
- `seed(dest)` copies those cubins into a trusted grading's own CuPy cache before it starts.
  The folder itself is never shown to a sandbox (neither the notebook's nor the trusted grader's):
  what a sandbox could write is its own scratch copy, thrown away after that one submission.

CuPy names each cubin by a hash of everything that decides it (source, options, target arch,
NVRTC version, CuPy's own version), so a hit loads exactly what a compile would have made: the
verdicts and scores cannot change, only the time to reach them.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = "TC_COMPILE_CACHE"
PHASE = "compile cache (fill once, copy)"  # its step time in the trusted grading (grader.classroom.phases)
FILL_TIMEOUT = 240.0  # seconds for filling (each exercise's reference: cases and timed rounds)
_CUBIN = re.compile(r"^[0-9a-f]{16,128}\.cubin$")  # CuPy's cache file names (a hex digest)


def folder() -> Path | None:
    p = os.environ.get(ENV, "")
    return Path(p) if p else None


def seed(dest: str | os.PathLike) -> int:
    """Copy the cache's cubins into `dest` (a trusted grading's CUPY_CACHE_DIR); how many. Only
    regular files named as CuPy names its cubins: nothing else, no link, is ever copied."""
    src = folder()
    if src is None or not src.is_dir():
        return 0
    os.makedirs(dest, exist_ok=True)
    n = 0
    for e in os.scandir(src):
        if _CUBIN.match(e.name) and e.is_file(follow_symlinks=False):
            shutil.copyfile(e.path, os.path.join(dest, e.name), follow_symlinks=False)
            n += 1
    return n


def _marker(src: Path, exercise: str) -> Path:
    return src / f"filled-{re.sub(r'[^A-Za-z0-9_.-]', '_', exercise)}"


def ensure(exercises: list[str], timeout: float = FILL_TIMEOUT) -> str:
    """Fill the cache for these exercises where not yet tried (see the module); says what it did."""
    src = folder()
    if src is None:
        return "off"
    todo = [e for e in dict.fromkeys(exercises) if not _marker(src, e).exists()]
    if not todo:
        return "ready"
    src.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(src / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one job fills; the others wait for it, then find it filled
        todo = [e for e in todo if not _marker(src, e).exists()]
        if not todo:
            return "ready"
        new = tempfile.mkdtemp(dir=src, prefix="new-")
        env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_EXECUTION", "TC_SANDBOX")}
        env["CUPY_CACHE_DIR"] = new
        from grader.runtime import sandbox

        t0 = time.monotonic()
        try:
            r = subprocess.run(sandbox.python_command("grader.checking.compile_cache") + ["fill", *todo], env=env,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
            said = (r.stdout.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        except subprocess.TimeoutExpired:
            said = f"not filled within {timeout:.0f} s"
        moved = 0
        for e in os.scandir(new):
            if _CUBIN.match(e.name) and e.is_file(follow_symlinks=False):
                os.replace(e.path, src / e.name)
                moved += 1
        shutil.rmtree(new, ignore_errors=True)
        what = f"{said}; {moved} compiled kernel(s) kept in {time.monotonic() - t0:.1f} s"
        for e in todo:
            _marker(src, e).write_text(what + "\n")
        return what


def _fill(exercises: list[str]) -> int:
    """In the filling process: check each exercise's reference kernel (kernels/) on the GPU."""
    from grader.checking import exercises as registry
    from grader.checking.check import check
    from grader.runtime import kernels
    from grader.runtime.device import has_gpu

    if not has_gpu():
        print("no GPU: nothing compiled")
        return 0
    done = []
    for e in exercises:
        try:
            ex = registry.get(e)
            check(e, kernels.source(ex.reference), backend="gpu", **ex.launch_defaults)
            done.append(e)
        except Exception as err:  # noqa: BLE001 - a fill that fails costs its time saving only
            print(f"{e}: {type(err).__name__}: {err}".splitlines()[0], file=sys.stderr)
    print(f"references checked on the GPU: {', '.join(done) or 'none'}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["fill"]:
        sys.exit(_fill(sys.argv[2:]))
    sys.exit("usage: python -m grader.checking.compile_cache fill EXERCISE...")
