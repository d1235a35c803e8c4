#include <cuda_fp8.h>
__device__ __forceinline__ unsigned load4(const __nv_fp8_storage_t* p, int row, int rows, int k, int K)
{
    unsigned r = 0;
    if (row < rows)
        for (int j = 0; j < 4; ++j)
            if (k + j < K) r |= (unsigned)p[(size_t)row * K + k + j] << (8 * j);
    return r;
}
// fp8-gemm adversarial mistake fp8_split_k_race (grader.checking.exercises): split K between the block's two warps: each computes the block's whole 32 x 16 tile over every
// other k-step; warp 0 stores its partial sums, warp 1 adds its own
extern "C" __global__ void fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,
                                    int M, int N, int K, float scale_a, float scale_b)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int mb = blockIdx.y * 32, n0 = blockIdx.x * 16;
    float acc[2][2][4] = {};
    for (int k0 = 32 * warp; k0 < K; k0 += 64)
        for (int v = 0; v < 2; ++v) {
            const int m0 = mb + 16 * v;
            unsigned a[4];
            a[0] = load4(A, m0 + g, M, k0 + 4 * t, K);
            a[1] = load4(A, m0 + g + 8, M, k0 + 4 * t, K);
            a[2] = load4(A, m0 + g, M, k0 + 16 + 4 * t, K);
            a[3] = load4(A, m0 + g + 8, M, k0 + 16 + 4 * t, K);
            for (int h = 0; h < 2; ++h) {
                unsigned b[2];
                b[0] = load4(B, n0 + 8 * h + g, N, k0 + 4 * t, K);
                b[1] = load4(B, n0 + 8 * h + g, N, k0 + 16 + 4 * t, K);
                asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                             : "+f"(acc[v][h][0]), "+f"(acc[v][h][1]), "+f"(acc[v][h][2]), "+f"(acc[v][h][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            }
        }
    const float s = scale_a * scale_b;
    for (int w = 0; w < 2; ++w) {
        if (warp == w)
            for (int v = 0; v < 2; ++v)
                for (int h = 0; h < 2; ++h)
                    for (int i = 0; i < 4; ++i) {
                        const int r = mb + 16 * v + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
                        if (r < M && c < N) {
                            if (w == 0) C[(size_t)r * N + c] = s * acc[v][h][i];
                            else C[(size_t)r * N + c] += s * acc[v][h][i];
                        }
                    }
        // (no __syncthreads(): warp 1 may add before warp 0 has stored)
    }
}
