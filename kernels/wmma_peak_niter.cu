/*
 * wmma_peak_niter: how many mma_sync per load make the tensor cores, not memory, the limit
 * (the amortisation experiment of NVIDIA's CUDA Fortran tensor-core post, in CUDA C++).
 *
 * Every warp w loads one 16x16 fp16 tile of A (A + 256*w) and one of B (B + 256*w) from
 * global memory into fragments ONCE, then issues `niter` mma_sync round-robin into 4
 * independent fp32 accumulators (independent, so consecutive mma need not wait for each
 * other), adds the 4 accumulators element-wise (legal: same fragment type, same layout) and
 * stores the 16x16 sum to C + 256*w. Each warp moves 1 KB in and 1 KB out and does
 * niter * 8192 flops: at niter = 1 the kernel is bound by memory and launch, as niter grows
 * the tensor cores become the limit and TFLOP/s approach the WMMA ceiling.
 * Result: C_w = niter * A_w B_w (each tile row-major, 16 x 16).
 *
 * Signature: wmma_peak_niter(const half* A, const half* B, float* C, int niter), niter >= 1.
 * Launch: block (THREADS, 1, 1) with THREADS a multiple of 32 (e.g. 256), any grid; with
 *         W = gridDim.x * THREADS / 32 warps, A and B hold W * 256 halves, C W * 256 floats.
 *         FLOPs = W * niter * 2 * 16 * 16 * 16.
 * Check:  python -m grader.bench_wmma --only niter
 */
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_peak_niter(const half* A, const half* B, float* C, int niter)
{
    const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1, c2, c3;
    wmma::load_matrix_sync(a, A + 256 * w, 16);
    wmma::load_matrix_sync(b, B + 256 * w, 16);
    wmma::fill_fragment(c0, 0.0f);
    wmma::fill_fragment(c1, 0.0f);
    wmma::fill_fragment(c2, 0.0f);
    wmma::fill_fragment(c3, 0.0f);

    int i = 0;
    for (; i + 4 <= niter; i += 4) {  // 4 independent chains
        wmma::mma_sync(c0, a, b, c0);
        wmma::mma_sync(c1, a, b, c1);
        wmma::mma_sync(c2, a, b, c2);
        wmma::mma_sync(c3, a, b, c3);
    }
    for (; i < niter; ++i)
        wmma::mma_sync(c0, a, b, c0);

    #pragma unroll
    for (int e = 0; e < c0.num_elements; ++e)
        c0.x[e] += c1.x[e] + c2.x[e] + c3.x[e];
    wmma::store_matrix_sync(C + 256 * w, c0, 16, wmma::mem_row_major);
}
