// Adversarial: accumulates in half where fp32 accumulation is required (must fail as "precision").
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    __shared__ half tile[16 * 16];
    int tile_row = blockIdx.x * 16, tile_col = blockIdx.y * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> acc;  // half: loses digits as K grows
    wmma::fill_fragment(acc, __float2half(0.0f));
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = threadIdx.x; e < 256; e += 32)
        C[(tile_row + e / 16) * N + tile_col + e % 16] = __half2float(tile[e]);
}
