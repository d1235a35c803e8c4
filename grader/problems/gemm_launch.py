"""How a GEMM kernel of the course is launched: the one description the exercises, the bench
ladders, the lessons and the cross-check all read.

A `GemmSpec` names the entry point, the input and output dtypes, the block, the tile of C one
block computes and which grid axis walks the rows of C, the compile options and the dynamic
shared memory; `grid(M, N, K)` follows from them, rounding up so that edge tiles get a block.
Three shapes of launch cover every GEMM kernel in kernels/:
- `threads_per_element`: one thread per element of a T x T tile (the CUDA-core SGEMMs);
- `warp_per_tile`: one warp per T x T tile, blockIdx.x along the ROWS of C (the naive WMMA and
  DMMA kernels, the precision kernels of notebook 07; the column-major demo is 16 such warps);
- `block_tiles`: `threads` per block_m x block_n tile, blockIdx.x along the columns (the fast
  ladders, the register-blocked SGEMM, the implicit-GEMM convolution).
`student(rule, launch, ...)` is the same for the launch keywords an exercise gives a student
(problems.kinds.Gemm's launch rules).
"""
from __future__ import annotations

from dataclasses import dataclass, fields


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class GemmSpec:
    kernel: str  # entry point name
    in_dtype: str  # "float16" | "float32" | "float64" ("" where the caller stores the inputs)
    out_dtype: str
    block: tuple[int, int, int]
    tile: tuple[int, int]  # rows x columns of C one block computes
    rows_along: str = "y"  # the grid axis that walks the rows of C ("x" or "y")
    accumulate: str = "fp32"
    library: str = "fp32"  # which cuBLAS routine it is compared with
    options: tuple[str, ...] = ()
    multiple: tuple[int, int, int] = (1, 1, 1)  # M, N, K must be multiples of these
    shared_mem: int = 0

    def grid(self, M: int, N: int, K: int = 0) -> tuple[int, int, int]:
        rows, cols = cdiv(M, self.tile[0]), cdiv(N, self.tile[1])
        return (rows, cols, 1) if self.rows_along == "x" else (cols, rows, 1)


@dataclass(frozen=True)
class PersistentSpec(GemmSpec):
    """The launch of a persistent kernel: `blocks` blocks (one per SM: one block of ~240 registers
    per thread fits per SM), never more than there are tiles; block b computes tiles b, b + blocks, ...
    (any grid of at least one block is correct, which the CPU checks use with a small one)."""

    blocks: int = 132

    def grid(self, M: int, N: int, K: int = 0) -> tuple[int, int, int]:
        tiles = cdiv(M, self.tile[0]) * cdiv(N, self.tile[1])
        return (max(1, min(self.blocks, tiles)), 1, 1)


def persistent(spec: GemmSpec, blocks: int) -> PersistentSpec:
    """`spec` (a block-per-tile launch) walked by `blocks` persistent blocks instead."""
    return PersistentSpec(**{f.name: getattr(spec, f.name) for f in fields(spec)}, blocks=blocks)


def threads_per_element(kernel: str, in_dtype: str, out_dtype: str, tile: int, **kw) -> GemmSpec:
    return GemmSpec(kernel, in_dtype, out_dtype, (tile, tile, 1), (tile, tile), **kw)


def warp_per_tile(kernel: str, in_dtype: str, out_dtype: str, tile: int, **kw) -> GemmSpec:
    return GemmSpec(kernel, in_dtype, out_dtype, (32, 1, 1), (tile, tile), rows_along="x", **kw)


def block_tiles(kernel: str, in_dtype: str, out_dtype: str, block_m: int, block_n: int, threads: int,
                **kw) -> GemmSpec:
    return GemmSpec(kernel, in_dtype, out_dtype, (threads, 1, 1), (block_m, block_n), **kw)


# ---------------------------------------------------------------- the kernels of kernels/
def sgemm_naive() -> GemmSpec:
    return threads_per_element("sgemm", "float32", "float32", 16)


def sgemm_tiled(tile: int = 32) -> GemmSpec:
    return threads_per_element("sgemm", "float32", "float32", tile, options=(f"-DTILE={tile}",))


def sgemm_regblock() -> GemmSpec:
    """kernels/sgemm_regblock*.cu: 256 threads per 128 x 128 tile of C."""
    return block_tiles("sgemm", "float32", "float32", 128, 128, 256)


def wmma_naive() -> GemmSpec:
    return warp_per_tile("wmma_gemm", "float16", "float32", 16, library="fp16", multiple=(16, 16, 16))


def wmma_any_size() -> GemmSpec:
    return warp_per_tile("wmma_gemm", "float16", "float32", 16, library="fp16")


def wmma_epilogue() -> GemmSpec:
    """kernels/wmma_gemm_epilogue.cu: D = alpha A B + beta C, launched as the naive WMMA GEMM."""
    return warp_per_tile("wmma_gemm_epilogue", "float16", "float32", 16, library="fp16", multiple=(16, 16, 16))


def wmma_colmajor() -> GemmSpec:
    """kernels/wmma_gemm_colmajor.cu (the CUDA 9 post's kernel): 4 x 4 warps per 64 x 64 tile,
    blockIdx.x along the rows of C."""
    return GemmSpec("wmma_gemm_colmajor", "float16", "float32", (128, 4, 1), (64, 64), rows_along="x",
                    library="fp16", multiple=(16, 16, 16))


def dmma_naive() -> GemmSpec:
    return warp_per_tile("dmma_gemm", "float64", "float64", 8, accumulate="fp64", library="fp64",
                         multiple=(8, 8, 4))


MMA_TUNED_SHARED = 147456  # kernels/mma_gemm_tuned.cu at its defaults: 3 stages of 128 x 256 x 64 halves


def mma_tuned(max_shared: int) -> GemmSpec:
    """kernels/mma_gemm_tuned.cu (notebook 10's fp16 rung) as its header says to build it for a GPU
    that allows `max_shared` bytes of shared memory per block: its defaults (147456 B: sm_80, sm_90),
    else -DBLOCK_K=32 -DSTAGES=4 (98304 B, for the 99 KB of sm_86 and sm_89). 256 threads per
    128 x 256 tile of C; M, N multiples of the tile, K of BLOCK_K."""
    if max_shared >= MMA_TUNED_SHARED:
        return block_tiles("mma_gemm", "float16", "float32", 128, 256, 256, library="fp16",
                           multiple=(128, 256, 64), shared_mem=MMA_TUNED_SHARED)
    return block_tiles("mma_gemm", "float16", "float32", 128, 256, 256, library="fp16",
                       options=("-DBLOCK_K=32", "-DSTAGES=4"), multiple=(128, 256, 32), shared_mem=98304)


def fp8_gemm_mma() -> GemmSpec:
    """kernels/fp8_gemm_mma.cu: e4m3 codes in (uint8; A M x K, B given N x K), fp32 out, scales in
    the epilogue; two warps per 32 x 16 tile of C; any M, N, K."""
    return block_tiles("fp8_gemm", "uint8", "float32", 32, 16, 64, library="fp8")


def sparse_gemm_mma_sp() -> GemmSpec:
    """kernels/sparse_gemm_mma_sp.cu's sparse_gemm: 2:4 A compressed (values + metadata), B K x N
    fp16, fp32 out; two warps per 32 x 16 tile of C; K a multiple of 16."""
    return block_tiles("sparse_gemm", "float16", "float32", 32, 16, 64, library="fp16", multiple=(1, 1, 16))

# ---------------------------------------------------------------- what a student is given
def student(rule: str, launch: dict, kernel: str = "", in_dtype: str = "float16",
            out_dtype: str = "float32", **kw) -> GemmSpec:
    """The launch of an exercise's launch rule with the student's launch keywords:
    "naive16" (16 x 16 threads per tile), "tile" (T x T, -DTILE=T), "warp16" / "warp8" (one
    warp per tile), "block" (`threads` per block_m x block_n tile, every keyword but
    shared_mem passed as -D<KEY>=value)."""
    if rule == "naive16":
        return threads_per_element(kernel, in_dtype, out_dtype, 16, **kw)
    if rule == "tile":
        t = launch["tile"]
        return threads_per_element(kernel, in_dtype, out_dtype, t, options=(f"-DTILE={t}",), **kw)
    if rule in ("warp16", "warp8"):
        return warp_per_tile(kernel, in_dtype, out_dtype, 16 if rule == "warp16" else 8, **kw)
    if rule == "block":
        return block_tiles(kernel, in_dtype, out_dtype, launch["block_m"], launch["block_n"], launch["threads"],
                           options=tuple(f"-D{k.upper()}={v}" for k, v in launch.items() if k != "shared_mem"),
                           shared_mem=launch.get("shared_mem", 0), **kw)
    raise ValueError(f"no launch rule {rule!r}")
