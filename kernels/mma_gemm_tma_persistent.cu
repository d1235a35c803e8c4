/*
 * mma_gemm (mma.sync + ldmatrix fed by TMA, mbarriers, persistent), a contender for rung 3 of
 * the beyond-WMMA ladder (notebook 10), issue #35 item 2. Needs sm_90 (TMA, mbarrier
 * transaction counts): it runs only on an H100/H200, never on the CPU emulator.
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs mma_gemm_tma.cu: the schedule of mma_gemm_persistent.cu, nothing else (the
 * two steps the issue-#21 profile points to, together: kernels/RESULTS-mma.md).
 * 1. Persistent blocks: the grid is one block per SM (capped at the tile count); block b
 *    computes tiles b, b + gridDim.x, ... of the GROUP_M-swizzled order.
 * 2. One TMA pipeline over the block's whole walk: thread 0 copies walk k-tile w (k-tile w % KT
 *    of the block's tile number w / KT) into stage w % STAGES, PREFETCH walk k-tiles ahead of
 *    the mma, across tile boundaries, so the next tile's first k-tiles land while the current
 *    tile's last k-steps and its epilogue run. The mbarrier phases follow the walk, not the tile.
 * 3. Serpentine mma order (SERPENTINE [1]), as in mma_gemm_persistent.cu.
 * Measured (kernels/RESULTS-mma.md, .ci/gpu-mma-sweep, two H200s 2026-11-28): 62.4% / 55.1% and
 * 58.4% / 54.9% of cuBLAS at 4096^3 / 8192^3, the slowest contender.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128] (<= 256: one TMA box), BLOCK_N [256] (a
 *   multiple of 64), WARP_TILE_M [64], WARP_TILE_N [64] (multiples of 16; a warp's columns in
 *   one 64-wide box), STAGES [4] (>= 2), PREFETCH [STAGES - 1] (walk k-tiles in flight, 1 ..
 *   STAGES - 1), GROUP_M [8], SERPENTINE [1]. BLOCK_K is 64 (one 128-byte swizzle row of A).
 *   THREADS = 32 * (BLOCK_M / WARP_TILE_M) * (BLOCK_N / WARP_TILE_N) [256].
 * Signature: mma_gemm(const void* tmap_a, const void* tmap_b, float* C, int M, int N, int K):
 *   tmap_a, tmap_b point to CUtensorMap objects (128 bytes) in global memory, built on the host
 *   (grader.bench.mma.tensor_map, as for hgemm_wgmma): A: fp16, dims {K, M}, box {64, BLOCK_M};
 *   B: fp16, dims {N, K}, box {64, 64}; both CU_TENSOR_MAP_SWIZZLE_128B.
 * Registers (ptxas via NVRTC 13.0 and 12.4): 235 on sm_90, no spill.
 * Launch: block (THREADS, 1, 1), grid (min(number of SMs, (M / BLOCK_M) * (N / BLOCK_N)), 1, 1)
 *         (any grid of at least one block is correct: each block walks every gridDim.x-th tile).
 *         Dynamic shared memory: STAGES * (BLOCK_M + BLOCK_N) * 64 * 2 + 1024 + 16 * STAGES bytes
 *         [197696] (the tiles start on a 1024-byte boundary: the swizzle repeats every 1024 bytes).
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of 64; M * N below 2^31.
 * Requires: sm_90
 * Check:  python -m grader.bench.mma --only tma_persistent
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "mma_gemm_tma_persistent needs sm_90 or newer (TMA: cp.async.bulk.tensor, mbarrier expect_tx)"
#endif
#include <cuda_fp16.h>

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 256
#endif
#ifndef WARP_TILE_M
#define WARP_TILE_M 64
#endif
#ifndef WARP_TILE_N
#define WARP_TILE_N 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef PREFETCH
#define PREFETCH (STAGES - 1)
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef SERPENTINE
#define SERPENTINE 1
#endif
#define BLOCK_K 64
#define A_BYTES (BLOCK_M * BLOCK_K * 2)
#define B_BYTES (BLOCK_K * BLOCK_N * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define WARPS_N (BLOCK_N / WARP_TILE_N)
#define WARPS (THREADS / 32)
#define MI (WARP_TILE_M / 16)  // 16-row A fragments per warp
#define NI (WARP_TILE_N / 8)   // 8-column B fragments per warp
#define KSTEPS (BLOCK_K / 16)
#ifndef THREADS
#define THREADS (32 * (BLOCK_M / WARP_TILE_M) * WARPS_N)
#endif
static_assert(BLOCK_M % WARP_TILE_M == 0 && BLOCK_N % WARP_TILE_N == 0, "warp tiles fill the block");
static_assert(WARP_TILE_M % 16 == 0 && WARP_TILE_N % 16 == 0 && 64 % WARP_TILE_N == 0,
              "whole ldmatrix.x4 loads; a warp's columns inside one 64-wide box of B");
static_assert(BLOCK_M <= 256 && BLOCK_N % 64 == 0, "A in one TMA box, B in 64-wide boxes");
static_assert(THREADS == 32 * (BLOCK_M / WARP_TILE_M) * WARPS_N, "THREADS = 32 * warps per block");
static_assert(STAGES >= 2 && PREFETCH >= 1 && PREFETCH < STAGES, "a stage is refilled only once it is read");
static_assert(SERPENTINE == 0 || SERPENTINE == 1, "SERPENTINE is 0 or 1");

// ---------------------------------------------------------------- mbarriers (PTX ISA 9.7.13.15)
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar)  // release: this thread's reads before it
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
// Has the phase with this parity completed? (A fresh barrier is in phase 0: parity 1 counts as done.)
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    while (!mbar_try_wait(bar, parity)) {
    }
}
// ---------------------------------------------------------------- TMA (PTX ISA 9.7.9.25)
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* tmap, unsigned bar, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(tmap), "r"(x), "r"(y), "r"(bar) : "memory");
}
// ---------------------------------------------------------------- ldmatrix, mma.sync
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
mma_gemm(const void* tmap_a, const void* tmap_b, float* C, int M, int N, int K)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    const unsigned tiles = (raw + 1023) & ~1023u;        // stage s: A at tiles + s * STAGE_BYTES, then B
    const unsigned full = tiles + STAGES * STAGE_BYTES;  // STAGES mbarriers (8 bytes each) ...
    const unsigned empty = full + 8 * STAGES;            // ... and STAGES more

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = (warp / WARPS_N) * WARP_TILE_M;
    const int warp_col = (warp % WARPS_N) * WARP_TILE_N;
    const int tiles_m = M / BLOCK_M, tiles_n = N / BLOCK_N, ntiles = tiles_m * tiles_n;
    const int KT = K / BLOCK_K;
    if (static_cast<int>(blockIdx.x) >= ntiles) return;  // more blocks than tiles: nothing to do

    // Tile index -> its top-left element: GROUP_M tile rows, then one tile column right.
    auto origin = [&](int tile, int& row0, int& col0) {
        const int group = tile / (GROUP_M * tiles_n);
        const int first_m = group * GROUP_M;
        const int group_rows = min(tiles_m - first_m, GROUP_M);
        const int in_group = tile - group * (GROUP_M * tiles_n);
        row0 = (first_m + in_group % group_rows) * BLOCK_M;
        col0 = (in_group / group_rows) * BLOCK_N;
    };

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);       // the copying thread's arrive.expect_tx
            mbar_init(empty + 8 * s, WARPS);  // one arrive per warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the TMA unit
    }
    __syncthreads();  // the only block-wide barrier: the mbarriers exist

    // The copier (thread 0): walk k-tile ld_w = k-tile ld_kt of tile ld_tile, into stage ld_w % STAGES.
    int ld_tile = blockIdx.x, ld_kt = 0, ld_w = 0, ld_row0 = 0, ld_col0 = 0;
    auto copy_next = [&]() {
        const int s = ld_w % STAGES;
        const unsigned a_dst = tiles + s * STAGE_BYTES, b_dst = a_dst + A_BYTES;
        mbar_expect_tx(full + 8 * s, STAGE_BYTES);
        tma_load_2d(a_dst, tmap_a, full + 8 * s, ld_kt * BLOCK_K, ld_row0);  // (k, m) of the box corner
        #pragma unroll
        for (int j = 0; j < BLOCK_N / 64; ++j)
            tma_load_2d(b_dst + j * BLOCK_K * 128, tmap_b, full + 8 * s, ld_col0 + 64 * j, ld_kt * BLOCK_K);
        ++ld_w;
        if (++ld_kt == KT) {
            ld_kt = 0;
            ld_tile += gridDim.x;
            if (ld_tile < ntiles) origin(ld_tile, ld_row0, ld_col0);
        }
    };
    if (threadIdx.x == 0) {
        origin(ld_tile, ld_row0, ld_col0);
        for (int i = 0; i < PREFETCH && ld_tile < ntiles; ++i) copy_next();  // fresh stages: no wait
    }

    float acc[MI][NI][4];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;
    unsigned fa[2][MI][4], fb[2][NI][2];  // two sets of fragments: step kk and step kk + 16

    // The fragments of 16-wide step kk of stage `stage` into set `buf` (as mma_gemm_tma.cu).
    const unsigned b_box = (warp_col / 64) * (BLOCK_K * 128);  // bytes from B's start to the warp's box
    const int b_chunk = (warp_col % 64) / 8;                     // the warp's first chunk in that box
    auto load_frags = [&](int buf, int stage, int kk) {
        const unsigned as = tiles + stage * STAGE_BYTES;
        const unsigned bs = as + A_BYTES + b_box;
        #pragma unroll
        for (int i = 0; i < MI; ++i) {
            const int r = warp_row + 16 * i + (lane & 15), c = kk / 8 + (lane >> 4);
            ldsm_x4(fa[buf][i], as + (r * 8 + (c ^ (r & 7))) * 16);
        }
        #pragma unroll
        for (int j = 0; j < NI; j += 2) {
            const int r = kk + (lane & 15), c = b_chunk + j + (lane >> 4);
            ldsm_x4_trans(fb[buf][j][0], fb[buf][j][1], fb[buf][j + 1][0], fb[buf][j + 1][1],
                          bs + (r * 8 + (c ^ (r & 7))) * 16);
        }
    };
    auto mma_all = [&](int buf) {
        #pragma unroll
        for (int i = 0; i < MI; ++i)
            #pragma unroll
            for (int jj = 0; jj < NI; ++jj) {
                const int j = (SERPENTINE && (i & 1)) ? NI - 1 - jj : jj;
                mma16816(acc[i][j], fa[buf][i], fb[buf][j]);
            }
    };

    mbar_wait(full, 0);  // walk k-tile 0 landed
    load_frags(0, 0, 0);
    int stage = 0;       // stage of the walk k-tile the mma are on ...
    unsigned phase = 0;  // ... and the parity of its use: (walk index / STAGES) & 1
    const int g = lane >> 2, tq = lane & 3;
    #pragma unroll 1
    for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const bool more = tile + static_cast<int>(gridDim.x) < ntiles;
        #pragma unroll 1
        for (int kt = 0; kt < KT; ++kt) {
            const int next_stage = stage + 1 == STAGES ? 0 : stage + 1;
            const unsigned next_phase = next_stage == 0 ? phase ^ 1 : phase;
            #pragma unroll
            for (int s = 0; s < KSTEPS; ++s) {
                if (s + 1 < KSTEPS) {
                    load_frags((s + 1) & 1, stage, (s + 1) * 16);
                } else if (kt + 1 < KT || more) {
                    mbar_wait(full + 8 * next_stage, next_phase);  // the next walk k-tile landed
                    load_frags(0, next_stage, 0);
                }
                mma_all(s & 1);
                // Thread 0 refills the stage of walk k-tile ld_w - STAGES once every warp has read
                // it (ld_w is this walk k-tile + PREFETCH): late in the k-tile, when the other
                // warps have most likely done so.
                if (s == 0) {
                    if (threadIdx.x == 0 && ld_tile < ntiles) {
                        const int w = ld_w - STAGES;
                        if (w >= 0) mbar_wait(empty + 8 * (w % STAGES), (w / STAGES) & 1);
                        copy_next();
                    }
                    __syncwarp();  // warp 0 whole again before its next ldmatrix.sync.aligned
                }
            }
            // This warp's last ldmatrix of `stage` fed the mma above; the whole warp's reads come
            // before lane 0's arrive (__syncwarp orders them, the arrive releases them).
            __syncwarp();
            if (lane == 0) mbar_arrive(empty + 8 * stage);
            stage = next_stage;
            phase = next_phase;
        }

        // Epilogue from registers while the next tile's first k-tiles are in flight (PTX ISA
        // 9.7.14.5.8: rows g and g+8, columns 2t and 2t+1 of each 16x8 tile); then zeros.
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
