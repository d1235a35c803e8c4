/*
 * mma_peak_niter: the register-only ceiling of mma.sync (notebook 10), as wmma_peak_niter.cu
 * measures it for WMMA (notebook 06); mma_peak_niter_f64.cu does the same for fp64.
 *
 * Every warp w loads one A and one B fragment ONCE from global memory, straight into the
 * registers the PTX ISA assigns to each lane (9.1, 9.7.14.5.8: no ldmatrix, no shared memory), then issues `niter` mma.sync round-robin into NACC independent
 * accumulators (independent, so an mma need not wait for the previous one's result), adds
 * them and stores the 16x8 sum. Moving 1.3 KB (f16) per warp whatever niter is, the kernel is
 * bound by the tensor cores once niter is large: that TFLOP/s is what no mma.sync GEMM can pass.
 *
 * mma_peak_niter (fp16 in, fp32 out): mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.
 *   A + 256*w: 16x16 halves, B + 128*w: 16x8 halves, C + 128*w: 16x8 floats (all row-major).
 *   FLOPs = W * niter * 2 * 16 * 8 * 16.
 * Result: C_w = niter * A_w B_w.
 *
 * Defines (-D, defaults in brackets): NACC [8] (independent accumulators, 1..8).
 * Signature: mma_peak_niter(const half* A, const half* B, float* C, int niter), niter >= 1.
 * Launch: block (THREADS, 1, 1) with THREADS a multiple of 32 (e.g. 256), any grid;
 *         W = gridDim.x * THREADS / 32 warps.
 * Requires: sm_80
 * Check:  python -m grader.bench.mma --only peak
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "mma_peak_niter needs sm_80 or newer (mma.sync m16n8k16 with fp32 accumulators)"
#endif
#include <cuda_fp16.h>

#ifndef NACC
#define NACC 8
#endif
static_assert(NACC >= 1 && NACC <= 8, "1 to 8 accumulators");

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ unsigned pack(half lo, half hi)  // lo in bits 0-15
{
    return (unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16);
}

extern "C" __global__ void mma_peak_niter(const half* A, const half* B, float* C, int niter)
{
    const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const half* a_w = A + 256 * w;
    const half* b_w = B + 128 * w;
    unsigned a[4], b[2];
    #pragma unroll
    for (int r = 0; r < 4; ++r)  // a_r: row g + 8(r%2), columns 2t, 2t+1 (+8 for r >= 2)
        a[r] = pack(a_w[(g + 8 * (r & 1)) * 16 + 2 * t + 8 * (r >> 1)],
                    a_w[(g + 8 * (r & 1)) * 16 + 2 * t + 8 * (r >> 1) + 1]);
    #pragma unroll
    for (int r = 0; r < 2; ++r)  // b_r: rows k = 2t, 2t+1 (+8 for r = 1), column g
        b[r] = pack(b_w[(2 * t + 8 * r) * 8 + g], b_w[(2 * t + 8 * r + 1) * 8 + g]);

    float acc[NACC][4];
    #pragma unroll
    for (int c = 0; c < NACC; ++c)
        #pragma unroll
        for (int e = 0; e < 4; ++e)
            acc[c][e] = 0.0f;
    int i = 0;
    for (; i + NACC <= niter; i += NACC) {  // NACC independent chains
        #pragma unroll
        for (int c = 0; c < NACC; ++c)
            mma16816(acc[c], a, b);
    }
    for (; i < niter; ++i)
        mma16816(acc[0], a, b);
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
        float s = 0.0f;
        #pragma unroll
        for (int c = 0; c < NACC; ++c)
            s += acc[c][e];
        C[128 * w + (g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1)] = s;  // c_e: row g (+8), column 2t (+1)
    }
}
