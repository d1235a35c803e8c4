"""The precision kernels of notebook 07 (one naive GEMM per input type) and how their inputs
are stored: the rounding NumPy lacks (bf16, tf32) and, per kernel, the arrays it receives and
the float64 values the tensor cores multiply. The lesson draws and times them; the cross-check
compares the emulator with the GPU on them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.problems import gemm_launch


# ---------------------------------------------------------------- rounding NumPy lacks
def to_bf16_bits(x) -> np.ndarray:
    """fp32 -> bf16, round to nearest even, as the uint16 bits kernels receive."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_to_float(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_tf32(x, ties: str = "away") -> np.ndarray:
    """fp32 -> tf32 (10 mantissa bits kept), round to nearest; stays float32.
    ties="away" is what wmma::__float_to_tf32 does on the GPU (PTX cvt.rna.tf32.f32, measured
    on an H200: the RNE variant left 1e-4 errors at K=16; the CPU emulator does the same);
    "even" is IEEE round-to-nearest-even, for comparison."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    if ties == "away":
        b = ((b + 0x1000) >> 13) << 13
    else:
        b = ((b + 0xFFF + ((b >> 13) & 1)) >> 13) << 13
    return (b & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def truncate_tf32(x) -> np.ndarray:
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return (b & np.uint32(0xFFFFE000)).view(np.float32)


# ---------------------------------------------------------------- the kernels compared
@dataclass(frozen=True)
class Kernel:
    label: str
    file: str
    entry: str
    tile: int  # output tile per warp (16 or 8); CUDA-core kernels: 16x16 threads
    k_step: int
    prepare: str  # how inputs are stored: fp16, bf16, fp32, tf32, tf32t, fp64
    library: str  # cuBLAS routine of the same precision
    options: tuple = ()
    color: str = "#0969da"

    def spec(self) -> gemm_launch.GemmSpec:
        if self.entry == "sgemm":
            return gemm_launch.sgemm_naive()
        out = "float64" if self.prepare == "fp64" else "float32"
        acc = "fp64" if self.prepare == "fp64" else "fp32"
        return gemm_launch.warp_per_tile(self.entry, "", out, self.tile, accumulate=acc, library=self.library,
                                         options=self.options)


KERNELS = [
    Kernel("fp16 tensor cores (m16n16k16)", "wmma_gemm_naive", "wmma_gemm", 16, 16, "fp16", "fp16", color="#0969da"),
    Kernel("bf16 tensor cores (m16n16k16)", "bf16_gemm_naive", "bf16_gemm", 16, 16, "bf16", "bf16", color="#bf3989"),
    Kernel("tf32 tensor cores (m16n16k8)", "tf32_gemm_naive", "tf32_gemm", 16, 8, "tf32", "tf32", color="#e16f24"),
    Kernel("tf32, truncated (no __float_to_tf32)", "tf32_gemm_naive", "tf32_gemm", 16, 8, "tf32t", "tf32",
           options=("-DROUND_TF32=0",), color="#fb8f44"),
    Kernel("fp32 CUDA cores (sgemm_naive)", "sgemm_naive", "sgemm", 16, 1, "fp32", "fp32", color="#8c959f"),
    Kernel("fp64 tensor cores (DMMA m8n8k4)", "dmma_gemm_naive", "dmma_gemm", 8, 4, "fp64", "fp64", color="#2da44e"),
]

def stored_inputs(k: Kernel, A64: np.ndarray, B64: np.ndarray):
    """(arrays the kernel receives, the float64 values the tensor cores multiply)."""
    if k.prepare == "fp16":
        a, b = A64.astype(np.float16), B64.astype(np.float16)
        return (a, b), (a.astype(np.float64), b.astype(np.float64))
    if k.prepare == "bf16":
        a, b = to_bf16_bits(A64.astype(np.float32)), to_bf16_bits(B64.astype(np.float32))
        return (a, b), (bf16_to_float(a).astype(np.float64), bf16_to_float(b).astype(np.float64))
    if k.prepare == "fp64":
        return (A64, B64), (A64, B64)
    a, b = A64.astype(np.float32), B64.astype(np.float32)
    seen = {"fp32": lambda x: x, "tf32": round_tf32, "tf32t": truncate_tf32}[k.prepare]
    return (a, b), (seen(a).astype(np.float64), seen(b).astype(np.float64))
