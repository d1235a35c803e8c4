/*
 * mma_gemm (mma.sync + ldmatrix, XOR-swizzled shared memory), rung 2 of the beyond-WMMA
 * ladder (notebook 10).
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs mma_gemm_ldmatrix.cu: the shared-memory layout, nothing else.
 * Rows are no longer padded (rung 1: 8 halves per row, 9216 B of 107520 never used). Each row of
 * a tile is a run of 16-byte chunks; chunk c of row r is stored at chunk c ^ (r % 8) of that
 * row. ldmatrix reads 8 rows at the same logical chunk: their physical chunks are 8 different
 * values mod 8, i.e. 8 different groups of 4 banks, so each 8x8 read is one pass (the padded
 * rows got the same by shifting each row 16 bytes). The XOR works only on the low 3 bits of the
 * chunk index, so a chunk never leaves its row or its aligned group of 8 chunks: the cp.async
 * copies still write whole 16-byte chunks (each warp 512 contiguous bytes, permuted), and every
 * lane of an ldmatrix computes its own row's swizzled address: the swizzle costs one XOR.
 * grader.lessons.beyond_wmma counts the bank passes of both layouts (the notebook plots them).
 * Measured (H100, 2026-11-24 07:44 UTC, kernels/RESULTS-mma.md, paired with cuBLAS in one run):
 * 53.7% / 48.4% of cuBLAS fp16 at 4096^3 / 8192^3 (376.8 / 351.9 TFLOP/s), against 44.9% / 41.9%
 * for mma_gemm_ldmatrix.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128], BLOCK_N [128], BLOCK_K [64] (a multiple
 *   of 64: at least 8 chunks per row), WARP_TILE_M [64], WARP_TILE_N [64] (multiples of 16),
 *   STAGES [3] (>= 2), GROUP_M [16],
 *   THREADS = 32 * (BLOCK_M / WARP_TILE_M) * (BLOCK_N / WARP_TILE_N) [128].
 * Registers (ptxas via NVRTC 13.0): 254 on sm_90 and sm_80, no spill.
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M) (the kernel remaps the block index).
 *         Dynamic shared memory: STAGES * (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 2 bytes [98304].
 *         M, N multiples of BLOCK_M, BLOCK_N; K a multiple of BLOCK_K.
 * Requires: sm_80 (mma.sync m16n8k16, cp.async).
 * Check:  python -m grader.bench.mma --only swizzled
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "mma_gemm_swizzled needs sm_80 or newer (mma.sync m16n8k16 with fp32 accumulators)"
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
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 16
#endif
#define CPR_A (BLOCK_K / 8)  // 16-byte chunks per row of the A tile
#define CPR_B (BLOCK_N / 8)
#define A_STAGE (BLOCK_M * BLOCK_K)  // halves per buffer of A
#define B_STAGE (BLOCK_K * BLOCK_N)
#define WARPS_N (BLOCK_N / WARP_TILE_N)
#define MI (WARP_TILE_M / 16)  // 16-row A fragments per warp
#define NI (WARP_TILE_N / 8)   // 8-column B fragments per warp
#ifndef THREADS
#define THREADS (32 * (BLOCK_M / WARP_TILE_M) * WARPS_N)
#endif
static_assert(BLOCK_M % WARP_TILE_M == 0 && BLOCK_N % WARP_TILE_N == 0, "warp tiles fill the block");
static_assert(WARP_TILE_M % 16 == 0 && WARP_TILE_N % 16 == 0, "whole ldmatrix.x4 loads");
static_assert(THREADS == 32 * (BLOCK_M / WARP_TILE_M) * WARPS_N, "THREADS = 32 * warps per block");
static_assert(BLOCK_K % 64 == 0 && STAGES >= 2, "shapes: 8 or more chunks per row, so the XOR stays in the row");
static_assert((BLOCK_M * BLOCK_K / 8) % THREADS == 0 && (BLOCK_K * BLOCK_N / 8) % THREADS == 0,
              "every thread copies the same number of 16-byte chunks");

// Where chunk c (16 bytes) of row r of a tile with CPR chunks per row lives, in chunks from
// the tile's start: the XOR spreads 8 consecutive rows over 8 different bank groups.
template <int CPR>
__device__ __forceinline__ int swz(int r, int c)
{
    return r * CPR + (c ^ (r & 7));
}

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
    half* As = reinterpret_cast<half*>(smem_raw);  // STAGES swizzled buffers of BLOCK_M x BLOCK_K
    half* Bs = As + STAGES * A_STAGE;               // STAGES swizzled buffers of BLOCK_K x BLOCK_N
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

    auto load_tile = [&](int stage, int kt) {  // 16 bytes per cp.async, into swizzled chunks
        half* as = As + stage * A_STAGE;
        half* bs = Bs + stage * B_STAGE;
        const int k0 = kt * BLOCK_K;
        #pragma unroll
        for (int i = 0; i < BLOCK_M * BLOCK_K / 8 / THREADS; ++i) {
            int c = threadIdx.x + i * THREADS;
            int r = c / CPR_A, ch = c % CPR_A;
            __pipeline_memcpy_async(as + swz<CPR_A>(r, ch) * 8, A_blk + (size_t)r * K + k0 + ch * 8, 16);
        }
        #pragma unroll
        for (int i = 0; i < BLOCK_K * BLOCK_N / 8 / THREADS; ++i) {
            int c = threadIdx.x + i * THREADS;
            int r = c / CPR_B, ch = c % CPR_B;
            __pipeline_memcpy_async(bs + swz<CPR_B>(r, ch) * 8, B_blk + (size_t)(k0 + r) * N + ch * 8, 16);
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
            // A: lanes 0-15 give rows 0-15 at chunk kk/8, lanes 16-31 the same rows at the next chunk
            #pragma unroll
            for (int i = 0; i < MI; ++i)
                ldsm_x4(a[i], as + swz<CPR_A>(warp_row + 16 * i + (lane & 15), kk / 8 + (lane >> 4)) * 16);
            // B: lanes 0-15 give rows k = kk..kk+15 at column n, lanes 16-31 at n + 8
            #pragma unroll
            for (int j = 0; j < NI; j += 2)
                ldsm_x4_trans(b[j][0], b[j][1], b[j + 1][0], b[j + 1][1],
                              bs + swz<CPR_B>(kk + (lane & 15), (warp_col + 8 * j) / 8 + (lane >> 4)) * 16);
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
