/*
 * fp8_gemm (naive): C = scale_a * scale_b * (A * B^T) on the tensor cores in FP8 (e4m3), with
 * PTX mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 and fp32 accumulation (notebook 11).
 * A (M x K) and B (N x K) hold e4m3 codes, one byte each, both K-major: A row-major, B stored as
 * its transpose (the "TN" layout cuBLASLt's FP8 GEMM takes); C (M x N) is float, row-major.
 * Requires: sm_89 (Ada, Hopper: the e4m3/e5m2 mma shapes).
 *
 * One warp computes a 16 x 16 tile of C as two 16 x 8 mma tiles, walking K in steps of 32 and
 * loading its fragments straight from global memory (no shared memory: the naive rung).
 * Fragment layouts: PTX ISA 9.1, 9.7.14.5.10 "Matrix Fragments for mma.m16n8k32" (g = lane / 4,
 * t = lane % 4; four 8-bit elements per register, the lowest column in the lowest byte):
 *   A: a[0] row g, columns 4t .. 4t+3; a[1] row g+8, same columns; a[2], a[3] the same 16 further on;
 *   B: b[0] column g, rows (k) 4t .. 4t+3; b[1] rows 16 + 4t .. 16 + 4t+3;
 *   C/D: c[0], c[1] row g, columns 2t, 2t+1; c[2], c[3] row g+8.
 * Products of two e4m3 values are exact in fp32 (at most 8 significant bits); the sum is rounded
 * as the tensor core adds (FACTS.md, numerics). The per-tensor scales (what quantised the inputs
 * into e4m3's range, e.g. scale_a = amax(A) / 448) are applied once, in the epilogue, on the fp32
 * sum: a scaled FP8 GEMM costs no more than an unscaled one. From Python, pass the codes as uint8
 * (NumPy and CuPy have no fp8 type): tests/emu/test_fp8_kernels.py encodes them.
 *
 * Launch: block (64, 1, 1) (two warps stacked along M), grid (ceil(N / 16), ceil(M / 32)).
 *         Any M, N, K: codes past the edges are read as zero and stores are guarded.
 * Check:  python -m grader check fp8-gemm kernels/fp8_gemm_mma.cu (float64 reference of the decoded codes
 *         times the scales; tests/emu/test_fp8_kernels.py runs it too)
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
#error "fp8_gemm_mma needs sm_89 or newer (mma.sync m16n8k32 with .e4m3 inputs)"
#endif
#include <cuda_fp8.h>

// four consecutive codes of row `row` of a K-major matrix, from column k; zero (code 0x00 = +0)
// past its edges
__device__ __forceinline__ unsigned load4(const __nv_fp8_storage_t* p, int row, int rows, int k, int K)
{
    unsigned r = 0;
    if (row < rows)
        for (int j = 0; j < 4; ++j)
            if (k + j < K) r |= (unsigned)p[(size_t)row * K + k + j] << (8 * j);
    return r;
}

extern "C" __global__ void fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,
                                    int M, int N, int K, float scale_a, float scale_b)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int m0 = (blockIdx.y * 2 + warp) * 16, n0 = blockIdx.x * 16;
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    for (int k0 = 0; k0 < K; k0 += 32) {
        // BEGIN SOLUTION (about 17 lines)
        unsigned a[4];
        a[0] = load4(A, m0 + g, M, k0 + 4 * t, K);
        a[1] = load4(A, m0 + g + 8, M, k0 + 4 * t, K);
        a[2] = load4(A, m0 + g, M, k0 + 16 + 4 * t, K);
        a[3] = load4(A, m0 + g + 8, M, k0 + 16 + 4 * t, K);
        for (int h = 0; h < 2; ++h) {  // the two n8 halves of the warp's 16 columns
            unsigned b[2];
            b[0] = load4(B, n0 + 8 * h + g, N, k0 + 4 * t, K);
            b[1] = load4(B, n0 + 8 * h + g, N, k0 + 16 + 4 * t, K);
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
        // END SOLUTION
    }
    // BEGIN SOLUTION (about 6 lines)
    const float s = scale_a * scale_b;  // the epilogue: dequantise the fp32 sum once
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const int r = m0 + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];
        }
    // END SOLUTION
}
