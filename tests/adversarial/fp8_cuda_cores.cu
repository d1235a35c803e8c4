// fp8-gemm adversarial mistake fp8_cuda_cores (grader.checking.exercises): the codes decoded by hand (e4m3:
// bias 7, subnormals m * 2^-9) and multiplied on the CUDA cores: the right answer, no tensor cores
#include <cuda_fp8.h>
__device__ float e4m3(unsigned char c)
{
    int e = (c >> 3) & 15, m = c & 7;
    float v = e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + m / 8.0f, e - 7);
    return (c & 0x80) ? -v : v;
}
extern "C" __global__ void fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,
                                    int M, int N, int K, float scale_a, float scale_b)
{
    for (int idx = threadIdx.x; idx < 32 * 16; idx += blockDim.x) {
        const int r = blockIdx.y * 32 + idx / 16, c = blockIdx.x * 16 + idx % 16;
        if (r >= M || c >= N) continue;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += e4m3(A[(size_t)r * K + k]) * e4m3(B[(size_t)c * K + k]);
        C[(size_t)r * N + c] = scale_a * scale_b * acc;
    }
}
