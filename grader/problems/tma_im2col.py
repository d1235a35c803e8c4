"""The geometry of kernels/conv2d_wgmma_tma.cu's copies, pure Python/NumPy (no GPU): its builds
(Variant: the -D values and what follows from them), every field of its two tensor maps from a
layer's shape (tensor_map_params), the coordinates and im2col offsets of every copy (tile_start,
k_tiles), and a model of what one im2col copy of the TMA gathers (im2col_box, after PTX ISA 5.5.4),
which the CPU tests hold against grader.problems.conv.im2col_nhwc and the GPU run against the
hardware (kernels/tma_im2col_probe.cu). grader.bench.conv_tma encodes, launches and times.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grader.problems import conv

BLOCK_K = 64  # channels per copy: one 128-byte row of the swizzle


@dataclass(frozen=True)
class Variant:
    """A build of the kernel: its -D values (defaults as the file's #ifndef blocks)."""

    block_m: int = 128
    block_n: int = 256
    stages: int = 4
    min_blocks: int = 1
    group_m: int = 8
    persistent: bool = False  # a launch choice, not a -D: SMs x min_blocks blocks loop over the tiles

    @property
    def name(self) -> str:
        return f"{self.block_m}x{self.block_n}x{BLOCK_K} s{self.stages} b{self.min_blocks}" + (" p" * self.persistent)

    @property
    def options(self) -> tuple[str, ...]:
        d = dict(BLOCK_M=self.block_m, BLOCK_N=self.block_n, STAGES=self.stages, MIN_BLOCKS=self.min_blocks,
                 GROUP_M=self.group_m)
        return tuple(f"-D{k}={v}" for k, v in d.items())

    @property
    def threads(self) -> int:
        return 128 * (self.block_m // 64 + 1)

    @property
    def shared_mem(self) -> int:
        """The header's formula of dynamic shared memory, in bytes."""
        return self.stages * (self.block_m + self.block_n) * BLOCK_K * 2 + 1024 + 16 * self.stages

    @property
    def launch_regs(self) -> int:
        """What ptxas gives each thread (the header's LAUNCH_REGS), when setmaxnreg is used."""
        return min(65536 // (self.threads * self.min_blocks) // 8 * 8, 168)

    def supports(self, C: int, K: int) -> bool:
        return C % BLOCK_K == 0 and K % self.block_n == 0

    def tiles(self, M: int, K: int) -> int:
        return math.ceil(M / self.block_m) * (K // self.block_n)

    def grid(self, M: int, K: int, sms: int = 132) -> tuple[int, int, int]:
        """One block per output tile, or (persistent) at most one per SM and block slot."""
        n = self.tiles(M, K)
        return (min(n, sms * self.min_blocks) if self.persistent else n, 1, 1)


DEFAULT = Variant()


@dataclass(frozen=True)
class MapParams:
    """Every argument of cuTensorMapEncodeIm2col (x) and cuTensorMapEncodeTiled (w) that depends
    on the layer, innermost dimension first as the driver wants them."""

    P: int
    Q: int
    M: int
    # x: NHWC fp16 as a rank-4 tensor {C, W, H, N}
    x_dims: tuple[int, int, int, int]
    x_strides: tuple[int, int, int]  # bytes from one W, H, N to the next (dimension 0 is contiguous)
    lower_corner: tuple[int, int]  # {W, H}: the box's first position, relative to the tensor's origin
    upper_corner: tuple[int, int]  # {W, H}: its last position, relative to (W - 1, H - 1)
    channels_per_pixel: int
    pixels_per_column: int
    x_element_strides: tuple[int, int, int, int]
    # w: KRSC fp16 as a K x R S C row-major matrix {R S C, K}
    w_dims: tuple[int, int]
    w_strides: tuple[int]
    w_box: tuple[int, int]
    grid: tuple[int, int, int]


def tensor_map_params(N, C, H, W, K, R, S, pad, variant: Variant = DEFAULT, sms: int = 132) -> MapParams:
    """The tensor maps for one layer. The im2col box has one position per output pixel: it runs
    from -pad to (W - 1) + pad - (S - 1) in W (Q positions), likewise in H (P), so walking it from
    the tile's first pixel visits the tile's output pixels in NPQ order; the copy's offsets
    {s, r} then shift every position onto the input pixel that filter tap reads."""
    if not variant.supports(C, K):
        raise ValueError(f"{variant.name} needs C % {BLOCK_K} == 0 and K % {variant.block_n} == 0 "
                         f"(C = {C}, K = {K})")
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    if P < 1 or Q < 1:
        raise ValueError(f"no output: P = {P}, Q = {Q}")
    lower, upper = (-pad, -pad), (pad - (S - 1), pad - (R - 1))
    if not all(-128 <= v <= 127 for v in lower + upper):  # rank 4: signed 8-bit corners (cuda.h)
        raise ValueError(f"pad {pad} with a {R}x{S} filter: im2col corners {lower}, {upper} outside [-128, 127]")
    M = N * P * Q
    return MapParams(P=P, Q=Q, M=M,
                     x_dims=(C, W, H, N), x_strides=(C * 2, W * C * 2, H * W * C * 2),
                     lower_corner=lower, upper_corner=upper,
                     channels_per_pixel=BLOCK_K, pixels_per_column=variant.block_m, x_element_strides=(1, 1, 1, 1),
                     w_dims=(R * S * C, K), w_strides=(R * S * C * 2,), w_box=(BLOCK_K, variant.block_n),
                     grid=variant.grid(M, K, sms))


def tile_start(m0: int, p: MapParams, pad: int) -> tuple[int, int, int]:
    """The box position {w, h, n} of output pixel m0 (the first of a tile), as the kernel's producer
    computes it: (q0 - pad, p0 - pad, n0)."""
    n0, pq = divmod(m0, p.P * p.Q)
    p0, q0 = divmod(pq, p.Q)
    return (q0 - pad, p0 - pad, n0)


def k_tiles(C: int, R: int, S: int) -> list[tuple[int, tuple[int, int], int]]:
    """Per K-tile kt, in the kernel's order: (first channel c0, im2col offsets {s, r}, first
    column of w's K x R S C matrix)."""
    out = []
    for r in range(R):
        for s in range(S):
            for c0 in range(0, C, BLOCK_K):
                out.append((c0, (s, r), (r * S + s) * C + c0))
    return out


def im2col_box(x: np.ndarray, p: MapParams, start: tuple[int, int, int], c0: int,
               offsets: tuple[int, int]) -> np.ndarray:
    """A model of one im2col copy (PTX ISA 5.5.4, tensor im2col mode): pixels_per_column positions
    of the bounding box, from `start` {w, h, n}, W fastest then H then N (rows and images wrap);
    each reads x at the position plus `offsets` {w, h}, channels c0 .. c0 + channels_per_pixel;
    pixels outside x (padding, past the last image) read 0. Returns pixels x channels."""
    N, H, W, C = x.shape
    lw, lh = p.lower_corner
    box_w = W - 1 + p.upper_corner[0] - lw + 1
    box_h = H - 1 + p.upper_corner[1] - lh + 1
    w0, h0, n0 = start
    first = (n0 * box_h + (h0 - lh)) * box_w + (w0 - lw)
    out = np.zeros((p.pixels_per_column, p.channels_per_pixel), dtype=x.dtype)
    for i in range(p.pixels_per_column):
        n, rest = divmod(first + i, box_h * box_w)
        hb, wb = divmod(rest, box_w)
        h, w = lh + hb + offsets[1], lw + wb + offsets[0]
        if 0 <= n < N and 0 <= h < H and 0 <= w < W:
            out[i] = x[n, h, w, c0:c0 + p.channels_per_pixel]
    return out


def M_of(shape) -> int:
    """Output pixels N P Q of a layer shape (N, C, H, W, K, R, S, pad)."""
    N, C, H, W, K, R, S, pad = shape
    return N * conv.out_size(H, R, pad) * conv.out_size(W, S, pad)


def probe_cases(shape, block_m: int):
    """(start, c0, offsets, m0) of the copies the probe makes at one shape: the first, a middle and
    the last tile, every tap, the first and last channel block."""
    N, C, H, W, K, R, S, pad = shape
    p = tensor_map_params(N, C, H, W, K, R, S, pad, Variant(block_m=block_m, block_n=64))
    tiles = list(range(0, p.M, block_m))
    out = []
    for m0 in dict.fromkeys([tiles[0], tiles[len(tiles) // 2], tiles[-1]]):
        for c0 in dict.fromkeys([0, C - BLOCK_K]):
            for r in range(R):
                for s_ in range(S):
                    out.append((tile_start(m0, p, pad), c0, (s_, r), m0))
    return p, out


SMALL_TENSOR_BYTES, SMALL_TENSOR_FIXED_AFTER = 131072, 13010


def small_tensor_fix(tmap: bytearray, tensor_bytes: int, driver_version: int) -> bytearray:
    """Drivers up to 13.1 (CUDA 13010) set bit 21 of a tensor map's second 64-bit word, a hint that
    the first 128 KiB from the base address is mapped, even for a smaller tensor; CUTLASS clears it
    there for tensors under 128 KiB (its CHANGELOG, v4.3.4: "Fix a TMA creation driver bug"), and so
    do we: our small check shapes have such tensors. Clearing it is the conservative side."""
    if driver_version <= SMALL_TENSOR_FIXED_AFTER and tensor_bytes < SMALL_TENSOR_BYTES:
        word = int.from_bytes(tmap[8:16], "little") & ~(1 << 21)
        tmap[8:16] = word.to_bytes(8, "little")
    return tmap
