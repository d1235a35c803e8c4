"""The library work a kernel's speed is compared with, built in the timing process.

cuBLAS through CuPy for GEMMs (fp16 inputs give an fp16 result there: cuBLAS then writes
half the bytes our fp32-output kernels write, so the ratio is, if anything, strict); a
device-to-device copy of the same bytes for transposes; im2col + cuBLAS for convolution; the
course's fp16 rung (notebook 10) on the same GEMM in fp16 for the FP8 GEMM.
"""
from __future__ import annotations

# what feedback calls each baseline
NAMES = {"cublas-fp16": "cuBLAS fp16", "cublas-fp32": "cuBLAS fp32", "cublas-fp64": "cuBLAS fp64",
         "copy": "a device-to-device copy", "sgemm-naive": "the naive SGEMM (kernels/sgemm_naive.cu)",
         "im2col-cublas": "im2col (CuPy slicing) + cuBLAS",
         "fp16-rung": "the course's fp16 rung (kernels/mma_gemm_tuned.cu) on the same GEMM in fp16"}


def name(kind: str | None) -> str:
    return NAMES.get(kind, kind or "")


def make(kind: str, args: list, dims: dict):
    """Return a no-argument function that launches the baseline on data shaped like `args`."""
    import cupy

    if kind in ("cublas-fp16", "cublas-fp32", "cublas-fp64"):
        dtype = {"cublas-fp16": cupy.float16, "cublas-fp32": cupy.float32, "cublas-fp64": cupy.float64}[kind]
        A, B = args[0].astype(dtype), args[1].astype(dtype)
        C = cupy.empty((A.shape[0], B.shape[1]), dtype=dtype)
        return lambda: cupy.matmul(A, B, out=C)
    if kind == "sgemm-naive":
        # the course's own naive SGEMM (kernels/sgemm_naive.cu) on the same inputs: how much a
        # tiled kernel gains over it is steadier than its share of cuBLAS (RESULTS-grader.md)
        from grader.problems.gemm_launch import sgemm_naive
        from grader.runtime import kernels
        from grader.runtime.gpu import GpuModule

        spec = sgemm_naive()
        A, B = args[0], args[1]
        M, K, N = A.shape[0], A.shape[1], B.shape[1]
        C = cupy.empty((M, N), dtype=cupy.float32)
        module = GpuModule(kernels.source("sgemm_naive"), spec.options)
        return module.bind(spec.kernel, spec.grid(M, N, K), spec.block, [A, B, C, M, N, K])
    if kind == "fp16-rung":
        return _fp16_rung(cupy, args[0], args[1])
    if kind == "copy":
        src = args[0]
        dst = cupy.empty_like(src)
        return lambda: dst.__setitem__(Ellipsis, src)
    if kind == "im2col-cublas":
        x, w = args[0], args[1]  # NHWC, KRSC
        N, H, W, C = x.shape
        K, R, S, _ = w.shape
        pad = dims["pad"]
        P, Q = H + 2 * pad - R + 1, W + 2 * pad - S + 1
        wmat = w.reshape(K, R * S * C).T.copy()
        xp = cupy.zeros((N, H + 2 * pad, W + 2 * pad, C), dtype=x.dtype)
        col = cupy.empty((N, P, Q, R, S, C), dtype=x.dtype)
        out = cupy.empty((N * P * Q, K), dtype=x.dtype)

        def run():
            xp[:, pad:pad + H, pad:pad + W, :] = x
            for r in range(R):
                for s in range(S):
                    col[:, :, :, r, s, :] = xp[:, r:r + P, s:s + Q, :]
            cupy.matmul(col.reshape(N * P * Q, R * S * C), wmat, out=out)
        return run
    raise ValueError(f"no baseline named {kind!r}")


def _fp16_rung(cupy, a8, b8):
    """Notebook 10's fp16 rung (kernels/mma_gemm_tuned.cu, as its header builds it for this GPU:
    gemm_launch.mma_tuned) on the FP8 GEMM's own inputs in fp16: the e4m3 codes A (M x K) and
    B (N x K) decoded (exactly: every e4m3 value is an fp16 value), B laid out K x N as the rung
    reads it. The scales are left out: they change no time."""
    import numpy as np

    from grader.problems import fp8
    from grader.problems.gemm_launch import mma_tuned
    from grader.runtime import kernels
    from grader.runtime.device import device_info
    from grader.runtime.gpu import GpuModule

    table = cupy.asarray(fp8.decode(np.arange(256)).astype(np.float16))  # code -> fp16 value
    A, B = table[a8], cupy.ascontiguousarray(table[b8].T)
    (M, K), N = A.shape, B.shape[1]
    spec = mma_tuned(device_info().max_shared_optin)
    if M % spec.multiple[0] or N % spec.multiple[1] or K % spec.multiple[2]:
        raise ValueError(f"the fp16 rung needs M, N, K multiples of {spec.multiple}, not {(M, N, K)}")
    C = cupy.empty((M, N), dtype=cupy.float32)
    module = GpuModule(kernels.source("mma_gemm_tuned"), spec.options)
    return module.bind(spec.kernel, spec.grid(M, N, K), spec.block, [A, B, C, M, N, K], shared_mem=spec.shared_mem)
