/*
 * wmma_gemm (shared memory), rung 1 of the fast-GEMM ladder (notebook 06).
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs wmma_gemm_naive.cu: a block of several warps computes a
 * BLOCK_M x BLOCK_N tile of C. For each step of BLOCK_K along K the whole block copies a
 * BLOCK_M x BLOCK_K tile of A and a BLOCK_K x BLOCK_N tile of B into shared memory
 * (coalesced 16-byte copies, 8 halves per thread per copy), waits, and then every warp
 * loads its fragments from shared memory. A global element is now read N/BLOCK_N (M/BLOCK_M)
 * times instead of N/16 (M/16). Each warp still owns one 16x16 tile of C.
 * Measured (H200, kernels/RESULTS-wmma.md): 23 TFLOP/s, SLOWER than the naive 28: the naive
 * kernel's repeated loads hit in L1/L2 anyway, and here every warp still loads 2 fragments
 * per mma (now from shared memory) and the block pays a copy and two barriers per step.
 * Staging only pays once each warp reuses fragments: the next rung.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [64], BLOCK_N [64], BLOCK_K [32],
 *   THREADS = 32 * (BLOCK_M / 16) * (BLOCK_N / 16) [512] (one warp per 16x16 tile).
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M): blockIdx.x runs along the
 *         COLUMNS of C, blockIdx.y along the rows.
 *         Dynamic shared memory: (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 2 bytes.
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Check:  python -m grader.bench_wmma --only smem
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef BLOCK_K
#define BLOCK_K 32
#endif
#ifndef THREADS
#define THREADS (32 * (BLOCK_M / 16) * (BLOCK_N / 16))
#endif
static_assert(THREADS == 32 * (BLOCK_M / 16) * (BLOCK_N / 16), "one warp per 16x16 tile of C");
static_assert(BLOCK_K % 16 == 0 && BLOCK_M % 16 == 0 && BLOCK_N % 16 == 0, "tiles of 16");
static_assert((BLOCK_M * BLOCK_K / 8) % THREADS == 0 || (BLOCK_M * BLOCK_K / 8) < THREADS, "A copy");

extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* As = reinterpret_cast<half*>(smem_raw);     // BLOCK_M x BLOCK_K, row-major
    half* Bs = As + BLOCK_M * BLOCK_K;                 // BLOCK_K x BLOCK_N, row-major

    const int warp = threadIdx.x / 32;
    const int warp_row = (warp / (BLOCK_N / 16)) * 16;  // this warp's tile inside the block
    const int warp_col = (warp % (BLOCK_N / 16)) * 16;
    const int row0 = blockIdx.y * BLOCK_M;
    const int col0 = blockIdx.x * BLOCK_N;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k0 = 0; k0 < K; k0 += BLOCK_K) {
        // Copy the tiles: chunk c is 8 consecutive halves (16 bytes) of one row.
        for (int c = threadIdx.x; c < BLOCK_M * BLOCK_K / 8; c += THREADS) {
            int r = c / (BLOCK_K / 8), col = (c % (BLOCK_K / 8)) * 8;
            *reinterpret_cast<uint4*>(As + r * BLOCK_K + col) =
                *reinterpret_cast<const uint4*>(A + (size_t)(row0 + r) * K + k0 + col);
        }
        for (int c = threadIdx.x; c < BLOCK_K * BLOCK_N / 8; c += THREADS) {
            int r = c / (BLOCK_N / 8), col = (c % (BLOCK_N / 8)) * 8;
            *reinterpret_cast<uint4*>(Bs + r * BLOCK_N + col) =
                *reinterpret_cast<const uint4*>(B + (size_t)(k0 + r) * N + col0 + col);
        }
        __syncthreads();  // tiles complete before any warp reads them

        #pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            wmma::load_matrix_sync(a, As + warp_row * BLOCK_K + kk, BLOCK_K);
            wmma::load_matrix_sync(b, Bs + kk * BLOCK_N + warp_col, BLOCK_N);
            wmma::mma_sync(acc, a, b, acc);
        }
        __syncthreads();  // ... and read by all warps before the next copy overwrites them
    }
    wmma::store_matrix_sync(C + (size_t)(row0 + warp_row) * N + col0 + warp_col, acc, N,
                            wmma::mem_row_major);
}
