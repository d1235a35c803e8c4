"""Convolution and layout lessons: float64 references, launch rules and checks.

References (NumPy, or CuPy where `xp` is given; all float64, from the SAME rounded inputs
the kernel saw):
- `conv2d_same(img, mask)`: single-channel "same" 2D correlation with zero padding R/2 (the
  Salerno paper's direct convolution), by plain loops over the mask;
- `toeplitz_matrix(H, W, mask)`: the same operation as one matrix T with out = T img;
- `conv2d_nchw_direct(x, w, pad, stride)`: multi-channel direct convolution, one tensor
  contraction per mask offset (r, s), no unfolding;
- `im2col_nchw(...)` / `im2col_nhwc(...)`: the unfolded patch matrices (kernels/im2col.cu and
  the A operand of kernels/conv2d_implicit_wmma.cu);
- `conv2d_nhwc_reference(x, w, pad)`: y = A B as the GEMM the tensor-core kernel computes,
  with (|A||B|) for the componentwise bound numerics.gemm_bound(abs, R*S*C).
Runners (`check_*`) launch a kernel of the course's contract on fresh random inputs with its
output poisoned (NaN) and compare to the reference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.problems import gemm_launch, numerics
from grader.problems.gemm_launch import cdiv


def out_size(h: int, r: int, pad: int, stride: int = 1) -> int:
    return (h + 2 * pad - r) // stride + 1


# ----------------------------------------------------------------------------- references

def conv2d_same(img, mask) -> np.ndarray:
    """out[i][j] = sum_{a,b} mask[a][b] * img[i + a - R/2][j + b - R/2], zeros outside."""
    img = np.asarray(img, dtype=np.float64)
    mask = np.asarray(mask, dtype=np.float64)
    R = mask.shape[0]
    if mask.shape != (R, R) or R % 2 == 0:
        raise ValueError("the mask must be R x R with R odd")
    H, W = img.shape
    h = R // 2
    padded = np.zeros((H + 2 * h, W + 2 * h))
    padded[h:h + H, h:h + W] = img
    out = np.zeros((H, W))
    for a in range(R):
        for b in range(R):
            out += mask[a, b] * padded[a:a + H, b:b + W]
    return out


def toeplitz_matrix(H: int, W: int, mask) -> np.ndarray:
    """The (H*W) x (H*W) matrix T with conv2d_same(img, mask).ravel() == T @ img.ravel():
    row i*W + j holds the mask, placed where output pixel (i, j) reads the image. A doubly
    block Toeplitz matrix: W x W Toeplitz blocks, one band of blocks per mask row."""
    mask = np.asarray(mask, dtype=np.float64)
    R = mask.shape[0]
    h = R // 2
    T = np.zeros((H * W, H * W))
    for i in range(H):
        for j in range(W):
            for a in range(R):
                for b in range(R):
                    ii, jj = i + a - h, j + b - h
                    if 0 <= ii < H and 0 <= jj < W:
                        T[i * W + j, ii * W + jj] = mask[a, b]
    return T


def _xp(a):
    return numerics._xp(a)


def conv2d_nchw_direct(x, w, pad: int = 0, stride: int = 1):
    """y[n,k,p,q] = sum_{c,r,s} x[n,c,p*stride-pad+r, q*stride-pad+s] w[k,c,r,s], float64,
    NCHW in and out: one contraction over c per mask offset (r, s)."""
    xp = _xp(x)
    x = x.astype(xp.float64)
    w = w.astype(xp.float64)
    N, C, H, W = x.shape
    K, C2, R, S = w.shape
    assert C == C2, "x and w disagree on C"
    P, Q = out_size(H, R, pad, stride), out_size(W, S, pad, stride)
    xp_ = xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = xp.zeros((N, K, P, Q))
    for r in range(R):
        for s in range(S):
            patch = xp_[:, :, r:r + stride * (P - 1) + 1:stride, s:s + stride * (Q - 1) + 1:stride]
            y += xp.einsum("ncpq,kc->nkpq", patch, w[:, :, r, s])
    return y


def im2col_nchw(x, R: int, S: int, pad: int = 0, stride: int = 1):
    """(N*P*Q) x (C*R*S) patch matrix of NCHW x, in x's dtype: row (n*P + p)*Q + q,
    column (c*R + r)*S + s (kernels/im2col.cu's contract)."""
    xp = _xp(x)
    N, C, H, W = x.shape
    P, Q = out_size(H, R, pad, stride), out_size(W, S, pad, stride)
    xp_ = xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    col = xp.empty((N, P, Q, C, R, S), dtype=x.dtype)
    for r in range(R):
        for s in range(S):
            patch = xp_[:, :, r:r + stride * (P - 1) + 1:stride, s:s + stride * (Q - 1) + 1:stride]
            col[:, :, :, :, r, s] = patch.transpose(0, 2, 3, 1)
    return col.reshape(N * P * Q, C * R * S)


def im2col_nhwc(x, R: int, S: int, pad: int = 0):
    """(N*P*Q) x (R*S*C) patch matrix of NHWC x (stride 1), in x's dtype: column
    (r*S + s)*C + c: the A operand of the implicit-GEMM convolution."""
    xp = _xp(x)
    N, H, W, C = x.shape
    P, Q = out_size(H, R, pad), out_size(W, S, pad)
    xp_ = xp.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    col = xp.empty((N, P, Q, R, S, C), dtype=x.dtype)
    for r in range(R):
        for s in range(S):
            col[:, :, :, r, s, :] = xp_[:, r:r + P, s:s + Q, :]
    return col.reshape(N * P * Q, R * S * C)


def weights_as_b(w_krsc):
    """B (R*S*C) x K of the implicit GEMM from KRSC weights: B[(r*S+s)*C + c][k] = w[k,r,s,c]."""
    K = w_krsc.shape[0]
    return w_krsc.reshape(K, -1).T


def conv2d_nhwc_reference(x, w, pad: int, *, rows_per_chunk: int = 1 << 14):
    """float64 y (N*P*Q) x K = A B and (|A||B|) for NHWC x and KRSC w, stride 1, computed
    with x's array module in chunks of images. Returns NumPy arrays."""
    xp = _xp(x)
    N, H, W, C = x.shape
    K, R, S, _ = w.shape
    P, Q = out_size(H, R, pad), out_size(W, S, pad)
    B = weights_as_b(w).astype(xp.float64)
    absB = xp.abs(B)
    per = max(1, rows_per_chunk // (P * Q))
    refs, abss = [], []
    for n0 in range(0, N, per):
        A = im2col_nhwc(x[n0:n0 + per].astype(xp.float64), R, S, pad)
        refs.append(numerics._np(A @ B))
        abss.append(numerics._np(xp.abs(A) @ absB))
    return np.concatenate(refs), np.concatenate(abss)


def random_uniform(shape, dtype, seed: int, xp=np):
    """U(-1, 1) rounded to `dtype` (zero-mean data: wrong indexing cannot average away)."""
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.uniform(-1, 1, shape).astype(dtype))


# ----------------------------------------------------------------------------- launch rules

def transpose_launch(rows: int, cols: int):
    """(grid, block) of kernels/transpose_*.cu."""
    return (cdiv(cols, 32), cdiv(rows, 32), 1), (32, 8, 1)


def im2col_launch(N, C, H, W, R, S, pad, stride):
    total = N * out_size(H, R, pad, stride) * out_size(W, S, pad, stride) * C * R * S
    return (cdiv(total, 256), 1, 1), (256, 1, 1)


def direct_launch(H: int, W: int):
    return (cdiv(W, 16), cdiv(H, 16), 1), (16, 16, 1)


@dataclass(frozen=True)
class WmmaConfig:
    """Compile-time parameters of kernels/conv2d_implicit_wmma.cu and its launch rule."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    threads: int = 128
    warps_m: int = 2
    stages: int = 4

    @property
    def options(self) -> tuple[str, ...]:
        return (f"-DBLOCK_M={self.block_m}", f"-DBLOCK_N={self.block_n}",
                f"-DBLOCK_K={self.block_k}", f"-DTHREADS={self.threads}",
                f"-DWARPS_M={self.warps_m}", f"-DSTAGES={self.stages}")

    @property
    def shared_bytes(self) -> int:
        return self.stages * (self.block_m + self.block_n) * (self.block_k + 8) * 2

    def supports(self, C: int, K: int) -> bool:
        return C % self.block_k == 0 and K % self.block_n == 0

    @property
    def spec(self) -> gemm_launch.GemmSpec:
        """The implicit GEMM's launch: `threads` per block_m x block_n tile of y (N*P*Q x K)."""
        return gemm_launch.block_tiles("conv2d", "float16", "float32", self.block_m, self.block_n, self.threads,
                                       options=self.options, multiple=(1, self.block_n, self.block_k),
                                       shared_mem=self.shared_bytes)

    def grid(self, N, H, W, K, R, S, pad):
        return self.spec.grid(N * out_size(H, R, pad) * out_size(W, S, pad), K)

    def __str__(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k}, {self.threads} threads, "
                f"warps_m {self.warps_m}, {self.stages} stages")


# ----------------------------------------------------------------------------- checks (GPU)

def _exact(got, ref):
    """Comparison for pure data movement: every element equal (bound 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 in the error ratio
        return numerics.compare(got, ref, np.zeros_like(ref))


def check_transpose(module, rows: int, cols: int, seed: int):
    import cupy

    a = random_uniform((rows, cols), np.float32, seed, cupy)
    out = cupy.full((cols, rows), np.nan, dtype=cupy.float32)
    grid, block = transpose_launch(rows, cols)
    module.launch("transpose", grid, block, [a, out, rows, cols])
    got, ref = out.get(), a.get().T.astype(np.float64)
    return _exact(got, ref)


def check_im2col(module, N, C, H, W, R, S, pad, stride, seed):
    import cupy

    x = random_uniform((N, C, H, W), np.float16, seed, cupy)
    P, Q = out_size(H, R, pad, stride), out_size(W, S, pad, stride)
    col = cupy.full((N * P * Q, C * R * S), np.nan, dtype=cupy.float16)
    grid, block = im2col_launch(N, C, H, W, R, S, pad, stride)
    module.launch("im2col", grid, block, [x, col, N, C, H, W, R, S, pad, stride])
    ref = im2col_nchw(x.get(), R, S, pad, stride).astype(np.float64)
    return _exact(col.get(), ref)


def check_direct(module, H: int, W: int, R: int, seed: int):
    import cupy

    img = random_uniform((H, W), np.float32, seed, cupy)
    mask = random_uniform((R, R), np.float32, seed + 1, cupy)
    out = cupy.full((H, W), np.nan, dtype=cupy.float32)
    grid, block = direct_launch(H, W)
    module.launch("conv2d_direct", grid, block, [img, mask, out, H, W, R])
    ref = conv2d_same(img.get(), mask.get())
    abs_ref = conv2d_same(np.abs(img.get()), np.abs(mask.get()))
    return numerics.compare(out.get(), ref, numerics.gemm_bound(abs_ref, R * R))


def conv_inputs(N, C, H, W, K, R, S, seed, xp):
    x = random_uniform((N, H, W, C), np.float16, seed, xp)
    w = random_uniform((K, R, S, C), np.float16, seed + 1, xp)
    return x, w


def check_conv_wmma(module, cfg: WmmaConfig, N, C, H, W, K, R, S, pad, seed):
    """Launch conv2d on fresh inputs (y poisoned) and compare to the float64 GEMM reference
    with the fp32-accumulation bound for K_gemm = R*S*C."""
    import cupy

    if not cfg.supports(C, K):
        raise ValueError(f"config {cfg} needs C % {cfg.block_k} == 0 and K % {cfg.block_n} == 0")
    x, w = conv_inputs(N, C, H, W, K, R, S, seed, cupy)
    P, Q = out_size(H, R, pad), out_size(W, S, pad)
    y = cupy.full((N, P, Q, K), np.nan, dtype=cupy.float32)
    module.launch("conv2d", cfg.grid(N, H, W, K, R, S, pad), (cfg.threads, 1, 1),
                  [x, w, y, N, C, H, W, K, R, S, pad], shared_mem=cfg.shared_bytes)
    ref, abs_ref = conv2d_nhwc_reference(x, w, pad)
    return numerics.compare(y.get().reshape(-1, K), ref,
                            numerics.gemm_bound(abs_ref, R * S * C))
