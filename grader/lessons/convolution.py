"""Notebook 08 (convolution): the pictures, runners and timings the notebook calls.

Everything runs on the backend `auto` picks (the GPU, or the course's CPU emulator with the
same kernel source); references are float64 (grader.conv). Timings need a GPU and say so
without one. Layer timings reuse grader.bench.conv (the measured reference kernels of
kernels/RESULTS-conv.md) so the notebook and the bench report the same thing.
"""
from __future__ import annotations

import secrets

import numpy as np

from grader.problems import conv, gemm_launch, numerics
from grader.runtime import kernels
from grader.runtime.device import cannot_run

TVM_SHAPE = (256, 256, 14, 14, 512, 3, 3, 1)  # N, C, H, W, K, R, S, pad (TVM RFC layer)


def seed() -> int:
    return secrets.randbits(31)


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


# ----------------------------------------------------------------------------- direct

def demo_image(H: int = 24, W: int = 32) -> np.ndarray:
    """A small image with edges in both directions (so a mask's effect is visible)."""
    i, j = np.mgrid[0:H, 0:W]
    img = ((i // 6 + j // 8) % 2).astype(np.float64)
    img += 0.5 * np.exp(-((i - H / 2) ** 2 + (j - W / 3) ** 2) / 20.0)
    return img


MASKS = {
    "edge (Laplacian) 3x3": np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=np.float64),
    "box blur 3x3": np.full((3, 3), 1 / 9),
    "box blur 5x5": np.full((5, 5), 1 / 25),
    "horizontal Sobel 3x3": np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float64),
}


def plot_direct(img, mask, out, title=""):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(10, 3), gridspec_kw=dict(width_ratios=[3, 1, 3]))
    for ax, a, t in zip(axes, (img, mask, out), ("image", f"mask {mask.shape[0]}x{mask.shape[1]}", "output")):
        im = ax.imshow(a, cmap="viridis")
        ax.set_title(t)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, shrink=0.7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_halo(R: int = 5, tile: int = 16, H: int = 40, W: int = 40, block=(1, 0)):
    """Which pixels one block of kernels/conv2d_direct_tiled.cu copies to shared memory:
    its 16x16 output tile plus a halo of R//2 on every side (zeros outside the image)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    h = R // 2
    by, bx = block
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.add_patch(Rectangle((0, 0), W, H, fill=False, lw=1.5, ec="black"))
    for y in range(0, H, tile):
        for x in range(0, W, tile):
            ax.add_patch(Rectangle((x, y), tile, tile, fill=False, lw=0.5, ec="#999"))
    x0, y0 = bx * tile - h, by * tile - h
    ax.add_patch(Rectangle((x0, y0), tile + 2 * h, tile + 2 * h, color="#fdb863", alpha=0.6,
                           label=f"copied to shared memory ({tile + R - 1}x{tile + R - 1})"))
    ax.add_patch(Rectangle((bx * tile, by * tile), tile, tile, color="#5e3c99", alpha=0.6,
                           label=f"output tile of block ({bx}, {by}) ({tile}x{tile})"))
    # the part of the halo outside the image is zero padding
    if x0 < 0 or y0 < 0:
        ax.add_patch(Rectangle((x0, y0), tile + 2 * h, tile + 2 * h, fill=False, hatch="//",
                               ec="#b2182b", lw=0, label="halo outside the image: zeros"))
    ax.set_xlim(-h - 1, W + 1)
    ax.set_ylim(H + 1, -h - 1)
    ax.set_aspect("equal")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=8)
    ax.set_title(f"R = {R}: halo of {h} pixel{'s' if h != 1 else ''}; "
                 f"{(tile + R - 1) ** 2 / tile ** 2:.2f} loads per output")
    fig.tight_layout()
    return fig


def run_direct(source: str, H: int, W: int, R: int, backend: str = "auto"):
    """Launch conv2d_direct (kernels/conv2d_direct_tiled.cu's contract) on fresh inputs,
    output poisoned; returns (out, ref, Comparison, module backend)."""
    from grader.runtime.backend import load

    mod = load(source, backend)
    xp = mod.xp
    s = seed()
    img = conv.random_uniform((H, W), np.float32, s, xp)
    mask = conv.random_uniform((R, R), np.float32, s + 1, xp)
    out = xp.full((H, W), np.nan, dtype=xp.float32)
    grid, block = conv.direct_launch(H, W)
    mod.launch("conv2d_direct", grid, block, [img, mask, out, H, W, R])
    img_h, mask_h, out_h = _host(img), _host(mask), _host(out)
    ref = conv.conv2d_same(img_h, mask_h)
    bound = numerics.gemm_bound(conv.conv2d_same(np.abs(img_h), np.abs(mask_h)), R * R)
    return out_h, ref, numerics.compare(out_h, ref, bound), mod.backend


def plot_error_map(out, ref, title=""):
    import matplotlib.pyplot as plt

    err = np.abs(np.asarray(out, dtype=np.float64) - ref)
    err = np.where(np.isfinite(err), err, np.nan)
    fig, ax = plt.subplots(figsize=(6, 4.6), layout="constrained")
    im = ax.imshow(err, cmap="magma")
    fig.colorbar(im, ax=ax, label="|out - float64 reference|")
    ax.set_xlabel("column j of the output image")
    ax.set_ylabel("row i of the output image")
    # a figure title, above the colorbar's scale label (e.g. "1e-7") rather than beside it
    fig.suptitle(title or f"error, max {np.nanmax(err):.1e} (borders included)")
    return fig


def time_direct(H: int = 4096, Rs=(3, 5, 7), max_seconds=1.0) -> list[dict]:
    """GFLOP/s of kernels/conv2d_direct_tiled.cu at H x H for several mask sizes (GPU)."""
    import cupy

    from grader.bench.conv import module
    from grader.runtime.timing import benchmark

    mod = module("conv2d_direct_tiled")
    img = conv.random_uniform((H, H), np.float32, 1, cupy)
    out = cupy.empty_like(img)
    rows = []
    for R in Rs:
        mask = conv.random_uniform((R, R), np.float32, 2, cupy)
        grid, block = conv.direct_launch(H, H)
        t = benchmark(mod.bind("conv2d_direct", grid, block, [img, mask, out, H, H, R]),
                      working_set_bytes=2 * img.nbytes, max_seconds=max_seconds)
        rows.append(dict(R=R, ms=t.median_ms, gflops=t.gflops(2.0 * H * H * R * R),
                         gbs=2 * img.nbytes / (t.median_ms * 1e-3) / 1e9))
    return rows


# ----------------------------------------------------------------------------- Toeplitz

def plot_toeplitz(H: int = 4, W: int = 4, mask=None):
    """Picture the (H*W) x (H*W) doubly block Toeplitz matrix of a 'same' convolution."""
    import matplotlib.pyplot as plt

    mask = np.arange(1, 10, dtype=np.float64).reshape(3, 3) if mask is None else np.asarray(mask)
    T = conv.toeplitz_matrix(H, W, mask)
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    shown = np.where(T != 0, T, np.nan)
    ax.imshow(shown, cmap="tab10", vmin=0.5, vmax=10.5)
    n = H * W
    if n <= 36:
        for (r, c), v in np.ndenumerate(T):
            if v:
                ax.text(c, r, f"{v:g}", ha="center", va="center", fontsize=7)
    for b in range(0, n + 1, W):  # the W x W blocks
        ax.axhline(b - 0.5, color="#444", lw=0.6)
        ax.axvline(b - 0.5, color="#444", lw=0.6)
    ax.set_title(f"T for a {H}x{W} image, {mask.shape[0]}x{mask.shape[1]} mask: "
                 f"{n}x{n}, {np.count_nonzero(T)} of {n * n} entries non-zero")
    ax.set_xlabel("input pixel i*W + j")
    ax.set_ylabel("output pixel i*W + j")
    fig.tight_layout()
    return fig, T


def overhead_rows(sizes=(8, 16, 32, 64, 128, 224, 512, 1024), R: int = 3, bytes_per=4) -> list[dict]:
    """Memory of the image, of its dense Toeplitz matrix and of its im2col matrix (one
    channel, 'same' padding) for H = W = n."""
    rows = []
    for n in sizes:
        pixels = n * n
        rows.append(dict(n=n, image=pixels * bytes_per, toeplitz=pixels * pixels * bytes_per,
                         toeplitz_nonzero=pixels * R * R * bytes_per, im2col=pixels * R * R * bytes_per))
    return rows


def plot_overhead(rows, R: int = 3):
    import matplotlib.pyplot as plt

    n = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.loglog(n, [r["image"] for r in rows], "o-", label="image")
    ax.loglog(n, [r["im2col"] for r in rows], "s-", label=f"im2col matrix ({R * R}x the image)")
    ax.loglog(n, [r["toeplitz"] for r in rows], "^-", label="dense Toeplitz matrix ((HW)^2)")
    for lim, name in ((80e9, "80 GB (H100 memory)"),):
        ax.axhline(lim, ls="--", color="gray")
        ax.text(n[0], lim * 1.3, name, fontsize=8, color="gray")
    ax.set_xlabel("image side n (n x n pixels, fp32)")
    ax.set_ylabel("bytes")
    ax.set_title(f"Convolution as a matrix: what it costs to store ({R}x{R} mask)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- im2col

def plot_im2col(H: int = 4, W: int = 5, R: int = 3, pad: int = 1):
    """One channel: the image's pixels numbered, and the im2col matrix built from them."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, MaxNLocator

    x = np.arange(1, H * W + 1, dtype=np.float64).reshape(1, 1, H, W)
    col = conv.im2col_nchw(x, R, R, pad)
    fig, axes = plt.subplots(1, 2, figsize=(11, 6), gridspec_kw=dict(width_ratios=[1, 1.4]))
    axes[0].imshow(x[0, 0], cmap="Pastel1")
    for (i, j), v in np.ndenumerate(x[0, 0]):
        axes[0].text(j, i, f"{v:g}", ha="center", va="center", fontsize=13)
    axes[0].set_title(f"image {H}x{W} (pixels numbered)")
    axes[0].set_xticks([])
    axes[0].set_yticks([])
    axes[1].imshow(np.where(col == 0, np.nan, col), cmap="Pastel1", aspect="auto")
    for (i, j), v in np.ndenumerate(col):
        axes[1].text(j, i, f"{v:g}" if v else "0", ha="center", va="center", fontsize=10,
                     color="black" if v else "#bbb")
    axes[1].set_title(f"im2col: {col.shape[0]} rows (output pixels) x {col.shape[1]} columns\n"
                      f"(mask positions); zeros = padding")
    for axis, n in ((axes[1].xaxis, col.shape[1]), (axes[1].yaxis, col.shape[0])):
        # integer ticks (rows and columns are indices): every one while they fit
        axis.set_major_locator(FixedLocator(range(n)) if n <= 40 else MaxNLocator(integer=True))
    axes[1].set_xlabel("column (c*R + r)*S + s")
    axes[1].set_ylabel("row (n*P + p)*Q + q")
    fig.tight_layout()
    return fig, col


def run_im2col(source: str, N, C, H, W, R, S, pad, stride, backend: str = "auto"):
    """Launch an `im2col` kernel of the exercise's contract; returns (x, col) as NumPy."""
    from grader.runtime.backend import load

    mod = load(source, backend)
    xp = mod.xp
    x = conv.random_uniform((N, C, H, W), np.float16, seed(), xp)
    P, Q = conv.out_size(H, R, pad, stride), conv.out_size(W, S, pad, stride)
    col = xp.full((N * P * Q, C * R * S), np.nan, dtype=xp.float16)
    grid, block = conv.im2col_launch(N, C, H, W, R, S, pad, stride)
    mod.launch("im2col", grid, block, [x, col, N, C, H, W, R, S, pad, stride])
    return _host(x), _host(col)


def conv_by_im2col_wmma(im2col_source: str, N=2, C=8, H=8, W=8, K=16, R=3, pad=1,
                        backend: str = "auto"):
    """conv2d = im2col (the given kernel) then a WMMA GEMM (kernels/wmma_gemm_any_size.cu)
    on the backend; compared with the direct float64 convolution. Returns a dict."""
    from grader.runtime.backend import load

    gemm_mod = load(kernels.source("wmma_gemm_any_size"), backend)
    xp = gemm_mod.xp
    x, col = run_im2col(im2col_source, N, C, H, W, R, R, pad, 1, backend)
    s = seed()
    w = conv.random_uniform((K, C, R, R), np.float16, s, np)
    wmat = np.ascontiguousarray(w.reshape(K, C * R * R).T)  # (c*R + r)*S + s  x  k
    M, Kg = col.shape
    y = xp.full((M, K), np.nan, dtype=xp.float32)
    spec = gemm_launch.wmma_any_size()  # the GEMM y (M x K) = col (M x Kg) wmat (Kg x K)
    gemm_mod.launch(spec.kernel, spec.grid(M, K, Kg), spec.block, [xp.asarray(col), xp.asarray(wmat), y, M, K, Kg])
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, R, pad)
    y_nchw = _host(y).reshape(N, P, Q, K).transpose(0, 3, 1, 2)
    ref = conv.conv2d_nchw_direct(x, w, pad)
    abs_ref = conv.conv2d_nchw_direct(np.abs(x), np.abs(w), pad)
    cmp = numerics.compare(y_nchw, ref, numerics.gemm_bound(abs_ref, Kg))
    return dict(M=M, N_gemm=K, K_gemm=Kg, comparison=cmp, backend=gemm_mod.backend, y=y_nchw, ref=ref)


def gemm_dims(N, C, H, W, K, R, S, pad) -> dict:
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    M, Kg = N * P * Q, R * S * C
    return dict(M=M, N_gemm=K, K_gemm=Kg, flops=2.0 * M * K * Kg,
                x_bytes=N * C * H * W * 2, col_bytes=M * Kg * 2, y_bytes=M * K * 4)


def plot_layouts(C: int = 4, H: int = 3, W: int = 3):
    """Where the channels of one pixel live in memory: NCHW (stride H*W) vs NHWC (adjacent)."""
    import matplotlib.pyplot as plt

    n = C * H * W
    nchw = np.zeros(n)
    nhwc = np.zeros(n)
    # the C values of pixel (1, 1)
    for c in range(C):
        nchw[(c * H + 1) * W + 1] = c + 1
        nhwc[(1 * W + 1) * C + c] = c + 1
    fig, axes = plt.subplots(2, 1, figsize=(9, 1.8))
    for ax, v, name in zip(axes, (nchw, nhwc), ("NCHW", "NHWC")):
        ax.imshow(np.where(v == 0, np.nan, v)[None, :], cmap="Set2", aspect="auto", vmin=0.5, vmax=8.5)
        ax.set_yticks([0])
        ax.set_yticklabels([name])
        ax.set_xticks(range(0, n, C if name == "NHWC" else H * W))
        for j, val in enumerate(v):
            if val:
                ax.text(j, 0, f"c{int(val) - 1}", ha="center", va="center", fontsize=7)
    axes[1].set_xlabel(f"memory offset (one image, C={C}, H={H}, W={W}); coloured: the {C} channels "
                       "of pixel (1, 1)")
    fig.tight_layout()
    return fig


def run_implicit(source: str, N=2, C=32, H=5, W=7, K=128, R=3, S=3, pad=1, backend: str = "auto",
                 cfg: conv.WmmaConfig | None = None):
    """Launch an implicit-GEMM conv2d (the conv2d-wmma contract) on fresh NHWC inputs;
    compare with the float64 reference. Returns (Comparison, backend)."""
    from grader.runtime.backend import load

    cfg = cfg or conv.WmmaConfig()
    if cannot_run("conv2d_implicit_wmma", cfg.shared_bytes, backend=backend):
        from grader.bench.conv import config_for

        cfg = config_for(C, K, preferred=cfg)  # smaller tiles, within this GPU's shared memory
    mod = load(source, backend, options=cfg.options)
    xp = mod.xp
    x, w = conv.conv_inputs(N, C, H, W, K, R, S, seed(), xp)
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    y = xp.full((N, P, Q, K), np.nan, dtype=xp.float32)
    mod.launch("conv2d", cfg.grid(N, H, W, K, R, S, pad), (cfg.threads, 1, 1),
               [x, w, y, N, C, H, W, K, R, S, pad], shared_mem=cfg.shared_bytes)
    ref, abs_ref = conv.conv2d_nhwc_reference(x, w, pad)
    return numerics.compare(_host(y).reshape(-1, K), ref, numerics.gemm_bound(abs_ref, R * S * C)), mod.backend


# ----------------------------------------------------------------------------- layer timings (GPU)

def layers() -> dict:
    from grader.bench.conv import RESNET_LAYERS

    return {"TVM RFC b256 14x14 256->512": TVM_SHAPE, **RESNET_LAYERS}


def time_layers(names=None, max_seconds=0.5, cudnn=True, progress=None) -> list[dict]:
    """conv2d (implicit WMMA, kernels/), im2col kernel + cuBLAS, CuPy gather + cuBLAS and
    cuDNN (when PyTorch sees the GPU) at the TVM RFC layer and ResNet-50 layers.
    `progress(i, n, label)` is called before each layer."""
    from grader.bench.conv import time_conv

    todo = [(k, v) for k, v in layers().items() if names is None or k in names]
    rows = []
    for i, (name, shape) in enumerate(todo):
        if progress:
            progress(i, len(todo), name)
        r = time_conv(shape, max_seconds=max_seconds, cudnn=cudnn)
        r["layer"] = name
        r["shape"] = list(shape)
        rows.append(r)
    if progress:
        progress(len(todo), len(todo), "done")
    return rows


def plot_layers(rows, title: str):
    import matplotlib.pyplot as plt

    series = [("kernel_ms", "implicit GEMM, WMMA (kernels/)", "#2da44e"),
              ("im2col_cublas_ms", "im2col kernel + cuBLAS", "#0969da"),
              ("gather_cublas_ms", "CuPy gather + cuBLAS", "#54aeff"),
              ("cudnn_ms", "cuDNN (PyTorch)", "#8250df")]
    series = [s for s in series if any(s[0] in r for r in rows)]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(series)
    for k, (key, label, color) in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(rows))]
        tf = [r["flops"] / (r[key] * 1e-3) / 1e12 if key in r else 0 for r in rows]
        ax.bar(xs, tf, width, label=label, color=color)
        for x, v in zip(xs, tf):
            if v:
                ax.text(x, v, f"{v:.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["layer"].replace(" ", "\n", 1) for r in rows], fontsize=8)
    ax.set_ylabel("TFLOP/s (2 M N K / time)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def layer_table(rows):
    from grader.checking.display import table

    out = []
    for r in rows:
        d = {"layer": r["layer"], "implicit WMMA ms": f"{r['kernel_ms']:.3f}",
             "im2col+cuBLAS ms": f"{r['im2col_cublas_ms']:.3f}",
             "speedup": f"{r['speedup_vs_im2col_cublas']:.2f}x",
             "gather+cuBLAS ms": f"{r.get('gather_cublas_ms', float('nan')):.3f}"}
        if "cudnn_ms" in r:
            d["cuDNN ms"] = f"{r['cudnn_ms']:.3f}"
            d["WMMA / cuDNN speed"] = f"{r['kernel_vs_cudnn']:.2f}"
        out.append(d)
    return table(out)
