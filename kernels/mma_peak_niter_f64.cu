/*
 * mma_peak_niter_f64: the register-only ceiling of the fp64 mma.sync shapes Hopper added
 * (notebook 10), as dmma_gemm_peak_niter.cu measures WMMA's m8n8k4 (notebook 07).
 *
 * PTX ISA 7.8 added mma.sync.aligned.m16n8k{4,8,16}.row.col.f64.f64.f64.f64 for sm_90 (PTX ISA
 * 9.1, 9.7.14.5.14, "Target ISA Notes": ".f64 floating point type mma operation with .m16n8k4,
 * .m16n8k8, and .m16n8k16 shapes require sm_90 or higher"); WMMA still exposes only m8n8k4.
 * Every warp w loads one A (16 x F64_K) and one B (F64_K x 8) fragment ONCE from global memory
 * into the registers the PTX ISA assigns to each lane (9.7.14.5.6-9.7.14.5.8), issues `niter`
 * mma.sync round-robin into NACC independent accumulators, adds them and stores the 16 x 8 sum.
 * Result: C_w = niter * A_w B_w; FLOPs = W * niter * 2 * 16 * 8 * F64_K.
 *
 * Defines (-D, defaults in brackets): F64_K [16] (4, 8 or 16), NACC [8] (1..8).
 * Signature: mma_peak_niter_f64(const double* A, const double* B, double* C, int niter), niter >= 1;
 *   A + 16*F64_K*w, B + 8*F64_K*w, C + 128*w, row-major per warp.
 * Launch: block (THREADS, 1, 1) with THREADS a multiple of 32 (e.g. 256), any grid;
 *         W = gridDim.x * THREADS / 32 warps.
 * Requires: sm_90
 * Check:  python -m grader.bench.mma --only peak
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "mma_peak_niter_f64 needs sm_90 or newer (mma.sync m16n8k4/k8/k16 .f64)"
#endif

#ifndef NACC
#define NACC 8
#endif
#ifndef F64_K
#define F64_K 16
#endif
static_assert(NACC >= 1 && NACC <= 8, "1 to 8 accumulators");

// d += a * b on one 16x8xF64_K fp64 tile: A has F64_K/2 registers, B F64_K/4, C and D 4.
__device__ __forceinline__ void mma_f64(double (&d)[4], const double (&a)[F64_K / 2], const double (&b)[F64_K / 4])
{
#if F64_K == 4
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3]) : "d"(a[0]), "d"(a[1]), "d"(b[0]));
#elif F64_K == 8
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#elif F64_K == 16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#else
#error "F64_K must be 4, 8 or 16"
#endif
}

extern "C" __global__ void mma_peak_niter_f64(const double* A, const double* B, double* C, int niter)
{
    const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const double* a_w = A + 16 * F64_K * w;
    const double* b_w = B + 8 * F64_K * w;
    double a[F64_K / 2], b[F64_K / 4];
    #pragma unroll
    for (int r = 0; r < F64_K / 2; ++r)  // m16n8k4: a_r row g + 8r, column t; k8/k16: row g + 8(r%2), column t + 4(r/2)
        a[r] = F64_K == 4 ? a_w[(g + 8 * r) * F64_K + t] : a_w[(g + 8 * (r & 1)) * F64_K + t + 4 * (r >> 1)];
    #pragma unroll
    for (int r = 0; r < F64_K / 4; ++r)  // b_r: row t + 4r, column g
        b[r] = b_w[(t + 4 * r) * 8 + g];

    double acc[NACC][4];
    #pragma unroll
    for (int c = 0; c < NACC; ++c)
        #pragma unroll
        for (int e = 0; e < 4; ++e)
            acc[c][e] = 0.0;
    int i = 0;
    for (; i + NACC <= niter; i += NACC) {
        #pragma unroll
        for (int c = 0; c < NACC; ++c)
            mma_f64(acc[c], a, b);
    }
    for (; i < niter; ++i)
        mma_f64(acc[0], a, b);
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
        double s = 0.0;
        #pragma unroll
        for (int c = 0; c < NACC; ++c)
            s += acc[c][e];
        C[128 * w + (g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1)] = s;
    }
}
