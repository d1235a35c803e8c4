"""Check and time notebook 11's FP8 and 2:4-sparse GEMMs beside the libraries, on a GPU (issue #36).

    python -m grader.bench.fp8 [--sizes 4096 8192] [--out kernels/RESULTS-fp8.md] [--check-sizes ...]

Rows, each timed in alternating rounds with its baseline in the same process
(grader.runtime.timing.paired), every contender checked against a float64 reference BEFORE
anything is timed (output poisoned; a wrong contender is reported and never timed):
- fp8_gemm_mma (e4m3 mma.sync m16n8k32, fp32 out, per-tensor scales in the epilogue) against the
  course's fp16 rung (mma_gemm_tuned, notebook 10), cuBLASLt's FP8 GEMM and cuBLAS fp16;
- fp8_gemm_wgmma (e4m3 wgmma fed by TMA, sm_90a; grader.bench.fp8_wgmma) against the same fp16
  rung, fp8_gemm_mma and cuBLASLt's FP8 GEMM, on the same arrays (A and B both K-major); its first
  launches run in a child process with a time limit (a hang or a bad address cannot stop the rest);
- sparse_gemm_mma_sp (2:4 mma.sp, fp16 in, fp32 out) against the same fp16 rung (dense, same
  shape), cuSPARSELt and cuBLAS fp16; sparse TFLOP/s count the DENSE product's 2 M N K flops;
- cuBLASLt FP8, cuSPARSELt and the fp16 rung against cuBLAS fp16 (CuPy), the common yardstick.
CuPy binds neither cuBLASLt's FP8 GEMM nor cuSPARSELt: they come from PyTorch when it is installed
(torch._scaled_mm, torch._cslt_sparse_mm), sharing CuPy's memory through DLPack and launched on
CuPy's current stream, which the paired timer's CUDA events time. PyTorch is a bench-only import,
no dependency of the course: without it (or its cuSPARSELt) those rows say "library not available
here: <why>" and the rest runs. Without a GPU it says so and exits 2.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import secrets
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from grader.bench import fp8_wgmma
from grader.bench import mma as bench_mma
from grader.bench import wmma as bench_wmma
# the correctness stage (its own module, shared with fp8_wgmma); its names stay reachable from here
from grader.bench.fp8_checks import (FP8_ACCUMULATOR, FP16_ACCUMULATOR, Check, _dims, check_kernel,  # noqa: F401
                                     check_library, dense_of_sparse_case, fp8_cases, sparse_cases)
from grader.problems import baselines, fp8, gemm_launch, sparse24
from grader.runtime.device import device_info

CHECK_SIZES = (256, 1024, 4096)
EDGES = ((33, 20, 96), (40, 24, 80))  # the course kernels' edge tiles (the libraries need multiples of 16)
# fp8_gemm_wgmma has no edge tiles: non-square multiples of its 128 x 128 x 128 tile instead, one with
# fewer k-tiles than a promotion, one with more than its stages and a last chain left over, one 256-wide
WGMMA_SHAPES = ((384, 256, 1152), (256, 640, 384), (256, 512, 640))  # each build checks those it computes

# contender names (row labels)
FP8 = "fp8_gemm_mma"
FP8_WGMMA = "fp8_gemm_wgmma"
FP8_WGMMA_FAST = "fp8_gemm_wgmma (fast accumulation)"
SPARSE = "sparse_gemm_mma_sp"
RUNG = "mma_gemm_tuned"
CUBLAS = "cuBLAS fp16"
LT = "cuBLASLt FP8"
CSLT = "cuSPARSELt"
LABELS = {FP8: "FP8 mma.sync", FP8_WGMMA: "FP8 wgmma", RUNG: "the fp16 rung", CUBLAS: "cuBLAS fp16",
          LT: "cuBLASLt FP8", CSLT: "cuSPARSELt"}
PAIRS = [(FP8, RUNG), (FP8, LT), (FP8, CUBLAS), (FP8_WGMMA, RUNG), (FP8_WGMMA, FP8), (FP8_WGMMA, LT),
         (FP8_WGMMA_FAST, FP8_WGMMA), (FP8_WGMMA_FAST, LT),
         (SPARSE, RUNG), (SPARSE, CSLT), (SPARSE, CUBLAS),
         (LT, CUBLAS), (CSLT, CUBLAS), (RUNG, CUBLAS)]
DESCRIBE = {FP8: "e4m3 in, fp32 out, scales in the epilogue (kernels/fp8_gemm_mma.cu)",
            FP8_WGMMA: "e4m3 in, fp32 out, wgmma + TMA, scales in the epilogue (kernels/fp8_gemm_wgmma.cu, sm_90a; "
                       "the wgmma chain promoted into fp32 every 4 k-tiles, 128 x 128 tiles)",
            FP8_WGMMA_FAST: "the same without promotion, 128 x 256 tiles (-DBLOCK_N=256 -DPROMOTE=0 -DSTAGES=4)",
            SPARSE: "2:4 A (values + metadata) x dense fp16 B, fp32 out (kernels/sparse_gemm_mma_sp.cu)",
            RUNG: "fp16 in, fp32 out, mma.sync m16n8k16 (kernels/mma_gemm_tuned.cu, notebook 10)",
            CUBLAS: "fp16 in, fp16 out (cupy.matmul)",
            LT: "e4m3 in, fp32 out, per-tensor scales (torch._scaled_mm, B column-major)",
            CSLT: "2:4 fp16 A x dense fp16 B, fp16 out (torch._cslt_sparse_mm)"}
SPARSE_NAMES = (SPARSE, CSLT)


class Unavailable(Exception):
    """A contender that cannot run here (a library missing, an arch too old): its rows say why."""


class Skipped(Unavailable):
    """A course kernel this GPU cannot run (fp8_gemm_wgmma below sm_90): its rows say SKIPPED."""


# ---------------------------------------------------------------- the libraries, through PyTorch
def _torch():
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"PyTorch is not installed ({e})") from None
    if not torch.cuda.is_available():
        raise Unavailable("PyTorch sees no CUDA device")
    return torch


def _stream(torch):
    """CuPy's current stream as PyTorch's: the paired timer's events are recorded on CuPy's."""
    import cupy

    ptr = cupy.cuda.get_current_stream().ptr
    if ptr == 0:  # the legacy default stream, PyTorch's default too
        s = torch.cuda.default_stream()
        assert s.cuda_stream == 0, "PyTorch's default stream is not the legacy one (per-thread default stream?)"
        return s
    return torch.cuda.ExternalStream(ptr)


def scaled_mm(a8, b8, scale_a: float, scale_b: float) -> Callable[[], object]:
    """cuBLASLt's FP8 GEMM on device e4m3 codes: C = scale_a scale_b A B^T, fp32, A (M x K) and
    B (N x K) uint8 CuPy arrays (B viewed transposed is the column-major K x N it takes). Returns
    a no-argument launch whose result is the output tensor; raises Unavailable."""
    torch = _torch()
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        raise Unavailable(f"PyTorch {torch.__version__} has no torch._scaled_mm")
    cc = torch.cuda.get_device_capability()
    if cc < (8, 9):
        raise Unavailable(f"cuBLASLt FP8 needs sm_89 or newer, this GPU is sm_{cc[0]}{cc[1]}")
    A = torch.from_dlpack(a8).view(torch.float8_e4m3fn)
    B = torch.from_dlpack(b8).view(torch.float8_e4m3fn).t()
    sa = torch.tensor(scale_a, dtype=torch.float32, device=A.device)
    sb = torch.tensor(scale_b, dtype=torch.float32, device=A.device)
    stream = _stream(torch)

    def run():
        with torch.cuda.stream(stream):
            r = torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, out_dtype=torch.float32)
        return r[0] if isinstance(r, tuple) else r  # PyTorch < 2.4 returned (out, amax)
    return run


def cslt_mm(a16, b16) -> Callable[[], object]:
    """cuSPARSELt: A (M x K, 2:4 along K, fp16) compressed once, then A B with B (K x N) fp16; CuPy
    arrays in. Returns a no-argument launch whose result is the fp16 output; raises Unavailable."""
    torch = _torch()
    cusparselt = getattr(torch.backends, "cusparselt", None)
    if cusparselt is None or not cusparselt.is_available():
        raise Unavailable(f"PyTorch {torch.__version__} was built without cuSPARSELt")
    A, B = torch.from_dlpack(a16), torch.from_dlpack(b16)
    stream = _stream(torch)
    with torch.cuda.stream(stream):
        packed = torch._cslt_compress(A)

    def run():
        with torch.cuda.stream(stream):
            return torch._cslt_sparse_mm(packed, B)
    return run


def _library_cell(e: Exception) -> str:
    if isinstance(e, Skipped):
        return f"SKIPPED: {e}"
    return f"library not available here: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}"


# ---------------------------------------------------------------- the contenders on a GPU
class Inputs:
    """The timing inputs at n^3, on the GPU, made once per size: e4m3 codes (A M x K, B N x K) and
    their scales; fp16 U(-1,1) A (M x K) and B (K x N); A pruned to 2:4 and its compressed form."""

    def __init__(self, n: int, seed: int):
        import cupy

        rng = np.random.default_rng(seed)
        A64, B64 = fp8.gemm_inputs(n, n, n, rng)
        a, self.scale_a = fp8.quantize(A64)
        b, self.scale_b = fp8.quantize(B64)
        self.a8, self.b8 = cupy.asarray(a), cupy.asarray(b)
        A16 = rng.uniform(-1, 1, (n, n)).astype(np.float16)
        self.b16 = cupy.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float16))
        self.a16 = cupy.asarray(A16)
        pruned, _ = sparse24.prune(A16)
        av, am = sparse24.compress(A16)
        self.a16_pruned, self.av, self.am = cupy.asarray(pruned), cupy.asarray(av), cupy.asarray(am)
        self.n = n


@dataclass
class Contender:
    name: str
    check: Callable[[], Check]  # the correctness stage (raises Unavailable)
    build: Callable[[Inputs], Callable[[], object]]  # a launch on the timing inputs (raises Unavailable)
    working_set: Callable[[int], int]  # bytes read and written at n^3 (the timer's L2-flush rule)


def _gpu_module(file: str):
    from grader.runtime import kernels
    from grader.runtime.gpu import GpuModule

    return GpuModule(kernels.source(file))


def contenders(check_sizes=CHECK_SIZES, edges=EDGES) -> list[Contender]:
    """The eight contenders of the record, their checks sharing one set of float64 cases a size."""
    import cupy

    rng = np.random.default_rng(secrets.randbits(32))
    cache: dict = {}

    def cases(kind):
        if kind not in cache:
            make = fp8_cases if kind == "fp8" else sparse_cases
            cache[kind] = make(check_sizes, rng)
        return cache[kind]

    modules: dict = {}

    def module(file):
        if file not in modules:
            modules[file] = _gpu_module(file)
        return modules[file]

    fp8_spec, sp_spec = gemm_launch.fp8_gemm_mma(), gemm_launch.sparse_gemm_mma_sp()
    rung = next(r for r in bench_mma.LADDER if r.file == bench_mma.TUNED)
    rung_spec = rung.spec()
    rung_module: list = []

    def tuned():
        if not rung_module:
            rung_module.append(bench_mma.module_of(rung))
        return rung_module[0]

    def check_fp8():
        return check_kernel(module("fp8_gemm_mma"), fp8_spec.kernel, cases("fp8") + fp8_cases(edges, rng), cupy)

    def build_fp8(x: Inputs):
        C = cupy.zeros((x.n, x.n), cupy.float32)
        return module("fp8_gemm_mma").bind(fp8_spec.kernel, fp8_spec.grid(x.n, x.n, x.n), fp8_spec.block,
                                           [x.a8, x.b8, C, x.n, x.n, x.n, x.scale_a, x.scale_b])

    wgmma: dict = {}

    def wgmma_module(config):
        if config.options not in wgmma:
            if bench_mma.arch() < 90:
                raise Skipped(f"needs sm_90a (wgmma, TMA), this GPU is sm_{bench_mma.arch()}")
            if "hung" in wgmma:  # the builds share their pipeline: a second hang would only cost the time again
                raise RuntimeError(f"not tried: {wgmma['hung']}")
            try:  # its first launches in a child process: a hang or a bad address cannot stop the bench
                wgmma[config.options] = fp8_wgmma.probed(config)
            except RuntimeError as e:
                if "HANG" in str(e):
                    wgmma["hung"] = f"the build {' '.join(config.options) or 'of the defaults'} hung in its probe"
                raise
        return wgmma[config.options]

    def check_wgmma(config):
        def check():
            m = wgmma_module(config)  # the shared cases of the sizes it computes (tile multiples), and its own
            mine = [c for c, s in zip(cases("fp8"), check_sizes) if not config.why_not(*_dims(s))]
            own = [s for s in WGMMA_SHAPES if not config.why_not(*s)]
            return fp8_wgmma.check(m, mine + fp8_cases(own, rng), cupy)
        return check

    def build_wgmma(config):
        def build(x: Inputs):
            C = cupy.zeros((x.n, x.n), cupy.float32)
            return wgmma_module(config).bind(fp8_wgmma.KERNEL, config.grid(x.n, x.n), config.block,
                                             [x.a8, x.b8, C, x.n, x.n, x.n, x.scale_a, x.scale_b],
                                             shared_mem=config.shared_mem)
        return build

    def check_sparse():
        return check_kernel(module("sparse_gemm_mma_sp"), sp_spec.kernel, cases("sparse") + sparse_cases(edges, rng),
                            cupy)

    def build_sparse(x: Inputs):
        C = cupy.zeros((x.n, x.n), cupy.float32)
        return module("sparse_gemm_mma_sp").bind(sp_spec.kernel, sp_spec.grid(x.n, x.n, x.n), sp_spec.block,
                                                 [x.av, x.am, x.b16, C, x.n, x.n, x.n])

    def check_rung():
        ok, worst, detail = bench_wmma.check_sizes(tuned(), rung_spec, [s for s in check_sizes if s % 256 == 0])
        return Check(ok, worst, detail)

    def build_rung(x: Inputs):
        C = cupy.zeros((x.n, x.n), cupy.float32)
        return tuned().bind(rung_spec.kernel, rung_spec.grid(x.n, x.n, x.n), rung_spec.block,
                            [x.a16, x.b16, C, x.n, x.n, x.n], shared_mem=rung_spec.shared_mem)

    def check_cublas():  # on the sparse cases' pruned A: their float64 product is at hand
        def run(c):
            return baselines.make("cublas-fp16", [cupy.asarray(dense_of_sparse_case(c)), cupy.asarray(c.args[2])],
                                  {})()
        return check_library(run, cases("sparse"), 3, fp16_out=True)

    def check_lt():
        return check_library(lambda c: cupy.from_dlpack(scaled_mm(cupy.asarray(c.args[0]), cupy.asarray(c.args[1]),
                                                                  c.args[6], c.args[7])()),
                             cases("fp8"), 2, fallback=FP8_ACCUMULATOR)

    def check_cslt():
        return check_library(lambda c: cupy.from_dlpack(cslt_mm(cupy.asarray(dense_of_sparse_case(c)),
                                                                cupy.asarray(c.args[2]))()),
                             cases("sparse"), 3, fp16_out=True, fallback=FP16_ACCUMULATOR)

    return [
        Contender(FP8, check_fp8, build_fp8, lambda n: 2 * n * n + 4 * n * n),
        Contender(FP8_WGMMA, check_wgmma(fp8_wgmma.DEFAULT), build_wgmma(fp8_wgmma.DEFAULT),
                  lambda n: 2 * n * n + 4 * n * n),
        Contender(FP8_WGMMA_FAST, check_wgmma(fp8_wgmma.FAST), build_wgmma(fp8_wgmma.FAST),
                  lambda n: 2 * n * n + 4 * n * n),
        Contender(SPARSE, check_sparse, build_sparse, lambda n: n * n + n * n // 8 + 2 * n * n + 4 * n * n),
        Contender(RUNG, check_rung, build_rung, lambda n: 4 * n * n + 4 * n * n),
        Contender(CUBLAS, check_cublas, lambda x: baselines.make("cublas-fp16", [x.a16, x.b16], {}),
                  lambda n: 6 * n * n),
        # the libraries' launches return torch tensors: nothing converted or copied in the timed loop
        Contender(LT, check_lt, lambda x: scaled_mm(x.a8, x.b8, x.scale_a, x.scale_b), lambda n: 6 * n * n),
        Contender(CSLT, check_cslt, lambda x: cslt_mm(x.a16_pruned, x.b16), lambda n: 5 * n * n),
    ]


# ---------------------------------------------------------------- the measurement
@dataclass
class Result:
    """One pairing at n^3: times in ms (median over every round), ratio = the median of the rounds'
    baseline / kernel times (> 1: the kernel is faster); or `note` saying why it was not timed."""

    kernel: str
    baseline: str
    n: int
    kernel_ms: float = 0.0
    baseline_ms: float = 0.0
    ratio: float = 0.0
    note: str = ""

    def tflops(self, ms: float) -> float:
        return 2.0 * self.n**3 / (ms * 1e-3) / 1e12 if ms else 0.0


def time_pair(fn, baseline, working_set: int, max_seconds: float = 4.0) -> tuple[float, float, float]:
    from grader.runtime.timing import paired

    p = paired(fn, baseline, working_set_bytes=working_set, max_seconds=max_seconds)
    return p.kernel.median_ms, p.baseline.median_ms, p.ratio


def measure(cands: list[Contender], sizes, pairs=PAIRS, *, timer=time_pair, inputs=Inputs,
            out=print) -> tuple[dict[str, Check], list[Result]]:
    """Check every contender (nothing timed yet), then time every pairing at every size."""
    checks: dict[str, Check] = {}
    for c in cands:
        try:
            checks[c.name] = c.check()
        except Unavailable as e:
            checks[c.name] = Check(False, note=_library_cell(e))
        except Exception as e:  # noqa: BLE001 - a contender that fails to build or launch: say so, go on
            checks[c.name] = Check(False, note=f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
                                   if str(e) else f"FAILED: {type(e).__name__}")
        out(f"check {c.name}: {checks[c.name].cell}")
    by_name = {c.name: c for c in cands}
    results: list[Result] = []
    for n in sizes:
        x = inputs(n, secrets.randbits(32))
        launches: dict[str, object] = {}
        why_not = {name: _why(check) for name, check in checks.items() if not check.ok}
        for name, c in by_name.items():
            if name not in why_not:
                try:
                    launches[name] = c.build(x)
                except Unavailable as e:
                    why_not[name] = _library_cell(e)
                except Exception as e:  # noqa: BLE001
                    why_not[name] = f"FAILED at {n}^3: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        for k, b in pairs:
            if k not in by_name or b not in by_name:
                continue
            fault = next((s for s in (k, b) if s in why_not), None)
            if fault:
                results.append(Result(k, b, n, note=f"{fault}: {why_not[fault]}"))
            else:
                ws = max(by_name[k].working_set(n), by_name[b].working_set(n))
                km, bm, ratio = timer(launches[k], launches[b], ws)
                results.append(Result(k, b, n, km, bm, ratio))
            out(row(results[-1]))
        del x, launches
        _free()
    return checks, results


def _why(check: Check) -> str:
    """Why a contender that did not pass its check is not timed."""
    return check.note or f"WRONG: {check.detail}"


def _free() -> None:
    with contextlib.suppress(Exception):
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
    with contextlib.suppress(Exception):
        if "torch" in sys.modules:
            sys.modules["torch"].cuda.empty_cache()


# ---------------------------------------------------------------- the record
HEAD = ("| kernel | size | baseline | kernel TFLOP/s | baseline TFLOP/s | kernel / baseline | % of baseline |\n"
        "|---|---|---|---|---|---|---|")


def _flops_note(name: str) -> str:
    return " (dense-equivalent)" if name in SPARSE_NAMES else ""


def row(r: Result) -> str:
    if r.note:
        return f"| {r.kernel} | {r.n}^3 | {r.baseline} | {r.note} | | | |"
    return (f"| {r.kernel} | {r.n}^3 | {r.baseline} | {r.tflops(r.kernel_ms):.1f}{_flops_note(r.kernel)} | "
            f"{r.tflops(r.baseline_ms):.1f}{_flops_note(r.baseline)} | {r.ratio:.2f}x | {100 * r.ratio:.1f}% |")


def _find(results, k, b, n) -> Result | None:
    return next((r for r in results if (r.kernel, r.baseline, r.n) == (k, b, n)), None)


def _tflops_of(results, name, n, unit="TFLOP/s") -> str:
    """The contender's TFLOP/s at n^3: the median over its timed pairings."""
    vals = [r.tflops(r.kernel_ms if r.kernel == name else r.baseline_ms) for r in results
            if r.n == n and not r.note and name in (r.kernel, r.baseline)]
    return f"{np.median(vals):.1f} {unit}" if vals else "not measured"


def _vs(results, k, b, n, fmt) -> str:
    r = _find(results, k, b, n)
    if r is None:
        return f"not paired with {LABELS.get(b, b)}"
    return r.note or fmt(r)


def summary(results: list[Result], sizes) -> list[str]:
    """The lines the issue asks for, one a contender and size."""
    lines = []
    for n in sizes:
        # to 3 figures: fp8-gemm's thresholds follow from this ratio (FP8_GEMM_SPEED, grader.checking.exercises)
        lines.append(f"- {n}^3: FP8 mma.sync: {_tflops_of(results, FP8, n)}, "
                     f"{_vs(results, FP8, RUNG, n, lambda r: f'{r.ratio:.3g}x the fp16 rung')}, "
                     f"{_vs(results, FP8, LT, n, lambda r: f'{100 * r.ratio:.1f}% of cuBLASLt FP8')}")
        lines.append(f"- {n}^3: FP8 wgmma: {_tflops_of(results, FP8_WGMMA, n)}, "
                     f"{_vs(results, FP8_WGMMA, RUNG, n, lambda r: f'{r.ratio:.2f}x the fp16 rung')}, "
                     f"{_vs(results, FP8_WGMMA, FP8, n, lambda r: f'{r.ratio:.2f}x FP8 mma.sync')}, "
                     f"{_vs(results, FP8_WGMMA, LT, n, lambda r: f'{100 * r.ratio:.1f}% of cuBLASLt FP8')}")
        lines.append(f"- {n}^3: FP8 wgmma, fast accumulation: {_tflops_of(results, FP8_WGMMA_FAST, n)}, "
                     f"{_vs(results, FP8_WGMMA_FAST, FP8_WGMMA, n, lambda r: f'{r.ratio:.2f}x the promoted one')}, "
                     f"{_vs(results, FP8_WGMMA_FAST, LT, n, lambda r: f'{100 * r.ratio:.1f}% of cuBLASLt FP8')}")
        lines.append(f"- {n}^3: 2:4 mma.sp: {_tflops_of(results, SPARSE, n, 'dense-equivalent TFLOP/s')}, "
                     f"{_vs(results, SPARSE, RUNG, n, lambda r: f'{r.ratio:.2f}x the dense fp16 rung')}, "
                     f"{_vs(results, SPARSE, CSLT, n, lambda r: f'{100 * r.ratio:.1f}% of cuSPARSELt')}")
        for lib in (LT, CSLT):
            lines.append(f"- {n}^3: {lib}: {_tflops_of(results, lib, n, 'TFLOP/s' + _flops_note(lib))}, "
                         f"{_vs(results, lib, CUBLAS, n, lambda r: f'{r.ratio:.2f}x cuBLAS fp16')}")
    return lines


def header(gpu: str, when: str, check_sizes) -> str:
    return (f"## FP8 and 2:4-sparse GEMMs vs the libraries — {gpu}, {when}\n\n"
            "Measured by `python -m grader.bench.fp8` (issue #36). Every contender was first checked against a "
            "float64 reference (componentwise fp32-accumulation bound, output poisoned) at "
            f"{', '.join(f'{s}^3' for s in check_sizes)}, the course kernels also at "
            f"{', '.join('x'.join(map(str, e)) for e in EDGES)}; FP8 inputs are e4m3 codes of U(-3,3) and "
            "U(-0.5,0.5) data with per-tensor scales, fp16 inputs U(-1,1), the sparse A pruned to 2:4. "
            "Each row's kernel and baseline were timed in alternating rounds in the same process on the same "
            "inputs (grader.runtime.timing.paired, CUDA events on CuPy's stream); TFLOP/s = 2n^3 / median "
            "time, for the sparse GEMMs too (dense-equivalent: the flops of the dense product they stand "
            "for); kernel / baseline = the median of the per-round time ratios. fp8_gemm_mma and "
            "sparse_gemm_mma_sp are the naive rungs of notebook 11 (fragments loaded from global memory, no "
            "shared memory): beside the tiled fp16 rung they measure the tiling they lack as much as the "
            "format. fp8_gemm_wgmma is the Hopper FP8 GEMM (wgmma fed by TMA, warp-specialised, the wgmma "
            "chain promoted into fp32 registers every 4 k-tiles; its fast-accumulation build keeps the whole "
            "sum in the chain, as cuBLASLt's fast-accumulation mode, which torch._scaled_mm does not use by "
            f"default), checked also at {', '.join('x'.join(map(str, e)) for e in WGMMA_SHAPES)} (those a build's "
            "tile divides); it reads A and B K-major, the same arrays as fp8_gemm_mma and cuBLASLt. cuBLASLt FP8 "
            "and cuSPARSELt through PyTorch (torch._scaled_mm, torch._cslt_sparse_mm), sharing CuPy's memory by "
            "DLPack.")


def record(gpu: str, when: str, checks: dict[str, Check], results: list[Result], sizes,
           check_sizes=CHECK_SIZES) -> str:
    """The dated markdown section of kernels/RESULTS-fp8.md."""
    lines = [header(gpu, when, check_sizes), "", "### Correctness (before any timing)", "",
             "| contender | what | correct |", "|---|---|---|"]
    lines += [f"| {name} | {DESCRIBE.get(name, '')} | {c.cell} |" for name, c in checks.items()]
    lines += ["", "### Paired speeds", "", HEAD] + [row(r) for r in results]
    lines += ["", "### Summary", "", "Each contender's TFLOP/s is the median over its pairings at that size; the ratios "
              "are those of the named pairing.", ""] + summary(results, sizes)
    return "\n".join(lines) + "\n"


def gpu_line() -> str:
    info = device_info()
    return (f"{info.name} ({info.arch}, {info.sm_count} SMs), driver {info.driver}, CUDA runtime {info.runtime}"
            + _torch_version())


def _torch_version() -> str:
    try:
        import torch
    except ImportError:
        return ", no PyTorch"
    return f", PyTorch {torch.__version__} (CUDA {torch.version.cuda})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.fp8")
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--check-sizes", type=int, nargs="+", default=list(CHECK_SIZES))
    ap.add_argument("--out", help="append the dated section to this file (e.g. kernels/RESULTS-fp8.md)")
    args = ap.parse_args(argv)
    if device_info() is None:
        print("needs a GPU: no CUDA device found", file=sys.stderr)
        return 2
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    gpu = gpu_line()
    print(f"{gpu}, {when}", flush=True)
    checks, results = measure(contenders(tuple(args.check_sizes)), tuple(args.sizes),
                              out=lambda s: print(s, flush=True))
    text = record(gpu, when, checks, results, args.sizes, tuple(args.check_sizes))
    print("\n" + text, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
