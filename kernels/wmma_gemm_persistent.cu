/*
 * wmma_gemm (persistent blocks: one block per SM walks the tiles, the cp.async pipeline never
 * drains between tiles), rung 7 of the fast-GEMM ladder (notebook 06), issue #35 item 2.
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs wmma_gemm_fragdb.cu: the schedule, not the inner loop (same 128 x 256 x 64
 * tile, 8 warps of 64 x 64, rows padded by 8 halves, fragments double-buffered across the
 * barrier, copies from one base address per thread). The same step on the mma.sync ladder
 * (kernels/mma_gemm_persistent.cu, the same tile and pipeline; kernels/RESULTS-mma.md, H200,
 * 2026-11-28, paired with cuBLAS): 67.0% / 60.4% of cuBLAS at 4096^3 / 8192^3 against 67.5% /
 * 57.4% for its one-block-per-tile rung in the same run, and with STAGES=4 70.0% / 62.1%, the
 * best of that ladder (a second H200: 64.7% / 59.1%, 63.8% / 56.6%, 65.1% / 59.3%). Rung 6
 * measured 52-56% at 4096^3 (kernels/RESULTS-wmma.md); its profile (kernels/coach-h100.json) has
 * the tensor pipe 56% busy with `wait` the top stall at 2 warps per scheduler (240 registers):
 * every cycle in which the pipe has nothing to do is lost, there is no other warp to fill it.
 * One such span: a block starts with an empty pipeline (STAGES-1 k-tiles of load latency with
 * no mma) and ends with its epilogue (a barrier, then stores, no mma), and a block of the next
 * wave starts only when one ends.
 * 1. Persistent blocks: the launcher starts one block per SM (never more than there are tiles);
 *    block b computes tiles b, b + blocks, b + 2 * blocks, ... of the GROUP_M-swizzled order, so
 *    the blocks that run together still share A rows and B columns in L2. Any grid of at least
 *    one block is correct, 1-D or 2-D (the block id is y * gridDim.x + x, the stride
 *    gridDim.x * gridDim.y): launched one block per tile, as the other rungs, each block
 *    computes one tile.
 * 2. One pipeline over the whole walk: the copies run STAGES-1 k-tiles ahead of the mma across
 *    tile boundaries, so the next tile's first k-tiles (and its first fragments) are loaded
 *    while the last k-steps and the epilogue of this one run.
 * 3. Epilogue straight from the accumulators: wmma::store_matrix_sync to C (each lane writes two
 *    adjacent floats per row, so every 32-byte sector is written whole). Rung 5's staged
 *    epilogue needs the pipeline's buffers, which now hold the next tile's copies, and a barrier
 *    that would stall the warps still in the last k-step; a separate staging area would not fit
 *    beside 4 stages (208896 + 34816 B > 227 KB).
 * 4. Copy offsets in 32 bits (element offsets from A and B; the walk's state, tile, k-tile and
 *    buffer of the loader, costs registers that rung 6's 240 leave few of).
 * Not carried over: mma_gemm_persistent's serpentine mma order (no gain there: 66.8% / 60.8%
 * without it, 67.0% / 60.4% with it, same run), and its XOR-swizzled layout, which
 * wmma::load_matrix_sync cannot read (one row stride per fragment).
 * Measured: 57.5% / 49.8% of cuBLAS fp16 at 4096^3 / 8192^3, one H200, 2026-11-28 (kernels/RESULTS-wmma.md, "Rung 7"). Aim: >= 65% of cuBLAS fp16
 * at 4096^3 (issue #35).
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128], BLOCK_N [256], BLOCK_K [64] (a multiple
 *   of 32), WARP_M [4], WARP_N [4], SMEM_PAD [8] (halves, a multiple of 8), STAGES [3] (>= 2),
 *   GROUP_M [16] (block rows per swizzle group),
 *   THREADS = 32 * (BLOCK_M / (16 * WARP_M)) * (BLOCK_N / (16 * WARP_N)) [256], a multiple of
 *   BLOCK_K / 8 and of BLOCK_N / 8.
 * Registers (ptxas via NVRTC 13.0): 236 on sm_90 and sm_80, no spill (STAGES=4 the same).
 * Launch: block (THREADS, 1, 1), grid (min(SMS, (M / BLOCK_M) * (N / BLOCK_N)), 1, 1), SMS the
 *         number of SMs, for the persistent walk; grid (N / BLOCK_N, M / BLOCK_M), as every rung
 *         of the ladder, is correct too (one tile per block: how exercise wmma-gemm-fast launches it).
 *         Dynamic shared memory:
 *           STAGES * (BLOCK_M * (BLOCK_K + SMEM_PAD) + BLOCK_K * (BLOCK_N + SMEM_PAD)) * 2 bytes
 *           [156672: fits an A100's 163 KB and an H100's 227 KB; STAGES=4 needs 208896, H100/H200
 *           only].
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K; M * K, K * N below 2^31
 *         (32-bit copy offsets).
 * Requires: sm_80 (a block takes 156672 bytes of shared memory)
 * Check:  python -m grader.bench.wmma --only persistent
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "wmma_gemm_persistent needs sm_80 or newer (156672 bytes of shared memory per block)"
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
#define LDA (BLOCK_K + SMEM_PAD)
#define LDB (BLOCK_N + SMEM_PAD)
#define A_STAGE (BLOCK_M * LDA)  // halves per buffer of A
#define B_STAGE (BLOCK_K * LDB)
#define WARPS_M (BLOCK_M / (16 * WARP_M))
#define WARPS_N (BLOCK_N / (16 * WARP_N))
#define CPR_A (BLOCK_K / 8)  // 16-byte chunks per row of the A tile
#define CPR_B (BLOCK_N / 8)
#ifndef THREADS
#define THREADS (32 * WARPS_M * WARPS_N)
#endif
static_assert(BLOCK_M % (16 * WARP_M) == 0 && BLOCK_N % (16 * WARP_N) == 0, "warp tiles fill the block");
static_assert(THREADS == 32 * WARPS_M * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 32 == 0 && SMEM_PAD % 8 == 0 && STAGES >= 2, "an even number of 16-wide steps per tile");
static_assert(THREADS % CPR_A == 0 && THREADS % CPR_B == 0 && BLOCK_M % (THREADS / CPR_A) == 0 &&
              BLOCK_K % (THREADS / CPR_B) == 0, "every thread copies whole passes of rows");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* As = reinterpret_cast<half*>(smem_raw);  // STAGES buffers of BLOCK_M x LDA
    half* Bs = As + STAGES * A_STAGE;               // STAGES buffers of BLOCK_K x LDB

    const int warp = threadIdx.x / 32;
    const int warp_row = (warp / WARPS_N) * (16 * WARP_M);
    const int warp_col = (warp % WARPS_N) * (16 * WARP_N);
    const int tiles_m = M / BLOCK_M, tiles_n = N / BLOCK_N, tiles = tiles_m * tiles_n;
    const int KT = K / BLOCK_K;
    const int blocks = gridDim.x * gridDim.y;                      // the walk's stride
    const int first = blockIdx.y * gridDim.x + blockIdx.x;         // this block's first tile
    if (first >= tiles) return;  // more blocks than tiles: nothing to do

    // Tile index -> its top-left element: GROUP_M tile rows, then one tile column right.
    auto origin = [&](int tile, int& row0, int& col0) {
        const int group = tile / (GROUP_M * tiles_n);
        const int first_m = group * GROUP_M;
        const int group_rows = min(tiles_m - first_m, GROUP_M);
        const int in_group = tile - group * (GROUP_M * tiles_n);
        row0 = (first_m + in_group % group_rows) * BLOCK_M;
        col0 = (in_group / group_rows) * BLOCK_N;
    };

    // The loader: walk k-tile w (k-tile w % KT of this block's (w / KT)-th tile) goes into
    // buffer w % STAGES, one commit group per walk k-tile, STAGES-1 k-tiles ahead of the mma.
    // Thread t moves chunk t % CPR of rows t / CPR + i * (THREADS / CPR) of each tile.
    constexpr int ROWS_A = THREADS / CPR_A, ROWS_B = THREADS / CPR_B;
    const int t = threadIdx.x;
    half* const a_dst = As + (t / CPR_A) * LDA + (t % CPR_A) * 8;
    half* const b_dst = Bs + (t / CPR_B) * LDB + (t % CPR_B) * 8;
    int ld_tile = first, ld_kt = 0, ld_stage = 0;
    int a_at, b_at;  // element offsets of this thread's first chunk of the next k-tile to load
    auto aim = [&](int tile) {
        int r0, c0;
        origin(tile, r0, c0);
        a_at = (r0 + t / CPR_A) * K + (t % CPR_A) * 8;
        b_at = (t / CPR_B) * N + c0 + (t % CPR_B) * 8;
    };
    auto load_next = [&]() {
        if (ld_tile < tiles) {
            half* sa = a_dst + ld_stage * A_STAGE;
            half* sb = b_dst + ld_stage * B_STAGE;
            #pragma unroll
            for (int i = 0; i < BLOCK_M / ROWS_A; ++i)
                __pipeline_memcpy_async(sa + i * ROWS_A * LDA, A + (a_at + i * ROWS_A * K), 16);
            #pragma unroll
            for (int i = 0; i < BLOCK_K / ROWS_B; ++i)
                __pipeline_memcpy_async(sb + i * ROWS_B * LDB, B + (b_at + i * ROWS_B * N), 16);
            a_at += BLOCK_K;
            b_at += BLOCK_K * N;
            if (++ld_kt == KT) {
                ld_kt = 0;
                ld_tile += blocks;
                if (ld_tile < tiles) aim(ld_tile);
            }
            ld_stage = ld_stage + 1 == STAGES ? 0 : ld_stage + 1;
        }
        __pipeline_commit();  // empty past the walk's end: every wait below stays uniform
    };

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[WARP_M], a2[WARP_M];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[WARP_N], b2[WARP_N];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[WARP_M][WARP_N];
    #pragma unroll
    for (int i = 0; i < WARP_M; ++i)
        #pragma unroll
        for (int j = 0; j < WARP_N; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    using FragsA = decltype(a);  // arrays of WARP_M (WARP_N) fragments
    using FragsB = decltype(b);
    // The fragments of 16-wide step kk of the k-tile in buffer `stage`.
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

    // Prologue, once per block (not once per tile): walk k-tiles 0 .. STAGES-2 in flight.
    aim(ld_tile);
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) load_next();
    __pipeline_wait_prior(STAGES - 2);  // walk k-tile 0 (my copies) ...
    __syncthreads();                    // ... and everyone's
    load_frags(a, b, 0, 0);

    int stage = 0;  // buffer of the k-tile the mma are on
    #pragma unroll 1
    for (int tile = first; tile < tiles; tile += blocks) {
        const bool more = tile + blocks < tiles;
        #pragma unroll 1
        for (int kt = 0; kt < KT; ++kt) {
            // Walk k-tile w+STAGES-1 goes into the buffer of walk k-tile w-1: every warp loaded
            // its last fragments from there before the barrier that ended k-tile w-1.
            load_next();
            const int next_stage = stage + 1 == STAGES ? 0 : stage + 1;
            #pragma unroll
            for (int kk = 0; kk < BLOCK_K; kk += 32) {
                load_frags(a2, b2, stage, kk + 16);
                mma_all(a, b);
                if (kk + 32 < BLOCK_K) {
                    load_frags(a, b, stage, kk + 32);
                } else {
                    // Groups committed: STAGES-1 + w+1, so STAGES-2 pending means walk k-tile
                    // w+1 (this tile's next or the next tile's first) has landed.
                    __pipeline_wait_prior(STAGES - 2);
                    __syncthreads();
                    if (kt + 1 < KT || more) load_frags(a, b, next_stage, 0);
                }
                mma_all(a2, b2);
            }
            stage = next_stage;
        }

        // Epilogue from the accumulators while the next tile's first k-tiles are in flight,
        // then the accumulators restart from zero.
        int row0, col0;
        origin(tile, row0, col0);
        float* c_warp = C + ((size_t)(row0 + warp_row) * N + col0 + warp_col);
        #pragma unroll
        for (int i = 0; i < WARP_M; ++i)
            #pragma unroll
            for (int j = 0; j < WARP_N; ++j) {
                wmma::store_matrix_sync(c_warp + ((size_t)(16 * i) * N + 16 * j), acc[i][j], N, wmma::mem_row_major);
                wmma::fill_fragment(acc[i][j], 0.0f);
            }
    }
    __pipeline_wait_prior(0);  // no copy outlives the block (the groups past the walk are empty)
}
