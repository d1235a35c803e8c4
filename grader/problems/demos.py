"""References of the lecture-demo kernels that no exercise grades (notebook 06's
wmma_peak_niter and ldsm_pad): the lesson checks them, the cross-check compares backends."""
from __future__ import annotations

import numpy as np

from grader.problems import numerics


def niter_kernel_reference(A: np.ndarray, B: np.ndarray, warps: int, niter: int):
    """(float64 result, bound), each (warps, 16, 16), of wmma_peak_niter: C_w = niter A_w B_w."""
    a = A.astype(np.float64).reshape(warps, 16, 16)
    b = B.astype(np.float64).reshape(warps, 16, 16)
    ref = niter * np.matmul(a, b)
    return ref, numerics.gemm_bound(niter * np.matmul(np.abs(a), np.abs(b)), niter * 16)


def bank_kernel_reference(M: np.ndarray, warps: int, iters: int):
    """(float64 result, bound), each (warps, 16, 16), of ldsm_pad on the 64x64 matrix M:
    warp w sums the products of sub-tiles (i + w) % 16 and that + 5, for i < iters."""
    m = M.astype(np.float64).reshape(64, 64)
    tile = lambda t: m[(t >> 2) * 16:(t >> 2) * 16 + 16, (t & 3) * 16:(t & 3) * 16 + 16]  # noqa: E731
    refs, bounds = [], []
    for w in range(warps):
        ref, ab = np.zeros((16, 16)), np.zeros((16, 16))
        for i in range(iters):
            ta = (i + w) & 15
            tb = (ta + 5) & 15
            ref += tile(ta) @ tile(tb)
            ab += np.abs(tile(ta)) @ np.abs(tile(tb))
        refs.append(ref)
        bounds.append(numerics.gemm_bound(ab, 16 * iters))
    return np.stack(refs), np.stack(bounds)
