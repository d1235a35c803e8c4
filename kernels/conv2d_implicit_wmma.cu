/*
 * conv2d (implicit GEMM on tensor cores, WMMA): y = conv(x, w), stride 1, zero padding `pad`.
 * x is NHWC fp16 (N, H, W, C), w is KRSC fp16 (K, R, S, C), y is NPQK fp32 (N, P, Q, K) with
 * P = H + 2*pad - R + 1, Q = W + 2*pad - S + 1. As a GEMM y = A B:
 *   M = N*P*Q rows (output pixels), N_gemm = K columns, K_gemm = R*S*C,
 *   A[m][(r*S + s)*C + c] = x[n, p + r - pad, q + s - pad, c]  (0 outside the image),
 *   B[(r*S + s)*C + c][k] = w[k, r, s, c]   (so w is B stored column-major: B^T row-major).
 *
 * The idea: never build A (no im2col buffer). Each block computes a BLOCK_M x BLOCK_N tile of
 * y; for every BLOCK_K step along K_gemm it GATHERS the needed patches of x straight into a
 * shared-memory tile of A while loading the tile of B. Because C % BLOCK_K == 0, one K step
 * lies inside a single (r, s) and covers BLOCK_K consecutive channels, i.e. BLOCK_K
 * contiguous halves of one NHWC pixel: each row of the A tile is a few 16-byte copies,
 * zero-filled when the pixel falls in the padding or the row lies beyond M.
 * - Copies are asynchronous (__pipeline_memcpy_async from <cuda_pipeline.h>: cp.async, 16 B,
 *   on sm_80+) into a STAGES-deep ring of shared-memory tiles, so the loads of step
 *   k+STAGES-1 overlap the mma of step k. A row that falls in the padding is a plain 16-byte
 *   store of zeros into shared memory (an earlier version copied 16 zero bytes from one
 *   global address instead: all SMs then hammered one L2 slice and ran 1.7x slower).
 * - Tile rows are padded by 8 halves (16 B): the 8 rows an 8x8 fragment load touches then
 *   fall into 8 different 16-byte bank groups (no bank conflicts).
 * - Warp tiling: WARPS_M x WARPS_N warps, each owning a WARP_M x WARP_N block of y, i.e.
 *   (WARP_M/16) x (WARP_N/16) fp32 accumulator fragments kept in registers for the whole K
 *   loop; per 16-deep k step it loads WARP_M/16 A and WARP_N/16 B fragments and issues their
 *   product count of mma_sync (fragment reuse is what feeds the tensor cores).
 * - The (n, p, q) of each row a thread copies is decoded once; the (r, s, c) of the next K
 *   step is advanced incrementally (no divisions in the K loop).
 * - Epilogue: fragments fully inside M are stored straight to y; a fragment straddling M
 *   goes through a per-warp shared-memory scratch and is written row by row, guarded.
 *
 * Compile-time parameters (-D NAME=VAL, defaults below): BLOCK_M, BLOCK_N, BLOCK_K, THREADS,
 *   WARPS_M (warps along M; WARPS_N = THREADS/32/WARPS_M), STAGES. The defaults (128x128x32,
 *   4 warps of 64x64, 4 stages) were among the fastest of a sweep on an H200 (RESULTS-conv.md);
 *   64x64 warp tiles need about 224 registers per thread.
 * Launch: block (THREADS, 1, 1), grid (K / BLOCK_N, ceil(N*P*Q / BLOCK_M), 1),
 *   dynamic shared memory = STAGES * (BLOCK_M + BLOCK_N) * (BLOCK_K + 8) * 2 bytes
 *   (defaults: 4 * 256 * 40 * 2 = 81920; above 48 KB the launcher must opt in, GpuModule does).
 * Needs: sm_80+ for asynchronous copies (on sm_75 the same source compiles and the copies
 *   are synchronous; the CPU emulator runs it too). C % BLOCK_K == 0 (default 32), K % BLOCK_N == 0 (default 128),
 *   any N, H, W, R, S, pad with P, Q >= 1 (rows beyond M are guarded), element counts of x, w, y
 *   below 2^31; otherwise the kernel returns and writes nothing.
 * Check:  python -m grader.bench_conv   (conv2d rows; reference grader.conv.conv2d_nhwc)
 */
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
using namespace nvcuda;

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 32
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef STAGES
#define STAGES 4
#endif

#define LDS (BLOCK_K + 8)  // shared-memory row length in halves (16 B of padding)
#define WARPS (THREADS / 32)
#define WARPS_N (WARPS / WARPS_M)
#define WARP_M (BLOCK_M / WARPS_M)
#define WARP_N (BLOCK_N / WARPS_N)
#define FRAG_M (WARP_M / 16)
#define FRAG_N (WARP_N / 16)
#define CHUNKS (BLOCK_K / 8)  // 16-byte copies per tile row
#define A_COPIES (BLOCK_M * CHUNKS / THREADS)  // per thread and K step
#define B_COPIES (BLOCK_N * CHUNKS / THREADS)
#define ROW_STEP (THREADS / CHUNKS)  // tile rows between a thread's successive copies

static_assert(THREADS % 32 == 0 && WARPS % WARPS_M == 0, "THREADS/32 must be a multiple of WARPS_M");
static_assert(WARP_M % 16 == 0 && WARP_N % 16 == 0, "each warp needs whole 16x16 fragments");
static_assert(BLOCK_K % 16 == 0, "BLOCK_K must be a multiple of 16");
static_assert(THREADS % CHUNKS == 0, "THREADS must be a multiple of BLOCK_K / 8");
static_assert((BLOCK_M * CHUNKS) % THREADS == 0 && (BLOCK_N * CHUNKS) % THREADS == 0,
              "the A and B tiles must split evenly into 16-byte copies per thread");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(STAGES * (BLOCK_M + BLOCK_N) * LDS * 2 >= WARPS * 16 * 16 * 4,
              "the epilogue scratch reuses the pipeline's shared memory");

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d(const half* __restrict__ x, const half* __restrict__ w, float* __restrict__ y,
       int N, int C, int H, int W, int K, int R, int S, int pad)
{
    extern __shared__ __align__(128) unsigned char smem[];
    half* As = reinterpret_cast<half*>(smem);  // [STAGES][BLOCK_M][LDS]
    half* Bs = As + STAGES * BLOCK_M * LDS;  // [STAGES][BLOCK_N][LDS]: row = output channel

    if (C % BLOCK_K != 0 || K % BLOCK_N != 0) return;  // outside the contract
    const int P = H + 2 * pad - R + 1, Q = W + 2 * pad - S + 1;
    const int M = N * P * Q;
    const int Kg = R * S * C;
    const int KT = Kg / BLOCK_K;  // K steps
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;

    // Rows of A this thread copies: decode (n, p, q) once.
    const int chunk = tid % CHUNKS;
    int a_base[A_COPIES], a_h[A_COPIES], a_w[A_COPIES];
#pragma unroll
    for (int i = 0; i < A_COPIES; ++i) {
        int m = m0 + tid / CHUNKS + i * ROW_STEP;
        if (m < M) {
            int q = m % Q, t = m / Q;
            int p = t % P, n = t / P;
            a_base[i] = n * H * W * C + chunk * 8;
            a_h[i] = p - pad;
            a_w[i] = q - pad;
        } else {  // beyond M: a row that is always outside the image (zeros)
            a_base[i] = 0;
            a_h[i] = -(1 << 29);
            a_w[i] = 0;
        }
    }
    const half* b_src = w + (size_t)(n0 + tid / CHUNKS) * Kg + chunk * 8;

    // Where the next K step to load lies: k = (r*S + s)*C + c.
    int ld_r = 0, ld_s = 0, ld_c = 0, ld_k = 0;
    auto load_tile = [&](int stage) {
        // BEGIN SOLUTION (about 22 lines)
        half* as = As + stage * BLOCK_M * LDS;
        half* bs = Bs + stage * BLOCK_N * LDS;
#pragma unroll
        for (int i = 0; i < A_COPIES; ++i) {
            int h = a_h[i] + ld_r, ww = a_w[i] + ld_s;
            bool inside = (unsigned)h < (unsigned)H && (unsigned)ww < (unsigned)W;
            half* dst = as + (tid / CHUNKS + i * ROW_STEP) * LDS + chunk * 8;
            if (inside)
                __pipeline_memcpy_async(dst, x + a_base[i] + (h * W + ww) * C + ld_c, 16);
            else  // the padding: store zeros (no global read; this stage is free, see the loop)
                *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int i = 0; i < B_COPIES; ++i)
            __pipeline_memcpy_async(bs + (tid / CHUNKS + i * ROW_STEP) * LDS + chunk * 8,
                                    b_src + (size_t)i * ROW_STEP * Kg + ld_k, 16);
        ld_k += BLOCK_K;
        ld_c += BLOCK_K;
        if (ld_c == C) {
            ld_c = 0;
            if (++ld_s == S) { ld_s = 0; ++ld_r; }
        }
        // END SOLUTION
    };

    const int warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    // Prologue: start the first STAGES-1 loads (one commit group per K step, even if empty).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s);
        __pipeline_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        __pipeline_wait_prior(STAGES - 2);  // the group of step kt has landed (for this thread) ...
        __syncthreads();  // ... and for all threads; everyone is also done with step kt-1
        int next = kt + STAGES - 1;  // refill the stage step kt-1 used
        if (next < KT) load_tile(next % STAGES);
        __pipeline_commit();

        // BEGIN SOLUTION (about 18 lines)
        const half* as = As + (kt % STAGES) * BLOCK_M * LDS + wm * WARP_M * LDS;
        const half* bs = Bs + (kt % STAGES) * BLOCK_N * LDS + wn * WARP_N * LDS;
#pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[FRAG_M];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b[FRAG_N];
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
                wmma::load_matrix_sync(a[i], as + i * 16 * LDS + kk, LDS);
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j)
                wmma::load_matrix_sync(b[j], bs + j * 16 * LDS + kk, LDS);  // Bs[n][k]: col-major B
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        // END SOLUTION
    }
    __pipeline_wait_prior(0);
    __syncthreads();  // the pipeline's shared memory is free for the epilogue scratch

    float* scratch = reinterpret_cast<float*>(smem) + warp * 16 * 16;
    const int lane = tid % 32;
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
        int row = m0 + wm * WARP_M + i * 16;
        if (row >= M) break;  // uniform across the warp
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            int col = n0 + wn * WARP_N + j * 16;
            if (row + 16 <= M) {
                wmma::store_matrix_sync(y + (size_t)row * K + col, acc[i][j], K, wmma::mem_row_major);
            } else {  // straddles M: stage, then write only the rows that exist
                wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32)
                    if (row + e / 16 < M)
                        y[(size_t)(row + e / 16) * K + col + e % 16] = scratch[e];
                __syncwarp();
            }
        }
    }
}
