"""Check and time notebook 10's kernels (beyond WMMA) beside cuBLAS, on a GPU.

    python -m grader.bench.mma [--sizes 4096 8192] [--out kernels/RESULTS-mma.md]
                               [--only NAME ...] [--sweep]

One command measures every rung: notebook 06's best WMMA kernel (wmma_gemm_fragdb, the
baseline to beat), the mma.sync rungs (mma_gemm_ldmatrix, mma_gemm_swizzled, mma_gemm_tuned),
the contenders for the tuned rung's place (CONTENDERS, issue #35: mma_gemm_persistent, one block
per SM walking the tiles; mma_gemm_tma, the same multiply fed by TMA with mbarriers, sm_90;
mma_gemm_tma_persistent, both) and,
on sm_90, the Hopper rung (hgemm_wgmma: wgmma + TMA, compiled by NVRTC for sm_90a and
loaded as a cubin, its tensor maps built through the driver's cuTensorMapEncodeTiled); then
fp64 (dmma_gemm_fast's WMMA m8n8k4 vs dmma_gemm_m16n8k16) against cuBLAS fp64; then the
register-only ceilings (mma_peak_niter, mma_peak_niter_f64's shapes, beside wmma_peak_niter and
dmma_gemm_peak_niter) and the ldmatrix cost of the three shared layouts (ldmatrix_layouts.cu).
Every GEMM is checked against a float64 reference at several sizes (output poisoned) BEFORE it
is timed, and timed in alternating rounds with cuBLAS in the same process on the same inputs
(grader.runtime.timing.paired): each row's % of cuBLAS divides by that row's own cuBLAS.
`--sweep` adds tile/stage variants of the tuned rungs. Without a GPU it says so and exits 2.
grader.bench.mma_sweep (.ci/gpu-mma-sweep) times the tuned rung and every contender alone, in
rounds, with a summary line.
"""
from __future__ import annotations

import argparse
import ctypes
import secrets
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader.bench import wmma as bench_wmma
from grader.problems import gemm, gemm_launch, numerics
from grader.problems.mma import ldmatrix_passes, ldsm_layout_reference, peak_reference
from grader.runtime import kernels
from grader.runtime.device import device_info

CHECK_SIZES = (256, 512, 1024, 4096)


# ---------------------------------------------------------------- the rungs
@dataclass
class Rung:
    """A kernel file of notebook 10 plus the -D values it is built with."""

    name: str  # row label
    file: str  # kernels/<file>.cu
    defines: dict = field(default_factory=dict)
    kind: str = "mma"  # "mma": fp16 in, fp32 out, mma.sync; "tma": the same fed by TMA (sm_90, tensor-map
    #                    arguments); "wgmma": sm_90a; "dmma": fp64

    def value(self, key: str):
        return self.defines.get(key, _DEFAULTS[self.file].get(key))

    @property
    def threads(self) -> int:
        if self.kind == "wgmma":
            return 128 * (self.value("BLOCK_M") // 64 + 1)
        return 32 * (self.value("BLOCK_M") // self.value("WARP_TILE_M")) * (
            self.value("BLOCK_N") // self.value("WARP_TILE_N"))

    @property
    def shared_mem(self) -> int:
        """The header's formula of dynamic shared memory, in bytes."""
        bm, bn, bk, stages = (self.value(k) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES"))
        if self.kind in TMA_KINDS:
            return stages * (bm + bn) * 64 * 2 + 1024 + 16 * stages
        pad = self.value("SMEM_PAD") or 0
        return stages * (bm * (bk + pad) + bk * (bn + pad)) * (8 if self.kind == "dmma" else 2)

    @property
    def launch(self) -> dict:
        """The launch keywords of exercise mma-gemm that build this rung as it is."""
        return dict(block_m=self.value("BLOCK_M"), block_n=self.value("BLOCK_N"),
                    block_k=self.value("BLOCK_K"), threads=self.threads, shared_mem=self.shared_mem)

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(f"-D{k}={v}" for k, v in sorted(self.defines.items()))

    @property
    def persistent(self) -> bool:
        """A kernel whose blocks walk the tiles (grid: one block per SM), not one block per tile."""
        return self.file in PERSISTENT_FILES

    def spec(self) -> gemm_launch.GemmSpec:
        kernel = {"dmma": "dmma_gemm", "wgmma": "hgemm_wgmma"}.get(self.kind, "mma_gemm")
        base = bench_wmma.rung_spec(self, kernel, self.kind == "dmma")
        if not self.persistent:
            return base
        info = device_info()
        return gemm_launch.persistent(base, info.sm_count if info else 132)


# Defaults exactly as the #ifndef blocks of each file (a CPU test compares them).
_DEFAULTS = {
    "mma_gemm_ldmatrix": dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, WARP_TILE_M=64, WARP_TILE_N=64, SMEM_PAD=8,
                              STAGES=3, GROUP_M=16),
    "mma_gemm_swizzled": dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, WARP_TILE_M=64, WARP_TILE_N=64, STAGES=3,
                              GROUP_M=16),
    "mma_gemm_tuned": dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, WARP_TILE_M=64, WARP_TILE_N=64, STAGES=3,
                           GROUP_M=8),
    "mma_gemm_persistent": dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, WARP_TILE_M=64, WARP_TILE_N=64, STAGES=3,
                                GROUP_M=8, SERPENTINE=1),
    "mma_gemm_tma": dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, WARP_TILE_M=64, WARP_TILE_N=64, STAGES=4,
                         GROUP_M=8),
    "mma_gemm_tma_persistent": dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, WARP_TILE_M=64, WARP_TILE_N=64, STAGES=4,
                                    GROUP_M=8, SERPENTINE=1),
    "hgemm_wgmma": dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, STAGES=4, GROUP_M=16),
    "dmma_gemm_m16n8k16": dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=16, WARP_TILE_M=32, WARP_TILE_N=32, SMEM_PAD=4,
                               STAGES=4),
}

LADDER = [Rung(f, f) for f in ("mma_gemm_ldmatrix", "mma_gemm_swizzled", "mma_gemm_tuned")]
TUNED = "mma_gemm_tuned"  # the reference of exercise mma-gemm, the rung the 70% aim is held against
# Contenders for the tuned rung's place (issue #35 item 2), timed beside it in the same run; the
# one that reaches 70% of cuBLAS on an H100 becomes rung 3 (and the 70% test points at it).
PERSISTENT_FILES = ("mma_gemm_persistent", "mma_gemm_tma_persistent")
TMA_KINDS = ("tma", "wgmma")  # built as sm_90a cubins, launched with tensor maps (WgmmaGemm)
CONTENDERS = [Rung("mma_gemm_persistent", "mma_gemm_persistent"), Rung("mma_gemm_tma", "mma_gemm_tma", kind="tma"),
              Rung("mma_gemm_tma_persistent", "mma_gemm_tma_persistent", kind="tma")]
WGMMA = Rung("hgemm_wgmma", "hgemm_wgmma", kind="wgmma")
DMMA = Rung("dmma_gemm_m16n8k16", "dmma_gemm_m16n8k16", kind="dmma")
BASELINE = "wmma_gemm_fragdb"  # notebook 06's best rung


def _v(file, **kw) -> Rung:
    tag = ",".join(f"{k}={v}" for k, v in kw.items())
    base = _DEFAULTS[file]
    kind = ("wgmma" if file == "hgemm_wgmma" else "tma" if file.startswith("mma_gemm_tma") else "dmma"
            if file.startswith("dmma") else "mma")
    assert set(kw) <= set(base) | {"NACC", "PREFETCH"}, kw
    return Rung(f"{file}[{tag}]", file, kw, kind=kind)


SWEEP = [
    # around the defaults (128 x 256 x 64, 3 stages, GROUP_M 8; chosen by the 2026-11-26 sweep)
    _v("mma_gemm_tuned", BLOCK_K=32, STAGES=4, GROUP_M=16),  # the defaults before: 98304 B, fits sm_86/89
    _v("mma_gemm_tuned", STAGES=4),                       # 196608 B: sm_90 only
    _v("mma_gemm_tuned", GROUP_M=16),
    _v("mma_gemm_tuned", BLOCK_M=256, BLOCK_N=128),
    _v("mma_gemm_tuned", BLOCK_N=128),                    # 4 warps, 98304 B: 2 blocks per SM
    _v("hgemm_wgmma", BLOCK_N=128),
    _v("hgemm_wgmma", STAGES=3),
    _v("hgemm_wgmma", BLOCK_M=64, STAGES=6),              # one consumer warpgroup
    _v("dmma_gemm_m16n8k16", BLOCK_N=128, WARP_TILE_N=64),
    _v("dmma_gemm_m16n8k16", BLOCK_K=32, STAGES=3),
]
# Variants of the contenders (timed by grader.bench.mma_sweep, and by --sweep): their launches are
# not the exercise's block rule (a persistent grid, tensor-map arguments), so they stay out of SWEEP.
CONTENDER_SWEEP = [
    # the persistent contender (244 registers on sm_90, NVRTC 13.0): a deeper pipeline, and the schedule
    # alone (256 x 128 is left out: it spills 8 bytes here)
    _v("mma_gemm_persistent", STAGES=4),                  # 196608 B: sm_90 only
    _v("mma_gemm_persistent", SERPENTINE=0),              # the schedule alone, the tuned rung's mma order
    # the TMA contenders (226 and 235 registers): refill the stage read two k-tiles ago (thread 0
    # then rarely waits for a slow warp), and the taller tile (232 registers)
    _v("mma_gemm_tma", PREFETCH=2),
    _v("mma_gemm_tma_persistent", BLOCK_M=256, BLOCK_N=128),
]


def arch() -> int:
    info = device_info()
    return info.cc if info else 0  # the arch the course acts as (TC_ARCH included)


# ---------------------------------------------------------------- sm_90a: cubin + tensor maps
def nvrtc_sm90a(source: str, options=(), stack: str | None = None, output: str = "ptx"):
    """Compile for sm_90a (wgmma, setmaxnreg) with NVRTC alone, no GPU needed: the course's
    nvrtc_compile targets the numbered archs only. Returns a grader.runtime.compile.Compiled
    (PTX, the ptxas resources of each kernel), or with output="cubin" the cubin bytes."""
    from grader.runtime import nvrtc as nvrtc_lib
    from grader.runtime.compile import (BASE_OPTIONS, Compiled, NoCompiler, compile_error, compiler_for,
                                        parse_log, parse_resources)
    from grader.runtime.headers import include_options

    nv = nvrtc_lib.load(stack) if stack else compiler_for(90)
    if nv is None:
        raise NoCompiler(f"the NVRTC of the {stack} stack is not installed")
    opts = [*BASE_OPTIONS, *include_options(nv.stack.name), *options]

    def run(extra, out):
        try:
            return nv.compile(source, [*extra, *opts], "kernel.cu", out)
        except nvrtc_lib.NvrtcFailed as e:
            raise compile_error(e.log, source, filename="kernel.cu", arch=90) from None

    if output == "cubin":
        return run(["-arch=sm_90a"], "cubin").code
    first = run(["-arch=compute_90a"], "ptx")
    log = run(["-arch=sm_90a", "-Xptxas=-v"], "log").log
    warnings = [d for d in parse_log(first.log, source, filename="kernel.cu") if d.severity == "warning"]
    return Compiled(source=source, arch=90, ptx=first.code.decode(), log=first.log, warnings=warnings,
                    resources=parse_resources(log), nvrtc=nv.version)


class CubinModule:
    """A kernel compiled by the course's NVRTC for sm_90a and loaded as a cubin: CuPy's own
    compile always appends -arch=sm_90, and wgmma/setmaxnreg exist only on sm_90a."""

    def __init__(self, source: str, options=()):
        import cupy

        self._dir = tempfile.TemporaryDirectory(prefix="tc-cubin-")
        path = Path(self._dir.name) / "kernel.cubin"
        path.write_bytes(nvrtc_sm90a(source, options, output="cubin"))
        self.module = cupy.RawModule(path=str(path))

    def function(self, name: str):
        return self.module.get_function(name)


# CUtensorMapDataType of the element types the course's TMA kernels read (cuda.h's enum)
_CU_TENSOR_MAP_DATA_TYPE = {"uint8": 0, "float16": 6}
_CU_TENSOR_MAP_SWIZZLE_128B, _CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 3, 2


@dataclass(frozen=True)
class TensorMapLayout:
    """What cuTensorMapEncodeTiled is told about a row-major 2-D array: its CUtensorMapDataType,
    dims and box innermost first ({cols, rows}), and the byte stride from one row to the next."""

    data_type: int
    dims: tuple[int, int]
    row_stride: int
    box: tuple[int, int]


def tensor_map_layout(shape, dtype, box_cols: int, box_rows: int) -> TensorMapLayout:
    """The tiled, 128-byte-swizzled tensor map of a row-major (rows, cols) array of `dtype`, with
    the driver's rules checked here so a wrong shape reads as one line: the box's inner extent at
    most the 128 bytes of the swizzle, at most 256 elements a side, rows 16-byte aligned."""
    rows, cols = shape
    dt = np.dtype(dtype)
    if dt.name not in _CU_TENSOR_MAP_DATA_TYPE:
        raise ValueError(f"no tensor map for {dt.name} arrays here (only {', '.join(_CU_TENSOR_MAP_DATA_TYPE)})")
    if box_cols * dt.itemsize > 128:
        raise ValueError(f"a box {box_cols} {dt.name} wide is {box_cols * dt.itemsize} bytes: the 128-byte "
                         "swizzle allows at most 128")
    if not (0 < box_cols <= 256 and 0 < box_rows <= 256):
        raise ValueError(f"box {box_rows} x {box_cols}: each side must be 1 to 256 elements")
    if (cols * dt.itemsize) % 16:
        raise ValueError(f"rows of {cols} {dt.name} are {cols * dt.itemsize} bytes: TMA needs a multiple of 16")
    return TensorMapLayout(_CU_TENSOR_MAP_DATA_TYPE[dt.name], (cols, rows), cols * dt.itemsize, (box_cols, box_rows))


def tensor_map(a, box_cols: int, box_rows: int):
    """A CUtensorMap (128 bytes, in a cupy uint8 array on the device) for a row-major 2-D fp16 or
    uint8 (e4m3 codes) array `a`: dims {cols, rows}, box {box_cols, box_rows}, 128-byte swizzle
    (what hgemm_wgmma's and fp8_gemm_wgmma's headers ask for), built by the driver's
    cuTensorMapEncodeTiled from tensor_map_layout."""
    import cupy

    rows, cols = a.shape
    lay = tensor_map_layout(a.shape, a.dtype, box_cols, box_rows)
    lib = ctypes.CDLL("libcuda.so.1")
    fn = lib.cuTensorMapEncodeTiled
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, u32, ctypes.c_void_p, ctypes.POINTER(u64), ctypes.POINTER(u64),
                   ctypes.POINTER(u32), ctypes.POINTER(u32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    tmap = (ctypes.c_uint8 * 128)()
    dims = (u64 * 2)(*lay.dims)
    strides = (u64 * 1)(lay.row_stride)  # bytes from one row to the next
    box = (u32 * 2)(*lay.box)
    elem = (u32 * 2)(1, 1)
    rc = fn(ctypes.addressof(tmap), lay.data_type, 2, ctypes.c_void_p(a.data.ptr), dims, strides,
            box, elem, 0, _CU_TENSOR_MAP_SWIZZLE_128B, _CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 0)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {rc} for a {rows} x {cols} array, "
                           f"box {box_rows} x {box_cols}")
    return cupy.asarray(np.frombuffer(bytes(tmap), dtype=np.uint8))


class WgmmaGemm:
    """A kernel taking tensor maps (hgemm_wgmma, mma_gemm_tma) with the GemmSpec-style `bind` the
    timing and checks use: A's box is 64 k x BLOCK_M rows, B's 64 n x 64 k, both 128-byte swizzled."""

    backend = "gpu"

    def __init__(self, rung: Rung = WGMMA):
        self.rung = rung
        self.module = CubinModule(kernels.source(rung.file), rung.options)
        self.fn = self.module.function(rung.spec().kernel)
        self.fn.max_dynamic_shared_size_bytes = rung.shared_mem
        self._keep: list = []

    @property
    def xp(self):
        import cupy

        return cupy

    def bind(self, kernel, grid, block, args, shared_mem=0):
        A, B, C, M, N, K = args
        bm = self.rung.value("BLOCK_M")
        ta, tb = tensor_map(A, 64, bm), tensor_map(B, 64, 64)
        self._keep = [ta, tb]  # alive as long as the launch may run
        params = (ta, tb, C, np.int32(M), np.int32(N), np.int32(K))
        return lambda: self.fn(tuple(grid), tuple(block), params, shared_mem=shared_mem)

    def launch(self, kernel, grid, block, args, shared_mem=0):
        self.bind(kernel, grid, block, args, shared_mem)()

    def resources(self, kernel):
        from grader.runtime.compile import KernelResources

        return KernelResources(registers=self.fn.num_regs, shared_bytes=self.fn.shared_size_bytes,
                               stack_bytes=self.fn.local_size_bytes, spill_stores=-1, spill_loads=-1)


PROBE_SECONDS = 180


def probe(rung: Rung, timeout: float = PROBE_SECONDS) -> str | None:
    """Run a first launch of `rung` (a check at 256^3 and 1024^3) in a child process with a time
    limit: None when it ran and was right, else why not. The Hopper rung has not run on a GPU
    yet, and a kernel that waits on an mbarrier nobody completes hangs, taking the caller's
    process (and its CUDA context) with it."""
    import subprocess

    tag = ",".join(f"{k}={v}" for k, v in sorted(rung.defines.items()))
    cmd = [sys.executable, "-m", "grader.bench.mma", "--probe", f"{rung.file}:{tag}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"HANG: no result within {timeout:.0f} s (a deadlock waiting on an mbarrier?)"
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        return (lines[-1] if lines else f"exit status {proc.returncode}")[:200]
    return None


def _probe_main(spec: str) -> int:
    """`--probe FILE:K=V,...`: the child side of probe()."""
    file, _, tag = spec.partition(":")
    defines = {k: int(v) for k, v in (kv.split("=") for kv in tag.split(",") if kv)}
    rung = Rung(file, file, defines, kind=next(r.kind for r in LADDER + CONTENDERS + [WGMMA, DMMA] if r.file == file))
    ok, worst, detail = bench_wmma.check_sizes(module_of(rung), rung.spec(), (256, 1024))
    print("ok" if ok else f"WRONG: {detail}")
    return 0 if ok else 1


def module_of(rung: Rung):
    if rung.kind in TMA_KINDS:
        return WgmmaGemm(rung)
    return bench_wmma._module(rung.file, rung.options)


# ---------------------------------------------------------------- tables
HEAD = bench_wmma.HEAD


def _rows(rung_like, spec, module, sizes, check_sizes, out) -> list[dict]:
    """Check, then time at each size beside cuBLAS (paired); one table row per size."""
    res = str(module.resources(spec.kernel).registers)
    ok, worst, detail = bench_wmma.check_sizes(module, spec, check_sizes)
    rows = []
    for n in sizes:
        t = bench_wmma.time_kernel(module, spec, n) if ok else None
        rows.append(dict(name=rung_like, n=n, ok=ok, ratio=t["ratio"] if t else 0.0, tflops=t["tflops"] if t else 0.0))
        out(bench_wmma._row(rung_like, n, ok, worst, detail, res, t))
    return rows


def ladder_table(sizes, only=None, out=print) -> list[dict]:
    out("\n### fp16 in, fp32 out: beyond WMMA, paired with cuBLAS fp16 (cupy.matmul)\n")
    out(f"Correctness checked at {', '.join(map(str, CHECK_SIZES))} (n^3) before timing; every row's cuBLAS "
        "was timed in alternating rounds with that row's kernel.\n")
    out(HEAD)
    rows = []
    if not only or "fragdb" in only:
        base = next(r for r in bench_wmma.LADDER if r.file == BASELINE)
        rows += _rows(BASELINE + " (notebook 06)", base.spec(), bench_wmma._module(base.file, base.options),
                      sizes, CHECK_SIZES, out)
    for rung in LADDER + CONTENDERS + [WGMMA]:
        if only and rung.file.replace("mma_gemm_", "").replace("hgemm_", "") not in only:
            continue
        if rung.kind in TMA_KINDS and arch() < 90:
            out(f"| {rung.name} | | SKIPPED: needs sm_90, this GPU is sm_{arch()} | | | | |")
            continue
        why = probe(rung) if rung.kind in TMA_KINDS else None
        if why:
            out(f"| {rung.name} | | FAILED: {why} | | | | |")
            continue
        try:
            rows += _rows(rung.name, rung.spec(), module_of(rung), sizes, CHECK_SIZES, out)
        except Exception as e:  # noqa: BLE001 - a rung that fails to build or launch: say so, go on
            out(f"| {rung.name} | | FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]} | | | | |")
    return rows


def dmma_table(sizes, out=print) -> list[dict]:
    out("\n### fp64: WMMA m8n8k4 vs mma.sync m16n8k16 (sm_90), paired with cuBLAS fp64\n")
    out(HEAD)
    rows = _rows(bench_wmma.DMMA_FAST.name + " (WMMA m8n8k4)", bench_wmma.DMMA_FAST.spec(),
                 bench_wmma._module(bench_wmma.DMMA_FAST.file, bench_wmma.DMMA_FAST.options), sizes,
                 CHECK_SIZES[:3], out)
    if arch() < 90:
        out(f"| {DMMA.name} | | SKIPPED: needs sm_90, this GPU is sm_{arch()} | | | | |")
        return rows
    return rows + _rows(DMMA.name, DMMA.spec(), module_of(DMMA), sizes, CHECK_SIZES[:3], out)


def _peak(module, entry, dtype, k, niters, blocks, threads, nacc_label, out_cells):
    import cupy

    from grader.runtime.timing import benchmark

    W = blocks * threads // 32
    rng = np.random.default_rng(secrets.randbits(32))
    A = cupy.asarray(rng.uniform(-1, 1, W * 16 * k).astype(dtype))
    B = cupy.asarray(rng.uniform(-1, 1, W * 8 * k).astype(dtype))
    C = cupy.full(W * 128, np.nan, dtype=np.float64 if dtype == np.float64 else np.float32)
    module.launch(entry, (blocks, 1, 1), (threads, 1, 1), [A, B, C, 5])
    ref, bound = peak_reference(A.get(), B.get(), W, 5, k)
    cmp = numerics.compare(C.get(), ref, bound)
    cells = []
    for niter in niters:
        t = benchmark(module.bind(entry, (blocks, 1, 1), (threads, 1, 1), [A, B, C, niter]), max_seconds=1.0)
        cells.append(f"{t.tflops(W * niter * 2.0 * 16 * 8 * k):.1f}")
    out_cells(nacc_label, "ok" if cmp.ok else str(cmp), cells)


def ceilings_table(niters=(1, 16, 256, 1024, 4096), threads=256, out=print) -> None:
    """Register-only ceilings: mma.sync f16 and the fp64 shapes, NACC independent accumulators."""
    info = device_info()
    blocks = 16 * (info.sm_count if info else 132)
    out(f"\n### Register-only ceilings (TFLOP/s), {blocks * threads // 32} warps, each loads its fragments once "
        "then issues niter mma.sync\n")
    out("| kernel | NACC | check (niter=5) | " + " | ".join(f"niter {n}" for n in niters) + " |")
    out("|---" * (len(niters) + 3) + "|")

    def row(label):
        return lambda nacc, check, cells: out(f"| {label} | {nacc} | {check} | " + " | ".join(cells) + " |")

    for nacc in (4, 8):
        m = bench_wmma._module("mma_peak_niter", (f"-DNACC={nacc}",))
        _peak(m, "mma_peak_niter", np.float16, 16, niters, blocks, threads, nacc, row("mma m16n8k16 f16->f32"))
    if arch() >= 90:
        for k in (4, 8, 16):
            m = bench_wmma._module("mma_peak_niter_f64", (f"-DF64_K={k}", "-DNACC=8"))
            _peak(m, "mma_peak_niter_f64", np.float64, k, niters, blocks, threads, 8, row(f"mma m16n8k{k} f64"))
    out("\n(WMMA beside them, same run: `wmma_peak_niter` and `dmma_gemm_peak_niter` follow.)")
    bench_wmma.niter_table(niters=niters[:-1], out=out)
    bench_wmma.dmma_niter_table(niters=niters, out=out)


def banks_table(iters=4096, threads=256, out=print) -> list[dict]:
    """ldmatrix.x4 rate of the plain, padded and swizzled 64 x 64 tiles (ldmatrix_layouts.cu)."""
    import cupy

    from grader.runtime.timing import benchmark

    info = device_info()
    blocks = 8 * (info.sm_count if info else 132)
    W = blocks * threads // 32
    M = np.random.default_rng(secrets.randbits(32)).uniform(-1, 1, (64, 64)).astype(np.float16)
    Md = cupy.asarray(M.ravel())
    outd = cupy.zeros(W * 32, dtype=cupy.uint32)
    ref = ldsm_layout_reference(M, W, 7)
    out("\n### ldmatrix and the shared layout: ldmatrix_layouts.cu (4 ldmatrix.x4 per round, "
        f"{W} warps, {iters} rounds)\n")
    out("| layout | model passes per 8x8 read | correct | time | TB/s of fragments | x the best |\n|---|---|---|---|---|---|")
    rows = []
    for layout, name in ((0, "plain (rows 128 B apart)"), (1, "padded (+16 B per row)"), (2, "XOR-swizzled")):
        m = bench_wmma._module("ldmatrix_layouts", (f"-DLAYOUT={layout}",))
        m.launch("ldsm_layout", (blocks, 1, 1), (threads, 1, 1), [Md, outd, 7])
        ok = bool((outd.get() == ref).all())
        t = benchmark(m.bind("ldsm_layout", (blocks, 1, 1), (threads, 1, 1), [Md, outd, iters]), max_seconds=1.0)
        rows.append(dict(layout=layout, name=name, ok=ok, ms=t.median_ms,
                         tbps=W * iters * 4 * 512 / (t.median_ms * 1e-3) / 1e12))
    best = min(r["ms"] for r in rows)
    for r in rows:
        out(f"| {r['name']} | {ldmatrix_passes(('plain', 'padded', 'swizzled')[r['layout']])} | {'yes' if r['ok'] else 'WRONG'} | {r['ms']:.3f} ms | "
            f"{r['tbps']:.1f} | {r['ms'] / best:.2f} |")
    return rows


def sweep_table(sizes, out=print, kinds=None) -> None:
    out("\n### Tuning sweep (variants of the defaults; correctness checked at 1024)\n")
    out(HEAD)
    info = device_info()
    for rung in SWEEP + CONTENDER_SWEEP:
        if kinds and rung.kind not in kinds:
            continue
        if rung.kind in ("wgmma", "tma", "dmma") and arch() < 90:
            continue
        if info and rung.shared_mem > info.max_shared_optin:
            out(f"| {rung.name} | | SKIPPED: needs {rung.shared_mem} B of shared memory per block, this GPU "
                f"allows {info.max_shared_optin} | | | | |")
            continue
        why = probe(rung) if rung.kind in TMA_KINDS else None
        if why:
            out(f"| {rung.name} | | FAILED: {why} | | | | |")
            continue
        try:
            _rows(rung.name, rung.spec(), module_of(rung), sizes, (1024,), out)
        except Exception as e:  # noqa: BLE001
            out(f"| {rung.name} | | FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]} | | | | |")


def _once(name: str, n: int) -> int:
    known = LADDER + CONTENDERS + SWEEP + CONTENDER_SWEEP + [WGMMA, DMMA]
    rung = next((r for r in known if r.name == name), None)
    if rung is None:
        print(f"no rung {name!r}; one of: {', '.join(r.name for r in known)}", file=sys.stderr)
        return 2
    spec, module = rung.spec(), module_of(rung)
    A, B = gemm.random_inputs(n, n, n, spec.in_dtype, 0, module.xp)
    C = module.xp.zeros((n, n), dtype=spec.out_dtype)
    module.launch(spec.kernel, spec.grid(n, n, n), spec.block, [A, B, C, n, n, n], shared_mem=spec.shared_mem)
    module.xp.cuda.runtime.deviceSynchronize()
    print(f"{name}: launched once at {n}^3")
    return 0


def header() -> str:
    import datetime

    info = device_info()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"## Beyond WMMA: mma.sync, wgmma and DMMA vs cuBLAS — {info.name} ({info.arch}, {info.sm_count} SMs), "
            f"driver {info.driver}, CUDA runtime {info.runtime}, {now}\n\n"
            "Measured by `python -m grader.bench.mma`: inputs U(-1,1), every kernel checked against a float64 "
            "reference (componentwise bound, output poisoned) before timing; TFLOP/s = 2n^3 / median time (CUDA "
            "events); kernel and cuBLAS (cupy.matmul) timed in alternating rounds in the same process on the same "
            "inputs (grader.runtime.timing.paired); % of cuBLAS = the median of the per-round ratios.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.mma")
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--out", help="append everything printed to this file")
    ap.add_argument("--only", nargs="+", help="fragdb ldmatrix swizzled tuned persistent tma tma_persistent wgmma "
                    "dmma peak banks")
    ap.add_argument("--sweep", action="store_true", help="also time the tuning variants")
    ap.add_argument("--sweep-kind", nargs="+", choices=("mma", "tma", "wgmma", "dmma"),
                    help="time only these kinds of tuning variants")
    ap.add_argument("--probe", help=argparse.SUPPRESS)  # FILE:K=V,...: see probe()
    ap.add_argument("--once", metavar="RUNG", help="launch this rung (a ladder or sweep name) once at the "
                    "first --sizes, unchecked: the target of a profiler (ncu -k regex:^mma_gemm$)")
    args = ap.parse_args(argv)
    if device_info() is None:
        print("needs a GPU: no CUDA device found", file=sys.stderr)
        return 2
    if args.probe:
        return _probe_main(args.probe)
    if args.once:
        return _once(args.once, args.sizes[0])
    sink = open(args.out, "a") if args.out else None  # line by line: a run cut short keeps its rows
    if sink:
        sink.write("\n")

    def out(s: str) -> None:
        print(s, flush=True)
        if sink:
            sink.write(s + "\n")
            sink.flush()

    out(header())
    only = set(args.only) if args.only else None
    try:
        if not only or only & {"fragdb", "ldmatrix", "swizzled", "tuned", "persistent", "tma", "tma_persistent",
                               "wgmma"}:
            ladder_table(tuple(args.sizes), only, out=out)
        if not only or "dmma" in only:
            dmma_table(tuple(args.sizes), out=out)
        if not only or "peak" in only:
            ceilings_table(out=out)
        if not only or "banks" in only:
            banks_table(out=out)
        if args.sweep:
            sweep_table(tuple(args.sizes), out=out, kinds=args.sweep_kind)
    finally:
        if sink:
            sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
