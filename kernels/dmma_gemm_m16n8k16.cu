/*
 * dmma_gemm (mma.sync m16n8k16 f64): C = A * B in fp64 on Hopper's larger DMMA shape
 * (notebook 10). A (M x K), B (K x N) and C (M x N) are double; all row-major and contiguous.
 *
 * What changed vs dmma_gemm_fast.cu (notebook 07: same 64 x 64 x 16 block tile, 4 stages of
 * 16-byte cp.async, rows padded by 4 doubles, 4 warps): the instruction. WMMA offers fp64 only
 * as m8n8k4 (256 multiply-adds per instruction), which on an H200 topped out near 32 TFLOP/s,
 * half of cuBLAS fp64 (dmma_gemm_peak_niter.cu, kernels/RESULTS-wmma.md). PTX ISA 7.8 added
 * mma.sync.aligned.m16n8k{4,8,16}.row.col.f64.f64.f64.f64 for sm_90 (PTX ISA 9.1, 9.7.14.5.14,
 * "Target ISA Notes": ".f64 floating point type mma operation with .m16n8k4, .m16n8k8, and
 * .m16n8k16 shapes require sm_90 or higher"). This kernel issues m16n8k16: 2048 multiply-adds
 * per instruction. Each warp owns a 32 x 32 tile of C: 2 x 4 accumulator tiles of 16 x 8, 16
 * doubles per lane.
 * Fragments are filled from shared memory with plain 8-byte loads in the PTX layout (9.7.14.5.8;
 * ldmatrix moves only 16-bit elements): A(g + 8(i%2), t + 4(i/2)) for i = 0..7, B(t + 4i, g) for
 * i = 0..3, g = lane/4, t = lane%4. With rows of 20 (A) and 68 (B) doubles, the 16 lanes of each
 * half-warp read 16 different 8-byte bank pairs: 2 passes per load, the least 32 doubles need.
 * Measured (H100, 2026-11-24 07:44 UTC, kernels/RESULTS-mma.md, paired with cuBLAS in one run):
 * 86.0% / 75.6% of cuBLAS fp64 at 4096^3 / 8192^3 (46.0 / 40.2 TFLOP/s), against 51.6% / 51.8%
 * for WMMA m8n8k4 (dmma_gemm_fast); the register-only m16n8k16 f64 ceiling there: 66.0 TFLOP/s
 * (mma_peak_niter_f64).
 *
 * Defines (-D, defaults in brackets): BLOCK_M [64], BLOCK_N [64], BLOCK_K [16] (a multiple of 16),
 *   WARP_TILE_M [32] (a multiple of 16), WARP_TILE_N [32] (a multiple of 8), SMEM_PAD [4]
 *   (doubles, even), STAGES [4] (>= 2), THREADS = 32 * (BLOCK_M / WARP_TILE_M) * (BLOCK_N / WARP_TILE_N) [128].
 * Registers (ptxas via NVRTC 13.0, sm_90): 164, no spill.
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M): blockIdx.x along the columns of C.
 *         Dynamic shared memory:
 *           STAGES * (BLOCK_M * (BLOCK_K + SMEM_PAD) + BLOCK_K * (BLOCK_N + SMEM_PAD)) * 8 bytes [75776].
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Requires: sm_90
 * Check:  python -m grader.bench.mma --only dmma
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "dmma_gemm_m16n8k16 needs sm_90 or newer (mma.sync m16n8k16 .f64)"
#endif
#include <cuda_pipeline.h>

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef BLOCK_K
#define BLOCK_K 16
#endif
#ifndef WARP_TILE_M
#define WARP_TILE_M 32
#endif
#ifndef WARP_TILE_N
#define WARP_TILE_N 32
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 4
#endif
#ifndef STAGES
#define STAGES 4
#endif
#define LDA (BLOCK_K + SMEM_PAD)
#define LDB (BLOCK_N + SMEM_PAD)
#define A_STAGE (BLOCK_M * LDA)  // doubles per buffer of A
#define B_STAGE (BLOCK_K * LDB)
#define WARPS_N (BLOCK_N / WARP_TILE_N)
#define MI (WARP_TILE_M / 16)
#define NI (WARP_TILE_N / 8)
#ifndef THREADS
#define THREADS (32 * (BLOCK_M / WARP_TILE_M) * WARPS_N)
#endif
static_assert(BLOCK_M % WARP_TILE_M == 0 && BLOCK_N % WARP_TILE_N == 0, "warp tiles fill the block");
static_assert(WARP_TILE_M % 16 == 0 && WARP_TILE_N % 8 == 0, "whole 16 x 8 tiles per warp");
static_assert(THREADS == 32 * (BLOCK_M / WARP_TILE_M) * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 16 == 0 && SMEM_PAD % 2 == 0 && STAGES >= 2, "shapes");
static_assert((BLOCK_M * BLOCK_K / 2) % THREADS == 0 && (BLOCK_K * BLOCK_N / 2) % THREADS == 0,
              "every thread copies the same number of 16-byte chunks");

// d += a * b on one 16x8x16 fp64 tile
__device__ __forceinline__ void dmma16816(double (&d)[4], const double (&a)[8], const double (&b)[4])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}

extern "C" __global__ void __launch_bounds__(THREADS)
dmma_gemm(const double* A, const double* B, double* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    double* As = reinterpret_cast<double*>(smem_raw);  // STAGES buffers of BLOCK_M x LDA
    double* Bs = As + STAGES * A_STAGE;                 // STAGES buffers of BLOCK_K x LDB

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    const int warp_row = (warp / WARPS_N) * WARP_TILE_M;
    const int warp_col = (warp % WARPS_N) * WARP_TILE_N;
    const int row0 = blockIdx.y * BLOCK_M;
    const int col0 = blockIdx.x * BLOCK_N;
    const double* A_blk = A + (size_t)row0 * K;
    const double* B_blk = B + col0;
    const int KT = K / BLOCK_K;

    auto load_tile = [&](int stage, int kt) {  // as dmma_gemm_fast.cu
        double* as = As + stage * A_STAGE;
        double* bs = Bs + stage * B_STAGE;
        const int k0 = kt * BLOCK_K;
        #pragma unroll
        for (int i = 0; i < BLOCK_M * BLOCK_K / 2 / THREADS; ++i) {
            int c = threadIdx.x + i * THREADS;
            int r = c / (BLOCK_K / 2), col = (c % (BLOCK_K / 2)) * 2;
            __pipeline_memcpy_async(as + r * LDA + col, A_blk + (size_t)r * K + k0 + col, 16);
        }
        #pragma unroll
        for (int i = 0; i < BLOCK_K * BLOCK_N / 2 / THREADS; ++i) {
            int c = threadIdx.x + i * THREADS;
            int r = c / (BLOCK_N / 2), col = (c % (BLOCK_N / 2)) * 2;
            __pipeline_memcpy_async(bs + r * LDB + col, B_blk + (size_t)(k0 + r) * N + col, 16);
        }
    };

    double acc[MI][NI][4];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0;

    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        __pipeline_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        __pipeline_wait_prior(STAGES - 2);  // tile kt has landed (my copies) ...
        __syncthreads();                    // ... everyone's; the buffer of kt-1 is free
        int next = kt + STAGES - 1;
        if (next < KT) load_tile(next % STAGES, next);
        __pipeline_commit();

        const double* as = As + (kt % STAGES) * A_STAGE;
        const double* bs = Bs + (kt % STAGES) * B_STAGE;
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            double a[MI][8], b[NI][4];
            #pragma unroll
            for (int i = 0; i < MI; ++i)
                #pragma unroll
                for (int r = 0; r < 8; ++r)
                    a[i][r] = as[(warp_row + 16 * i + g + 8 * (r & 1)) * LDA + kk + t + 4 * (r >> 1)];
            #pragma unroll
            for (int j = 0; j < NI; ++j)
                #pragma unroll
                for (int r = 0; r < 4; ++r)
                    b[j][r] = bs[(kk + t + 4 * r) * LDB + warp_col + 8 * j + g];
            #pragma unroll
            for (int i = 0; i < MI; ++i)
                #pragma unroll
                for (int j = 0; j < NI; ++j)
                    dmma16816(acc[i][j], a[i], b[j]);
        }
    }

    // acc[i][j][e]: row g (+8 for e >= 2), columns 2t, 2t+1 of the 16x8 tile (i, j)
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j) {
            double* c = C + (size_t)(row0 + warp_row + 16 * i + g) * N + col0 + warp_col + 8 * j + 2 * t;
            *reinterpret_cast<double2*>(c) = make_double2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<double2*>(c + (size_t)8 * N) = make_double2(acc[i][j][2], acc[i][j][3]);
        }
}
