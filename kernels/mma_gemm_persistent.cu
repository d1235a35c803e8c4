/*
 * mma_gemm (mma.sync + ldmatrix, persistent: one block per SM walks the tiles, the cp.async
 * pipeline never drains between tiles), a contender for rung 3 of the beyond-WMMA ladder
 * (notebook 10), issue #35 item 2.
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs mma_gemm_tuned.cu: the schedule, not the inner loop (same 128 x 256 x 64
 * tile, 8 warps of 64 x 64, swizzled shared memory, fragments double-buffered in registers).
 * The profile (kernels/RESULTS-mma.md, issue #21) shows 2 warps per scheduler (254 registers)
 * and the tensor pipe 75-80% busy: every cycle the pipe waits is lost, there are no other warps
 * to fill it. In the tuned rung each block starts with an empty pipeline (STAGES-1 k-tiles of
 * load latency with no mma) and ends with its epilogue (stores, no mma), and a block of the
 * next wave starts only when one ends.
 * 1. Persistent blocks: the grid is one block per SM (the launcher caps it at the tile count);
 *    block b computes tiles b, b + gridDim.x, ... of the GROUP_M-swizzled order, so the blocks
 *    running together still share A rows and B columns in L2.
 * 2. One pipeline over the whole walk: the copies run STAGES-1 k-tiles ahead of the mma across
 *    tile boundaries, so the next tile's first k-tiles (and its first fragments) are loaded
 *    while the last k-steps and the epilogue of the current tile run: the pipe never refills.
 * 3. The MI x NI mma of a k-step are issued in a serpentine order (row i left to right, row
 *    i + 1 right to left, as CUTLASS's warp-level mma visits them): consecutive mma.sync share
 *    an A fragment, and at each row change a B fragment, the operand that ptxas can then read
 *    from the operand reuse cache instead of the register file (-DSERPENTINE=0: the tuned
 *    rung's order, to measure what this step alone buys).
 * 4. Indices in 32 bits (offsets in elements, one 64-bit add per copy): the walk's state (tile,
 *    k-tile, stage of the loader) costs registers that the 254 of the tuned rung do not have.
 * Measured (kernels/RESULTS-mma.md, .ci/gpu-mma-sweep, two H200s 2026-11-28): with STAGES=4 the best
 * contender, 70.0% / 62.1% and 65.1% / 59.3% of cuBLAS at 4096^3 / 8192^3; the tuned rung 67.5% / 57.4%.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128], BLOCK_N [256], BLOCK_K [64] (a multiple
 *   of 32), WARP_TILE_M [64], WARP_TILE_N [64] (multiples of 16), STAGES [3] (>= 2),
 *   GROUP_M [8], SERPENTINE [1],
 *   THREADS = 32 * (BLOCK_M / WARP_TILE_M) * (BLOCK_N / WARP_TILE_N) [256].
 * Registers (ptxas via NVRTC 13.0 and 12.4): 244 on sm_90, 255 on sm_80, no spill.
 * Launch: block (THREADS, 1, 1), grid (min(number of SMs, (M / BLOCK_M) * (N / BLOCK_N)), 1, 1)
 *         (any grid of at least one block is correct: each block walks every gridDim.x-th tile).
 *         Dynamic shared memory: STAGES * (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 2 bytes [147456].
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K; M * K, K * N and M * N
 *         below 2^31 (32-bit offsets).
 * Requires: sm_80 (mma.sync m16n8k16, cp.async).
 * Check:  python -m grader.bench.mma --only persistent
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "mma_gemm_persistent needs sm_80 or newer (mma.sync m16n8k16 with fp32 accumulators)"
#endif
#include <cuda_fp16.h>

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 256
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
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef SERPENTINE
#define SERPENTINE 1
#endif
#define CPR_A (BLOCK_K / 8)  // 16-byte chunks per row of the A tile
#define CPR_B (BLOCK_N / 8)
#define A_STAGE (BLOCK_M * BLOCK_K)  // halves per buffer of A
#define B_STAGE (BLOCK_K * BLOCK_N)
#define WARPS_N (BLOCK_N / WARP_TILE_N)
#define MI (WARP_TILE_M / 16)  // 16-row A fragments per warp
#define NI (WARP_TILE_N / 8)   // 8-column B fragments per warp
#define KSTEPS (BLOCK_K / 16)
#ifndef THREADS
#define THREADS (32 * (BLOCK_M / WARP_TILE_M) * WARPS_N)
#endif
static_assert(BLOCK_M % WARP_TILE_M == 0 && BLOCK_N % WARP_TILE_N == 0, "warp tiles fill the block");
static_assert(WARP_TILE_M % 16 == 0 && WARP_TILE_N % 16 == 0, "whole ldmatrix.x4 loads");
static_assert(THREADS == 32 * (BLOCK_M / WARP_TILE_M) * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 32 == 0 && STAGES >= 2, "an even number of 16-wide steps per tile");
static_assert(THREADS % CPR_A == 0 && THREADS % CPR_B == 0, "whole rows per copy pass");
static_assert((THREADS / CPR_A) % 8 == 0 && (THREADS / CPR_B) % 8 == 0 && BLOCK_M % (THREADS / CPR_A) == 0 &&
              BLOCK_K % (THREADS / CPR_B) == 0, "each copy pass covers whole 8-row swizzle periods");

// Where chunk c (16 bytes) of row r of a tile with CPR chunks per row lives, in chunks from
// the tile's start. 8 consecutive rows at one logical chunk land on 8 different bank groups.
template <int CPR>
__device__ __forceinline__ int swz(int r, int c)
{
    if (CPR >= 8) return r * CPR + (c ^ (r & 7));
    return r * CPR + (c ^ ((r >> 1) & 3));  // 64-byte rows: two rows share a 128-byte line
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING) : "memory");
}
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

extern "C" __global__ void __launch_bounds__(THREADS, 1)
mma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    const unsigned as0 = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));  // STAGES A tiles
    const unsigned bs0 = as0 + STAGES * A_STAGE * 2;                                 // then STAGES B tiles

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = (warp / WARPS_N) * WARP_TILE_M;
    const int warp_col = (warp % WARPS_N) * WARP_TILE_N;
    const int tiles_m = M / BLOCK_M, tiles_n = N / BLOCK_N, tiles = tiles_m * tiles_n;
    const int KT = K / BLOCK_K;
    if (static_cast<int>(blockIdx.x) >= tiles) return;  // more blocks than tiles: nothing to do

    // Tile index -> its top-left element: GROUP_M tile rows, then one tile column right.
    auto origin = [&](int tile, int& row0, int& col0) {
        const int group = tile / (GROUP_M * tiles_n);
        const int first_m = group * GROUP_M;
        const int group_rows = min(tiles_m - first_m, GROUP_M);
        const int in_group = tile - group * (GROUP_M * tiles_n);
        row0 = (first_m + in_group % group_rows) * BLOCK_M;
        col0 = (in_group / group_rows) * BLOCK_N;
    };

    // The loader: walk k-tile w (k-tile w % KT of this block's tile w / KT) goes into buffer
    // w % STAGES, one commit group per k-tile, STAGES-1 k-tiles ahead of the mma.
    // Thread t moves chunk t % CPR of rows t / CPR + i * (THREADS / CPR).
    constexpr int ROWS_A = THREADS / CPR_A, ROWS_B = THREADS / CPR_B;
    const int t = threadIdx.x;
    const unsigned a_dst = as0 + swz<CPR_A>(t / CPR_A, t % CPR_A) * 16;
    const unsigned b_dst = bs0 + swz<CPR_B>(t / CPR_B, t % CPR_B) * 16;
    int ld_tile = blockIdx.x, ld_kt = 0, ld_stage = 0;
    int a_at, b_at;  // element offsets of this thread's first chunk of the next k-tile to load
    auto aim = [&](int tile) {
        int r0, c0;
        origin(tile, r0, c0);
        a_at = (r0 + t / CPR_A) * K + (t % CPR_A) * 8;
        b_at = (t / CPR_B) * N + c0 + (t % CPR_B) * 8;
    };
    auto load_next = [&]() {
        if (ld_tile < tiles) {
            const unsigned sa = a_dst + ld_stage * (A_STAGE * 2), sb = b_dst + ld_stage * (B_STAGE * 2);
            #pragma unroll
            for (int i = 0; i < BLOCK_M / ROWS_A; ++i)
                cp_async16(sa + i * (ROWS_A * BLOCK_K * 2), A + (a_at + i * ROWS_A * K));
            #pragma unroll
            for (int i = 0; i < BLOCK_K / ROWS_B; ++i)
                cp_async16(sb + i * (ROWS_B * BLOCK_N * 2), B + (b_at + i * ROWS_B * N));
            a_at += BLOCK_K;
            b_at += BLOCK_K * N;
            if (++ld_kt == KT) {
                ld_kt = 0;
                ld_tile += gridDim.x;
                if (ld_tile < tiles) aim(ld_tile);
            }
            ld_stage = ld_stage + 1 == STAGES ? 0 : ld_stage + 1;
        }
        cp_async_commit();  // empty past the walk's end: every wait below stays uniform
    };

    float acc[MI][NI][4];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;
    unsigned fa[2][MI][4], fb[2][NI][2];  // two sets of fragments: step kk and step kk + 16

    // The fragments of 16-wide step kk of the tile in buffer `stage` into set `buf`.
    auto load_frags = [&](int buf, int stage, int kk) {
        const unsigned as = as0 + stage * A_STAGE * 2;
        const unsigned bs = bs0 + stage * B_STAGE * 2;
        // A: lanes 0-15 give rows 0-15 of the fragment at chunk kk/8, lanes 16-31 the next chunk
        #pragma unroll
        for (int i = 0; i < MI; ++i)
            ldsm_x4(fa[buf][i], as + swz<CPR_A>(warp_row + 16 * i + (lane & 15), kk / 8 + (lane >> 4)) * 16);
        // B: lanes 0-15 give rows k = kk..kk+15 at column n, lanes 16-31 at column n + 8
        #pragma unroll
        for (int j = 0; j < NI; j += 2)
            ldsm_x4_trans(fb[buf][j][0], fb[buf][j][1], fb[buf][j + 1][0], fb[buf][j + 1][1],
                          bs + swz<CPR_B>(kk + (lane & 15), (warp_col + 8 * j) / 8 + (lane >> 4)) * 16);
    };
    // acc += the products of fragment set `buf`, in serpentine order (see the header, 3.).
    auto mma_all = [&](int buf) {
        #pragma unroll
        for (int i = 0; i < MI; ++i)
            #pragma unroll
            for (int jj = 0; jj < NI; ++jj) {
                const int j = (SERPENTINE && (i & 1)) ? NI - 1 - jj : jj;
                mma16816(acc[i][j], fa[buf][i], fb[buf][j]);
            }
    };

    // Prologue, once per block (not once per tile): walk k-tiles 0 .. STAGES-2 in flight.
    aim(ld_tile);
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) load_next();
    cp_async_wait<STAGES - 2>();  // walk k-tile 0 (mine) ...
    __syncthreads();              // ... and everyone's
    load_frags(0, 0, 0);

    int stage = 0;  // buffer of the k-tile the mma are on
    const int g = lane >> 2, tq = lane & 3;
    #pragma unroll 1
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const bool more = tile + static_cast<int>(gridDim.x) < tiles;
        #pragma unroll 1
        for (int kt = 0; kt < KT; ++kt) {
            // The buffer it fills held walk k-tile w-1: every warp loaded its last fragments
            // from there before the barrier that ended the previous k-tile.
            load_next();
            const int next_stage = stage + 1 == STAGES ? 0 : stage + 1;
            #pragma unroll
            for (int s = 0; s < KSTEPS; ++s) {
                if (s + 1 < KSTEPS) {
                    load_frags((s + 1) & 1, stage, (s + 1) * 16);
                } else {
                    cp_async_wait<STAGES - 2>();  // the next walk k-tile landed (this tile's or the next one's)
                    __syncthreads();
                    if (kt + 1 < KT || more) load_frags(0, next_stage, 0);
                }
                mma_all(s & 1);
            }
            stage = next_stage;
        }

        // Epilogue from registers while the next tile's first k-tiles are in flight: the lane
        // holds rows g and g+8, columns 2t and 2t+1 of each 16x8 accumulator tile (PTX ISA
        // 9.7.14.5.8); one float2 store per row, then the accumulators restart from zero.
        int row0, col0;
        origin(tile, row0, col0);
        float* c0 = C + ((row0 + warp_row + g) * N + col0 + warp_col + 2 * tq);
        #pragma unroll
        for (int i = 0; i < MI; ++i)
            #pragma unroll
            for (int j = 0; j < NI; ++j) {
                float* c = c0 + (16 * i * N + 8 * j);
                *reinterpret_cast<float2*>(c) = make_float2(acc[i][j][0], acc[i][j][1]);
                *reinterpret_cast<float2*>(c + 8 * N) = make_float2(acc[i][j][2], acc[i][j][3]);
                acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
            }
    }
}
