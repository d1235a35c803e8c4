/*
 * dmma_peak_niter: the fp64 twin of wmma_peak_niter.cu, to find the ceiling of WMMA's
 * only fp64 shape (m8n8k4, "DMMA") on this GPU, which bounds dmma_gemm_fast.cu.
 * Requires: sm_80
 *
 * Every warp w loads one 8x4 tile of A (A + 32*w) and one 4x8 tile of B (B + 32*w) into
 * fragments ONCE, then issues `niter` mma_sync round-robin into NACC independent fp64
 * accumulators, adds them element-wise and stores the 8x8 sum to C + 64*w (row-major).
 * Result: C_w = niter * A_w B_w. FLOPs = W * niter * 2 * 8 * 8 * 4 (W warps).
 *
 * Signature: dmma_peak_niter(const double* A, const double* B, double* C, int niter), niter >= 1.
 * Defines: NACC [4] (independent accumulators, 1 to 8).
 * Launch: block (THREADS, 1, 1) with THREADS a multiple of 32 (e.g. 256), any grid; with
 *         W = gridDim.x * THREADS / 32 warps, A and B hold 32 * W doubles, C 64 * W.
 * Check:  python -m grader.bench_wmma --only niter
 */
#include <mma.h>
using namespace nvcuda;

#ifndef NACC
#define NACC 4
#endif
static_assert(NACC >= 1 && NACC <= 8, "1 to 8 accumulators");

extern "C" __global__ void dmma_peak_niter(const double* A, const double* B, double* C, int niter)
{
    const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;

    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc[NACC];
    wmma::load_matrix_sync(a, A + 32 * w, 4);
    wmma::load_matrix_sync(b, B + 32 * w, 8);
    #pragma unroll
    for (int j = 0; j < NACC; ++j)
        wmma::fill_fragment(acc[j], 0.0);

    int i = 0;
    for (; i + NACC <= niter; i += NACC) {
        #pragma unroll
        for (int j = 0; j < NACC; ++j)
            wmma::mma_sync(acc[j], a, b, acc[j]);
    }
    for (; i < niter; ++i)
        wmma::mma_sync(acc[0], a, b, acc[0]);

    #pragma unroll
    for (int j = 1; j < NACC; ++j)
        #pragma unroll
        for (int e = 0; e < acc[0].num_elements; ++e)
            acc[0].x[e] += acc[j].x[e];
    wmma::store_matrix_sync(C + 64 * w, acc[0], 8, wmma::mem_row_major);
}
