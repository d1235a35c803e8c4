// Adversarial: a correct wmma-gemm answer computed on CUDA cores (must fail "no-tensor-cores").
#include <cuda_fp16.h>
extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    // Same launch as the WMMA kernel (one warp per 16x16 tile), but each lane loops.
    for (int e = threadIdx.x; e < 256; e += 32) {
        int row = blockIdx.x * 16 + e / 16, col = blockIdx.y * 16 + e % 16;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
        C[row * N + col] = acc;
    }
}
