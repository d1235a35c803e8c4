/*
 * wmma_gemm (naive): C = A * B on tensor cores through the WMMA API.
 * A (M x K) and B (K x N) are fp16, C (M x N) is fp32; all row-major and contiguous.
 *
 * One warp (one block of 32 threads) computes one 16 x 16 tile of C, walking K in steps
 * of 16: load a 16x16 tile of A and of B straight from global memory into fragments,
 * multiply-accumulate on the tensor cores, and finally store the fp32 accumulator.
 * This is the seed blog's kernel: simple and correct, but every tile of A and B is read
 * from global memory by N/16 (M/16) different warps, so it runs at a few percent of cuBLAS.
 *
 * Launch: block (32, 1, 1), grid (ceil(M / 16), ceil(N / 16)); blockIdx.x runs along the
 *         rows of C. M, N and K must be multiples of 16.
 * Check:  python -m grader check wmma-gemm kernels/wmma_gemm_naive.cu
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    // BEGIN SOLUTION (about 13 lines)
    int tile_row = blockIdx.x * 16;  // first row of this warp's tile of C
    int tile_col = blockIdx.y * 16;  // first column
    if (tile_row >= M || tile_col >= N) return;  // uniform across the warp

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k = 0; k < K; k += 16) {
        // The leading dimension is the row length of the whole matrix, not of the tile.
        wmma::load_matrix_sync(a, A + tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + tile_row * N + tile_col, acc, N, wmma::mem_row_major);
    // END SOLUTION
}
