"""Time GPU work the way the best graders do: CUDA events, warm-up, median over many
repeats until the standard error is under ~1%, and an L2 flush when the data fits in cache
(FACTS.md, "Timing"), with the host's time to queue each run kept out of it (_Frame)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Timing:
    times_ms: np.ndarray  # one sample per repeat, GPU time from CUDA events
    flushed: bool  # L2 flushed before every sample

    @property
    def median_ms(self) -> float:
        return float(np.median(self.times_ms))

    @property
    def mean_ms(self) -> float:
        return float(np.mean(self.times_ms))

    @property
    def stderr_ms(self) -> float:
        n = len(self.times_ms)
        return float(np.std(self.times_ms, ddof=1) / np.sqrt(n)) if n > 1 else float("inf")

    @property
    def spread(self) -> float:
        """Interquartile range over median: the run-to-run noise, as a fraction."""
        q1, q3 = np.percentile(self.times_ms, [25, 75])
        return float((q3 - q1) / self.median_ms)

    def gflops(self, flops: float) -> float:
        return flops / (self.median_ms * 1e-3) / 1e9

    def tflops(self, flops: float) -> float:
        return self.gflops(flops) / 1e3

    def __str__(self) -> str:
        return (f"{self.median_ms:.4f} ms median over {len(self.times_ms)} runs "
                f"(IQR {100 * self.spread:.1f}%{', L2 flushed' if self.flushed else ''})")


_flush_buffer = None


def flush_l2():
    """Overwrite a buffer twice the L2 size so the next kernel starts with a cold cache."""
    global _flush_buffer
    import cupy

    from grader.runtime.device import device_info

    if _flush_buffer is None:
        info = device_info()
        _flush_buffer = cupy.empty(max(2 * info.l2_bytes, 64 << 20) // 4, dtype=cupy.int32)
    _flush_buffer.fill(0)


# The GPU waits on this flag, in host memory it reads directly, while the host queues the timed
# work: with `start.record(); fn(); end.record()` alone, the time the host takes to queue fn's launch
# (CuPy's and cuBLAS's Python and C overhead, and any stall of a busy host) counts as GPU time
# whenever the GPU is idle at the start event. A 0.2 ms cuBLAS call measured 10% slower for seconds
# while other jobs loaded the host, the kernel beside it unchanged (kernels/RESULTS-accept.md,
# session 17); a cohort's other jobs load the host while a timed run holds the GPU.
_GATE_SOURCE = r"""
extern "C" __global__ void tc_host_gate(const volatile int* flag, unsigned long long limit_ns, int* timed_out)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (*flag == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > limit_ns) { *timed_out = 1; return; }  // fn waited for the GPU: never hang
        __nanosleep(500);
    }
}
"""
# Past this the gate lets the GPU go on its own: fn itself waited for the GPU (nothing gated can
# help then), or the host stalled. That sample is timed as without the gate.
_GATE_LIMIT_NS = 200_000_000


class _HostGate:
    """Holds the GPU before the start event until the host has queued the timed work."""

    def __init__(self):
        import ctypes

        import cupy

        rt = cupy.cuda.runtime
        self._host = rt.hostAlloc(8, 2)  # cudaHostAllocMapped: the GPU reads it over the bus
        self._words = (ctypes.c_int * 2).from_address(self._host)  # [flag, timed_out]
        mem = cupy.cuda.UnownedMemory(rt.hostGetDevicePointer(self._host, 0), 8, self)
        self._dev = cupy.ndarray((2,), cupy.int32, cupy.cuda.MemoryPointer(mem, 0))
        self._kernel = cupy.RawKernel(_GATE_SOURCE, "tc_host_gate")
        self._kernel.compile()  # here, where a failure means "no gate", not at the first timed run

    def close(self):
        """Queue the gate: the GPU waits at it until open()."""
        self._words[0] = self._words[1] = 0
        self._kernel((1,), (1,), (self._dev[0:1], np.uint64(_GATE_LIMIT_NS), self._dev[1:2]))

    def open(self):
        self._words[0] = 1

    def held(self) -> bool:
        """After the gated work synchronised: whether the gate held until open()."""
        return self._words[1] == 0

    def __del__(self):
        try:
            import cupy

            cupy.cuda.runtime.freeHost(self._host)
        except Exception:  # interpreter shut down: nothing left to free
            pass


_gates: dict[int, _HostGate] = {}  # one per device: its kernel and its view of the flag are that device's


def host_gate() -> _HostGate | None:
    """The current device's gate; None where it cannot be made (then timing is as without it), and
    unless TC_TIMING_GATE=1: off by default until tests/runtime/test_timing_gate.py has passed on a GPU."""
    if os.environ.get("TC_TIMING_GATE") != "1":
        return None
    import cupy

    dev = cupy.cuda.Device().id
    if dev not in _gates:
        try:
            _gates[dev] = _HostGate()
        except Exception:  # no mapped host memory here: time ungated rather than not at all
            return None
    return _gates[dev]


class _Frame:
    """CUDA events around fn alone, gated until fn is queued; a gate that gave up once (fn waits
    for the GPU) is left off for the rest of this measurement."""

    def __init__(self):
        import cupy

        self.start, self.end = cupy.cuda.Event(), cupy.cuda.Event()
        self.gate = host_gate()

    def time(self, fn: Callable[[], object], after: Callable[[], object] | None = None) -> float:
        import cupy

        gate = self.gate
        if gate is not None:
            gate.close()
        try:
            self.start.record()
            fn()
            self.end.record()
        finally:  # a launch that raised must not leave the GPU waiting out the gate's limit
            if gate is not None:
                gate.open()
        if after is not None:
            after()
        self.end.synchronize()
        if gate is not None and not gate.held():
            self.gate = None
        return cupy.cuda.get_elapsed_time(self.start, self.end)


def _stable(samples: list[float], rel_stderr: float, min_repeat: int) -> bool:
    if len(samples) < min_repeat:
        return False
    s = np.asarray(samples)
    return np.std(s, ddof=1) / np.sqrt(len(s)) <= rel_stderr * np.mean(s)


def benchmark(fn: Callable[[], object], *, working_set_bytes: int | None = None,
              max_seconds: float = 5.0, min_repeat: int = 10, rel_stderr: float = 0.01,
              warmup: int = 3) -> Timing:
    """Time `fn` (which launches GPU work) and return per-run GPU times.

    CUDA events around each run, the GPU held until the host has queued it (_Frame), until the
    standard error of the mean is under `rel_stderr` of the mean or `max_seconds` have passed.
    When `working_set_bytes` fits in twice the L2 cache, every run starts after an L2 flush
    (not timed). Without the gate (TC_TIMING_GATE unset), unflushed runs are timed by
    cupyx.profiler.benchmark, which times the host's queueing too."""
    from grader.runtime.device import device_info

    info = device_info()
    flush = working_set_bytes is not None and info is not None and working_set_bytes < 2 * info.l2_bytes
    start_wall = time.perf_counter()
    samples: list[float] = []
    if not flush and host_gate() is None:  # as before the gate: cupyx's loop, events around each call
        from cupyx.profiler import benchmark as cupy_benchmark

        n_warmup = warmup
        while not (_stable(samples, rel_stderr, min_repeat)
                   or (time.perf_counter() - start_wall > max_seconds and len(samples) >= 3)):
            result = cupy_benchmark(fn, (), n_repeat=max(min_repeat, 10), n_warmup=n_warmup)
            samples.extend((result.gpu_times[0] * 1e3).tolist())
            n_warmup = 0
        return Timing(np.asarray(samples), flushed=False)
    for _ in range(warmup):
        fn()
    frame = _Frame()
    while not (_stable(samples, rel_stderr, min_repeat)
               or (time.perf_counter() - start_wall > max_seconds and len(samples) >= 3)):
        if flush:
            flush_l2()
        samples.append(frame.time(fn))
    return Timing(np.asarray(samples), flushed=flush)


def checked_benchmark(fn: Callable[[], object], *, before: Callable[[], object] | None = None,
                      after: Callable[[], object] | None = None, max_seconds: float = 5.0, min_repeat: int = 10,
                      rel_stderr: float = 0.01, warmup: int = 3, max_launches: int = 600,
                      working_set_bytes: int | None = None) -> Timing:
    """Time `fn` launch by launch, every launch (warm-ups too) framed outside the timed region:
    `before()` (e.g. poison the output, fresh inputs), an L2 flush, then CUDA events around
    `fn` alone, then `after()` (e.g. keep what this launch wrote, to check it). So every launch
    the grader times is a launch it checks: a kernel cannot tell them apart and do less in one.
    Stops as `benchmark` does, or after `max_launches` timed launches."""
    del working_set_bytes  # always flushed: the frame's own writes must not warm the cache
    start_wall = time.perf_counter()
    frame = _Frame()
    samples: list[float] = []

    def once() -> float:
        if before is not None:
            before()
        flush_l2()
        return frame.time(fn, after)

    for _ in range(warmup):
        once()
    while not (_stable(samples, rel_stderr, min_repeat) or len(samples) >= max_launches
               or (time.perf_counter() - start_wall > max_seconds and len(samples) >= 3)):
        samples.append(once())
    return Timing(np.asarray(samples), flushed=True)


@dataclass
class Paired:
    """A kernel and its baseline timed in alternating rounds (see `paired`)."""

    kernel: Timing  # all rounds' samples together
    baseline: Timing
    round_ratios: np.ndarray  # baseline median / kernel median, one per round
    round_ms: np.ndarray | None = None  # [[kernel median, baseline median] per round]: which side moved

    @property
    def ratio(self) -> float:
        """How many times faster than the baseline (> 1: faster): median of the rounds."""
        return float(np.median(self.round_ratios))


def paired(fn: Callable[[], object], baseline: Callable[[], object], *, rounds: int = 4,
           max_seconds: float = 4.0, bench: Callable[..., Timing] | None = None,
           baseline_bench: Callable[..., Timing] | None = None, **kwargs) -> Paired:
    """Time `fn` and `baseline` alternately, `rounds` times, in the order A B, B A, A B, ...

    A GPU's clock follows its temperature and power: over a long benchmark run the same
    kernel measured 323-375 TFLOP/s at 8192^3 on an H200 (kernels/RESULTS-wmma.md), so a
    baseline timed once, minutes earlier, biases every ratio. Here each round times both
    sides back to back and the ratio is the median of the per-round ratios; reversing the
    order every round cancels a steady drift within a round too. `kwargs` go to `bench`
    (default `benchmark`; `baseline_bench` times the baseline, default `bench`), e.g.
    working_set_bytes. Under a cohort that runs several jobs on one GPU, the rounds hold the
    GPU alone (grader.runtime.gpulock, TC_GPU_LOCK)."""
    from grader.runtime import gpulock

    bench = bench or benchmark
    baseline_bench = baseline_bench or bench
    with gpulock.held(exclusive=True):  # a cohort's other jobs on this GPU wait (off elsewhere)
        return _paired(fn, baseline, rounds, max_seconds, bench, baseline_bench, kwargs)


def _paired(fn, baseline, rounds, max_seconds, bench, baseline_bench, kwargs) -> Paired:
    per_call = max_seconds / (2 * rounds)
    k_samples, b_samples, ratios, medians = [], [], [], []
    flushed = False
    for r in range(rounds):
        order = ((fn, k_samples, bench), (baseline, b_samples, baseline_bench))
        got = {}
        for f, sink, timer in (order if r % 2 == 0 else order[::-1]):
            t = timer(f, max_seconds=per_call, **kwargs)
            sink.extend(np.asarray(t.times_ms).tolist())
            got[id(sink)] = t
            flushed = t.flushed
        medians.append((got[id(k_samples)].median_ms, got[id(b_samples)].median_ms))
        ratios.append(medians[-1][1] / medians[-1][0])
    return Paired(Timing(np.asarray(k_samples), flushed), Timing(np.asarray(b_samples), flushed),
                  np.asarray(ratios), np.asarray(medians))


def cublas_ceilings(n: int = 4096) -> dict[str, float]:
    """Measured TFLOP/s of cuBLAS (through cupy.matmul) at n^3 for fp16, fp32 and fp64 on
    this GPU. Takes a few seconds; needs a GPU."""
    import cupy

    out = {}
    for label, dtype in (("fp16", cupy.float16), ("fp32", cupy.float32), ("fp64", cupy.float64)):
        a = cupy.random.random((n, n)).astype(dtype)
        b = cupy.random.random((n, n)).astype(dtype)
        c = cupy.empty((n, n), dtype)
        t = benchmark(lambda: cupy.matmul(a, b, out=c), max_seconds=3)
        out[label] = t.tflops(2 * n**3)
        del a, b, c
    return out
