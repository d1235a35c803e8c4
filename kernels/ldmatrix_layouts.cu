/*
 * ldsm_layout: what a shared-memory layout costs ldmatrix (notebook 10, bank conflicts of the
 * plain, padded and XOR-swizzled tiles of mma_gemm_ldmatrix.cu / mma_gemm_swizzled.cu).
 *
 * The block copies a 64 x 64 fp16 tile M (row-major) into shared memory in layout LAYOUT:
 *   0 plain:    row r at r * 128 bytes (rows 128 bytes apart: the 8 rows of one 8x8 read all
 *               start in bank 0, so the read takes 8 passes);
 *   1 padded:   row r at r * 144 bytes (8 halves of padding per row: one pass; 12.5% unused);
 *   2 swizzled: row r at r * 128 bytes, its 16-byte chunk c at chunk c ^ (r % 8) (one pass,
 *               nothing unused).
 * Then every warp w (its index in the grid) runs `iters` rounds of 4 ldmatrix.x4 (16 x 16
 * fragments at rows 16f, chunk pair (round + w) % 4) and sums the 32-bit words it received.
 * The sums do not depend on the layout (a layout only moves bytes), so every layout must give
 * the same `out`:
 * out[w * 32 + lane] = sum over rounds and fragments of the lane's 4 words (mod 2^32).
 * Shared-memory bound: the time per layout measures its passes (grader.lessons.beyond_wmma).
 *
 * Defines (-D, defaults in brackets): LAYOUT [2].
 * Signature: ldsm_layout(const half* M, unsigned* out, int iters); M: 64 x 64 halves.
 * Launch: block (THREADS, 1, 1), THREADS a multiple of 32 (e.g. 256), any grid; with
 *         W = gridDim.x * THREADS / 32 warps, out holds W * 32 words.
 * Requires: sm_75 (ldmatrix).
 * Check:  python -m grader.bench.mma --only banks
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 750
#error "ldmatrix_layouts needs sm_75 or newer (ldmatrix)"
#endif
#include <cuda_fp16.h>

#ifndef LAYOUT
#define LAYOUT 2
#endif

// byte offset of 16-byte chunk c (0..7) of row r (0..63) in the chosen layout
__device__ __forceinline__ unsigned chunk_at(int r, int c)
{
#if LAYOUT == 0
    return r * 128 + c * 16;
#elif LAYOUT == 1
    return r * 144 + c * 16;
#else
    return r * 128 + (c ^ (r & 7)) * 16;
#endif
}

extern "C" __global__ void ldsm_layout(const half* M, unsigned* out, int iters)
{
    __shared__ __align__(128) half tile[64 * 72];  // room for the padded layout
    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x) {  // 16-byte chunks of M
        const int r = i / 8, c = i % 8;
        *reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(tile) + chunk_at(r, c)) =
            *reinterpret_cast<const uint4*>(M + r * 64 + c * 8);
    }
    __syncthreads();
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    const int lane = threadIdx.x % 32;
    const size_t warp = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;  // in the grid
    unsigned sum = 0;
    for (int it = 0; it < iters; ++it) {
        const int pair = (it + warp) % 4;  // chunks 2*pair, 2*pair + 1 (16 columns)
        #pragma unroll
        for (int f = 0; f < 4; ++f) {
            unsigned r0, r1, r2, r3;
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                         : "r"(base + chunk_at(16 * f + (lane & 15), 2 * pair + (lane >> 4))));
            sum += r0 + r1 + r2 + r3;
        }
    }
    out[warp * 32 + lane] = sum;
}
