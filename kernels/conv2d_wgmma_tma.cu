/*
 * conv2d_wgmma_tma (Hopper: implicit-GEMM convolution, wgmma.mma_async fed by the TMA in im2col
 * mode, warp-specialised). Needs sm_90a: it runs only on an H100/H200, never on the CPU emulator
 * (it refuses wgmma and TMA) nor on an older GPU.
 * y = conv(x, w), stride 1, zero padding `pad`; the layouts of conv2d_implicit_wmma.cu:
 *   x NHWC fp16 (N, H, W, C), w KRSC fp16 (K, R, S, C), y NPQK fp32 (N, P, Q, K),
 *   P = H + 2 pad - R + 1, Q = W + 2 pad - S + 1. As a GEMM y = A B with M = N P Q rows (output
 *   pixels), N_gemm = K, K_gemm = R S C: A[m][(r S + s) C + c] = x[n, p + r - pad, q + s - pad, c]
 *   (0 outside the image), B[(r S + s) C + c][k] = w[k, r, s, c].
 *
 * What changed vs conv2d_implicit_wmma.cu: no thread gathers a patch any more.
 * 1. A by the TMA in im2col mode (cp.async.bulk.tensor.4d ... .im2col, PTX ISA 9.7.9.25, and the
 *    tensor-map's im2col box, 5.5.4): the host describes x once (cuTensorMapEncodeIm2col: dims
 *    {C, W, H, N}, a bounding box whose corners are lower = -pad, upper = pad - (filter - 1) in W
 *    and H, channelsPerPixel = 64, pixelsPerColumn = BLOCK_M). The box holds one position per output
 *    pixel (W + 2 pad - S + 1 = Q positions in W, P in H), so walking BLOCK_M positions from the
 *    tile's first pixel (coordinates {c0, q0 - pad, p0 - pad, n0}) visits the tile's output pixels
 *    in NPQ order, wrapping rows and images by itself. The im2col offsets {s, r} of the copy shift
 *    every position by the filter tap, and a pixel that falls outside x (the padding, or past the
 *    last image) is filled with zeros by the copy engine: one instruction per (tap, 64 channels)
 *    fetches a BLOCK_M x 64 slice of A, with no address arithmetic and no bounds test in the kernel.
 * 2. B by tiled TMA (cuTensorMapEncodeTiled on w seen as a K x R S C row-major matrix, box
 *    {64, BLOCK_N}): w is B stored K-major, exactly what wgmma reads with imm-trans-b = 0, so the
 *    weights need no transpose either. K-tile kt covers the 64 K_gemm columns kt*64.. of w, the tap
 *    (r, s) and channels c0.. of A's slice (C % 64 == 0: a K-tile never straddles two taps).
 * 3. Both tiles land 128-byte swizzled (16-byte chunk j of row i at j ^ (i % 8)), rows of 128 bytes
 *    = 64 fp16 of K_gemm: the canonical K-major SW128 layout of 9.7.15.5.1.2, one descriptor form
 *    for A and B (SBO = 1024 bytes between 8-row groups, +32 bytes per k16 step).
 * 4. The rest is hgemm_wgmma.cu's pipeline: per stage a "full" mbarrier (the TMA completes its
 *    byte count on it) and an "empty" one (one arrive per consumer warp once its wgmma have read
 *    the stage); warpgroup 0 produces (one thread issues the copies), warpgroups 1..BLOCK_M/64
 *    consume, each multiplying a 64 x BLOCK_N slice with wgmma.mma_async.m64nBLOCK_Nk16 and
 *    keeping one group in flight (wait_group 1) before releasing the previous stage.
 * 5. Epilogue: fp32 accumulators stored from registers (float2 per thread and row), rows >= M
 *    skipped (the last tile may pass the end of the batch; the TMA filled those rows with zeros).
 * 6. Block b computes output tiles b, b + gridDim.x, ... : with a block per tile it is the usual
 *    one-tile kernel; launched persistently (one block per SM, or MIN_BLOCKS) the producer
 *    already fills the next tile's stages while the consumers store this one, and no block pays
 *    the pipeline's start-up again. Both sides count K-tiles over all of the block's tiles, so
 *    stage and phase follow from one counter; the consumers release each tile's last stage too.
 * Measured (kernels/RESULTS-conv.md, `.ci/gpu-conv-tma OUT`: every shape checked, then paired with
 * cuDNN): on two H200s 1.00x and 1.03x cuDNN at the TVM layer, 0.88-1.22x on ResNet-50's 3x3 layers
 * (2026-11-28); on an H100, notebook 08's one pairing 0.97x at the TVM layer. Aim (issue #35): >= 0.8x.
 * Left out on purpose: an epilogue that overlaps the math (ping-pong consumers, or MIN_BLOCKS = 2
 * where two blocks share an SM), clusters with TMA multicast, a TMA store of y, split-K.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128] (64 or 128: one consumer warpgroup per 64
 *   rows), BLOCK_N [256] (64, 128 or 256: the wgmma n), STAGES [4], GROUP_M [8] (tiles along M
 *   per band of the raster order, for L2 reuse of x), MIN_BLOCKS [1] (blocks per SM the launch
 *   bounds and register split are made for: 1 or 2). BLOCK_K is 64 (one 128-byte swizzle row).
 *   THREADS = 128 * (BLOCK_M / 64 + 1) [384].
 * Signature: conv2d_wgmma_tma(const void* tmap_x, const void* tmap_w, float* y, int N, int C,
 *   int H, int W, int K, int R, int S, int pad): tmap_x, tmap_w point to CUtensorMap objects
 *   (128 bytes, 64-byte aligned) in global memory, built on the host by grader.bench.conv_tma
 *   (tensor_map_params says every field): x: cuTensorMapEncodeIm2col, fp16, rank 4, 128-byte
 *   swizzle, zero fill; w: cuTensorMapEncodeTiled, fp16, dims {R S C, K}, box {64, BLOCK_N},
 *   128-byte swizzle.
 * Registers: the launch bounds give each thread LAUNCH_REGS (65536 / (THREADS MIN_BLOCKS), a
 *   multiple of 8, at most 168); the producer warpgroup hands registers back (setmaxnreg.dec to
 *   40) and the consumers take them (setmaxnreg.inc to CONSUMER_REGS) [168 -> 40 / 232]; not
 *   with BLOCK_M 64 and one block per SM (255 each already). ptxas needs a whole wgmma to fit in
 *   LAUNCH_REGS: 128 x 128 or 128 x 256 with two blocks per SM does not compile (80 registers).
 * Launch: block (THREADS, 1, 1), grid (G, 1, 1) for any G >= 1: block b computes tiles b, b + G,
 *         ... of the ceil(N P Q / BLOCK_M) x (K / BLOCK_N) output tiles (G = their count: one tile
 *         per block; G = SMs x MIN_BLOCKS: persistent). Dynamic shared memory:
 *         STAGES * (BLOCK_M + BLOCK_N) * 128 + 1024 + 16 * STAGES bytes [197696] (the 1024: tiles
 *         start on a 1024-byte boundary, where the 128-byte swizzle pattern repeats). C % 64 == 0, K % BLOCK_N == 0, pad <= 127,
 *         R, S <= pad + 128, N P Q < 2^31.
 * Requires: sm_90a
 * Check:  python -m grader.bench.conv_tma
 */
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900 || !defined(__CUDA_ARCH_FEAT_SM90_ALL))
#error "conv2d_wgmma_tma needs sm_90a (wgmma.mma_async, TMA im2col, setmaxnreg): compile with -arch=sm_90a"
#endif

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define BLOCK_K 64
#define CONSUMERS (BLOCK_M / 64)
#define THREADS (128 * (CONSUMERS + 1))
#define A_BYTES (BLOCK_M * BLOCK_K * 2)
#define B_BYTES (BLOCK_N * BLOCK_K * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
// The register file (65536 per SM) split between MIN_BLOCKS blocks, then inside a block between
// the producer (40 each: it only issues copies) and the consumers (the accumulators). ptxas gives
// every thread LAUNCH_REGS (the launch bounds' share, at most 168 here) and needs each wgmma to
// fit in it; setmaxnreg then moves the producer's share to the consumers. With 256 threads and one
// block per SM each thread may have 255 registers already: no exchange (USE_SETMAXNREG 0).
#define LAUNCH_REGS_RAW (65536 / (THREADS * MIN_BLOCKS) / 8 * 8)
#define LAUNCH_REGS (LAUNCH_REGS_RAW > 168 ? 168 : LAUNCH_REGS_RAW)
#define USE_SETMAXNREG (THREADS * MIN_BLOCKS > 256)
#define PRODUCER_REGS 40
#define CONSUMER_REGS ((LAUNCH_REGS * THREADS - PRODUCER_REGS * 128) / (THREADS - 128) / 8 * 8)
static_assert(BLOCK_M == 64 || BLOCK_M == 128, "BLOCK_M: 64 or 128");
static_assert(BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256, "BLOCK_N: 64, 128 or 256");
static_assert(MIN_BLOCKS == 1 || MIN_BLOCKS == 2, "MIN_BLOCKS: 1 or 2");
static_assert(!USE_SETMAXNREG || (CONSUMER_REGS > LAUNCH_REGS && CONSUMER_REGS <= 240),
              "the consumers must gain registers from the producer");

typedef unsigned long long u64;

// ---------------------------------------------------------------- mbarriers (9.7.13.15)
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar)
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

// ---------------------------------------------------------------- TMA (9.7.9.25)
// Tiled: the box whose first element is (x, y) of the 2-D tensor map.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* tmap, unsigned bar, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(tmap), "r"(x), "r"(y), "r"(bar) : "memory");
}
// im2col: pixelsPerColumn pixels x channelsPerPixel channels, starting at the box position
// {c, w, h, n} (innermost first), every position shifted by the filter tap {off_w, off_h}.
__device__ __forceinline__ void tma_load_im2col(unsigned dst, const void* tmap, unsigned bar, int c, int w, int h,
                                                int n, unsigned short off_w, unsigned short off_h)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n"
                 :: "r"(dst), "l"(tmap), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(off_w), "h"(off_h)
                 : "memory");
}

// ---------------------------------------------------------------- wgmma (9.7.15)
__device__ __forceinline__ u64 desc_field(unsigned x) { return (u64)((x & 0x3FFFF) >> 4); }
// K-major, 128-byte swizzle (mode 1): rows 128 bytes apart, 8-row groups SBO = 1024 bytes apart
// (LBO is unused by this layout; 16 as the ISA's canonical value).
__device__ __forceinline__ u64 make_desc(unsigned start)
{
    return desc_field(start) | desc_field(16) << 16 | desc_field(1024) << 32 | 1ull << 62;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(PENDING) : "memory");
}

#define F4(i) "+f"(d[i]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#define F16(i) F4(i), F4((i) + 4), F4((i) + 8), F4((i) + 12)
#define F32(i) F16(i), F16((i) + 16)
// d (64 x BLOCK_N, BLOCK_N / 2 floats per thread) += A (64 x 16, K-major) * B (16 x BLOCK_N, K-major:
// imm-trans-b = 0). scale-d is a predicate (0: d = A B, 1: d += A B), as in hgemm_wgmma.cu; the last
// four immediates: scale-a 1, scale-b 1, trans-a 0, trans-b 0.
__device__ __forceinline__ void wgmma_tile(float (&d)[BLOCK_N / 2], u64 desc_a, u64 desc_b, unsigned scale_d)
{
#if BLOCK_N == 256
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : F32(0), F32(32), F32(64), F32(96)
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
#elif BLOCK_N == 128
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : F32(0), F32(32)
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
#else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : F32(0)
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
#endif
}

// Output tile t (0 .. tiles_m * tiles_n - 1) in raster order: bands of GROUP_M tiles along M, so
// the blocks running together share rows of x (and all of w) in L2.
__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int& row0, int& col0)
{
    const int group = t / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = t % (GROUP_M * tiles_n);
    row0 = (first_m + in_group % group_rows) * BLOCK_M;  // first output pixel of the tile
    col0 = (in_group / group_rows) * BLOCK_N;            // first output channel
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
conv2d_wgmma_tma(const void* tmap_x, const void* tmap_w, float* y, int N, int C, int H, int W, int K, int R,
                 int S, int pad)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    const unsigned tiles = (raw + 1023) & ~1023u;        // stage s: A at tiles + s * STAGE_BYTES, then B
    const unsigned full = tiles + STAGES * STAGE_BYTES;  // STAGES mbarriers (8 bytes each) ...
    const unsigned empty = full + 8 * STAGES;            // ... and STAGES more

    const int P = H + 2 * pad - R + 1, Q = W + 2 * pad - S + 1;
    const int M = N * P * Q;
    const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M, tiles_n = K / BLOCK_N, n_tiles = tiles_m * tiles_n;
    const int KT = R * S * (C / BLOCK_K);
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);               // the producer's arrive.expect_tx
            mbar_init(empty + 8 * s, 4 * CONSUMERS);  // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the TMA unit
    }
    __syncthreads();

    // Block b computes tiles b, b + gridDim.x, ...: one tile each when the grid has a block per tile,
    // or persistently with fewer blocks (then the producer fills the next tile's stages while the
    // consumers store this one). `it` counts K-tiles over all of the block's tiles: stage it % STAGES,
    // phase parity (it / STAGES) & 1, the same sequence on both sides.
    if (wg == 0) {  // producer warpgroup
#if USE_SETMAXNREG
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(PRODUCER_REGS) : "memory");
#endif
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < n_tiles; t += gridDim.x) {
                int row0, col0;
                tile_origin(t, tiles_m, tiles_n, row0, col0);
                // The tile's first pixel (n0, p0, q0) as a position of the im2col box: {q0 - pad, p0 - pad, n0}.
                const int n0 = row0 / (P * Q), pq = row0 % (P * Q);
                const int h0 = pq / Q - pad, w0 = pq % Q - pad;
                int r = 0, s = 0, c0 = 0;  // the tap and channels of K-tile kt, advanced without divisions
                for (int kt = 0; kt < KT; ++kt, ++it) {
                    const int st = it % STAGES;
                    mbar_wait(empty + 8 * st, ((it / STAGES) & 1) ^ 1);  // the consumers freed stage st
                    const unsigned a_dst = tiles + st * STAGE_BYTES, b_dst = a_dst + A_BYTES;
                    mbar_expect_tx(full + 8 * st, STAGE_BYTES);  // out-of-bounds pixels count too: zero-filled
                    tma_load_im2col(a_dst, tmap_x, full + 8 * st, c0, w0, h0, n0, (unsigned short)s,
                                    (unsigned short)r);
                    tma_load_2d(b_dst, tmap_w, full + 8 * st, kt * BLOCK_K, col0);  // w columns (r S + s) C + c0
                    c0 += BLOCK_K;
                    if (c0 == C) {
                        c0 = 0;
                        if (++s == S) {
                            s = 0;
                            ++r;
                        }
                    }
                }
            }
        }
        return;
    }

    // consumer warpgroup c: rows 64c .. 64c+63 of the block tile
#if USE_SETMAXNREG
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(CONSUMER_REGS) : "memory");
#endif
    const int c = wg - 1, tid = threadIdx.x % 128;
    const int w = tid / 32, g = (tid % 32) / 4, t4 = tid % 4;
    int it = 0;
    for (int t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        int row0, col0;
        tile_origin(t, tiles_m, tiles_n, row0, col0);
        float d[BLOCK_N / 2];
        #pragma unroll
        for (int i = 0; i < BLOCK_N / 2; ++i)
            d[i] = 0.0f;
        for (int kt = 0; kt < KT; ++kt, ++it) {
            const int st = it % STAGES;
            mbar_wait(full + 8 * st, (it / STAGES) & 1);  // stage st has landed
            const unsigned a_tile = tiles + st * STAGE_BYTES + c * 64 * 128, b_tile = tiles + st * STAGE_BYTES + A_BYTES;
            wgmma_fence();
            #pragma unroll
            for (int k = 0; k < BLOCK_K / 16; ++k)  // +32 bytes (16 fp16 of K_gemm) per step, in A and B alike
                wgmma_tile(d, make_desc(a_tile + 32 * k), make_desc(b_tile + 32 * k), 1);
            wgmma_commit();
            wgmma_wait<1>();  // the group of K-tile it-1 is done: its stage can be refilled
            if (kt > 0 && tid % 32 == 0)
                mbar_arrive(empty + 8 * ((it - 1) % STAGES));
        }
        wgmma_wait<0>();
        if (tid % 32 == 0)  // the tile's last stage too: the producer may be on the next tile already
            mbar_arrive(empty + 8 * ((it - 1) % STAGES));

        // d[i]: row 16w + g + 8((i/2)%2), column 8(i/4) + 2t4 + i%2 of this warpgroup's 64 x BLOCK_N tile
        const int m = row0 + 64 * c + 16 * w + g;
        float* y_row = y + (size_t)m * K + col0 + 2 * t4;
        const bool lo = m < M, hi = m + 8 < M;  // the last tile may run past the batch
        #pragma unroll
        for (int q = 0; q < BLOCK_N / 8; ++q) {
            if (lo)
                *reinterpret_cast<float2*>(y_row + 8 * q) = make_float2(d[4 * q], d[4 * q + 1]);
            if (hi)
                *reinterpret_cast<float2*>(y_row + (size_t)8 * K + 8 * q) = make_float2(d[4 * q + 2], d[4 * q + 3]);
        }
    }
}
