/*
 * uncoalesced_2byte: each k-tile is copied into a padded shared buffer one half (2 bytes) per
 * thread, with the lanes of a warp running DOWN the rows of the tile (r = c % rows): every warp
 * request touches 32 sectors of 32 bytes and uses 2 bytes of each (6% of the bytes moved). The
 * copy goes through registers (load, store to shared, wait), so loads do not overlap the math
 * either, but the 16x sector traffic is what makes it slow.
 * Test fixture of the performance coach (tests/test_coach.py): a variant of
 * kernels/wmma_gemm_swizzle.cu for exercise wmma-gemm-fast (issue #35: a held-out kernel of this
 * kind ran at 3.5% of cuBLAS on the H100, 32 sectors per request).
 * LAUNCH {"block_m": 128, "block_n": 128, "block_k": 64, "threads": 128, "shared_mem": 35840}
 */
#include <mma.h>
#include <cuda_fp16.h>
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
#define STAGES 1  // one buffer
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
static_assert(BLOCK_K % 16 == 0 && SMEM_PAD % 8 == 0 && STAGES >= 1, "shapes");
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

    // Copy tile kt into the buffer, one half per thread per step, lanes down the rows.
    auto load_tile = [&](int kt) {
        const int k0 = kt * BLOCK_K;
        for (int c = threadIdx.x; c < BLOCK_M * BLOCK_K; c += THREADS) {
            int r = c % BLOCK_M, col = c / BLOCK_M;  // consecutive threads: consecutive ROWS
            As[r * LDA + col] = A_blk[(size_t)r * K + k0 + col];
        }
        for (int c = threadIdx.x; c < BLOCK_K * BLOCK_N; c += THREADS) {
            int r = c % BLOCK_K, col = c / BLOCK_K;
            Bs[r * LDB + col] = B_blk[(size_t)(k0 + r) * N + col];
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

    for (int kt = 0; kt < KT; ++kt) {
        load_tile(kt);                      // one buffer: copy the tile through registers ...
        __syncthreads();                    // ... and wait until all of it landed
        const half* as = As;
        const half* bs = Bs;
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
        __syncthreads();                    // everyone is done with the buffer before it is refilled
    }
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
