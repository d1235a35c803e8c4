/*
 * dmma_gemm (fast): C = A * B in fp64 on the tensor cores (WMMA m8n8k4, "DMMA").
 * A (M x K), B (K x N) and C (M x N) are double; all row-major and contiguous.
 * Requires: sm_80
 *
 * What changed vs dmma_gemm_naive.cu: everything the fp16 ladder of notebook 06 taught,
 * applied to doubles. A block stages BLOCK_M x BLOCK_K of A and BLOCK_K x BLOCK_N of B in
 * shared memory with 16-byte cp.async copies (2 doubles each) into STAGES buffers
 * (cuda_pipeline.h primitives, as in wmma_gemm_async.cu); shared rows are padded by
 * SMEM_PAD doubles (4 doubles = 32 bytes shifts each row by 8 banks, so the four rows of an
 * 8x4 / 4x8 fragment load that share a half-warp land in different banks); each warp owns
 * WARP_M x WARP_N accumulator fragments of 8x8 and reuses every A and B fragment across
 * them, which also gives the tensor cores WARP_M * WARP_N independent accumulation chains
 * (on an H200 they did not raise the m8n8k4 ceiling: dmma_gemm_peak_niter reached 30.8-32.5
 * TFLOP/s with 1, 4 or 8 independent accumulators, kernels/RESULTS-wmma.md).
 * FRAG_LDS=1 fills the A and B fragments (one double per lane) with plain shared-memory
 * loads in the PTX mma.m8n8k4.f64 layout, A(g, t) and B(t, g) with g = lane/4, t = lane%4:
 * NVRTC 13 compiles the f64 wmma::load_matrix_sync to GENERIC loads (LD, PTX without
 * .shared) even from shared memory, while the f16 ones become ldmatrix. This indexes x[0]
 * by position, which WMMA calls unspecified: it is the PTX ISA's mma.m8n8k4 .f64 fragment
 * layout and the fp64 maps probed on an H200 (kernels/fragment_maps_sm90.json), not
 * guaranteed elsewhere; FRAG_LDS=0 is the portable wmma::load_matrix_sync
 * path (measured 2-4% slower on an H200).
 * Ceiling: WMMA exposes only the m8n8k4 DMMA, which on Hopper runs at about half of the
 * fp64 tensor-core peak cuBLAS reaches with newer shapes (kernels/RESULTS-wmma.md,
 * dmma_gemm_peak_niter), so ~50% of cuBLAS fp64 is close to all WMMA can give here.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [64], BLOCK_N [64], BLOCK_K [16],
 *   WARP_M [4], WARP_N [4] (8x8 fragments per warp along M and N), SMEM_PAD [4] (doubles,
 *   even), STAGES [4] (>= 2), FRAG_LDS [1] (see below), THREADS = 32 * (BLOCK_M / (8 * WARP_M)) * (BLOCK_N / (8 * WARP_N)) [128].
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M): blockIdx.x runs along the
 *         COLUMNS of C, blockIdx.y along the rows.
 *         Dynamic shared memory:
 *           STAGES * (BLOCK_M * (BLOCK_K + SMEM_PAD) + BLOCK_K * (BLOCK_N + SMEM_PAD)) * 8 bytes [75776].
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Check:  python -m grader.bench_wmma --only dmma
 */
#include <mma.h>
#include <cuda_pipeline.h>
using namespace nvcuda;

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef BLOCK_K
#define BLOCK_K 16
#endif
#ifndef WARP_M
#define WARP_M 4
#endif
#ifndef WARP_N
#define WARP_N 4
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 4
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef FRAG_LDS
#define FRAG_LDS 1
#endif
#define LDA (BLOCK_K + SMEM_PAD)
#define LDB (BLOCK_N + SMEM_PAD)
#define A_STAGE (BLOCK_M * LDA)  // doubles per buffer of A
#define B_STAGE (BLOCK_K * LDB)
#define WARPS_M (BLOCK_M / (8 * WARP_M))
#define WARPS_N (BLOCK_N / (8 * WARP_N))
#ifndef THREADS
#define THREADS (32 * WARPS_M * WARPS_N)
#endif
static_assert(BLOCK_M % (8 * WARP_M) == 0 && BLOCK_N % (8 * WARP_N) == 0, "warp tiles fill the block");
static_assert(THREADS == 32 * WARPS_M * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 4 == 0 && SMEM_PAD % 2 == 0 && STAGES >= 2, "shapes");
static_assert((BLOCK_M * BLOCK_K / 2) % THREADS == 0 && (BLOCK_K * BLOCK_N / 2) % THREADS == 0,
              "every thread copies the same number of 16-byte chunks");

extern "C" __global__ void __launch_bounds__(THREADS)
dmma_gemm(const double* A, const double* B, double* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    double* As = reinterpret_cast<double*>(smem_raw);  // STAGES buffers of BLOCK_M x LDA
    double* Bs = As + STAGES * A_STAGE;                 // STAGES buffers of BLOCK_K x LDB

    const int warp = threadIdx.x / 32;
    const int lane_g = (threadIdx.x % 32) / 4, lane_t = threadIdx.x % 4;  // used by FRAG_LDS
    const int warp_row = (warp / WARPS_N) * (8 * WARP_M);
    const int warp_col = (warp % WARPS_N) * (8 * WARP_N);
    const int row0 = blockIdx.y * BLOCK_M;
    const int col0 = blockIdx.x * BLOCK_N;
    const double* A_blk = A + (size_t)row0 * K;
    const double* B_blk = B + col0;
    const int KT = K / BLOCK_K;

    auto load_tile = [&](int stage, int kt) {
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

    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a[WARP_M];
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> b[WARP_N];
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc[WARP_M][WARP_N];
    #pragma unroll
    for (int i = 0; i < WARP_M; ++i)
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::fill_fragment(acc[i][j], 0.0);

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
        for (int kk = 0; kk < BLOCK_K; kk += 4) {
#if FRAG_LDS
            // One double per lane: A(g, t) and B(t, g), the PTX mma.m8n8k4.f64 layout.
            #pragma unroll
            for (int i = 0; i < WARP_M; ++i)
                a[i].x[0] = as[(warp_row + 8 * i + lane_g) * LDA + kk + lane_t];
            #pragma unroll
            for (int j = 0; j < WARP_N; ++j)
                b[j].x[0] = bs[(kk + lane_t) * LDB + warp_col + 8 * j + lane_g];
#else
            #pragma unroll
            for (int i = 0; i < WARP_M; ++i)
                wmma::load_matrix_sync(a[i], as + (warp_row + 8 * i) * LDA + kk, LDA);
            #pragma unroll
            for (int j = 0; j < WARP_N; ++j)
                wmma::load_matrix_sync(b[j], bs + kk * LDB + warp_col + 8 * j, LDB);
#endif
            #pragma unroll
            for (int i = 0; i < WARP_M; ++i)
                #pragma unroll
                for (int j = 0; j < WARP_N; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
    }
    __pipeline_wait_prior(0);

    #pragma unroll
    for (int i = 0; i < WARP_M; ++i)
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::store_matrix_sync(C + (size_t)(row0 + warp_row + 8 * i) * N + col0 + warp_col + 8 * j,
                                    acc[i][j], N, wmma::mem_row_major);
}
