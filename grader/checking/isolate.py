"""Run a student's kernel in a child process, so a hang, an illegal address (which poisons
the CUDA context for good) or a segfault costs that check only.

The parent sends a job (source, backend, cases' arguments; never the reference) and waits
for one message per step with a deadline; on a deadline it kills the child and reports
which step hung. The child redirects its stdout/stderr (kernel printf, library warnings)
into files whose text comes back in the result: nothing reaches the notebook's stderr,
where nbgrader would zero the cell.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

from grader.checking import child_pickle
from grader.runtime import errors, proctree, sandbox

BAND = 256  # elements of canary on each side of every GPU buffer
# A canary per element width (as unsigned bits): a NaN payload for the float widths, so a kernel that
# reads a band gets a NaN; 0xFF is NaN in both fp8 formats (one-byte arrays: fp8 codes, int8). Every
# array a kernel can declare (grader.runtime.signature.DTYPES) has one of these widths.
_CANARY_BY_SIZE = {1: (np.uint8, 0xFF), 2: (np.uint16, 0x7E3C), 4: (np.uint32, 0x7FC0BEEF),
                   8: (np.uint64, 0x7FF8BEEFBEEFBEEF)}
_CANARY_EXCEPT = {np.dtype(np.int32): (np.uint32, 0x5AFECAFE)}


def canary(dtype) -> tuple[type, int]:
    """(unsigned view type, bit pattern) of the bands around a GPU buffer of `dtype`."""
    d = np.dtype(dtype)
    return _CANARY_EXCEPT.get(d) or _CANARY_BY_SIZE[d.itemsize]


# ----------------------------------------------------------------------------- the child
def _guarded(cupy, host: np.ndarray):
    """Copy `host` into the middle of a GPU buffer whose bands hold a canary pattern."""
    ubits, value = canary(host.dtype)
    buf = cupy.empty(host.size + 2 * BAND, dtype=host.dtype)
    buf.view(ubits).fill(value)
    buf[BAND:BAND + host.size] = cupy.asarray(host.ravel())
    return buf, buf[BAND:BAND + host.size].reshape(host.shape)


def _band_writes(buf, n: int) -> dict | None:
    ubits, value = canary(buf.dtype)
    bits = buf.view(ubits).get()
    before = np.flatnonzero(bits[:BAND] != value)
    after = np.flatnonzero(bits[BAND + n:] != value)
    if before.size == 0 and after.size == 0:
        return None
    return dict(before=int(before.size), after=int(after.size),
                first_after=int(after[0]) if after.size else None,
                last_before=int(BAND - before[-1]) if before.size else None)


def _run_case_gpu(module, kernel, case):
    import cupy

    buffers, args = {}, []
    for i, a in enumerate(case["args"]):
        if isinstance(a, np.ndarray):
            buf, view = _guarded(cupy, a)
            buffers[i] = (buf, view)
            args.append(view)
        else:
            args.append(a)
    launch = module.bind(kernel, case["grid"], case["block"], args, case["shared_mem"])
    launch()
    cupy.cuda.runtime.deviceSynchronize()
    outputs = {i: buffers[i][1].get() for i in case["outputs"]}
    bands = {i: w for i, (buf, view) in buffers.items() if (w := _band_writes(buf, view.size))}
    changed_inputs = [i for i, (buf, view) in buffers.items()
                      if i not in case["outputs"] and not np.array_equal(
                          view.get().view(np.uint8), case["args"][i].view(np.uint8))]
    # Same inputs again, outputs re-poisoned: different bits mean a race.
    for i in case["outputs"]:
        buffers[i][1][...] = cupy.asarray(case["args"][i])
    launch()
    cupy.cuda.runtime.deviceSynchronize()
    differs = [i for i in case["outputs"] if not np.array_equal(
        buffers[i][1].get().view(np.uint8), outputs[i].view(np.uint8))]
    return dict(outputs=outputs, bands=bands, changed_inputs=changed_inputs, nondeterministic=differs)


def _run_case_emu(module, kernel, case, race_check, timeout, probe=False, key=0):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    # The emulator's own limit fires first (it knows which thread hung); ours is the backstop.
    result = module.launch(kernel, case["grid"], case["block"], args, case["shared_mem"],
                           race_check=race_check, timeout=timeout)
    changed = [i for i, a in enumerate(case["args"]) if isinstance(a, np.ndarray)
               and i not in case["outputs"] and not np.array_equal(args[i].view(np.uint8), a.view(np.uint8))]
    ops = [[m, n, k, c] for (m, n, k), c in getattr(result, "tensor_ops", {}).items()]
    res = dict(outputs={i: args[i] for i in case["outputs"]}, bands={}, changed_inputs=changed,
               nondeterministic=[], stdout=getattr(result, "stdout", ""), tensor_ops=ops)
    if probe and key:  # the same launch with products' signs flipped by `key`: the parent judges it
        again = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
        probed = module.launch(kernel, case["grid"], case["block"], again, case["shared_mem"], timeout=timeout,
                               tc_key=key)
        res["tc_probe_outputs"] = {i: again[i] for i in case["outputs"]}
        # counted by the runner's parent, which executed them (a worker's own count could be forged)
        res["tc_probe_ops"] = [[m, n, k, c] for (m, n, k), c in getattr(probed, "tensor_ops", {}).items()]
    elif probe:  # the same launch with every matrix instruction's products doubled
        again = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
        module.launch(kernel, case["grid"], case["block"], again, case["shared_mem"], timeout=timeout, tc_double=True)
        same = judged = 0
        for i in case["outputs"]:  # elements bit for bit the same: the products never reached them
            a = np.ascontiguousarray(args[i]).reshape(-1).view(np.uint8).reshape(args[i].size, -1)
            b = np.ascontiguousarray(again[i]).reshape(-1).view(np.uint8).reshape(again[i].size, -1)
            # except an exact zero: 2 x 0 is 0 too (e4m3 products cancel exactly now and then: the
            # fp8-gemm reference failed on 1 of 1536 elements at random, 2026-11-27); whether it is
            # right is the correctness check's to say
            flat = args[i].reshape(-1)
            judge = flat != 0 if flat.dtype.kind == "f" else np.ones(flat.size, bool)
            same += int((np.all(a == b, axis=1) & judge).sum())
            judged += int(judge.sum())
        res["tc_unchanged"], res["tc_outputs"] = same, judged
    return res


# Each timed launch's first input is the timed-size input times a scale drawn per launch, exact in
# the input's own encoding, so the output scales with it: a kernel that keeps an earlier launch's
# answer has the wrong one. Floating types: a power of two or its negative. One-byte arrays, which the
# grader makes only of fp8 codes (grader.problems.fp8; both formats keep the sign in bit 7): +1 or -1,
# the latter a flip of every byte's sign bit (XOR 0x80): it leaves the other seven bits, which alone
# say whether a code is a NaN (e4m3: 0x7F and 0xFF), so no NaN is made; a multiply would read the
# codes as integers.
LAUNCH_SCALES = (-4.0, -2.0, -1.0, 1.0, 2.0, 4.0)
SIGN_BIT_SCALES = (-1.0, 1.0)
MAX_TIMED_LAUNCHES = 2400  # over all rounds (checked_benchmark stops each call at 600)
LAUNCH_SAMPLES = 512  # output elements kept per launch (the parent checks every launch's)


def launch_scales(dtype) -> tuple[float, ...]:
    """The scales a timed launch's first input of `dtype` may be given (see rescale)."""
    d = np.dtype(dtype)
    if d.kind == "f":
        return LAUNCH_SCALES
    if d == np.uint8:
        return SIGN_BIT_SCALES
    raise TypeError(f"no exact rescaling of a {d} input is defined for the timed launches")


def rescale(xp, pristine, scale: float, out=None):
    """`pristine` times `scale` (one of launch_scales(pristine.dtype)), exactly, in its own encoding:
    into `out` when given, else a new array. `xp`: numpy or cupy."""
    if scale not in launch_scales(pristine.dtype):
        raise ValueError(f"{scale} is not a timed-launch scale of a {pristine.dtype} input")
    if pristine.dtype.kind == "f":
        return xp.multiply(pristine, pristine.dtype.type(scale), out=out)
    return xp.bitwise_xor(pristine, np.uint8(0x80 if scale < 0 else 0), out=out)


def _perf(module, job, conn=None):
    """Time the kernel and the library baseline at the speed size, same process, same GPU, and
    check EVERY launch that was timed (warm-ups too): before each, its output is poisoned afresh
    and its first input scaled by a random power of two, or its fp8 codes' signs flipped or not
    (rescale; untimed); after each, sampled elements of what it wrote and its count of
    never-written and non-finite elements are kept on the GPU (untimed). No launch is timed unchecked, so a kernel that counts its launches, reads its
    output, keeps state between launches or times itself gains nothing. The parent judges every
    launch against its own float64 reference of those elements, scaled; the inputs must be as
    the grader left them.

    Under a cohort sharing the GPU, only the timed rounds hold it alone (issue #37): the set-up
    (inputs, buffers, the library's baseline built) and one warm-up of each side -- the kernel's
    launch framed and kept like every timed one, so what a first use costs (CuPy compiling the
    frame's element-wise kernels, the library loading its kernels, the L2 flush buffer) is paid
    here -- run with the GPU shared, as correctness runs do: nothing timed runs then. The read-back
    after the rounds too. `held_s` is the span the GPU was held alone."""
    import cupy

    from grader.checking import exercises
    from grader.problems import baselines
    from grader.problems.kinds import POISON_BITS
    from grader.runtime.timing import checked_benchmark, flush_l2, paired

    ex = exercises.get(job["exercise"])
    case = ex.problem.make(ex.perf_size, np.random.default_rng(job["perf_seed"]), job["launch"],
                           reference=False)
    args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]
    o = case.outputs[0]
    inputs = [i for i, a in enumerate(case.args) if isinstance(a, np.ndarray) and i not in case.outputs]
    first = inputs[0]
    pristine = {i: args[i].copy() for i in inputs}
    launch = module.bind(ex.kernel, case.grid, case.block, args, case.shared_mem)
    ws = sum(a.nbytes for a in args if hasattr(a, "nbytes"))
    base = baselines.make(ex.problem.baseline, [pristine.get(i, a) for i, a in enumerate(args)], ex.perf_size)
    out = args[o]
    ubits, value = POISON_BITS[np.dtype(out.dtype)]
    flat = cupy.asarray(np.asarray(job.get("perf_samples", []), dtype=np.int64)[:LAUNCH_SAMPLES])
    scales = np.random.default_rng(job["perf_seed"] ^ 0x5CA1E).choice(launch_scales(args[first].dtype),
                                                                      size=MAX_TIMED_LAUNCHES + 64)
    kept = cupy.empty((len(scales), flat.size), dtype=out.dtype)
    unwritten = cupy.zeros(len(scales), dtype=cupy.int64)
    nonfinite = cupy.zeros(len(scales), dtype=cupy.int64)
    n = [0]
    flt = out.dtype.kind == "f"

    def before():
        if n[0] >= len(scales):
            raise RuntimeError("more timed launches than the grader keeps checks for")
        rescale(cupy, pristine[first], float(scales[n[0]]), out=args[first])
        out.view(ubits).fill(value)

    def after():
        i = n[0]
        kept[i] = out.ravel()[flat]
        unwritten[i] = cupy.count_nonzero(out.view(ubits) == value)
        if flt:
            nonfinite[i] = cupy.count_nonzero(~cupy.isfinite(out))
        n[0] += 1

    def timed(f, **kw):
        return checked_benchmark(f, before=before, after=after, **kw)

    # warm-up, the GPU shared (nothing is timed): every first use paid before the GPU is held alone
    before()
    launch()
    after()
    base()
    flush_l2()
    cupy.cuda.runtime.deviceSynchronize()
    with _locked(conn, exclusive=True) as waited:  # the timed rounds alone hold the GPU
        t_held = time.monotonic()
        t_timed = time.monotonic()
        p = paired(launch, base, working_set_bytes=ws, max_seconds=8, bench=timed,
                   baseline_bench=lambda f, **kw: checked_benchmark(f, **kw))
        t_timed = time.monotonic() - t_timed
        cupy.cuda.runtime.deviceSynchronize()
        t_held = time.monotonic() - t_held
    last = float(scales[n[0] - 1])
    changed = [int(i) for i in inputs if not bool(cupy.array_equal(
        args[i], rescale(cupy, pristine[i], last) if i == first else pristine[i]))]
    k = n[0]
    return dict(kernel_ms=p.kernel.median_ms, kernel_spread=p.kernel.spread,
                baseline_ms=p.baseline.median_ms, baseline_spread=p.baseline.spread, ratio=p.ratio,
                launches=k, launch_scales=scales[:k].tolist(), launch_samples=kept[:k].get(),
                launch_unwritten=unwritten[:k].get().tolist(), launch_nonfinite=nonfinite[:k].get().tolist(),
                changed_inputs=changed, size=int(out.size),
                timed_s=t_timed, held_s=t_held, lock_wait_s=waited or 0.0)


def _traffic(job) -> dict | None:
    """The memory traffic of one launch of the case job["traffic"] (emulator; a separate build)."""
    from grader.emu.traffic import measure

    case = job["traffic"]
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case["args"]]
    try:
        return measure(job["source"], job["kernel"], case["grid"], case["block"], args,
                       shared_mem=case["shared_mem"], options=job["options"],
                       timeout=0.8 * job["case_timeout"]).to_dict()
    except errors.CourseError:  # the view is extra: a run it cannot make costs only the view
        return None


def _gpu_fault(exc: Exception) -> errors.KernelFault | None:
    text = f"{type(exc).__name__}: {exc}"
    for needle, kind, msg in (
            ("ILLEGAL_ADDRESS", "illegal-address", "the GPU reported an illegal memory access"),
            ("IllegalAddress", "illegal-address", "the GPU reported an illegal memory access"),
            ("MISALIGNED", "misaligned-address", "the GPU reported a misaligned memory access"),
            ("Misaligned", "misaligned-address", "the GPU reported a misaligned memory access"),
            ("ASSERT", "assert", "a device-side assert failed"),
            ("Assert", "assert", "a device-side assert failed"),
            ("LAUNCH_FAILED", "crash", "the kernel crashed"),
            ("LaunchFailure", "crash", "the kernel crashed"),
            ("ILLEGAL_INSTRUCTION", "crash", "the kernel executed an illegal instruction"),
            ("OUT_OF_RESOURCES", "launch-resources", "the launch asked for more registers or "
                                                     "shared memory than a block may have")):
        if needle in text:
            return errors.KernelFault(kind, f"{msg} ({text.splitlines()[0]})")
    return None


def _no_gpu_memory(exc: Exception) -> errors.KernelFault | None:
    """The GPU had no memory for the check's own arrays. A kernel allocates nothing the host sees
    (its arrays are the grader's, sized by the exercise), so this is the machine's state: another
    process holds the memory (a cohort neighbour's notebook, an unrelated job). Told as the grader's
    failure, so the instructor regrades, not as a crash of the student's kernel."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    if type(exc).__name__ == "OutOfMemoryError" or "cudaErrorMemoryAllocation" in text \
            or "CUDA_ERROR_OUT_OF_MEMORY" in text:
        return errors.KernelFault(
            "grader-error", f"the GPU had no free memory for this check's arrays ({text}), not your kernel's doing",
            hint="Another process held the GPU's memory while you were graded: tell your instructor; a regrade "
                 "on an idle GPU gives your kernel its verdict.")
    return None


def _grader_fault(exc: Exception) -> errors.KernelFault | None:
    """A Python error that neither CuPy nor CUDA raised is the grader's own (a kernel raises no
    Python exception): the student is told so, not given a hint about their indices (fp8-gemm's
    uint8 arrays had no canary, 2026-11-27, and every check on a GPU read as a kernel crash)."""
    module = type(exc).__module__ or ""
    if module.split(".")[0] in ("cupy", "cupy_backends", "cupyx"):
        return None
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return errors.KernelFault("grader-error", f"the grader itself failed ({text}), not your kernel",
                              hint="Not something your kernel did: tell your instructor, with this message.")


def _locked(conn, exclusive: bool):
    """The GPU's lock (grader.runtime.gpulock; only under a cohort sharing the GPU), the parent
    told when the wait starts and ends: a wait for another job is no step's time (no time-out)."""
    from grader.runtime import gpulock

    if gpulock.path() is None or conn is None:
        return contextlib.nullcontext(0.0)

    @contextlib.contextmanager
    def held():
        conn.send(("waiting", None))
        with gpulock.held(exclusive=exclusive) as waited:
            conn.send(("clock", waited))
            yield waited

    return held()


def _child(conn, job):
    # Under a cohort sharing this GPU (TC_GPU_LOCK): this process's GPU work holds the GPU's lock
    # shared, its timed rounds exclusive (below, and timing.paired), so no other job's work overlaps them.
    # Its imports come first, outside the lock: CuPy creates no CUDA context on import (issue #37).
    if job["backend"] == "gpu":
        try:
            import cupy  # noqa: F401

            import grader.runtime.gpu  # noqa: F401
        except ImportError:  # said where the step needs it, as before
            pass
    with _locked(conn, exclusive=False) if job["backend"] == "gpu" else contextlib.nullcontext():
        _child_steps(conn, job)


def _discard_output() -> None:
    """From here on, what the child prints goes nowhere: a kernel's printf in each of up to
    MAX_TIMED_LAUNCHES timed launches (up to a 1 MB FIFO each) would fill the file the parent reads,
    and past the sandbox's disk limit the whole trusted pass is stopped, every cell of the
    notebook at 0. What its correctness runs printed was kept; results go through the pipe."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)  # C stdio's buffers too (CUDA's printf goes through them)
    except (OSError, AttributeError):
        pass
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _child_steps(conn, job):
    try:
        from grader.runtime.backend import load

        module = load(job["source"], job["backend"], job["options"])
        conn.send(("compiled", None))
        for i, case in enumerate(job["cases"]):
            if job["backend"] == "gpu":
                res = _run_case_gpu(module, job["kernel"], case)
            else:
                # every launch that is judged is also probed: a kernel cannot keep its tensor-core
                # work for one launch it recognises (by size, input or grid) and fake it elsewhere
                res = _run_case_emu(module, job["kernel"], case, job["race_check"], 0.8 * job["case_timeout"],
                                    probe=bool(job.get("tc_probe")), key=job.get("tc_key", 0))
            conn.send(("case", i, res))
        if job.get("perf"):
            _discard_output()
            conn.send(("perf", _perf(module, job, conn)))
        if job.get("traffic") is not None:
            conn.send(("traffic", _traffic(job)))
        status = ("done", None)
    except errors.CourseError as e:
        status = ("error", errors.to_dict(e))
    except Exception as e:  # CUDA errors come as CuPy exceptions
        fault = _gpu_fault(e) or _no_gpu_memory(e) or _grader_fault(e) or errors.KernelFault(
            "crash", f"{type(e).__name__}: {e}".splitlines()[0])
        fault.extra_traceback = traceback.format_exc()
        status = ("error", errors.to_dict(fault))
    sys.stdout.flush()
    sys.stderr.flush()
    conn.send(status)
    conn.close()


def _child_main(job_fd: int, result_fd: int, parent: int = 0):
    from multiprocessing.connection import Connection

    # Dies with the process that waits for it (PR_SET_PDEATHSIG): a grader killed mid-check leaves
    # no kernel of its student running on the GPU.
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if parent and os.getppid() != parent:
        os._exit(1)
    job = Connection(job_fd, writable=False).recv()
    _child(Connection(result_fd, readable=False), job)


# ---------------------------------------------------------------------------- the parent
# Seconds this process spent in each step of its kernel runs, added up (the trusted grader
# reports them with its result: course/README.md, "where a submission's time goes").
PHASES: dict[str, float] = {}
# The speed step's two parts: what holds the GPU alone under a cohort (the timed rounds: every other
# job on the GPU waits; grader.classroom.cohort_concurrency reads it), and its set-up, warm-up and
# read-back, with the GPU shared. Plain autograde holds no lock; the split is the same.
HELD_ALONE = "timed runs (GPU held alone)"
SHARED_SETUP = "timing set-up, warm-up and launch checks (GPU shared)"
# Seconds a kernel process may wait for its GPU's lock (a cohort's other job on the GPU: its timed
# run, or its notebook's execution) before the check stops; the job's own limit comes first.
LOCK_WAIT_LIMIT = 1800.0
# Seconds a stopped kernel's process may take to end (the driver tears its CUDA context down, the
# kernel's SMs freed) before the verdict says it did not.
STOP_WAIT = 60.0


def _add(name: str, seconds: float) -> None:
    PHASES[name] = PHASES.get(name, 0.0) + max(seconds, 0.0)


def run(job: dict, *, compile_timeout: float, case_timeout: float, perf_timeout: float = 120.0) -> dict:
    """Run `job` in a fresh child process. Returns dict(compiled, cases=[...], perf, stdout,
    error) where error is a CourseError (KernelTimeout/KernelFault/CompileError ...) or None.

    The child is a new interpreter (`python -m grader.checking.isolate`), not a fork (a CUDA context
    does not survive fork) nor multiprocessing's spawn (which re-imports the caller's main
    script). Everything it prints, kernel printf included, goes to a file we read back."""
    from multiprocessing.connection import Connection

    t_step = time.monotonic()  # the current step's start, for PHASES
    t_wait = None  # since when the child waits for its GPU's lock (a cohort sharing the GPU)
    job_r, job_w = os.pipe()
    res_r, res_w = os.pipe()
    printed = tempfile.TemporaryFile()
    # `python -I` with this process's package folders named: the child finds the course's
    # package even where only PYTHONPATH named it (the trusted grader runs without it)
    proc = subprocess.Popen(sandbox.python_command("grader.checking.isolate") + [str(job_r), str(res_w), str(os.getpid())],
                            pass_fds=(job_r, res_w), stdin=subprocess.DEVNULL, stdout=printed,
                            stderr=subprocess.STDOUT, start_new_session=True)
    os.close(job_r)
    os.close(res_w)
    sender, parent = Connection(job_w, readable=False), Connection(res_r, writable=False)
    result = dict(compiled=False, cases=[], perf=None, traffic=None, stdout="", error=None)
    step, deadline = "compile", time.monotonic() + compile_timeout
    try:
        sender.send(job)
        sender.close()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not parent.poll(min(remaining, 1.0)):
                if remaining > 0:
                    continue
                limit = {"compile": compile_timeout, "perf": perf_timeout}.get(step, case_timeout)
                what = _describe(step, job) if t_wait is None else "waiting for the GPU (another grading job's timed run)"
                limit = limit if t_wait is None else LOCK_WAIT_LIMIT
                result["error"] = errors.KernelTimeout(f"no answer after {limit:.0f} s while {what}: stopped",
                                                       seconds=limit)
                result["stopped"] = f"no answer after {limit:.0f} s"
                break
            try:
                msg = child_pickle.recv(parent)
            except pickle.UnpicklingError as e:
                result["error"] = errors.KernelFault("crash", f"the process running your kernel sent something "
                                                              f"that is not a result: {e}")
                break
            except EOFError:  # the child is gone without saying why
                try:
                    code = proc.wait(5)
                except subprocess.TimeoutExpired:  # its pipe closed, itself still there: stopped below
                    code, result["stopped"] = None, "closed its pipe"
                result["error"] = errors.KernelFault(
                    "crash", f"the process running your kernel died (exit code {code}) while "
                             f"{_describe(step, job)}",
                    hint="A crash outside the kernel's own checks; run the same check with "
                         "backend='emu' for a named fault, or report it if it persists.")
                break
            kind = msg[0]
            now = time.monotonic()
            if kind == "waiting":  # for the GPU's lock (another job's timed run): no time-out meanwhile
                deadline, t_wait = now + LOCK_WAIT_LIMIT, now
                continue
            if kind == "clock":  # the lock is held: the step's own limit starts now
                if t_wait is not None:
                    _add("GPU lock wait", now - t_wait)
                    t_step += now - t_wait
                t_wait = None
                limit = {"compile": compile_timeout, "perf": perf_timeout}.get(step, case_timeout)
                deadline = now + limit
                continue
            if kind == "compiled":
                result["compiled"] = True
                _add("kernel process start + compile", now - t_step)
                t_step = now
                step, deadline = 0, time.monotonic() + case_timeout
            elif kind == "case":
                result["cases"].append(msg[2])
                nxt = msg[1] + 1
                if nxt < len(job["cases"]):
                    step, deadline = nxt, time.monotonic() + case_timeout
                else:
                    _add("correctness runs", now - t_step)
                    t_step = now
                    step, deadline = "perf", time.monotonic() + perf_timeout
            elif kind == "perf":
                result["perf"] = msg[1]
                perf = msg[1] if isinstance(msg[1], dict) else {}
                held = float(perf.get("held_s", perf.get("timed_s", 0.0)))
                _add(HELD_ALONE, held)
                _add(SHARED_SETUP, now - t_step - held)
                t_step = now
            elif kind == "traffic":
                result["traffic"] = msg[1]
            elif kind in ("done", "error"):
                if kind == "error":
                    result["error"] = errors.from_dict(msg[1])
                    result["error_step"] = step
                break
    except BrokenPipeError:  # the child died before reading its job
        result["error"] = errors.KernelFault("crash", "the process that runs kernels could not start")
    finally:
        t_stop = time.monotonic()
        _add("kernel process: other" if result["compiled"] else "kernel process start + compile",
             t_stop - t_step)
        # Its work is done or given up: the process and everything it started are ended (SIGKILL, as
        # before: waiting for its own exit, CuPy's clean-up included, slowed a term's grading) and
        # reaped here, so the GPU is free when the verdict is given.
        if proc.poll() is None:
            freed = proctree.stop(proc, wait=STOP_WAIT)
            _add("stopping the kernel's process", time.monotonic() - t_stop)
            result["freed_s"] = freed
            if "stopped" in result and result["error"] is not None:
                gpu = job.get("backend") == "gpu"
                result["error"].message += (
                    f"; its process and everything it started were ended {freed:.1f} s later"
                    + (", the GPU free again" if gpu else "") if freed is not None else
                    f"; its process had still not ended {STOP_WAIT:.0f} s after it was stopped"
                    + (" (the GPU may still be busy: tell your instructor)" if gpu else ""))
        parent.close()
        size = printed.seek(0, os.SEEK_END)
        printed.seek(max(0, size - 20000))
        result["stdout"] = printed.read().decode(errors="replace")
        printed.close()
        if "stopped" in result and isinstance(result["error"], errors.KernelTimeout) and size:
            result["error"].hint = printed_hint(size)
    return result


def printed_hint(size: int) -> str:
    """A stopped kernel that printed: on an H100 (2026-11-27) a correct transpose with a printf in
    every thread was stopped at 20 s on its 8M-thread case, under a hint about loops only."""
    amount = f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size} bytes"
    return (f"Your kernel printed {amount} before it was stopped (some of it is below). A printf in "
            "every thread of a big launch can take longer than the limit by itself: print from one thread "
            "(`if (blockIdx.x == 0 && threadIdx.x == 0)`), or remove it once you have seen what you needed. "
            "If it was not the printing: " + errors.KernelTimeout.hint[0].lower() + errors.KernelTimeout.hint[1:])


def _describe(step, job) -> str:
    if step == "compile":
        return "compiling and loading your kernel"
    if step == "perf":
        return "timing your kernel"
    return f"running case {step + 1} ({job['cases'][step]['label']})"


if __name__ == "__main__":
    _child_main(*(int(a) for a in sys.argv[1:4]))
