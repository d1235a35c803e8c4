"""The host side of kernels/fp8_gemm_wgmma.cu (notebook 11's FP8 GEMM on wgmma + TMA, sm_90a):
its launch geometry, its two uint8 tensor maps, a module the FP8 bench checks and times like any
other, and a probe that runs its first launches in a child process with a time limit.

    python -m grader.bench.fp8_wgmma --probe [-DKEY=VALUE ...]   # ok / WRONG: ... / exit 2 without a GPU

The kernel computes C = scale_a scale_b A B^T from e4m3 codes A (M x K) and B (N x K), both
row-major (K-major), the layout of kernels/fp8_gemm_mma.cu and of cuBLASLt's FP8 "TN": the bench
passes the same arrays to all three. Everything here but the launches runs without a GPU, and
tests/bench/test_fp8_wgmma.py checks it against direct computation.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field

import numpy as np

from grader.bench import fp8_checks
from grader.bench import mma as bench_mma

FILE = KERNEL = "fp8_gemm_wgmma"
# Defaults exactly as the kernel's #ifndef blocks (a CPU test compares them); BLOCK_K is fixed at
# 128 (one 128-byte swizzle row of one-byte codes).
DEFAULTS = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, STAGES=6, GROUP_M=16, PROMOTE=4)
PROBE_SHAPES = (256, (384, 256, 1152))  # square, and non-square with 9 k-tiles (> STAGES, a tail chain)
PROBE_SECONDS = 90  # a right probe takes seconds (an NVRTC compile, CuPy, two small checks)


@dataclass(frozen=True)
class Config:
    """fp8_gemm_wgmma built with these -D values (the rest at DEFAULTS)."""

    defines: dict = field(default_factory=dict)

    def value(self, key: str) -> int:
        return self.defines.get(key, DEFAULTS[key])

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(f"-D{k}={v}" for k, v in sorted(self.defines.items()))

    @property
    def threads(self) -> int:
        return 128 * (self.value("BLOCK_M") // 64 + 1)  # a producer warpgroup + one per 64 rows

    @property
    def shared_mem(self) -> int:
        """The header's dynamic shared memory: the stages, 1024 bytes of alignment, the mbarriers."""
        stages = self.value("STAGES")
        return stages * (self.value("BLOCK_M") + self.value("BLOCK_N")) * self.value("BLOCK_K") + 1024 + 16 * stages

    @property
    def multiple(self) -> tuple[int, int, int]:
        return self.value("BLOCK_M"), self.value("BLOCK_N"), self.value("BLOCK_K")

    def why_not(self, M: int, N: int, K: int) -> str:
        """'' when the kernel computes this shape, else why not (it has no edge tiles)."""
        bad = [f"{name} = {v} is no multiple of {m}" for name, v, m in zip("MNK", (M, N, K), self.multiple) if v % m]
        return "; ".join(bad)

    def grid(self, M: int, N: int) -> tuple[int, int, int]:
        return N // self.value("BLOCK_N"), M // self.value("BLOCK_M"), 1

    @property
    def block(self) -> tuple[int, int, int]:
        return self.threads, 1, 1

    def tensor_maps(self, M: int, N: int, K: int) -> tuple[bench_mma.TensorMapLayout, bench_mma.TensorMapLayout]:
        """A's and B's maps: uint8 codes, rows K bytes apart; A's box one 128-k slice of BLOCK_M rows,
        B's one of BLOCK_N rows (B is N x K: its rows are C's columns)."""
        bk = self.value("BLOCK_K")
        return (bench_mma.tensor_map_layout((M, K), np.uint8, bk, self.value("BLOCK_M")),
                bench_mma.tensor_map_layout((N, K), np.uint8, bk, self.value("BLOCK_N")))

    def case(self, case):
        """A case of grader.problems.fp8.gemm_case (made for fp8_gemm_mma's launch) with this kernel's
        launch geometry; its arguments, outputs and reference unchanged."""
        M, N, K = case.args[3:6]
        why = self.why_not(M, N, K)
        if why:
            raise ValueError(f"{FILE} cannot compute {M}x{N}x{K}: {why}")
        return dataclasses.replace(case, grid=self.grid(M, N), block=self.block, shared_mem=self.shared_mem)


DEFAULT = Config()
# everything in the wgmma chain (cuBLASLt's "fast accumulation") with the wide tile it makes room for
FAST = Config(dict(BLOCK_N=256, PROMOTE=0, STAGES=4))


class Fp8WgmmaGemm:
    """fp8_gemm_wgmma compiled by NVRTC for sm_90a and loaded as a cubin (grader.bench.mma's
    CubinModule), with the launch / bind of the course's modules: args are the kernel's but A and
    B are the uint8 CuPy arrays themselves, whose tensor maps are built here at each launch."""

    backend = "gpu"

    def __init__(self, config: Config = DEFAULT):
        from grader.runtime import kernels

        self.config = config
        self.module = bench_mma.CubinModule(kernels.source(FILE), config.options)
        self.fn = self.module.function(KERNEL)
        self.fn.max_dynamic_shared_size_bytes = config.shared_mem
        self._keep: list = []

    @property
    def xp(self):
        import cupy

        return cupy

    def bind(self, kernel, grid, block, args, shared_mem=0):
        A, B, C, M, N, K, scale_a, scale_b = args
        why = self.config.why_not(M, N, K)
        if why:
            raise ValueError(f"{FILE} cannot compute {M}x{N}x{K}: {why}")
        if tuple(A.shape) != (M, K) or tuple(B.shape) != (N, K) or A.dtype != np.uint8 or B.dtype != np.uint8:
            raise ValueError(f"{FILE} takes uint8 A ({M} x {K}) and B ({N} x {K}, K-major), got "
                             f"{A.dtype} {tuple(A.shape)} and {B.dtype} {tuple(B.shape)}")
        bm, bn, bk = self.config.multiple
        ta, tb = bench_mma.tensor_map(A, bk, bm), bench_mma.tensor_map(B, bk, bn)
        self._keep = [ta, tb]  # alive as long as the launch may run
        params = (ta, tb, C, np.int32(M), np.int32(N), np.int32(K), np.float32(scale_a), np.float32(scale_b))
        return lambda: self.fn(tuple(grid), tuple(block), params, shared_mem=shared_mem)

    def launch(self, kernel, grid, block, args, shared_mem=0):
        self.bind(kernel, grid, block, args, shared_mem)()


def check(module, cases, xp):
    """The float64 check of grader.bench.fp8 on this kernel: each case (fp8.gemm_case) launched with
    this kernel's geometry, its output poisoned; the plain fp32 bound first, the FP8 accumulator's
    slack only where that fails, and then said (fp8_checks.check_library)."""
    config = module.config

    def run(case):
        c = config.case(case)
        args = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in c.args]
        module.launch(KERNEL, c.grid, c.block, args, shared_mem=c.shared_mem)
        return args[2]

    return fp8_checks.check_library(run, cases, 2, fallback=fp8_checks.FP8_ACCUMULATOR)


def probe(config: Config = DEFAULT, timeout: float = PROBE_SECONDS) -> str | None:
    """First launches (PROBE_SHAPES) in a child process with a time limit: None when they ran and
    were right, else why not. A kernel waiting on an mbarrier nobody completes hangs its process,
    and a wrong address poisons its CUDA context: neither may take the bench with it."""
    import subprocess

    cmd = [sys.executable, "-m", "grader.bench.fp8_wgmma", "--probe", *config.options]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"HANG: no result within {timeout:.0f} s (a deadlock waiting on an mbarrier?)"
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    if proc.returncode != 0:
        return (lines[-1] if lines else f"exit status {proc.returncode}")[:200]
    return None


def probed(config: Config = DEFAULT) -> Fp8WgmmaGemm:
    """The module, once its first launches passed in a child process (probe); else RuntimeError."""
    why = probe(config)
    if why:
        raise RuntimeError(f"{FILE}: its first launches ({PROBE_SHAPES}) in a child process: {why}")
    return Fp8WgmmaGemm(config)


def config_of(options) -> Config:
    """The Config whose .options these are (the probe's child is given them on its command line)."""
    defines = {}
    for opt in options:
        key, eq, value = opt.removeprefix("-D").partition("=")
        if not opt.startswith("-D") or not eq or key not in DEFAULTS or key == "BLOCK_K":
            raise ValueError(f"not a define of {FILE}: {opt!r} (one of -D{'=N, -D'.join(sorted(DEFAULTS))}=N)")
        defines[key] = int(value)
    return Config(defines)


def _probe_main(options) -> int:
    import secrets

    import cupy

    module = Fp8WgmmaGemm(config_of(options))
    got = check(module, fp8_checks.fp8_cases(PROBE_SHAPES, np.random.default_rng(secrets.randbits(32))), cupy)
    print("ok: " + got.cell if got.ok else f"WRONG: {got.detail}")
    return 0 if got.ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.fp8_wgmma")
    ap.add_argument("--probe", action="store_true", help="check the kernel at small sizes (the child of probe())")
    args, defines = ap.parse_known_args(argv)
    from grader.runtime.device import device_info

    if device_info() is None:
        print("needs a GPU: no CUDA device found", file=sys.stderr)
        return 2
    if not args.probe:
        ap.print_help()
        return 2
    return _probe_main(defines)


if __name__ == "__main__":
    sys.exit(main())
