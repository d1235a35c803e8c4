// fp8-gemm, right in an unusual way (tests/checking/test_fp8_students.py): the roles of A and B swapped in the mma,
// D = B A^T (16 columns of C as the mma's m16, 8 rows of C as its n8), stored transposed: C's (r, c) is D's (c, r).
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
    float acc[2][4] = {};
    for (int k0 = 0; k0 < K; k0 += 32) {
        unsigned x[4];  // "A" of the mma: 16 rows of B (columns n0 .. n0 + 15 of C)
        x[0] = load4(B, n0 + g, N, k0 + 4 * t, K);
        x[1] = load4(B, n0 + g + 8, N, k0 + 4 * t, K);
        x[2] = load4(B, n0 + g, N, k0 + 16 + 4 * t, K);
        x[3] = load4(B, n0 + g + 8, N, k0 + 16 + 4 * t, K);
        for (int h = 0; h < 2; ++h) {  // two groups of 8 rows of C
            unsigned y[2];
            y[0] = load4(A, m0 + 8 * h + g, M, k0 + 4 * t, K);
            y[1] = load4(A, m0 + 8 * h + g, M, k0 + 16 + 4 * t, K);
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
        }
    }
    const float s = scale_a * scale_b;
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            // D (16 x 8) element (g + 8 * (i >> 1), 2t + (i & 1)) is C's (row 2t + (i & 1), column g + 8 * (i >> 1))
            const int c = n0 + g + 8 * (i >> 1), r = m0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];
        }
}
