/*
 * fp8_gemm_wgmma (Hopper: wgmma.mma_async on e4m3, fed by TMA, warp-specialised), notebook 11's
 * FP8 GEMM at full speed: C = scale_a * scale_b * (A * B^T), e4m3 codes in, fp32 accumulate and
 * out, the per-tensor scales applied once in the epilogue. Needs sm_90a: it runs only on an
 * H100/H200, never on the CPU emulator (it refuses wgmma) nor on an older GPU.
 * Layout contract (the same as kernels/fp8_gemm_mma.cu and exercise fp8-gemm, "TN"): A (M x K)
 * and B (N x K) hold e4m3 codes, one byte each, both row-major, i.e. K-major: B is given as its
 * transpose, which is also what cuBLASLt's FP8 GEMM takes, so the bench passes the same arrays to
 * both and nothing is transposed. C (M x N) is float, row-major. scale_a, scale_b: what quantised
 * each input (e.g. amax(A) / 448), as fp8_gemm_mma takes them.
 *
 * What changed vs hgemm_wgmma.cu (the fp16 wgmma rung of notebook 10), and why:
 * 1. The instruction: wgmma.mma_async.m64nBLOCK_Nk32.f32.e4m3.e4m3 (PTX ISA 9.1, 9.7.15): with
 *    8-bit operands one instruction takes k = 32 (twice fp16's 16 in the same 32 bytes of a row),
 *    and there is no transpose for 8-bit types: the instruction has no imm-trans-a / imm-trans-b
 *    operands and reads BOTH A and B K-major from shared memory. So B is consumed as N x K, the
 *    layout above; hgemm_wgmma's N-major B (imm-trans-b = 1, LBO = one 64-column block) is gone.
 * 2. The tiles: one 128-byte swizzle row now holds 128 k values, so BLOCK_K = 128 and a stage is
 *    (BLOCK_M + BLOCK_N) x 128 bytes. Both tiles are fetched by ONE TMA box each (A: {128 k,
 *    BLOCK_M rows}, B: {128 k, BLOCK_N rows}; a box may be 256 rows, its 128-byte inner extent is
 *    the 128B swizzle's limit) from uint8 tensor maps (grader.bench.fp8_wgmma builds them).
 *    Both descriptors are the K-major 128B-swizzle ones hgemm_wgmma uses for A: SBO = 1024 bytes
 *    (8 rows of 128 bytes), LBO unused (encoded 1), the k-step advancing the start by 32 bytes
 *    (k32 of one byte each), 4 instructions per stage; the tiles start on a 1024-byte boundary.
 * 3. Promotion (PROMOTE, see below): Hopper's FP8 tensor cores are reported to keep only about 14
 *    bits of the running sum inside a chain of wgmma (DeepSeek-V3 technical report, "Increasing
 *    accumulation precision"; not measured here yet: the bench times both builds and its check
 *    says when a build meets only a widened bound; cuBLASLt calls the unpromoted mode "fast
 *    accumulation"). Every PROMOTE k-tiles (PROMOTE * 128 k values) a consumer waits for its
 *    wgmma, adds the chain's result into a second set of fp32 registers and starts the next
 *    chain afresh (scale-d = 0): the error of a chain no longer grows with K. It costs BLOCK_N / 2 more registers per thread and a drain of
 *    the warpgroup's wgmma queue per promotion, which the other consumer warpgroup covers.
 *    PROMOTE = 0 keeps everything in the wgmma chain (fast accumulation; BLOCK_N 256 then fits:
 *    with PROMOTE, 2 x 128 accumulators a thread spill, a static_assert says so; STAGES 4 then,
 *    as a stage is 48 KB).
 * 4. The epilogue multiplies by scale_a * scale_b before the store (one multiply per output).
 * Unchanged from hgemm_wgmma: TMA with mbarriers (a full and an empty barrier per stage), the
 * producer warpgroup (setmaxnreg.dec) and the BLOCK_M / 64 consumer warpgroups (setmaxnreg.inc),
 * wgmma.wait_group 1 to keep one group in flight, GROUP_M block swizzling, the accumulator layout
 * (row 16w + g (+8), columns 8q + 2t (+1), the same for every wgmma with an f32 D).
 * Measured (kernels/RESULTS-fp8.md, .ci/gpu-fp8 on an H100, 2026-11-28: python -m grader.bench.fp8 pairs
 * it with the fp16 rung, fp8_gemm_mma and cuBLASLt FP8): 86.7% / 87.6% of cuBLASLt FP8 at 4096^3 / 8192^3. Left out on purpose: clusters with TMA multicast, a
 * persistent tile scheduler, a TMA store epilogue, e5m2 inputs (one token of the instruction).
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128] (64 per consumer warpgroup), BLOCK_N [128]
 *   (128 or 256), STAGES [6], GROUP_M [16], PROMOTE [4] (k-tiles per promotion; 0: none).
 *   BLOCK_K is 128 (one 128-byte swizzle row of e4m3). THREADS = 128 * (BLOCK_M / 64 + 1) [384].
 * Signature: fp8_gemm_wgmma(const void* tmap_a, const void* tmap_b, float* C, int M, int N, int K,
 *   float scale_a, float scale_b): tmap_a, tmap_b point to CUtensorMap objects (128 bytes) in
 *   global memory, built on the host (grader.bench.fp8_wgmma): A: uint8, dims {K, M}, row stride
 *   K bytes, box {128, BLOCK_M}; B: uint8, dims {K, N}, row stride K bytes, box {128, BLOCK_N};
 *   both CU_TENSOR_MAP_SWIZZLE_128B.
 * Registers (ptxas via NVRTC, sm_90a): 168 (the cap for 384 threads; setmaxnreg gives the consumers
 *   232: 64 chain + 64 promoted accumulators), no spill; the same with BLOCK_N 256, PROMOTE 0, STAGES 4.
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M) (the kernel remaps the block index).
 *         Dynamic shared memory: STAGES * (BLOCK_M + BLOCK_N) * 128 + 1024 + 16 * STAGES bytes
 *         [197728] (the 1024: the tiles start on a 1024-byte boundary, as the 128-byte swizzle
 *         pattern repeats every 1024 bytes). M, N multiples of BLOCK_M, BLOCK_N; K of 128.
 * Requires: sm_90a
 * Check:  python -m grader.bench.fp8 (float64 reference before timing; .ci/gpu-fp8 on a GPU)
 */
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900 || !defined(__CUDA_ARCH_FEAT_SM90_ALL))
#error "fp8_gemm_wgmma needs sm_90a (wgmma.mma_async on e4m3, setmaxnreg): compile with -arch=sm_90a"
#endif

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef STAGES
#define STAGES 6
#endif
#ifndef GROUP_M
#define GROUP_M 16
#endif
#ifndef PROMOTE
#define PROMOTE 4
#endif
#define BLOCK_K 128
#define CONSUMERS (BLOCK_M / 64)
#ifndef THREADS
#define THREADS (128 * (CONSUMERS + 1))
#endif
#define A_BYTES (BLOCK_M * BLOCK_K)
#define B_BYTES (BLOCK_N * BLOCK_K)
#define STAGE_BYTES (A_BYTES + B_BYTES)
static_assert(BLOCK_M % 64 == 0 && BLOCK_M <= 256 && (BLOCK_N == 128 || BLOCK_N == 256),
              "shapes (a TMA box has at most 256 rows)");
static_assert(PROMOTE == 0 || BLOCK_N == 128, "PROMOTE needs BLOCK_N 128: 2 x 128 accumulators a thread would spill");
static_assert(THREADS == 128 * (CONSUMERS + 1), "one producer warpgroup + one per 64 rows");
static_assert(PROMOTE >= 0, "PROMOTE: k-tiles per promotion, 0 for none");
static_assert(STAGES * STAGE_BYTES + 1024 + 16 * STAGES <= 227 * 1024,
              "more shared memory than sm_90 gives a block (227 KB): fewer STAGES");

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
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* tmap, unsigned bar, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(tmap), "r"(x), "r"(y), "r"(bar) : "memory");
}

// ---------------------------------------------------------------- wgmma (9.7.15)
__device__ __forceinline__ u64 desc_field(unsigned x) { return (u64)((x & 0x3FFFF) >> 4); }
// shared-memory matrix descriptor: start, leading / stride byte offsets, 128-byte swizzle (mode 1)
__device__ __forceinline__ u64 make_desc(unsigned start, unsigned lbo, unsigned sbo)
{
    return desc_field(start) | desc_field(lbo) << 16 | desc_field(sbo) << 32 | 1ull << 62;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(PENDING) : "memory");
}

// d (64 x BLOCK_N, BLOCK_N/2 floats per thread) = A * B (+ d when scale_d != 0); A and B K-major, e4m3
__device__ __forceinline__ void wgmma_tile(float (&d)[BLOCK_N / 2], u64 desc_a, u64 desc_b, unsigned scale_d)
{
#if BLOCK_N == 256
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
#else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
fp8_gemm_wgmma(const void* tmap_a, const void* tmap_b, float* C, int M, int N, int K,
               float scale_a, float scale_b)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // Tiles on a 1024-byte boundary: the swizzle pattern of TMA and wgmma repeats every 1024 bytes.
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    const unsigned tiles = (raw + 1023) & ~1023u;        // stage s: A at tiles + s * STAGE_BYTES, then B
    const unsigned full = tiles + STAGES * STAGE_BYTES;  // STAGES mbarriers (8 bytes each) ...
    const unsigned empty = full + 8 * STAGES;            // ... and STAGES more

    const int tiles_m = gridDim.y, tiles_n = gridDim.x;  // block order as the mma.sync rungs
    const int bid = blockIdx.y * tiles_n + blockIdx.x;
    const int group = bid / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = bid % (GROUP_M * tiles_n);
    const int row0 = (first_m + in_group % group_rows) * BLOCK_M;
    const int col0 = (in_group / group_rows) * BLOCK_N;
    const int KT = K / BLOCK_K;
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);               // the producer's arrive.expect_tx
            mbar_init(empty + 8 * s, 4 * CONSUMERS);  // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the TMA unit
    }
    __syncthreads();

    if (wg == 0) {  // producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                mbar_wait(empty + 8 * s, ((kt / STAGES) & 1) ^ 1);  // the consumers freed stage s
                const unsigned a_dst = tiles + s * STAGE_BYTES, b_dst = a_dst + A_BYTES;
                mbar_expect_tx(full + 8 * s, STAGE_BYTES);
                tma_load_2d(a_dst, tmap_a, full + 8 * s, kt * BLOCK_K, row0);  // (k, row) of the box corner
                tma_load_2d(b_dst, tmap_b, full + 8 * s, kt * BLOCK_K, col0);  // B's rows are C's columns
            }
        }
        return;
    }

    // consumer warpgroup c: rows 64c .. 64c+63 of the block tile
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int c = wg - 1, tid = threadIdx.x % 128;
    float d[BLOCK_N / 2];  // the running wgmma chain
    #pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i)
        d[i] = 0.0f;
#if PROMOTE
    float acc[BLOCK_N / 2];  // the promoted fp32 sum of the finished chains
    #pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i)
        acc[i] = 0.0f;
#endif
    unsigned fresh = 1;  // the next instruction starts a chain: d = A * B (scale-d = 0)
    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(full + 8 * s, (kt / STAGES) & 1);  // stage s has landed
        const unsigned a_tile = tiles + s * STAGE_BYTES + c * 64 * 128, b_tile = tiles + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();
        #pragma unroll
        for (int k = 0; k < BLOCK_K / 32; ++k)  // 32 k values = 32 bytes further along both rows
            wgmma_tile(d, make_desc(a_tile + 32 * k, 16, 1024), make_desc(b_tile + 32 * k, 16, 1024),
                       k > 0 || !fresh);
        wgmma_commit();
#if PROMOTE
        if ((kt + 1) % PROMOTE == 0) {  // close the chain: its sum joins acc in fp32
            wgmma_wait<0>();
            #pragma unroll
            for (int i = 0; i < BLOCK_N / 2; ++i)
                acc[i] += d[i];
            fresh = 1;
        } else {
            wgmma_wait<1>();  // the group of tile kt-1 is done: its stage can be refilled
            fresh = 0;
        }
#else
        wgmma_wait<1>();
        fresh = 0;
#endif
        if (kt > 0 && tid % 32 == 0)
            mbar_arrive(empty + 8 * ((kt - 1) % STAGES));
    }
    wgmma_wait<0>();
#if PROMOTE
    if (!fresh) {  // the last chain, when K / 128 is no multiple of PROMOTE
        #pragma unroll
        for (int i = 0; i < BLOCK_N / 2; ++i)
            acc[i] += d[i];
    }
    const float* sum = acc;
#else
    const float* sum = d;
#endif

    // sum[i]: row 16w + g + 8((i/2)%2), column 8(i/4) + 2t + i%2 of this warpgroup's 64 x BLOCK_N tile
    const float scale = scale_a * scale_b;  // the epilogue: dequantise the fp32 sum once
    const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
    float* c_tile = C + (size_t)(row0 + 64 * c + 16 * w + g) * N + col0 + 2 * t;
    #pragma unroll
    for (int q = 0; q < BLOCK_N / 8; ++q) {
        *reinterpret_cast<float2*>(c_tile + 8 * q) = make_float2(scale * sum[4 * q], scale * sum[4 * q + 1]);
        *reinterpret_cast<float2*>(c_tile + (size_t)8 * N + 8 * q) =
            make_float2(scale * sum[4 * q + 2], scale * sum[4 * q + 3]);
    }
}
