"""A hang or a fault on a real GPU costs its own check only (issue 39): measured, never run by CI.

    python -m grader.classroom.hang [--out hang.json] [--only spin,timed,illegal,trap,trusted,shared,full]

Each scenario grades a broken kernel through the same path a student or the autograder takes,
then watches the GPU until it is idle again (nvidia-smi lists no process but this one and
reports utilisation under IDLE_UTIL %), and looks for zombies (processes left <defunct>):
  spin     the first tensor-core exercise (wmma-gemm) whose every thread loops forever
           (`grader check --backend gpu`'s path)
  timed    the first speed-graded one (transpose), right at the correctness sizes, looping forever
           at the timed size
  illegal  the tensor-core one writing through a wild pointer (illegal address)
  trap     the tensor-core one executing `trap` (an unspecified launch failure)
  trusted  the spinning transpose handed in as 01 and autograded by nbgrader (the trusted pass)
  shared   two cohort jobs on one GPU lock: the transpose looping forever in its timed loop, and the
           reference, which must keep its speed and be late by no more than the hang's own limit
  full     another process holds all of the GPU's memory while the timed exercise's reference is
           checked: the verdict must say the GPU had no free memory (a grader error: regrade), not
           blame the kernel; the reference after the scenarios shows the GPU recovered
The timed exercise's reference (transpose_tiled, timed against a device copy) is checked before and
after the scenarios: its time after must agree with its time before within the run's noise.
The exercises are taken from the registry by these properties (grader.checking.exercises).
Prints one line per scenario and writes every figure to --out (JSON).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IDLE_UTIL = 5  # % busy at most for "idle"
IDLE_WAIT = float(os.environ.get("TC_HANG_IDLE_WAIT") or 120)  # seconds to wait for an idle GPU after a verdict
# an endless loop the compiler cannot remove (a `volatile` local was: the GPU ran past it, 2026-11-27)
SPIN = "{ while (clock64() >= 0) { } }"


def _inject(source: str, kernel: str, code: str) -> str:
    """`code` as the first statement of `kernel`'s body."""
    m = re.search(rf"__global__\s+void\s+{kernel}\s*\([^)]*\)\s*\{{", source)
    assert m, f"no kernel {kernel} in the source"
    return source[:m.end()] + "\n    " + code + "\n" + source[m.end():]


def _tensor_core():
    """The first tensor-core exercise of the registry (the naive WMMA GEMM): what hangs and faults."""
    from grader.checking import exercises

    return next(e for e in exercises.EXERCISES.values() if e.tensor_cores)


def _timed():
    """The first speed-graded exercise whose correctness sizes all stay below its timed size in one
    dimension (the transpose): its kernel can loop forever at the timed size only. -> (exercise, dim)"""
    from grader.checking import exercises

    for e in exercises.EXERCISES.values():
        for k, v in (e.perf_size or {}).items():
            if isinstance(v, int) and all(s.get(k, v) < v for s in (*e.cpu_sizes, *e.gpu_sizes)):
                return e, k
    raise LookupError("no speed-graded exercise has a timed size above its correctness sizes")


def sources() -> dict[str, tuple[str, str]]:
    """scenario -> (exercise, kernel source)."""
    from grader.runtime import kernels

    tc, (timed, dim) = _tensor_core(), _timed()
    wmma, tr = kernels.source(tc.reference), kernels.source(timed.reference)
    return {
        "spin": (tc.id, _inject(wmma, tc.kernel, SPIN)),
        "timed": (timed.id, _inject(tr, timed.kernel, f"if ({dim} >= {timed.perf_size[dim]}) " + SPIN)),
        "illegal": (tc.id, _inject(wmma, tc.kernel, "if (threadIdx.x == 0) ((float*)0x10)[blockIdx.x] = 1.0f;")),
        "trap": (tc.id, _inject(wmma, tc.kernel, 'if (blockIdx.x == 1) asm volatile("trap;");')),
    }


def _smi_ids() -> list[str]:
    """nvidia-smi's -i for the GPUs this process may use (CUDA_VISIBLE_DEVICES: indices or UUIDs),
    so a run on one GPU of a machine whose other GPUs are busy (.ci/gpu-accept's jobs at once)
    watches its own GPU only; [] = every GPU."""
    ids = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return ["-i", ids] if ids and all(p.strip() and p.strip() != "-1" for p in ids.split(",")) else []


def gpu_state(ignore=()) -> dict:
    """Processes on the GPU other than this one and those in `ignore` (pid -> MiB), utilisation %,
    and zombies."""
    apps = subprocess.run(["nvidia-smi", *_smi_ids(), "--query-compute-apps=pid,used_memory",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30).stdout
    util = subprocess.run(["nvidia-smi", *_smi_ids(), "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, timeout=30).stdout
    procs = {}
    for line in apps.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and int(parts[0]) not in {os.getpid(), *ignore}:
            procs[int(parts[0])] = parts[1]
    return dict(procs=procs, util=max([int(u) for u in util.split() if u.strip().isdigit()] or [0]),
                zombies=zombies())


def zombies() -> list[str]:
    """'pid ppid name' of every process in state Z on this machine."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                s = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            name = s[s.find("(") + 1:s.rfind(")")]
            rest = s[s.rfind(")") + 2:].split()
            if rest[0] == "Z":
                out.append(f"{d} {rest[1]} {name}")
    return out


def ours(found: list[str]) -> list[str]:
    """The zombies this process could have left: under it, or orphaned to pid 1 (where a
    sandbox's init went before its launcher reaped it). Another job's child waiting for its busy
    parent is not ours: .ci/gpu-accept runs steps side by side on one machine, and on 4 H200s
    (2026-11-28) the illegal-address scenario counted a neighbour's passing zombie."""
    from grader.runtime import proctree

    mine = {os.getpid(), 1, *proctree.descendants(os.getpid())}
    return [z for z in found if int(z.split()[1]) in mine]


def wait_idle(t0: float, before: dict) -> dict:
    """Seconds from t0 until the GPU is idle (None: not within IDLE_WAIT), and what was seen.
    `before`: gpu_state() as the scenario began. Its processes are not the scenario's to end (a
    caller's own CUDA context: nvidia-smi names host pids in a container, so os.getpid() cannot
    exclude it; 4 H200s, 2026-11-28: a pytest process that had run GPU tests kept the GPU 'busy'
    for good), nor are its zombies."""
    procs_before = set(before["procs"])
    seen = None
    while time.monotonic() - t0 < IDLE_WAIT:
        seen = gpu_state(ignore=procs_before)
        if not seen["procs"] and seen["util"] <= IDLE_UTIL:
            break
        time.sleep(0.5)
        seen = None
    idle = None if seen is None else round(time.monotonic() - t0, 1)
    seen = seen or gpu_state(ignore=procs_before)
    seen["zombies"] = [z for z in ours(seen["zombies"]) if z not in before["zombies"]]
    return dict(idle_s=idle, **seen)


def reference() -> dict:
    """The timed exercise's reference through grader.check on the GPU: its time and spread."""
    from grader.checking.check import check
    from grader.runtime import kernels

    timed, _ = _timed()
    t0 = time.monotonic()
    v = check(timed.id, kernels.source(timed.reference), backend="gpu")
    s = v.speed or {}
    return dict(score=v.score, kernel_ms=s.get("kernel_ms"), ratio=s.get("ratio"),
                spread=s.get("kernel_spread"), verdict_s=round(time.monotonic() - t0, 1))


def agree(before: list[float], after: list[float]) -> bool:
    """Two sets of a kernel's times agree: within twice the larger spread of either, at least 5%."""
    noise = max(max(before) - min(before), max(after) - min(after), 0.05 * min(before))
    return abs(min(after) - min(before)) <= 2 * noise


# One check in a process of its own, as a cohort job runs it (its GPU lock from TC_GPU_LOCK)
_JOB = ("import json, sys, time\n"
        "from grader.checking.check import check\n"
        "t0 = time.monotonic()\n"
        "v = check(sys.argv[1], open(sys.argv[2]).read(), backend='gpu')\n"
        "s = v.speed or {}\n"
        "print(json.dumps(dict(score=v.score, max=v.max_score, verdict_s=round(time.monotonic() - t0, 1), "
        "kernel_ms=s.get('kernel_ms'), text=v.text()[:3000])))\n")


def shared(alone: list[dict]) -> dict:
    """Two cohort jobs on one GPU (the cohort's lock, grader.runtime.gpulock): the transpose that
    loops forever in its timed loop, and 2 s later the reference. The reference must earn its
    points at its own speed (agreeing with `alone`, its checks on an idle GPU), its verdict late
    by no more than the hang's own limit (the timed loop's, PERF_TIMEOUT) and some slack."""
    from grader.checking.steps.cases import PERF_TIMEOUT
    from grader.runtime import kernels

    timed, _ = _timed()
    tmp = Path(tempfile.mkdtemp(prefix="tc-hang-shared-"))
    lock = tmp / "gpu.lock"
    lock.touch()
    (tmp / "hang.cu").write_text(sources()["timed"][1])
    (tmp / "ref.cu").write_text(kernels.source(timed.reference))
    env = dict(os.environ, TC_GPU_LOCK=str(lock))
    before = gpu_state()
    t0 = time.monotonic()
    jobs = []
    for name in ("hang.cu", "ref.cu"):
        jobs.append(subprocess.Popen([sys.executable, "-c", _JOB, timed.id, str(tmp / name)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        time.sleep(2)
    out = []
    for j in jobs:
        o, e = j.communicate(timeout=600)
        lines = o.strip().splitlines()
        out.append(json.loads(lines[-1]) if lines else dict(error=e.strip()[-500:]))
    verdict_s = time.monotonic() - t0
    idle = wait_idle(time.monotonic(), before)
    hung, ref = out
    alone_ms = [r["kernel_ms"] for r in alone if r.get("kernel_ms")]
    late = (ref.get("verdict_s") or 1e9) - max(r["verdict_s"] for r in alone)
    other_ok = bool(ref.get("kernel_ms") and alone_ms and ref.get("score") == ref.get("max")
                    and agree(alone_ms, [ref["kernel_ms"]]) and late <= PERF_TIMEOUT + 20)
    return dict(scenario="shared", exercise=f"{timed.id}: a timed-loop hang and the reference, one GPU lock",
                verdict_s=round(verdict_s, 1), score=hung.get("score"),
                says_stopped=bool(re.search(r"stopped|no answer", hung.get("text", ""), re.I)),
                first_failure=next((ln.strip() for ln in hung.get("text", "").splitlines() if "stopped" in ln), "")[:300],
                other=dict(score=ref.get("score"), kernel_ms=ref.get("kernel_ms"), verdict_s=ref.get("verdict_s"),
                           late_s=round(late, 1), alone_ms=alone_ms, error=ref.get("error")),
                other_ok=other_ok, **idle)


def scenario(name: str, exercise: str, source: str, beside=None, says=None) -> dict:
    """`source` checked as the student's path checks it, then the GPU watched until idle. `beside`: a
    context manager around the check alone (what else holds the GPU meanwhile); what it yields is
    kept as `beside`. `says(text)`: whether the verdict says what happened (default: that it was
    stopped, or faulted)."""
    from grader.checking.check import check

    before = gpu_state()
    with (beside or contextlib.nullcontext)() as held:
        t0 = time.monotonic()
        v = check(exercise, source, backend="gpu")
        verdict_s = time.monotonic() - t0
    idle = wait_idle(time.monotonic(), before)
    text = v.text()
    said = says(text) if says else re.search(r"stopped|illegal|trap|crash|fault|failed", text, re.I)
    failed = [i for i in v.items if i.status == "fail"]
    first = failed[0].message.splitlines()[0][:300] if failed else ""
    return dict(scenario=name, exercise=exercise, verdict_s=round(verdict_s, 1), score=v.score, says_stopped=bool(said),
                first_failure=first, beside=held, there_before=sorted(before["procs"]), **idle)


# Takes every byte of the GPU it can (cudaMalloc, past CuPy's pool), says so, and holds it until stdin closes
_HOG = ("import sys, cupy as cp\n"
        "held, chunk = [], 1 << 30\n"
        "while chunk >= 1 << 20:\n"
        "    try:\n"
        "        held.append(cp.cuda.runtime.malloc(chunk))\n"
        "    except Exception:\n"
        "        chunk //= 2\n"
        "print('held', len(held), 'GiB-ish chunks;', cp.cuda.runtime.memGetInfo()[0], 'bytes free', flush=True)\n"
        "sys.stdin.read()\n")


@contextlib.contextmanager
def _memory_held():
    """Another process holding all of the GPU's memory, for as long as the block runs; yields what it said."""
    hog = subprocess.Popen([sys.executable, "-c", _HOG], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield hog.stdout.readline().strip()
    finally:
        hog.stdin.close()
        hog.wait(60)


def full() -> dict:
    """The timed exercise's reference checked while another process holds the GPU's memory: its
    verdict must say the GPU had no free memory, not blame the kernel."""
    from grader.runtime import kernels

    timed, _ = _timed()
    r = scenario("full", timed.id, kernels.source(timed.reference), beside=_memory_held,
                 says=lambda text: "no free memory" in text and "not your kernel" in text)
    r["exercise"] = f"{timed.id}'s reference, the GPU's memory held elsewhere ({r['beside']})"
    return r


def trusted() -> dict:
    """The spinning transpose handed in as 01 and autograded with the course's nbgrader config."""
    import nbformat

    from grader.classroom import workflow

    timed, dim = _timed()
    home = Path(tempfile.mkdtemp(prefix="tc-hang-"))
    course = workflow.new_course(home / "course")
    a = "01-memory-layout"
    workflow.release(course, a)
    nb = nbformat.read(workflow.SOLUTIONS / a / f"{a}.ipynb", as_version=4)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "transpose-kernel":
            c.source = _inject(c.source, timed.kernel, f"if ({dim} > 0) " + SPIN)
    d = course / "submitted" / "hang" / a
    d.mkdir(parents=True)
    nbformat.write(nb, d / f"{a}.ipynb")
    before = gpu_state()
    t0 = time.monotonic()
    proc = workflow.nbgrader(course, "autograde", a, "--student", "hang", "--create", check=False)
    verdict_s = time.monotonic() - t0
    idle = wait_idle(time.monotonic(), before)
    cells = workflow.cell_scores(course, a, "hang")
    out = course / "autograded" / "hang" / a / f"{a}.ipynb"
    said = ""
    if out.exists():
        for c in nbformat.read(out, as_version=4).cells:
            if c.metadata.get("nbgrader", {}).get("grade_id") == "transpose-test":
                said = " ".join(o.get("data", {}).get("text/plain", "") for o in c.get("outputs", []))
    return dict(scenario="trusted", exercise=f"{timed.id} (01, nbgrader autograde)", verdict_s=round(verdict_s, 1),
                rc=proc.returncode, score=cells.get("transpose-test"), cells=cells,
                says_stopped=bool(re.search(r"stopped|no answer", said, re.I)),
                first_failure=next((ln for ln in said.splitlines() if "FAIL" in ln or "stopped" in ln), "")[:300],
                **idle)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--only", default="spin,timed,illegal,trap,trusted,shared,full")
    args = ap.parse_args(argv)
    os.environ.setdefault("TC_HEADLESS", "1")
    want = args.only.split(",")
    res = dict(gpu=subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                  capture_output=True, text=True).stdout.strip(), scenarios=[])

    def save():
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1))

    res["idle_before"] = gpu_state()
    res["reference_before"] = [reference(), reference()]
    print("reference before:", res["reference_before"], flush=True)
    srcs = sources()
    for name in want:
        try:
            r = trusted() if name == "trusted" else shared(res["reference_before"]) if name == "shared" \
                else full() if name == "full" else scenario(name, *srcs[name])
        except Exception as e:  # noqa: BLE001 - one scenario's failure is its row
            r = dict(scenario=name, error=f"{type(e).__name__}: {e}"[:500])
        res["scenarios"].append(r)
        print(f"{name}: verdict {r.get('verdict_s')} s, idle {r.get('idle_s')} s after, score {r.get('score')}, "
              f"stopped said {r.get('says_stopped')}, GPU procs {r.get('procs')}, util {r.get('util')}%, "
              f"zombies {r.get('zombies')}; {r.get('first_failure') or r.get('error', '')}", flush=True)
        save()
    res["reference_after"] = [reference(), reference()]
    b = [r["kernel_ms"] for r in res["reference_before"] if r["kernel_ms"]]
    a = [r["kernel_ms"] for r in res["reference_after"] if r["kernel_ms"]]
    if a and b:
        res["reference_agrees"] = agree(b, a)
        res["reference_ms"] = dict(before=b, after=a)
    print("reference after:", res["reference_after"], "agrees:", res.get("reference_agrees"), flush=True)
    save()
    ok = res.get("reference_agrees") and all(
        r.get("idle_s") is not None and r.get("says_stopped") and not r.get("error") and (r.get("score") or 0) == 0
        and r.get("other_ok", True) for r in res["scenarios"])
    res["passed"] = bool(ok)
    save()
    print("hang:", "PASS" if ok else "FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
