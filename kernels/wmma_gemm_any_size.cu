/*
 * wmma_gemm (any size): C = A * B on tensor cores for ANY M, N, K >= 1.
 * A (M x K) and B (K x N) are fp16, C (M x N) is fp32; all row-major and contiguous.
 *
 * What changed vs wmma_gemm_naive.cu: the naive kernel needs M, N, K to be multiples of 16.
 * Here a tile that sticks out of A or B (the last tile row, column or k step) is copied
 * into a 16x16 shared-memory tile with bounds-checked loads, the missing elements set to 0
 * (zero padding does not change the product), and the fragment is loaded from there.
 * Full interior tiles are still loaded straight from global memory. An edge tile of C is
 * stored into shared memory first and only its in-range elements are copied out, so
 * nothing outside C is ever written.
 *
 * Launch: block (32, 1, 1), grid (ceil(M / 16), ceil(N / 16)); blockIdx.x runs along the
 *         rows of C (as in wmma_gemm_naive.cu). Any M, N, K >= 1.
 * Check:  python -m grader.bench_wmma --only any_size   (sizes such as 17 x 33 x 5)
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    // BEGIN SOLUTION (about 52 lines)
    __shared__ __align__(32) half a_tile[16 * 16];
    __shared__ __align__(32) half b_tile[16 * 16];
    __shared__ __align__(32) float c_tile[16 * 16];

    const int lane = threadIdx.x;            // one warp per block
    const int tile_row = blockIdx.x * 16;
    const int tile_col = blockIdx.y * 16;
    if (tile_row >= M || tile_col >= N) return;  // uniform across the warp

    const bool rows_full = tile_row + 16 <= M;
    const bool cols_full = tile_col + 16 <= N;
    // Direct fragment loads need 16-byte aligned rows: leading dimensions multiple of 8.
    const bool a_direct_ok = rows_full && (K % 8 == 0);
    const bool b_direct_ok = cols_full && (N % 8 == 0);

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k = 0; k < K; k += 16) {
        const bool k_full = k + 16 <= K;
        if (a_direct_ok && k_full) {
            wmma::load_matrix_sync(a, A + (size_t)tile_row * K + k, K);
        } else {
            // 256 elements, 8 per lane; out-of-range elements become zero.
            for (int e = lane; e < 256; e += 32) {
                int r = e / 16, c = e % 16;
                int gr = tile_row + r, gc = k + c;
                a_tile[e] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : __float2half(0.0f);
            }
            __syncwarp();
            wmma::load_matrix_sync(a, a_tile, 16);
        }
        if (b_direct_ok && k_full) {
            wmma::load_matrix_sync(b, B + (size_t)k * N + tile_col, N);
        } else {
            for (int e = lane; e < 256; e += 32) {
                int r = e / 16, c = e % 16;
                int gr = k + r, gc = tile_col + c;
                b_tile[e] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : __float2half(0.0f);
            }
            __syncwarp();
            wmma::load_matrix_sync(b, b_tile, 16);
        }
        wmma::mma_sync(acc, a, b, acc);
        __syncwarp();  // the staging tiles are reused by the next step
    }

    if (rows_full && cols_full && (N % 4 == 0)) {
        wmma::store_matrix_sync(C + (size_t)tile_row * N + tile_col, acc, N, wmma::mem_row_major);
    } else {
        wmma::store_matrix_sync(c_tile, acc, 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
            int gr = tile_row + e / 16, gc = tile_col + e % 16;
            if (gr < M && gc < N) C[(size_t)gr * N + gc] = c_tile[e];
        }
    }
    // END SOLUTION
}
