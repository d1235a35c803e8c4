/*
 * mma_gemm (mma.sync + ldmatrix, padded rows), rung 1 of the beyond-WMMA ladder (notebook 10).
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs wmma_gemm_swizzle.cu (notebook 06's rung 5: the same 128 x 128 x 64 block
 * tile, 4 warps of 64 x 64, 3 cp.async stages, padded rows and block order): no WMMA.
 * 1. The tensor cores are driven with PTX mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32:
 *    one 16x8x16 product per instruction (a 16x16x16 wmma::mma_sync is two of them in SASS,
 *    HMMA.16816, kernels/RESULTS-notebooks-04-05.md) on registers whose layout the PTX ISA
 *    documents (PTX ISA 9.1, 9.7.14.5.8).
 * 2. Fragments come from shared memory through ldmatrix (PTX ISA 9.1, 9.7.14.5.15): every
 *    lane gives the address of one 16-byte row, one ldmatrix.x4 fills a 16x16 A fragment,
 *    one ldmatrix.x4.trans two 16x8 B fragments (B is stored as rows of k; .trans hands each
 *    lane the pair (k, k+1) of one column n, as mma wants B).
 * 3. The accumulator layout is documented (lane: row g or g+8, columns 2t and 2t+1 of each
 *    16x8 tile, g = lane/4, t = lane%4), so the epilogue stores C straight from registers
 *    (float2 stores): no shared-memory strip, no barrier.
 * Measured (H100, 2026-11-24 07:44 UTC, kernels/RESULTS-mma.md, paired with cuBLAS in one run):
 * 44.9% / 41.9% of cuBLAS fp16 at 4096^3 / 8192^3 (300.6 / 307.1 TFLOP/s), below notebook 06's
 * wmma_gemm_fragdb in the same run (56.0% / 45.9%).
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128], BLOCK_N [128], BLOCK_K [64],
 *   WARP_TILE_M [64], WARP_TILE_N [64] (multiples of 16), SMEM_PAD [8] (halves, a multiple of 8),
 *   STAGES [3] (>= 2), GROUP_M [16] (block rows per swizzle group),
 *   THREADS = 32 * (BLOCK_M / WARP_TILE_M) * (BLOCK_N / WARP_TILE_N) [128].
 * Registers (ptxas via NVRTC 13.0): 252 on sm_90, 247 on sm_80, no spill.
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M) (the kernel remaps the block index).
 *         Dynamic shared memory:
 *           STAGES * (BLOCK_M * (BLOCK_K + SMEM_PAD) + BLOCK_K * (BLOCK_N + SMEM_PAD)) * 2 bytes
 *           [107520]. M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Requires: sm_80 (mma.sync m16n8k16, cp.async).
 * Check:  python -m grader.bench.mma --only ldmatrix
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "mma_gemm_ldmatrix needs sm_80 or newer (mma.sync m16n8k16 with fp32 accumulators)"
#endif
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef WARP_TILE_M
#define WARP_TILE_M 64
#endif
#ifndef WARP_TILE_N
#define WARP_TILE_N 64
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 16
#endif
#define LDA (BLOCK_K + SMEM_PAD)
#define LDB (BLOCK_N + SMEM_PAD)
#define A_STAGE (BLOCK_M * LDA)  // halves per buffer of A
#define B_STAGE (BLOCK_K * LDB)
#define WARPS_N (BLOCK_N / WARP_TILE_N)
#define MI (WARP_TILE_M / 16)  // 16-row A fragments per warp
#define NI (WARP_TILE_N / 8)   // 8-column B fragments per warp
#ifndef THREADS
#define THREADS (32 * (BLOCK_M / WARP_TILE_M) * WARPS_N)
#endif
static_assert(BLOCK_M % WARP_TILE_M == 0 && BLOCK_N % WARP_TILE_N == 0, "warp tiles fill the block");
static_assert(WARP_TILE_M % 16 == 0 && WARP_TILE_N % 16 == 0, "whole ldmatrix.x4 loads");
static_assert(THREADS == 32 * (BLOCK_M / WARP_TILE_M) * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 16 == 0 && SMEM_PAD % 8 == 0 && STAGES >= 2, "shapes");
static_assert((BLOCK_M * BLOCK_K / 8) % THREADS == 0 && (BLOCK_K * BLOCK_N / 8) % THREADS == 0,
              "every thread copies the same number of 16-byte chunks");

// ldmatrix: lane l gives the shared address of one 16-byte row; register j receives its
// part of the 8x8 matrix whose rows lanes 8j..8j+7 gave.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                              unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
// d += a * b on one 16x8x16 tile, fp32 accumulators
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void __launch_bounds__(THREADS)
mma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* As = reinterpret_cast<half*>(smem_raw);  // STAGES buffers of BLOCK_M x LDA
    half* Bs = As + STAGES * A_STAGE;               // STAGES buffers of BLOCK_K x LDB
    const unsigned as0 = static_cast<unsigned>(__cvta_generic_to_shared(As));
    const unsigned bs0 = static_cast<unsigned>(__cvta_generic_to_shared(Bs));

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = (warp / WARPS_N) * WARP_TILE_M;
    const int warp_col = (warp % WARPS_N) * WARP_TILE_N;
    // Block order as notebook 06's rung 5: GROUP_M block rows, then one block column right.
    const int tiles_m = gridDim.y, tiles_n = gridDim.x;
    const int bid = blockIdx.y * tiles_n + blockIdx.x;
    const int group = bid / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = bid % (GROUP_M * tiles_n);
    const int row0 = (first_m + in_group % group_rows) * BLOCK_M;
    const int col0 = (in_group / group_rows) * BLOCK_N;
    const half* A_blk = A + (size_t)row0 * K;
    const half* B_blk = B + col0;
    const int KT = K / BLOCK_K;

    auto load_tile = [&](int stage, int kt) {  // 16 bytes per cp.async, as rung 5
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

    float acc[MI][NI][4];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;

    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        __pipeline_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        __pipeline_wait_prior(STAGES - 2);  // tile kt has landed (my copies) ...
        __syncthreads();                    // ... everyone's; the buffer of kt-1 is free
        const int next = kt + STAGES - 1;
        if (next < KT) load_tile(next % STAGES, next);
        __pipeline_commit();

        const unsigned as = as0 + (kt % STAGES) * A_STAGE * 2;  // byte addresses
        const unsigned bs = bs0 + (kt % STAGES) * B_STAGE * 2;
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            unsigned a[MI][4], b[NI][2];
            // A: lanes 0-15 give rows 0-15 at column kk, lanes 16-31 the same rows at kk + 8
            #pragma unroll
            for (int i = 0; i < MI; ++i)
                ldsm_x4(a[i], as + ((warp_row + 16 * i + (lane & 15)) * LDA + kk + 8 * (lane >> 4)) * 2);
            // B: lanes 0-15 give rows k = kk..kk+15 at column n, lanes 16-31 at n + 8
            #pragma unroll
            for (int j = 0; j < NI; j += 2)
                ldsm_x4_trans(b[j][0], b[j][1], b[j + 1][0], b[j + 1][1],
                              bs + ((kk + (lane & 15)) * LDB + warp_col + 8 * j + 8 * (lane >> 4)) * 2);
            #pragma unroll
            for (int i = 0; i < MI; ++i)
                #pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma16816(acc[i][j], a[i], b[j]);
        }
    }

    // Epilogue from registers: lane holds rows g and g+8, columns 2t, 2t+1 of each 16x8 tile.
    const int g = lane >> 2, t = lane & 3;
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j) {
            float* c = C + (size_t)(row0 + warp_row + 16 * i + g) * N + col0 + warp_col + 8 * j + 2 * t;
            *reinterpret_cast<float2*>(c) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(c + (size_t)8 * N) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
