"""Notebook 08, section 9: what the TMA's im2col copy does in kernels/conv2d_wgmma_tma.cu, on the CPU.

The tensor map's fields for a layer (grader.problems.tma_im2col.tensor_map_params, what the host hands
cuTensorMapEncodeIm2col), the producer's loop that issues one copy per tile and filter tap, and a
picture of what one copy fetches: the model of the copy (im2col_box, which the GPU run compared with
the hardware) run on an x whose every pixel holds its own number, checked against the im2col matrix of
section 6 (grader.problems.conv.im2col_nhwc).
"""
from __future__ import annotations

import numpy as np

from grader.problems import conv
from grader.problems.tma_im2col import BLOCK_K, Variant, im2col_box, tensor_map_params, tile_start
from grader.problems.tma_im2col import DEFAULT  # noqa: F401 - the kernel's default build: the notebook's TVM column
from grader.runtime import kernels

SMALL = (2, 64, 5, 7, 64, 3, 3, 1)  # N, C, H, W, K, R, S, pad: 70 output pixels, so a 64-pixel tile spans both images
SMALL_VARIANT = Variant(block_m=64, block_n=64)


def map_fields(layers: dict) -> list[dict]:
    """The arguments of cuTensorMapEncodeIm2col that depend on the layer, one row each, a column per
    layer (name -> ((N, C, H, W, K, R, S, pad), the kernel's Variant)), innermost dimension first as
    the driver takes them."""
    params = {name: tensor_map_params(*s, v) for name, (s, v) in layers.items()}
    fields = (("globalDim", "x_dims", "x as a rank-4 tensor {C, W, H, N}, innermost first"),
              ("globalStrides (bytes)", "x_strides", "from one W, H, N to the next (C is contiguous)"),
              ("pixelBoxLowerCorner {W, H}", "lower_corner", "-pad: where the box starts, before the image"),
              ("pixelBoxUpperCorner {W, H}", "upper_corner",
               "pad - (S - 1), pad - (R - 1): the box has one position per output pixel"),
              ("channelsPerPixel", "channels_per_pixel", f"channels per copy ({BLOCK_K} fp16 = one 128-byte row)"),
              ("pixelsPerColumn", "pixels_per_column", "pixels per copy: the tile's BLOCK_M rows of A"))
    rows = []
    for field, attr, what in fields:
        rows.append({"field": field, **{name: str(getattr(p, attr)) for name, p in params.items()}, "what": what})
    rows.append({"field": "oobFill", **{name: "zeros" for name in params},
                 "what": "a pixel outside x (padding, past the last image) reads 0"})
    return rows


def producer_loop() -> str:
    """The producer's part of kernels/conv2d_wgmma_tma.cu: one thread, one im2col copy and one tiled
    copy per K-tile (filter tap and 64 channels), each stage's arrival counted by an mbarrier."""
    src = kernels.source("conv2d_wgmma_tma")
    start = src.index("    if (wg == 0) {  // producer warpgroup")
    end = src.index("        return;\n    }\n", start) + len("        return;\n    }\n")
    return "\n".join(line[4:] if line.startswith("    ") else line for line in src[start:end].splitlines())


def fetch(shape=SMALL, block_m: int = 64, m0: int = 0, tap=(0, 0), c0: int = 0) -> dict:
    """One im2col copy through the model: the tile of output pixels m0 .. m0 + block_m - 1, filter tap
    (r, s), channels c0 .. c0 + 63. Returns {"start", "offsets", "pixels": per row (n, h, w) read or
    None (a zero), "outside": per row None, "padding" or "past the last image", "padding_at": per row
    the (n, h, w) outside the image it stands for, "columns": the first and last column of the
    im2col matrix it fills, "equal": whether the copy equals the im2col matrix's block (rows m0..,
    those columns), zero past M}."""
    N, C, H, W, K, R, S, pad = shape
    r, s = tap
    p = tensor_map_params(*shape, Variant(block_m=block_m, block_n=64))
    start, offsets = tile_start(m0, p, pad), (s, r)
    # every pixel holds its number + 1 (exact in fp16 for these sizes): what a row holds says what it read
    numbered = np.broadcast_to((1 + np.arange(N * H * W)).reshape(N, H, W, 1), (N, H, W, C)).astype(np.float16)
    got = im2col_box(numbered, p, start, c0, offsets)[:, 0].astype(int)
    pixels = [None if v == 0 else tuple(int(i) for i in np.unravel_index(v - 1, (N, H, W))) for v in got]
    outside, padding_at = [], []  # from the definition (section 7): row m reads x[n, p + r - pad, q + s - pad]
    for i in range(block_m):
        n, pq = divmod(m0 + i, p.P * p.Q)
        h, w = pq // p.Q + r - pad, pq % p.Q + s - pad
        outside.append("past the last image" if n >= N else None if 0 <= h < H and 0 <= w < W else "padding")
        padding_at.append((n, h, w) if outside[-1] == "padding" else None)
    x = conv.random_uniform((N, H, W, C), np.float16, 5)
    box = im2col_box(x, p, start, c0, offsets)
    a = conv.im2col_nhwc(x, R, S, pad)[m0:m0 + block_m, (r * S + s) * C + c0:(r * S + s) * C + c0 + BLOCK_K]
    want = np.zeros_like(box)
    want[:len(a)] = a
    return dict(start=start, offsets=offsets, pixels=pixels, outside=outside, padding_at=padding_at, shape=shape,
                m0=m0, tap=tap, c0=c0, columns=((r * S + s) * C + c0, (r * S + s) * C + c0 + BLOCK_K - 1),
                equal=bool(np.array_equal(box.view(np.uint16), want.view(np.uint16))))


def plot_fetch(f: dict):
    """Each image of the layer with its padding ring: in each pixel, the number of the tile row that
    reads it (red on the ring: a row the copy engine fills with zeros)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    N, C, H, W, K, R, S, pad = f["shape"]
    rows = len(f["pixels"])
    fig, axes = plt.subplots(1, N, figsize=(3.6 * N + 1, 4.2), squeeze=False)
    cmap = plt.get_cmap("viridis")
    for n, ax in enumerate(axes[0]):
        ax.add_patch(Rectangle((-pad - 0.5, -pad - 0.5), W + 2 * pad, H + 2 * pad, fc="none", ec="#999",
                               hatch="//", lw=0))
        ax.add_patch(Rectangle((-0.5, -0.5), W, H, fc="white", ec="black", lw=1.2))
        for i, (px, zero) in enumerate(zip(f["pixels"], f["padding_at"])):
            if px is not None and px[0] == n:
                _, h, w = px
                ax.add_patch(Rectangle((w - 0.5, h - 0.5), 1, 1, color=cmap(i / max(rows - 1, 1)), alpha=0.55))
                ax.text(w, h, str(i), ha="center", va="center", fontsize=7)
            elif zero is not None and zero[0] == n:
                ax.text(zero[2], zero[1], str(i), ha="center", va="center", fontsize=7, color="#cf222e")
        ax.set_xlim(-pad - 0.5, W + pad - 0.5)
        ax.set_ylim(H + pad - 0.5, -pad - 0.5)
        ax.set_aspect("equal")
        ax.set_xticks(range(W))
        ax.set_yticks(range(H))
        ax.set_xlabel("w")
        ax.set_ylabel("h")
        ax.set_title(f"image n = {n}", fontsize=9)
    zeros = {why: f["outside"].count(why) for why in ("padding", "past the last image")}
    r, s = f["tap"]
    (w0, h0, n0), c0 = f["start"], f["c0"]
    fig.suptitle(f"One copy: tile rows {f['m0']}..{f['m0'] + rows - 1}, filter tap (r, s) = ({r}, {s}), channels "
                 f"{c0}..{c0 + BLOCK_K - 1}\ncoordinates {{c, w, h, n}} = {{{c0}, {w0}, {h0}, {n0}}}, im2col offsets "
                 f"{{s, r}} = {{{s}, {r}}}\nnumber = the tile row reading that pixel; zeros: {zeros['padding']} rows "
                 f"in the padding (red), {zeros['past the last image']} past the last image", fontsize=9)
    fig.tight_layout()
    return fig
