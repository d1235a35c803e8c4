/*
 * wmma_one_tile: the smallest complete WMMA program. One warp computes D = A * B + C for a
 * single 16x16x16 tile: A, B fp16 (16 x 16, row-major), C, D fp32 (16 x 16, row-major).
 *
 * wmma_one_tile     the four steps: declare fragments, load, mma_sync, store (ldm = 16).
 * wmma_one_tile_ld  the same product with A taken out of a WIDER row-major matrix: the tile
 *                   is the left 16 columns of A, whose rows are `lda` elements apart in
 *                   memory. load_matrix_sync's ldm must be that row length (the leading
 *                   dimension), not 16; a wrong ldm reads the wrong elements (notebook 04
 *                   passes B = I so D shows exactly which ones). C is zero (fill_fragment).
 *
 * Every wmma:: call is warp-wide ("_sync"): all 32 lanes must execute it together with the
 * same arguments, because each lane holds only a slice of each fragment (notebook 05 maps it).
 *
 * Launch: block (32, 1, 1), grid (1, 1, 1): one warp. lda a multiple of 8 (16-byte rows).
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_one_tile(const half* A, const half* B, const float* C, float* D)
{
    // 1. Declare: a fragment is a warp-wide object; each lane keeps a few of its elements.
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    // 2. Load: all 32 lanes together; ldm = 16 elements from one row to the next.
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::load_matrix_sync(acc, C, 16, wmma::mem_row_major);
    // 3. Multiply-accumulate on the tensor cores: acc = a * b + acc.
    wmma::mma_sync(acc, a, b, acc);
    // 4. Store: the accumulator's memory layout is named at the store.
    wmma::store_matrix_sync(D, acc, 16, wmma::mem_row_major);
}

extern "C" __global__ void wmma_one_tile_ld(const half* A, const half* B, float* D, int lda)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);       // C = 0
    wmma::load_matrix_sync(a, A, lda);    // row r of the tile starts at A + r * lda
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(D, acc, 16, wmma::mem_row_major);
}
