/*
 * global_only: every warp computes its 64x64 part of the block tile one 16x16 tile at a time,
 * loading the A and B fragments straight from global memory (no shared memory, no reuse).
 * Test fixture of the performance coach (tests/coach/test_coach.py): slow for ONE reason, for exercise
 * wmma-gemm-fast (block tile BLOCK_M x BLOCK_N, THREADS threads).
 * LAUNCH {"block_m": 128, "block_n": 128, "block_k": 64, "threads": 128, "shared_mem": 0}
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef THREADS
#define THREADS 128
#endif
#define WARPS (THREADS / 32)

extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    const int warp = threadIdx.x / 32;
    const int row0 = blockIdx.y * BLOCK_M, col0 = blockIdx.x * BLOCK_N;
    // the block's (BLOCK_M/16) x (BLOCK_N/16) output tiles, dealt out to its warps
    for (int t = warp; t < (BLOCK_M / 16) * (BLOCK_N / 16); t += WARPS) {
        const int r = row0 + 16 * (t / (BLOCK_N / 16)), c = col0 + 16 * (t % (BLOCK_N / 16));
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < K; k += 16) {
            wmma::load_matrix_sync(a, A + (size_t)r * K + k, K);
            wmma::load_matrix_sync(b, B + (size_t)k * N + c, N);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(C + (size_t)r * N + c, acc, N, wmma::mem_row_major);
    }
}
