"""What to try next, in the terms of the exercise at hand.

One table: failure kind -> hint per problem family, with a fallback ("*"). Each exercise's record
names its family (Exercise.hint_family). The grader's one check path asks `hint(ex, kind)`; a
transpose never hears about accumulators, an im2col never about `row < M`.
"""
from __future__ import annotations

import re

# gemm: a GEMM on CUDA cores (the fallback texts "*"), wmma: a tensor-core GEMM, fp8: notebook 11's
# scaled e4m3 GEMM in PTX mma.sync (no WMMA; B K-major), then one family per problem that is no GEMM
FAMILIES = ("gemm", "wmma", "mma", "fp8", "transpose", "im2col", "conv", "probe")


def family(ex) -> str:
    """The exercise's hint family (one of FAMILIES)."""
    return ex.hint_family


# notebook 11's fragment layout of mma.sync m16n8k32 .e4m3 (the contract's words)
FP8_LAYOUT = ("g = lane / 4, t = lane % 4, four codes to a register, the lowest k in the lowest byte: a[0] row g, "
              "k 4t..4t+3; a[1] row g + 8; a[2], a[3] the same 16 further along k; b[0] row n0 + g of B, k "
              "4t..4t+3; b[1] k 16 + 4t..16 + 4t+3; c[0], c[1] row g, columns 2t, 2t + 1; c[2], c[3] row g + 8")

# notebook 10's fragment layout of mma.sync m16n8k16 .f16 with fp32 accumulators (PTX ISA 9.7.14.5.8)
MMA_LAYOUT = ("g = lane / 4, t = lane % 4, two halves to a register: a[0] row g, k 2t and 2t+1; a[1] row g + 8; "
              "a[2], a[3] the same 8 further along k; b[0] k 2t and 2t+1 of column g; b[1] the same 8 further along "
              "k; c[0], c[1] row g, columns 2t, 2t + 1; c[2], c[3] row g + 8")

_WMMA_LDM = ("the leading dimension ldm of load_matrix_sync/store_matrix_sync is the row length of the "
             "whole matrix (K for A, N for B and C; a shared-memory tile's padded row length), not {t}.")

HINTS: dict[str, dict[str, str]] = {
    "unwritten": {
        "*": "Check that the grid covers all of the output and that every thread that should store does "
             "(an early `return` or a bounds check that is too strict).",
        "mma": "Every element of C must be stored: each lane stores c[0], c[1] (row g, columns 2t, 2t + 1) and "
               "c[2], c[3] (row g + 8) of every 16 x 8 accumulator tile of its warp; check the warp's tile origin "
               "(blockIdx.y * BLOCK_M rows, blockIdx.x * BLOCK_N columns, then the warp's place in the block) and "
               "that no warp returns early.",
        "wmma": "Each warp must store its whole {t}x{t} tile with store_matrix_sync (ldm = N): check the "
                "tile's first row/column from blockIdx and that no warp returns early.",
        "fp8": "Every element of C must be stored once, with `=`: C holds garbage before your kernel runs, so "
               "`+=` (or atomicAdd) leaves garbage. Check that the warps' tiles (m0 = (blockIdx.y * 2 + warp) * 16, n0 = "
               "blockIdx.x * 16) cover C, that each lane stores its four sums of each 16 x 8 half (c[0], c[1] "
               "row g, columns 2t, 2t + 1; c[2], c[3] row g + 8), and that no warp returns early.",
        "transpose": "Each block writes one 32x32 tile of out (each thread 4 elements, j = 0, 8, 16, 24): "
                     "check the loop over j and the bounds check of the store (out is cols x rows).",
        "im2col": "Every element of col must be stored, the zeros of the padding included: write 0 where "
                  "the window leaves the image instead of skipping the store.",
        "conv": "Every element of y must be stored: check that the epilogue covers the whole block tile "
                "and that only rows beyond N*P*Q are skipped.",
        "probe": "Every lane must write held[lane * 16 + i] for every i < frag.num_elements.",
    },
    "nan": {
        "*": "An accumulator that was never initialised (float acc = 0.0f), or a read outside A or B, "
             "gives NaN.",
        "mma": "An accumulator never set to 0.0f, or a fragment loaded (ldmatrix) from a shared-memory stage no "
               "copy filled yet, gives NaN: every stage's cp.async group must be waited for (cp.async.wait_group) "
               "and a __syncthreads() passed before any warp reads it.",
        "wmma": "An accumulator fragment that was never initialised (wmma::fill_fragment(acc, 0.0f)), or "
                "a load_matrix_sync that reads outside A or B, gives NaN.",
        "fp8": "NaN or Inf from finite e4m3 codes: the mma must read them as .e4m3.e4m3 (as .e5m2, every code "
               "from 0x7C up is Inf or NaN); a sum kept in fp16 overflows (the unscaled sums of codes up to 448 "
               "pass 65504); an accumulator never set to 0, or a load past the end of A or B, gives NaN too.",
        "transpose": "out only copies elements of in, so NaN means a tile element no thread loaded: check "
                     "that the read of the shared tile swaps the two indices of the write (the transpose of "
                     "what was stored), and the bounds checks of the load.",
        "im2col": "col only copies elements of x (or 0), so NaN means a read outside x: check "
                  "0 <= h < H and 0 <= w < W before reading, and the NCHW index ((n*C + c)*H + h)*W + w.",
        "conv": "An accumulator fragment never initialised (fill_fragment(acc, 0.0f)), or a shared-memory "
                "tile entry that was never loaded (padding must be written as zeros), gives NaN.",
    },
    "wrong-exact": {
        "*": "Compare your index arithmetic with the contract above, element by element.",
        "transpose": "out[c * rows + r] must equal in[r * cols + c]. In the second half the block's roles "
                     "swap: blockIdx.y * 32 gives the column of out, blockIdx.x * 32 the row, and the shared "
                     "tile is read with its two indices swapped.",
        "im2col": "Decode idx as row = idx / (C*R*S), column = idx % (C*R*S); then s = column % S, "
                  "r = (column / S) % R, c = column / (R*S); h = p*stride - pad + r, w = q*stride - pad + s.",
        "probe": "Write held[lane * 16 + i] = (int) frag.x[i] with lane = threadIdx.x % 32, after loading M "
                 "with ldm 16.",
    },
    "wrong-result": {
        "*": "Compare your index arithmetic with the contract: row-major element (i, j) of a matrix with "
             "n columns is at i*n + j; check which of blockIdx.x/y runs along rows.",
        "mma": "Check the fragments against mma.sync m16n8k16's layout (" + MMA_LAYOUT + "). A and B are "
               "row-major (B is K x N): ldmatrix gives A's fragments as stored, B's only with .trans (its k pairs "
               "run down a column). blockIdx.x runs along the columns of C.",
        "wmma": "Compare your index arithmetic with the contract: the tile of C at (tile_row, tile_col) "
                "starts at C + tile_row*N + tile_col; check which of blockIdx.x/y runs along rows; "
                + _WMMA_LDM,
        "fp8": "Check the fragments against the contract (" + FP8_LAYOUT + "). B is N x K, K-major: element "
               "(k, n) of the product is B[n * K + k]. Then C = scale_a * scale_b * sum, applied once.",
        "conv": "Check the implicit-GEMM indexing: row m = (n*P + p)*Q + q of y, column k, and inner index "
                "(r*S + s)*C + c reading x[n][p - pad + r][q - pad + s][c]; w (KRSC) is B stored "
                "column-major (a col_major matrix_b fragment); ldm is the row length of the tile in memory.",
    },
    "edge": {
        "*": "The size is not a multiple of {t}: the last tiles overhang the matrix. Check the bounds of "
             "your loads (pad with zeros) and of your stores.",
        "fp8": "M or N is not a multiple of the warp's {t} x 16 tile, or K of the k-step's 32: codes past the edge "
               "of A or B must be loaded as 0 (a row below M, or N for B, and each code's k below K), and only "
               "the elements with row < M and column < N stored.",
        "conv": "N*P*Q is not a multiple of block_m: the last block tile overhangs y. Zero-fill the rows "
                "beyond N*P*Q when loading and do not store them.",
    },
    "precision": {
        "*": "The result is close but not as accurate as fp32 accumulation allows: are you accumulating "
             "in half? Use a float accumulator fragment / float variable.",
        "fp8": "The result is close but not as accurate as fp32 accumulation allows: keep the sums in fp32 (the "
               ".f32 accumulators of mma.sync, float variables) and apply scale_a * scale_b once, to the final sum.",
    },
    # A load outside an input (emulator: named argument) and a store outside the output.
    "read-out-of-bounds": {
        "*": "A load past the edge of A or B: threads past the edge need a guard (the row they read below M, "
             "the column below N, and the k index below K for tiles; load 0 instead).",
        "mma": "A copy past the end of A or B: the block's k-tile kt starts at A + (blockIdx.y * BLOCK_M) * K + kt * "
               "BLOCK_K and B + (kt * BLOCK_K) * N + blockIdx.x * BLOCK_N; each cp.async moves 16 bytes (8 halves): "
               "check the chunk indices against BLOCK_K / 8 for A and BLOCK_N / 8 for B.",
        "wmma": "load_matrix_sync reads a whole {t}x{t} tile from the pointer you pass: check it "
                "(A + tile_row*K + k, B + k*N + tile_col) and ldm; an edge tile that overhangs the matrix "
                "must be copied through zero-padded shared memory.",
        "fp8": "A load past the end of A or B: a lane whose row (m0 + g of A, n0 + g of B) is not below M (N for "
               "B), or a code whose k is not below K, must read 0 instead. A is M x K and B is N x K: row n of B "
               "starts at B + n * K.",
        "transpose": "A read outside in. in is rows x cols: its row length (leading dimension) is cols, so "
                     "element (r, c) is at r * cols + c, not r * rows + c. A load needs the guard of in's own "
                     "shape: its row index below rows and its column index below cols.",
        "im2col": "A read outside x: where the window leaves the image (h < 0, h >= H, w < 0 or w >= W) "
                  "store 0 and do not read x.",
        "conv": "A read outside x or w: windows that leave the image (the padding) and rows beyond N*P*Q must "
                "be zero-filled, not loaded; w is read only for output channels below K, the block's from "
                "n0 = blockIdx.x * BLOCK_N (blockIdx.x runs along the output channels, blockIdx.y along the "
                "output pixels).",
        "probe": "M is 16x16, so ldm is 16: wmma::load_matrix_sync(frag, M, 16). A larger ldm makes the "
                 "fragment's rows step past the end of M.",
    },
    "write-out-of-bounds": {
        "*": "A store without a bounds check: store only when the thread's row of C is below M and its "
             "column below N, or stage edge tiles through shared memory.",
        "mma": "A store outside C (M x N, row-major): a lane's c[0], c[1] go to row (tile row + g), columns "
               "(tile column + 2t, + 1), and c[2], c[3] to row + 8; check the warp's tile origin in the block.",
        "wmma": "store_matrix_sync writes a whole {t}x{t} tile: check the pointer (C + tile_row*N + "
                "tile_col) and ldm (N); an edge tile that overhangs C must go through shared memory and "
                "be copied with a bounds check.",
        "fp8": "A store outside C: store c[i] only where its row is below M and its column below N (C is M x N, "
               "row-major: element (r, c) at C[r * N + c]).",
        "transpose": "A store outside out. out is cols x rows: its row length (leading dimension) is rows, "
                     "so element (c, r) is at c * rows + r, not c * cols + r. A store needs the guard of out's "
                     "own shape: its row index below cols and its column index below rows.",
        "im2col": "A store past the end of col: the grid has more threads than col has elements; start "
                  "with if (idx >= N*P*Q*C*R*S) return;",
        "conv": "A store outside y: rows of the last block tile beyond N*P*Q must not be stored.",
        "probe": "held has 32 x 16 ints: lane (threadIdx.x % 32) writes held[lane * 16 + i] for "
                 "i < frag.num_elements (16), nothing beyond.",
    },
}

TRANSPOSE_UNWRITTEN = ("In a transpose each thread loads tile elements along a row of in and, after the "
                       "__syncthreads(), reads the tile with its two indices swapped (a column of what was "
                       "loaded): a read whose indices are those of the write reads elements the guarded edge "
                       "loads never wrote.")
SWAPPED_BLOCKS = ("Only a top-left rectangle of whole tiles was written, the pattern of blockIdx.x and blockIdx.y "
                  "swapped: check which one runs along the rows ({contract}). Otherwise:")

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def shared_nan(source: str) -> str:
    """The first suspect for NaN in a kernel that stages data in shared memory: a read of a
    tile before the copy into it is complete (said before the family's own NaN hint)."""
    code = _COMMENTS.sub(" ", source or "")
    if "__shared__" not in code:
        return ""
    if re.search(r"__pipeline_memcpy_async|cp\.async|cuda::memcpy_async|__pipeline_commit", code):
        # the wait in the words the kernel copies with: inline PTX, or the __pipeline intrinsics
        ptx = re.search(r"cp\.async\.(?:ca|cg)\b", code) and "__pipeline_memcpy_async" not in code
        waits = "cp.async.wait_group N (or cp.async.wait_all)" if ptx else "__pipeline_wait_prior(...)"
        wait = (f"{waits} and then a __syncthreads() between starting the copy "
                "(cp.async) into shared memory and reading it")
    else:
        wait = ("a __syncthreads() between copying into shared memory and reading it (a __syncwarp() where "
                "one warp fills and reads its own tile, as in notebook 04)")
    return (f"Shared memory read before it was filled gives NaN: check there is {wait} (and one "
            "before the copy overwrites a tile others still read). ")


def swapped_grid(ex, block, args) -> str:
    """A warp16 WMMA kernel that reads past the end of A from a block whose blockIdx.y * 16 is past the
    last row of A: the rows were taken from blockIdx.y (notebook 03's grid, where x runs along the
    columns), while this exercise's grid runs blockIdx.x along the rows."""
    if getattr(ex.problem, "launch_rule", "") != "warp16" or not block or len(args) < 4:
        return ""
    M = int(args[3])
    if block[1] * 16 >= M > block[0] * 16:
        return (f"The warp that read past the end of A is block {tuple(block)}: blockIdx.y * 16 = {block[1] * 16} "
                f"is no row of A (M = {M}). Here blockIdx.x runs along the rows of C and blockIdx.y along the "
                "columns (grid (ceil(M/16), ceil(N/16))), the other way round from notebook 03's SGEMM.")
    return ""


def hint(ex, kind: str, tile: int = 16) -> str:
    table = HINTS[kind]
    return table.get(family(ex), table["*"]).format(t=tile)


def out_of_bounds(ex, argument: str | None, outputs: set[str]) -> str:
    """Hint for an access outside a named kernel argument: a store when it is an output."""
    if argument is None:
        return ""
    kind = "write-out-of-bounds" if argument in outputs else "read-out-of-bounds"
    return hint(ex, kind, 8 if getattr(ex.problem, "launch_rule", "") == "warp8" else 16)
