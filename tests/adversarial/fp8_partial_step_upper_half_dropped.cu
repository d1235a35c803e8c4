// fp8-gemm adversarial mistake fp8_partial_step_upper_half_dropped (grader.checking.exercises):
// kernels/fp8_gemm_mma.cu with a[2], a[3] (codes k0+16..k0+31) loaded only when the
// whole k-step is inside K: a partial last k-step of more than 16 codes loses its upper half
// (seen only where K % 32 > 16)
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
        unsigned a[4];
        a[0] = load4(A, m0 + g, M, k0 + 4 * t, K);
        a[1] = load4(A, m0 + g + 8, M, k0 + 4 * t, K);
        const bool whole = k0 + 32 <= K;
        a[2] = whole ? load4(A, m0 + g, M, k0 + 16 + 4 * t, K) : 0u;
        a[3] = whole ? load4(A, m0 + g + 8, M, k0 + 16 + 4 * t, K) : 0u;
        for (int h = 0; h < 2; ++h) {  // the two n8 halves of the warp's 16 columns
            unsigned b[2];
            b[0] = load4(B, n0 + 8 * h + g, N, k0 + 4 * t, K);
            b[1] = load4(B, n0 + 8 * h + g, N, k0 + 16 + 4 * t, K);
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    const float s = scale_a * scale_b;  // the epilogue: dequantise the fp32 sum once
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const int r = m0 + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];
        }
}
