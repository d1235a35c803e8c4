/*
 * bf16_gemm (naive): C = A * B on the tensor cores in BF16 (WMMA m16n16k16).
 * A (M x K) and B (K x N) are __nv_bfloat16, C (M x N) is float; all row-major and contiguous.
 * Requires: sm_80
 *
 * wmma_gemm_naive.cu with __nv_bfloat16 instead of half (notebook 07): one warp computes
 * one 16 x 16 tile of C, walking K in steps of 16, fp32 accumulation. bf16 keeps fp32's
 * 8 exponent bits (same range, no overflow where fp32 has none) and 7 mantissa bits
 * (unit roundoff 2^-8, eight times fp16's). From Python, pass bf16 arrays as their raw
 * bits (uint16): NumPy and CuPy have no bf16 type.
 *
 * Launch: block (32, 1, 1), grid (ceil(M / 16), ceil(N / 16)); blockIdx.x runs along the
 *         rows of C. M, N and K must be multiples of 16.
 * Check:  grader.lessons.precisions (notebook 07)
 */
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

extern "C" __global__ void bf16_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C,
                                     int M, int N, int K)
{
    int tile_row = blockIdx.x * 16;
    int tile_col = blockIdx.y * 16;
    if (tile_row >= M || tile_col >= N) return;  // uniform across the warp

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + (size_t)tile_row * N + tile_col, acc, N, wmma::mem_row_major);
}
