/*
 * wmma_gemm_colmajor: C = alpha * A * B + beta * C with COLUMN-MAJOR operands, the kernel of
 * NVIDIA's "Programming Tensor Cores in CUDA 9" post (cuBLAS's convention).
 * A (M x K) and B (K x N) are fp16, C (M x N) fp32, all column-major: element (i, j) of A is
 * at A[i + j * M] (leading dimension = the number of ROWS), of B at B[i + j * K], of C at
 * C[i + j * M]. C is updated in place.
 *
 * What changed vs wmma_gemm_naive.cu: the fragments of A and B are declared col_major and
 * the tile of A at (row, k) starts at A + row + k * lda; the epilogue loads the tile of C as
 * mem_col_major. And as in the post, a block holds a 4 x 4 grid of warps: warp (warpM, warpN)
 * computes the 16 x 16 tile of C at rows 16*warpM, columns 16*warpN.
 *
 * Launch: block (128, 4, 1), grid (ceil(M / 64), ceil(N / 64)); M, N, K multiples of 16.
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm_colmajor(const half* A, const half* B, float* C, int M, int N, int K,
                                              float alpha, float beta)
{
    const int lda = M, ldb = K, ldc = M;  // column-major: leading dimension = rows
    const int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    const int warpN = blockIdx.y * blockDim.y + threadIdx.y;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);

    const int row = warpM * 16, col = warpN * 16;
    if (row >= M || col >= N) return;  // uniform across the warp: all 32 lanes leave together
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + row + (size_t)k * lda, lda);
        wmma::load_matrix_sync(b, B + k + (size_t)col * ldb, ldb);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::load_matrix_sync(c, C + row + (size_t)col * ldc, ldc, wmma::mem_col_major);
    for (int i = 0; i < c.num_elements; ++i)
        c.x[i] = alpha * acc.x[i] + beta * c.x[i];
    wmma::store_matrix_sync(C + row + (size_t)col * ldc, c, ldc, wmma::mem_col_major);
}
