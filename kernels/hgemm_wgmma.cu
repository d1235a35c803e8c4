/*
 * hgemm_wgmma (Hopper: wgmma.mma_async fed by TMA, warp-specialised), rung 5 of the
 * beyond-WMMA ladder (notebook 10). Needs sm_90a: it runs only on an H100/H200, never on the
 * CPU emulator (it refuses wgmma) nor on an older GPU.
 * C = A * B; A (M x K), B (K x N) fp16, C (M x N) fp32; all row-major and contiguous.
 *
 * What changed vs mma_gemm_tuned.cu: who moves the data and who multiplies.
 * 1. TMA instead of cp.async: one thread asks the Tensor Memory Accelerator for a whole tile
 *    (cp.async.bulk.tensor.2d, PTX ISA 9.1, 9.7.9.25), described once on the host by a tensor
 *    map (cuTensorMapEncodeTiled: shape, strides, box, 128-byte swizzle). The copy engine writes
 *    the tile in the 128-byte swizzled layout wgmma reads (16-byte chunk c of row r at c ^ (r % 8),
 *    rung 2's idea done in hardware); no thread computes an address per chunk.
 * 2. mbarriers instead of __syncthreads: per stage a "full" barrier (the TMA completes its byte
 *    count on it: mbarrier.arrive.expect_tx + complete_tx) and an "empty" barrier (each consumer
 *    warp arrives when its wgmma have read the stage), waited on by phase parity.
 * 3. Warp specialisation: warpgroup 0 is the producer (one thread issues the TMA copies; the
 *    group gives registers back with setmaxnreg.dec), warpgroups 1..BLOCK_M/64 are consumers
 *    (setmaxnreg.inc) that only wait and multiply.
 * 4. wgmma.mma_async.m64nBLOCK_Nk16 (PTX ISA 9.1, 9.7.15): one instruction per warpgroup
 *    multiplies a 64 x 16 tile of A by a 16 x BLOCK_N tile of B, both read straight from shared
 *    memory through 64-bit matrix descriptors (start address, leading / stride byte offsets,
 *    swizzle mode; 9.7.15.5.1.2.2), asynchronously: the warpgroup issues the 4 k-steps of a tile,
 *    commits them as a group and waits only for the previous tile's group (wgmma.wait_group 1)
 *    before releasing that tile's stage.
 *    A is K-major (its 128-byte rows are 64 k values): descriptor SBO = 1024 (8 rows), the
 *    k-step advances the start by 32 bytes. B is N-major (imm-trans-b = 1): the TMA brings it
 *    as BLOCK_N/64 boxes of 64 n x BLOCK_K k, so LBO = BLOCK_K * 128 bytes (from one 64-wide
 *    column block to the next) and SBO = 1024 (from 8 k-rows to the next), the canonical
 *    MN-major 128B layout ((8,8,m),(8,k)):((1,8,LBO),(64,SBO)) of 9.7.15.5.1.2.1.3.
 * 5. The accumulators (BLOCK_N / 2 floats per thread, row 16w + g (+8), columns 8q + 2t (+1))
 *    are stored to C from registers, as in the mma.sync rungs.
 * Measured (H100, 2026-11-24 07:44 UTC, kernels/RESULTS-mma.md, paired with cuBLAS in one run):
 * 97.6% / 104.2% of cuBLAS fp16 at 4096^3 / 8192^3 (680.2 / 659.7 TFLOP/s); the aim was >= 90%
 * at 8192^3 (issue #16). Left out on purpose, for later rungs: thread-block clusters with TMA
 * multicast, a persistent tile scheduler, a TMA store epilogue.
 *
 * Defines (-D, defaults in brackets): BLOCK_M [128] (64 per consumer warpgroup), BLOCK_N [256]
 *   (128 or 256), STAGES [4], GROUP_M [16]. BLOCK_K is 64 (one 128-byte swizzle row of A).
 *   THREADS = 128 * (BLOCK_M / 64 + 1) [384].
 * Signature: hgemm_wgmma(const void* tmap_a, const void* tmap_b, float* C, int M, int N, int K):
 *   tmap_a, tmap_b point to CUtensorMap objects (128 bytes) in global memory, built on the host
 *   (grader.bench.mma.tensor_map): A: fp16, dims {K, M}, row stride K*2 bytes, box {64, BLOCK_M};
 *   B: fp16, dims {N, K}, row stride N*2 bytes, box {64, 64}; both CU_TENSOR_MAP_SWIZZLE_128B.
 * Registers (ptxas via NVRTC 13.0, sm_90a): 168 (the cap for 384 threads; setmaxnreg moves them to the consumers), no spill.
 * Launch: block (THREADS, 1, 1), grid (N / BLOCK_N, M / BLOCK_M) (the kernel remaps the block index).
 *         Dynamic shared memory: STAGES * (BLOCK_M + BLOCK_N) * 64 * 2 + 1024 + 16 * STAGES bytes
 *         [197696] (the 1024: the tiles start on a 1024-byte boundary, as the 128-byte swizzle
 *         pattern repeats every 1024 bytes). M, N multiples of BLOCK_M, BLOCK_N; K of 64.
 * Requires: sm_90a
 * Check:  python -m grader.bench.mma --only wgmma
 */
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900 || !defined(__CUDA_ARCH_FEAT_SM90_ALL))
#error "hgemm_wgmma needs sm_90a (wgmma.mma_async, setmaxnreg): compile with -arch=sm_90a"
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
#define GROUP_M 16
#endif
#define BLOCK_K 64
#define CONSUMERS (BLOCK_M / 64)
#ifndef THREADS
#define THREADS (128 * (CONSUMERS + 1))
#endif
#define A_BYTES (BLOCK_M * BLOCK_K * 2)
#define B_BYTES (BLOCK_K * BLOCK_N * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
static_assert(BLOCK_M % 64 == 0 && (BLOCK_N == 128 || BLOCK_N == 256), "shapes");
static_assert(THREADS == 128 * (CONSUMERS + 1), "one producer warpgroup + one per 64 rows");

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
// d (64 x BLOCK_N, BLOCK_N/2 floats per thread) += A (K-major) * B (N-major, imm-trans-b = 1)
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
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
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
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 1;\n}\n"
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
hgemm_wgmma(const void* tmap_a, const void* tmap_b, float* C, int M, int N, int K)
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
                tma_load_2d(a_dst, tmap_a, full + 8 * s, kt * BLOCK_K, row0);  // (k, m) of the box corner
                #pragma unroll
                for (int j = 0; j < BLOCK_N / 64; ++j)  // 64 columns x 64 k per box
                    tma_load_2d(b_dst + j * BLOCK_K * 128, tmap_b, full + 8 * s, col0 + 64 * j, kt * BLOCK_K);
            }
        }
        return;
    }

    // consumer warpgroup c: rows 64c .. 64c+63 of the block tile
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int c = wg - 1, tid = threadIdx.x % 128;
    float d[BLOCK_N / 2];
    #pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i)
        d[i] = 0.0f;
    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(full + 8 * s, (kt / STAGES) & 1);  // stage s has landed
        const unsigned a_tile = tiles + s * STAGE_BYTES + c * 64 * 128, b_tile = tiles + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();
        #pragma unroll
        for (int k = 0; k < BLOCK_K / 16; ++k)  // A: +32 bytes per 16 k; B: +16 rows of 128 bytes
            wgmma_tile(d, make_desc(a_tile + 32 * k, 16, 1024), make_desc(b_tile + 2048 * k, BLOCK_K * 128, 1024), 1);
        wgmma_commit();
        wgmma_wait<1>();  // the group of tile kt-1 is done: its stage can be refilled
        if (kt > 0 && tid % 32 == 0)
            mbar_arrive(empty + 8 * ((kt - 1) % STAGES));
    }
    wgmma_wait<0>();

    // d[i]: row 16w + g + 8((i/2)%2), column 8(i/4) + 2t + i%2 of this warpgroup's 64 x BLOCK_N tile
    const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
    float* c_tile = C + (size_t)(row0 + 64 * c + 16 * w + g) * N + col0 + 2 * t;
    #pragma unroll
    for (int q = 0; q < BLOCK_N / 8; ++q) {
        *reinterpret_cast<float2*>(c_tile + 8 * q) = make_float2(d[4 * q], d[4 * q + 1]);
        *reinterpret_cast<float2*>(c_tile + (size_t)8 * N + 8 * q) = make_float2(d[4 * q + 2], d[4 * q + 3]);
    }
}
