/*
 * wmma_gemm (asynchronous multi-stage copies), rung 4 of the fast-GEMM ladder (notebook 06).
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs wmma_gemm_padded.cu: the copies global -> shared no longer pass through
 * registers and no longer stall the block. Each thread issues 16-byte asynchronous copies
 * (cp.async, through the cuda_pipeline.h primitives __pipeline_memcpy_async,
 * __pipeline_commit, __pipeline_wait_prior) into one of STAGES shared-memory buffers, while
 * the warps compute on a buffer filled earlier. At step kt the block waits until tile kt has
 * arrived (at most STAGES-2 younger copy groups still in flight), passes ONE barrier (which
 * also proves every warp is done with tile kt-1), starts the copy of tile kt+STAGES-1 into
 * the buffer tile kt-1 used, and computes on tile kt: memory latency hides behind
 * STAGES-1 tiles of tensor-core work. The default tiles also grow: 4 warps of 64 x 64
 * (16 mma_sync per 8 fragment loads) in a 128 x 128 block, two blocks per SM (registers
 * allow two), and BLOCK_K = 64 (half as many barriers per flop as 32; measured on an H200:
 * 128x128x64 beat 128x256x32 and 256x128x32, see kernels/RESULTS-wmma.md).
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128], BLOCK_N [128], BLOCK_K [64],
 *   WARP_M [4], WARP_N [4] (16x16 fragments per warp along M and N), SMEM_PAD [8] (halves,
 *   a multiple of 8), STAGES [3] (>= 2),
 *   THREADS = 32 * (BLOCK_M / (16 * WARP_M)) * (BLOCK_N / (16 * WARP_N)) [128].
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M): blockIdx.x runs along the
 *         COLUMNS of C, blockIdx.y along the rows.
 *         Dynamic shared memory:
 *           STAGES * (BLOCK_M * (BLOCK_K + SMEM_PAD) + BLOCK_K * (BLOCK_N + SMEM_PAD)) * 2 bytes
 *           [107520: above 48 KB, so the launcher raises the kernel's dynamic-shared limit].
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Check:  python -m grader.bench_wmma --only async
 */
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
using namespace nvcuda;

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef WARP_M
#define WARP_M 4
#endif
#ifndef WARP_N
#define WARP_N 4
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#define LDA (BLOCK_K + SMEM_PAD)
#define LDB (BLOCK_N + SMEM_PAD)
#define A_STAGE (BLOCK_M * LDA)  // halves per buffer of A
#define B_STAGE (BLOCK_K * LDB)
#define WARPS_M (BLOCK_M / (16 * WARP_M))
#define WARPS_N (BLOCK_N / (16 * WARP_N))
#ifndef THREADS
#define THREADS (32 * WARPS_M * WARPS_N)
#endif
static_assert(BLOCK_M % (16 * WARP_M) == 0 && BLOCK_N % (16 * WARP_N) == 0, "warp tiles fill the block");
static_assert(THREADS == 32 * WARPS_M * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 16 == 0 && SMEM_PAD % 8 == 0 && STAGES >= 2, "shapes");
static_assert((BLOCK_M * BLOCK_K / 8) % THREADS == 0 && (BLOCK_K * BLOCK_N / 8) % THREADS == 0,
              "every thread copies the same number of 16-byte chunks");

extern "C" __global__ void __launch_bounds__(THREADS)
wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* As = reinterpret_cast<half*>(smem_raw);  // STAGES buffers of BLOCK_M x LDA
    half* Bs = As + STAGES * A_STAGE;               // STAGES buffers of BLOCK_K x LDB

    const int warp = threadIdx.x / 32;
    const int warp_row = (warp / WARPS_N) * (16 * WARP_M);
    const int warp_col = (warp % WARPS_N) * (16 * WARP_N);
    const int row0 = blockIdx.y * BLOCK_M;
    const int col0 = blockIdx.x * BLOCK_N;
    const half* A_blk = A + (size_t)row0 * K;
    const half* B_blk = B + col0;
    const int KT = K / BLOCK_K;

    // Start the copies of tile kt into buffer `stage` (16 bytes per cp.async).
    auto load_tile = [&](int stage, int kt) {
        half* as = As + stage * A_STAGE;
        half* bs = Bs + stage * B_STAGE;
        const int k0 = kt * BLOCK_K;
        #pragma unroll
        for (int i = 0; i < BLOCK_M * BLOCK_K / 8 / THREADS; ++i) {
            int c = threadIdx.x + i * THREADS;
            int r = c / (BLOCK_K / 8), col = (c % (BLOCK_K / 8)) * 8;
            __pipeline_memcpy_async(as + r * LDA + col, A_blk + (size_t)r * K + k0 + col, 16);
        }
        #pragma unroll
        for (int i = 0; i < BLOCK_K * BLOCK_N / 8 / THREADS; ++i) {
            int c = threadIdx.x + i * THREADS;
            int r = c / (BLOCK_N / 8), col = (c % (BLOCK_N / 8)) * 8;
            __pipeline_memcpy_async(bs + r * LDB + col, B_blk + (size_t)(k0 + r) * N + col, 16);
        }
    };

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[WARP_M];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[WARP_N];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[WARP_M][WARP_N];
    #pragma unroll
    for (int i = 0; i < WARP_M; ++i)
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty groups past KT
    // keep the group count, and so the wait below, uniform).
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        __pipeline_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        __pipeline_wait_prior(STAGES - 2);  // my copies of tile kt have landed ...
        __syncthreads();                    // ... and everyone's; buffer of kt-1 is free
        int next = kt + STAGES - 1;
        if (next < KT) load_tile(next % STAGES, next);
        __pipeline_commit();

        const half* as = As + (kt % STAGES) * A_STAGE;
        const half* bs = Bs + (kt % STAGES) * B_STAGE;
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            #pragma unroll
            for (int i = 0; i < WARP_M; ++i)
                wmma::load_matrix_sync(a[i], as + (warp_row + 16 * i) * LDA + kk, LDA);
            #pragma unroll
            for (int j = 0; j < WARP_N; ++j)
                wmma::load_matrix_sync(b[j], bs + kk * LDB + warp_col + 16 * j, LDB);
            #pragma unroll
            for (int i = 0; i < WARP_M; ++i)
                #pragma unroll
                for (int j = 0; j < WARP_N; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
    }
    __pipeline_wait_prior(0);  // no copy may outlive the block (only empty groups remain)

    #pragma unroll
    for (int i = 0; i < WARP_M; ++i)
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::store_matrix_sync(C + (size_t)(row0 + warp_row + 16 * i) * N + col0 + warp_col + 16 * j,
                                    acc[i][j], N, wmma::mem_row_major);
}
