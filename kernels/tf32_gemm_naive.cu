/*
 * tf32_gemm (naive): C = A * B on the tensor cores in TF32 (WMMA m16n16k8).
 * A (M x K), B (K x N) and C (M x N) are float (fp32); all row-major and contiguous.
 * Requires: sm_80
 *
 * The naive WMMA GEMM of wmma_gemm_naive.cu with the TF32 shape (notebook 07): one warp
 * computes one 16 x 16 tile of C, walking K in steps of 8. The A and B fragments have the
 * element type wmma::precision::tf32 and are loaded from ordinary fp32 arrays; the tensor
 * cores read only 19 bits of each (sign, 8 exponent bits, 10 mantissa bits), so after the
 * load every element is rounded to nearest with wmma::__float_to_tf32 (CUDA C++
 * Programming Guide, "Warp Matrix Functions" > "Alternate Floating Point"). Without that
 * step the tensor cores use the value with its low 13 bits dropped: a truncation with a bias
 * (on an H200 the -DROUND_TF32=0 build erred 9.9e-4 at K=16, three times the rounded build's
 * 3.4e-4, kernels/RESULTS-notebooks-06-07.md); build with -DROUND_TF32=0 to see it.
 * Products and sums are fp32.
 *
 * Defines: ROUND_TF32 [1] (0: skip __float_to_tf32, let the hardware truncate).
 * Launch: block (32, 1, 1), grid (ceil(M / 16), ceil(N / 16)); blockIdx.x runs along the
 *         rows of C. M and N must be multiples of 16, K a multiple of 8.
 * Check:  grader.lessons.precisions (notebook 07)
 */
#include <mma.h>
using namespace nvcuda;

#ifndef ROUND_TF32
#define ROUND_TF32 1
#endif

extern "C" __global__ void tf32_gemm(const float* A, const float* B, float* C, int M, int N, int K)
{
    int tile_row = blockIdx.x * 16;
    int tile_col = blockIdx.y * 16;
    if (tile_row >= M || tile_col >= N) return;  // uniform across the warp

    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k = 0; k < K; k += 8) {
        wmma::load_matrix_sync(a, A + (size_t)tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)k * N + tile_col, N);
#if ROUND_TF32
        for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
        for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
#endif
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + (size_t)tile_row * N + tile_col, acc, N, wmma::mem_row_major);
}
