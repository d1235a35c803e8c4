/*
 * wmma_gemm (warp tiling), rung 2 of the fast-GEMM ladder (notebook 06).
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs wmma_gemm_smem.cu: each warp now owns WARP_M x WARP_N accumulator
 * fragments (a (16*WARP_M) x (16*WARP_N) tile of C) instead of one. Per 16-wide k step it
 * loads WARP_M fragments of A and WARP_N of B from shared memory and reuses them in
 * WARP_M * WARP_N mma_sync: shared-memory reads per mma drop from 2 to
 * (WARP_M + WARP_N) / (WARP_M * WARP_N), and the block tile grows, so global reads shrink too.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128], BLOCK_N [128], BLOCK_K [32],
 *   WARP_M [4], WARP_N [2] (fragments per warp along M and N),
 *   THREADS = 32 * (BLOCK_M / (16 * WARP_M)) * (BLOCK_N / (16 * WARP_N)) [256].
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M): blockIdx.x runs along the
 *         COLUMNS of C, blockIdx.y along the rows.
 *         Dynamic shared memory: (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 2 bytes.
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Check:  python -m grader.bench_wmma --only warptile
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
#ifndef BLOCK_K
#define BLOCK_K 32
#endif
#ifndef WARP_M
#define WARP_M 4
#endif
#ifndef WARP_N
#define WARP_N 2
#endif
#define WARPS_M (BLOCK_M / (16 * WARP_M))
#define WARPS_N (BLOCK_N / (16 * WARP_N))
#ifndef THREADS
#define THREADS (32 * WARPS_M * WARPS_N)
#endif
static_assert(BLOCK_M % (16 * WARP_M) == 0 && BLOCK_N % (16 * WARP_N) == 0, "warp tiles fill the block");
static_assert(THREADS == 32 * WARPS_M * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 16 == 0, "BLOCK_K a multiple of 16");

extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* As = reinterpret_cast<half*>(smem_raw);  // BLOCK_M x BLOCK_K, row-major
    half* Bs = As + BLOCK_M * BLOCK_K;              // BLOCK_K x BLOCK_N, row-major

    const int warp = threadIdx.x / 32;
    const int warp_row = (warp / WARPS_N) * (16 * WARP_M);
    const int warp_col = (warp % WARPS_N) * (16 * WARP_N);
    const int row0 = blockIdx.y * BLOCK_M;
    const int col0 = blockIdx.x * BLOCK_N;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[WARP_M];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[WARP_N];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[WARP_M][WARP_N];
    #pragma unroll
    for (int i = 0; i < WARP_M; ++i)
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BLOCK_K) {
        #pragma unroll
        for (int c = threadIdx.x; c < BLOCK_M * BLOCK_K / 8; c += THREADS) {
            int r = c / (BLOCK_K / 8), col = (c % (BLOCK_K / 8)) * 8;
            *reinterpret_cast<uint4*>(As + r * BLOCK_K + col) =
                *reinterpret_cast<const uint4*>(A + (size_t)(row0 + r) * K + k0 + col);
        }
        #pragma unroll
        for (int c = threadIdx.x; c < BLOCK_K * BLOCK_N / 8; c += THREADS) {
            int r = c / (BLOCK_N / 8), col = (c % (BLOCK_N / 8)) * 8;
            *reinterpret_cast<uint4*>(Bs + r * BLOCK_N + col) =
                *reinterpret_cast<const uint4*>(B + (size_t)(k0 + r) * N + col0 + col);
        }
        __syncthreads();

        #pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            #pragma unroll
            for (int i = 0; i < WARP_M; ++i)
                wmma::load_matrix_sync(a[i], As + (warp_row + 16 * i) * BLOCK_K + kk, BLOCK_K);
            #pragma unroll
            for (int j = 0; j < WARP_N; ++j)
                wmma::load_matrix_sync(b[j], Bs + kk * BLOCK_N + warp_col + 16 * j, BLOCK_N);
            #pragma unroll
            for (int i = 0; i < WARP_M; ++i)
                #pragma unroll
                for (int j = 0; j < WARP_N; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < WARP_M; ++i)
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::store_matrix_sync(C + (size_t)(row0 + warp_row + 16 * i) * N + col0 + warp_col + 16 * j,
                                    acc[i][j], N, wmma::mem_row_major);
}
