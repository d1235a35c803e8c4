/*
 * wmma_gemm (lean copies, fragments double-buffered across the barrier), rung 6 of the
 * fast-GEMM ladder (notebook 06).
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs wmma_gemm_swizzle.cu: the main loop and the tile shape (block order and
 * epilogue as there).
 * 1. Lean copy addresses. Every cp.async of a thread is addressed from one per-thread base per
 *    matrix: chunk t + i*THREADS of a tile is row t/CPR + i*(THREADS/CPR), column t%CPR
 *    (CPR = 16-byte chunks per row), instead of a division and a 64-bit multiply per chunk.
 *    Same chunks, same shared layout. ptxas (sm_90, on rung 5's 128 x 128 tile): 89 instructions
 *    besides HMMA, ldmatrix and cp.async per warp and k-tile instead of 190.
 * 2. Fragments double-buffered in registers, across the 16-wide steps AND across the k-tile
 *    barrier (the multistage order CUTLASS uses): the fragments of step kk+16 are loaded before
 *    the mma_sync of step kk; the wait and the barrier move to just before the mma_sync of the
 *    last step of a tile, the fragments of step 0 of the next tile are loaded before those
 *    mma_sync run, and the copies of tile kt+STAGES go into the buffer of tile kt, which every
 *    warp has read into registers by then. After each barrier a warp has HMMAs to issue at
 *    once, and ptxas spreads the cp.async between them (in wmma_gemm_swizzle.cu a warp first
 *    runs its copies' address arithmetic, then waits on ldmatrix with no HMMA to issue: seen
 *    in the SASS; that this idles the tensor cores is a hypothesis, no profile was taken).
 * 3. Block tile 128 x 256: 8 warps of 64 x 64, 256 threads, one block per SM (156672 bytes of
 *    shared memory), a quarter less L2 -> SM traffic per flop than 128 x 128.
 * Measured (H100, kernels/RESULTS-wmma.md, session 3): as this file, 367.8 / 354.2 TFLOP/s at
 * 4096^3 / 8192^3 = 52.3% / 48.5% of cuBLAS fp16 (rung 5 in the same run: 313.1 / 317.9 =
 * 44.7% / 44.7%); STAGES=4: 353.9 / 356.9 = 56.5% / 50.0%. Earlier, as rung 5's variant
 * swizzle[FRAG_DB=1,LEAN_ADDR=1,BLOCK_N=256] on another H100: 358.6 / 342.7. cuBLAS itself
 * ranged 582-747 TFLOP/s between rows of these runs, so compare TFLOP/s between rungs.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128], BLOCK_N [256], BLOCK_K [64] (a multiple
 *   of 32), WARP_M [4], WARP_N [4], SMEM_PAD [8] (halves, a multiple of 8), STAGES [3] (>= 2),
 *   GROUP_M [16] (block rows per swizzle group),
 *   THREADS = 32 * (BLOCK_M / (16 * WARP_M)) * (BLOCK_N / (16 * WARP_N)) [256], a multiple of
 *   BLOCK_K / 8 and of BLOCK_N / 8.
 * Registers (ptxas via NVRTC 13.0, sm_90 and sm_80): 240, no spill.
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M), as every rung of the ladder
 *         (the kernel remaps the block index itself).
 *         Dynamic shared memory:
 *           STAGES * (BLOCK_M * (BLOCK_K + SMEM_PAD) + BLOCK_K * (BLOCK_N + SMEM_PAD)) * 2 bytes
 *           [156672: fits an A100's 163 KB and an H100's 227 KB; STAGES=4 needs 208896, H100/H200
 *           only]; it must also hold the epilogue strips, THREADS/32 * 16 * (16*WARP_N + 4) * 4
 *           bytes (a static_assert checks).
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Requires: sm_80 (a block takes 156672 bytes of shared memory; sm_75 allows 64 KB, and there
 *           ptxas spills this main loop: 255 registers, 36 bytes spilled)
 * Check:  python -m grader.bench_wmma --only fragdb
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "wmma_gemm_fragdb needs sm_80 or newer (156672 bytes of shared memory per block)"
#endif
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
using namespace nvcuda;

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 256
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
#ifndef GROUP_M
#define GROUP_M 16
#endif
#define LDS_C (16 * WARP_N + 4)  // row length (floats) of a warp's epilogue strip
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
static_assert(THREADS / 32 * 16 * LDS_C * 4 <= STAGES * (A_STAGE + B_STAGE) * 2,
              "the epilogue strips fit in the pipeline buffers");

extern "C" __global__ void __launch_bounds__(THREADS)
wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* As = reinterpret_cast<half*>(smem_raw);  // STAGES buffers of BLOCK_M x LDA
    half* Bs = As + STAGES * A_STAGE;               // STAGES buffers of BLOCK_K x LDB

    const int warp = threadIdx.x / 32;
    const int warp_row = (warp / WARPS_N) * (16 * WARP_M);
    const int warp_col = (warp % WARPS_N) * (16 * WARP_N);
    // Swizzle: linear block id -> (block row bm, block column bn), GROUP_M rows at a time.
    const int tiles_m = gridDim.y, tiles_n = gridDim.x;
    const int bid = blockIdx.y * tiles_n + blockIdx.x;
    const int group = bid / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = bid % (GROUP_M * tiles_n);
    const int bm = first_m + in_group % group_rows;
    const int bn = in_group / group_rows;
    const int row0 = bm * BLOCK_M;
    const int col0 = bn * BLOCK_N;
    const half* A_blk = A + (size_t)row0 * K;
    const half* B_blk = B + col0;
    const int KT = K / BLOCK_K;

    // Start the copies of tile kt into buffer `stage` (16 bytes per cp.async).
    auto load_tile = [&](int stage, int kt) {
        // One base address per matrix: with THREADS a multiple of the chunks per row (CPR),
        // chunk t + i*THREADS is row t/CPR + i*(THREADS/CPR), column t%CPR.
        constexpr int CPR_A = BLOCK_K / 8, ROWS_A = THREADS / CPR_A;
        constexpr int CPR_B = BLOCK_N / 8, ROWS_B = THREADS / CPR_B;
        static_assert(THREADS % CPR_A == 0 && THREADS % CPR_B == 0, "whole rows per pass");
        const int t = threadIdx.x;
        half* as = As + stage * A_STAGE + (t / CPR_A) * LDA + (t % CPR_A) * 8;
        half* bs = Bs + stage * B_STAGE + (t / CPR_B) * LDB + (t % CPR_B) * 8;
        const half* ga = A_blk + (size_t)(t / CPR_A) * K + kt * BLOCK_K + (t % CPR_A) * 8;
        const half* gb = B_blk + (size_t)(kt * BLOCK_K + t / CPR_B) * N + (t % CPR_B) * 8;
        #pragma unroll
        for (int i = 0; i < BLOCK_M / ROWS_A; ++i, ga += (size_t)ROWS_A * K)
            __pipeline_memcpy_async(as + i * ROWS_A * LDA, ga, 16);
        #pragma unroll
        for (int i = 0; i < BLOCK_K / ROWS_B; ++i, gb += (size_t)ROWS_B * N)
            __pipeline_memcpy_async(bs + i * ROWS_B * LDB, gb, 16);
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

    // Fragments double-buffered in registers: the fragments of step kk+16 are loaded before
    // the mma_sync of step kk, and those of step 0 of the NEXT tile before the mma_sync of the
    // last step of this one; so the wait and the barrier move up to just before that last
    // step, and the copies of tile kt+STAGES go into the buffer of tile kt, which every warp
    // has read completely (into registers) by then.
    using FragsA = decltype(a);  // arrays of WARP_M (WARP_N) fragments
    using FragsB = decltype(b);
    FragsA a2;
    FragsB b2;
    static_assert(BLOCK_K % 32 == 0, "an even number of 16-wide steps per tile");
    auto load_frags = [&](FragsA& fa, FragsB& fb, int stage, int kk) {
        const half* as = As + stage * A_STAGE;
        const half* bs = Bs + stage * B_STAGE;
        #pragma unroll
        for (int i = 0; i < WARP_M; ++i)
            wmma::load_matrix_sync(fa[i], as + (warp_row + 16 * i) * LDA + kk, LDA);
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::load_matrix_sync(fb[j], bs + kk * LDB + warp_col + 16 * j, LDB);
    };
    auto mma_all = [&](const FragsA& fa, const FragsB& fb) {
        #pragma unroll
        for (int i = 0; i < WARP_M; ++i)
            #pragma unroll
            for (int j = 0; j < WARP_N; ++j)
                wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    };
    // Commit groups: STAGES-1 in the prologue, one here (tile STAGES-1, into the buffer no
    // tile used yet), one per kt (tile kt+STAGES): group g always holds tile g, so at the
    // wait of iteration kt (STAGES+kt groups committed) STAGES-2 pending means tile kt+1 landed.
    __pipeline_wait_prior(STAGES - 2);  // tile 0
    __syncthreads();
    if (STAGES - 1 < KT) load_tile(STAGES - 1, STAGES - 1);
    __pipeline_commit();
    load_frags(a, b, 0, 0);
    int rs = 0;  // buffer of tile kt
    for (int kt = 0; kt < KT; ++kt) {
        const int rs_next = rs + 1 == STAGES ? 0 : rs + 1;
        #pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 32) {
            load_frags(a2, b2, rs, kk + 16);
            mma_all(a, b);
            if (kk + 32 < BLOCK_K) {
                load_frags(a, b, rs, kk + 32);
            } else {
                __pipeline_wait_prior(STAGES - 2);  // my copies of tile kt+1 have landed ...
                __syncthreads();                    // ... and everyone's; everyone has read tile kt
                if (kt + STAGES < KT) load_tile(rs, kt + STAGES);
                __pipeline_commit();
                // step 0 of tile kt+1 (after the last tile: an unused read of an idle buffer)
                load_frags(a, b, rs_next, 0);
            }
            mma_all(a2, b2);
        }
        rs = rs_next;
    }
    __pipeline_wait_prior(0);
    __syncthreads();  // every warp is done with the pipeline buffers: reuse them for C

    float* strip = reinterpret_cast<float*>(smem_raw) + warp * 16 * LDS_C;
    const int lane = threadIdx.x % 32;
    #pragma unroll
    for (int i = 0; i < WARP_M; ++i) {
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::store_matrix_sync(strip + 16 * j, acc[i][j], LDS_C, wmma::mem_row_major);
        __syncwarp();
        float* c_strip = C + (size_t)(row0 + warp_row + 16 * i) * N + col0 + warp_col;
        #pragma unroll
        for (int e = lane; e < 16 * WARP_N * 16 / 4; e += 32) {  // float4 chunks of the strip
            int r = e / (WARP_N * 4), c4 = (e % (WARP_N * 4)) * 4;
            *reinterpret_cast<float4*>(c_strip + (size_t)r * N + c4) =
                *reinterpret_cast<const float4*>(strip + r * LDS_C + c4);
        }
        __syncwarp();  // the strip is rewritten for the next i
    }
}
