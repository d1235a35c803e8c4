/*
 * mma_gemm (mma.sync + ldmatrix fed by TMA, mbarriers instead of __syncthreads), a contender
 * for rung 3 of the beyond-WMMA ladder (notebook 10), issue #35 item 2. Needs sm_90 (TMA,
 * mbarrier transaction counts): it runs only on an H100/H200, never on the CPU emulator (it
 * refuses mbarriers and TMA).
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs mma_gemm_tuned.cu: who moves the tiles and how the warps wait for them (the
 * multiply is the same: 128 x 256 block, 8 warps of 64 x 64, ldmatrix.x4 and mma.sync m16n8k16,
 * fragments double-buffered in registers).
 * The profile (kernels/RESULTS-mma.md, issue #21): 2 warps per scheduler, the tensor pipe 75-80%
 * busy, stalls `wait` and `math pipe throttle`. In the tuned rung every thread issues 12
 * cp.async per k-tile (and computes their addresses), then all 8 warps meet at __syncthreads:
 * their non-mma phases line up, so both warps of a scheduler stop feeding the pipe at the same
 * moments, and the slowest warp sets everyone's pace.
 * 1. TMA (cp.async.bulk.tensor.2d, PTX ISA 9.7.9.25): one thread asks for the A tile (one box
 *    of 64 k x BLOCK_M rows) and the B tile (BLOCK_N / 64 boxes of 64 n x 64 k) per k-tile; the
 *    copy engine writes them 128-byte swizzled (chunk c of row r at c ^ (r % 8), the tuned
 *    rung's XOR done in hardware). The other 255 threads issue no copy and keep no copy address.
 * 2. Per stage a "full" mbarrier (the TMA completes its byte count on it) and an "empty" one
 *    (each warp arrives once it has read the stage): a warp waits only for the data it is about
 *    to read, never for the other warps, so the warps drift apart and their ldmatrix / wait
 *    phases no longer coincide. Only the copying thread waits for the slowest warp, and only
 *    when it refills a stage (PREFETCH k-tiles ahead, after the first k-step of a k-tile).
 * 3. No warp specialisation: a producer warp would take registers the consumers need (ptxas
 *    caps __launch_bounds__(288, 1) at 168 registers, as for 384 threads, and spills the 64 x 64
 *    warp tile; setmaxnreg needs sm_90a and whole warpgroups), so thread 0 copies between its
 *    own mma.
 * Measured (kernels/RESULTS-mma.md, .ci/gpu-mma-sweep, two H200s 2026-11-28): 69.9% / 60.5% and
 * 63.6% / 59.2% of cuBLAS at 4096^3 / 8192^3, no better than the persistent cp.async kernel.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128] (<= 256: one TMA box), BLOCK_N [256] (a
 *   multiple of 64), WARP_TILE_M [64], WARP_TILE_N [64] (multiples of 16; a warp's columns in
 *   one 64-wide box), STAGES [4] (>= 2), PREFETCH [STAGES - 1] (k-tiles in flight, 1 ..
 *   STAGES - 1), GROUP_M [8]. BLOCK_K is 64 (one 128-byte swizzle row of A).
 *   THREADS = 32 * (BLOCK_M / WARP_TILE_M) * (BLOCK_N / WARP_TILE_N) [256].
 * Signature: mma_gemm(const void* tmap_a, const void* tmap_b, float* C, int M, int N, int K):
 *   tmap_a, tmap_b point to CUtensorMap objects (128 bytes) in global memory, built on the host
 *   (grader.bench.mma.tensor_map, as for hgemm_wgmma): A: fp16, dims {K, M}, box {64, BLOCK_M};
 *   B: fp16, dims {N, K}, box {64, 64}; both CU_TENSOR_MAP_SWIZZLE_128B.
 * Registers (ptxas via NVRTC 13.0 and 12.4): 226 on sm_90, no spill.
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M) (the kernel remaps the block index).
 *         Dynamic shared memory: STAGES * (BLOCK_M + BLOCK_N) * 64 * 2 + 1024 + 16 * STAGES bytes
 *         [197696] (the tiles start on a 1024-byte boundary: the swizzle repeats every 1024 bytes).
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of 64.
 * Requires: sm_90
 * Check:  python -m grader.bench.mma --only tma
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "mma_gemm_tma needs sm_90 or newer (TMA: cp.async.bulk.tensor, mbarrier expect_tx)"
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
    // Block order: GROUP_M block rows, then one block column right (tiles shared in L2).
    const int tiles_m = gridDim.y, tiles_n = gridDim.x;
    const int bid = blockIdx.y * tiles_n + blockIdx.x;
    const int group = bid / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = bid % (GROUP_M * tiles_n);
    const int row0 = (first_m + in_group % group_rows) * BLOCK_M;
    const int col0 = (in_group / group_rows) * BLOCK_N;
    const int KT = K / BLOCK_K;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);       // the copying thread's arrive.expect_tx
            mbar_init(empty + 8 * s, WARPS);  // one arrive per warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the TMA unit
    }
    __syncthreads();  // the only block-wide barrier: the mbarriers exist

    // k-tile kt into stage kt % STAGES (thread 0 only): A one box, B BLOCK_N / 64 boxes of 64 x 64
    auto copy_tile = [&](int kt) {
        const int s = kt % STAGES;
        const unsigned a_dst = tiles + s * STAGE_BYTES, b_dst = a_dst + A_BYTES;
        mbar_expect_tx(full + 8 * s, STAGE_BYTES);
        tma_load_2d(a_dst, tmap_a, full + 8 * s, kt * BLOCK_K, row0);  // (k, m) of the box corner
        #pragma unroll
        for (int j = 0; j < BLOCK_N / 64; ++j)
            tma_load_2d(b_dst + j * BLOCK_K * 128, tmap_b, full + 8 * s, col0 + 64 * j, kt * BLOCK_K);
    };
    if (threadIdx.x == 0)
        for (int kt = 0; kt < PREFETCH && kt < KT; ++kt) copy_tile(kt);  // fresh stages: nothing to wait for

    float acc[MI][NI][4];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;
    unsigned fa[2][MI][4], fb[2][NI][2];  // two sets of fragments: step kk and step kk + 16

    // The fragments of 16-wide step kk of stage `stage` into set `buf`. A: 128-byte rows of 64 k,
    // chunk c of row r at c ^ (r % 8) (TMA's 128-byte swizzle = the tuned rung's swz<8>). B: the
    // warp's 64-wide box, rows k of 128 bytes (8 chunks of 8 n), swizzled the same way.
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
            for (int j = 0; j < NI; ++j)
                mma16816(acc[i][j], fa[buf][i], fb[buf][j]);
    };

    mbar_wait(full, 0);  // k-tile 0 landed
    load_frags(0, 0, 0);
    int stage = 0;
    unsigned phase = 0;  // parity of stage `stage`'s current use: (kt / STAGES) & 1
    for (int kt = 0; kt < KT; ++kt) {
        const int next_stage = stage + 1 == STAGES ? 0 : stage + 1;
        const unsigned next_phase = next_stage == 0 ? phase ^ 1 : phase;
        #pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {
            if (s + 1 < KSTEPS) {
                load_frags((s + 1) & 1, stage, (s + 1) * 16);
            } else if (kt + 1 < KT) {
                mbar_wait(full + 8 * next_stage, next_phase);  // k-tile kt+1 landed
                load_frags(0, next_stage, 0);
            }
            mma_all(s & 1);
            // Thread 0 refills the stage of k-tile kt + PREFETCH - STAGES once every warp has
            // read it: late in the k-tile, when the other warps have most likely done so.
            if (s == 0) {
                if (threadIdx.x == 0 && kt + PREFETCH < KT) {
                    const int w = kt + PREFETCH - STAGES;  // the k-tile that used the stage last
                    if (w >= 0) mbar_wait(empty + 8 * (w % STAGES), (w / STAGES) & 1);
                    copy_tile(kt + PREFETCH);
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

    // Epilogue from registers: the lane holds rows g and g+8, columns 2t and 2t+1 of each
    // 16x8 accumulator tile (PTX ISA 9.7.14.5.8); one float2 store per row.
    const int g = lane >> 2, tq = lane & 3;
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j) {
            float* c = C + (size_t)(row0 + warp_row + 16 * i + g) * N + col0 + warp_col + 8 * j + 2 * tq;
            *reinterpret_cast<float2*>(c) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(c + (size_t)8 * N) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
