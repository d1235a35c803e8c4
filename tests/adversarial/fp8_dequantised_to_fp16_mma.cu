// fp8-gemm adversarial mistake fp8_dequantised_to_fp16_mma (grader.checking.exercises): the codes decoded to fp16
// (exactly: every e4m3 value is an fp16 value) and multiplied on the fp16 tensor cores, m16n8k16: the right
// answer, but not the FP8 instruction the exercise is about
#include <cuda_fp8.h>
#include <cuda_fp16.h>
__device__ __forceinline__ unsigned load2h(const __nv_fp8_storage_t* p, int row, int rows, int k, int K)
{
    __nv_fp8x2_storage_t two = 0;
    if (row < rows) {
        if (k < K) two |= p[(size_t)row * K + k];
        if (k + 1 < K) two |= (unsigned short)p[(size_t)row * K + k + 1] << 8;
    }
    __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(two, __NV_E4M3);
    return (unsigned)h.x | ((unsigned)h.y << 16);
}
extern "C" __global__ void fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,
                                    int M, int N, int K, float scale_a, float scale_b)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int m0 = (blockIdx.y * 2 + warp) * 16, n0 = blockIdx.x * 16;
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a[4];
        a[0] = load2h(A, m0 + g, M, k0 + 2 * t, K);
        a[1] = load2h(A, m0 + g + 8, M, k0 + 2 * t, K);
        a[2] = load2h(A, m0 + g, M, k0 + 8 + 2 * t, K);
        a[3] = load2h(A, m0 + g + 8, M, k0 + 8 + 2 * t, K);
        for (int h = 0; h < 2; ++h) {
            unsigned b[2];
            b[0] = load2h(B, n0 + 8 * h + g, N, k0 + 2 * t, K);
            b[1] = load2h(B, n0 + 8 * h + g, N, k0 + 8 + 2 * t, K);
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    const float s = scale_a * scale_b;
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const int r = m0 + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];
        }
}
