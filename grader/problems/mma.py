"""References of notebook 10's demo kernels (beyond WMMA): what kernels/ldmatrix_layouts.cu and
kernels/mma_peak_niter.cu must output, for the lesson checks, the bench and the cross-check."""
from __future__ import annotations

import numpy as np

from grader.problems import numerics


def ldsm_layout_reference(M: np.ndarray, warps: int, iters: int) -> np.ndarray:
    """out[w * 32 + lane] of ldsm_layout for a 64 x 64 fp16 tile M (any layout): the sum
    (mod 2^32) of the words lane `lane` receives from its ldmatrix.x4 reads, per the PTX ISA
    ldmatrix layout (lane l: row l/4, columns 2(l%4), +1 of each 8x8 matrix; lanes 8j..8j+7
    address matrix j)."""
    bits = np.asarray(M, dtype=np.float16).reshape(64, 64).view(np.uint16).astype(np.uint64)
    out = np.zeros((warps, 32), dtype=np.uint64)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    for w in range(warps):
        for it in range(iters):
            pair = (it + w) % 4
            for f in range(4):
                for j in range(4):
                    R = 16 * f + 8 * (j & 1) + g
                    C = 8 * (2 * pair + (j >> 1)) + 2 * t
                    out[w] += bits[R, C] | (bits[R, C + 1] << 16)
    return (out % 2**32).astype(np.uint32).ravel()


def peak_reference(A: np.ndarray, B: np.ndarray, warps: int, niter: int, k: int = 16):
    """(C, bound) of mma_peak_niter / mma_peak_niter_f64: C_w = niter * A_w B_w with A_w
    16 x k, B_w k x 8, C_w 16 x 8, row-major per warp."""
    a = np.asarray(A, dtype=np.float64).reshape(warps, 16, k)
    b = np.asarray(B, dtype=np.float64).reshape(warps, k, 8)
    fp64 = np.asarray(A).dtype == np.float64
    ref = niter * np.matmul(a, b)
    bound = numerics.gemm_bound(niter * np.matmul(np.abs(a), np.abs(b)), niter * k,
                                accumulate="fp64" if fp64 else "fp32")
    return ref.reshape(warps * 128), np.asarray(bound).reshape(warps * 128)


# ---------------------------------------------------------------- the bank model of ldmatrix
def chunk_offset(layout: str, r: int, c: int, row_bytes: int = 128) -> int:
    """Byte offset of 16-byte chunk c of row r of a tile with `row_bytes` per row, in the
    layouts of ldmatrix_layouts.cu / the mma_gemm rungs: "plain", "padded" (+16 bytes per row)
    or "swizzled" (chunk c ^ (r % 8))."""
    if layout == "plain":
        return r * row_bytes + 16 * c
    if layout == "padded":
        return r * (row_bytes + 16) + 16 * c
    if layout == "swizzled":  # as swz() of the kernels: rows of 64 bytes pair up in one 128-byte line
        return r * row_bytes + 16 * (c ^ (r % 8) if row_bytes >= 128 else c ^ ((r // 2) % 4))
    raise ValueError(layout)


def banks_of_read(layout: str, c: int, r0: int = 0, row_bytes: int = 128) -> np.ndarray:
    """banks[i, j]: the bank (of 32, 4 bytes each) of word j of row r0 + i of one 8x8 ldmatrix
    read at logical chunk c."""
    start = np.array([chunk_offset(layout, r0 + i, c, row_bytes) for i in range(8)])
    return ((start[:, None] + 4 * np.arange(4)[None, :]) // 4) % 32


def ldmatrix_passes(layout: str, row_bytes: int = 128) -> int:
    """Passes (wavefronts) the worst 8x8 ldmatrix read of the layout needs: the most rows that
    put a word in one bank (a row's own 4 words are in 4 different banks)."""
    worst = 1
    for c in range(row_bytes // 16):
        for r0 in range(0, 64, 8):
            worst = max(worst, int(np.bincount(banks_of_read(layout, c, r0, row_bytes).ravel(), minlength=32).max()))
    return worst
