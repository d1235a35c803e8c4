/*
 * dmma_gemm (naive): C = A * B in fp64 on the tensor cores (WMMA m8n8k4, "DMMA").
 * A (M x K), B (K x N) and C (M x N) are double; all row-major and contiguous.
 * Requires: sm_80
 *
 * The naive WMMA GEMM of wmma_gemm_naive.cu with the double-precision shape: one warp
 * computes one 8 x 8 tile of C, walking K in steps of 4, loading its 8x4 tile of A and 4x8
 * tile of B straight from global memory. Products and sums are IEEE fp64 (FMA), so the
 * result matches a float64 reference to about K * 2^-53 relative to |A||B|.
 *
 * Launch: block (32, 1, 1), grid (ceil(M / 8), ceil(N / 8)); blockIdx.x runs along the
 *         rows of C. M and N must be multiples of 8, K a multiple of 4.
 * Check:  python -m grader.bench_wmma --only dmma
 */
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void dmma_gemm(const double* A, const double* B, double* C, int M, int N, int K)
{
    // BEGIN SOLUTION (about 13 lines)
    int tile_row = blockIdx.x * 8;
    int tile_col = blockIdx.y * 8;
    if (tile_row >= M || tile_col >= N) return;  // uniform across the warp

    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;
    wmma::fill_fragment(acc, 0.0);

    for (int k = 0; k < K; k += 4) {
        wmma::load_matrix_sync(a, A + (size_t)tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + (size_t)tile_row * N + tile_col, acc, N, wmma::mem_row_major);
    // END SOLUTION
}
