/*
 * ldsm_pad: what bank conflicts cost a WMMA fragment load from shared memory, and how
 * padding the rows removes them (the padding table of notebook 06).
 *
 * Shared memory has 32 banks of 4 bytes; one request is served in one pass only if no
 * two of its addresses fall in the same bank at different addresses (CUDA C++ Programming
 * Guide, "Shared Memory" under compute capability 5.x and later). A 16x16 fp16 fragment
 * load from shared memory compiles to ldmatrix (SASS LDSM), which reads each 8x8 quarter
 * as 8 rows of 16 bytes. With rows of LD halves those 8 rows start LD*2 bytes apart: if
 * LD*2 is a multiple of 128 they all start in the same bank (8-way conflict: 8 passes);
 * padding each row by 8 halves (16 bytes) spreads them over all 32 banks.
 *
 * The block copies a 64 x 64 fp16 matrix `in` into a shared tile of 64 rows of LD = 64 + PAD
 * halves, then each warp loops `iters` times: load an A fragment and a B fragment from two of
 * the 16 16x16 sub-tiles (t = (i + warp) % 16 and (t + 5) % 16) and mma_sync them into one
 * fp32 accumulator, stored at out + 256 * (global warp index), 16x16 row-major. Two
 * fragment loads (1 KB) per mma keep shared memory, not the tensor cores, the limit.
 *
 * Defines: PAD [0] (halves added to each shared row; WMMA needs LD a multiple of 8).
 * Launch: block (THREADS, 1, 1), THREADS a multiple of 32 (e.g. 256), any grid;
 *         in: 4096 halves, out: gridDim.x * THREADS / 32 * 256 floats.
 *         Bytes read from shared memory: gridDim.x * THREADS / 32 * iters * 1024.
 * Check:  grader.lessons.fast_gemm.bank_conflict_table (notebook 06)
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#ifndef PAD
#define PAD 0
#endif
#define LD (64 + PAD)
static_assert(LD % 8 == 0, "WMMA: ldm must be a multiple of 8 halves (16 bytes)");

extern "C" __global__ void ldsm_pad(const half* in, float* out, int iters)
{
    __shared__ __align__(128) half tile[64 * LD];
    for (int e = threadIdx.x; e < 64 * 64; e += blockDim.x)
        tile[(e / 64) * LD + e % 64] = in[e];
    __syncthreads();

    const int warp = threadIdx.x / 32;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int i = 0; i < iters; ++i) {
        int ta = (i + warp) & 15, tb = (ta + 5) & 15;  // sub-tile (row, col) = (t / 4, t % 4)
        wmma::load_matrix_sync(a, tile + (ta >> 2) * 16 * LD + (ta & 3) * 16, LD);
        wmma::load_matrix_sync(b, tile + (tb >> 2) * 16 * LD + (tb & 3) * 16, LD);
        wmma::mma_sync(acc, a, b, acc);
    }
    const size_t w = (size_t)blockIdx.x * (blockDim.x / 32) + warp;
    wmma::store_matrix_sync(out + 256 * w, acc, 16, wmma::mem_row_major);
}
