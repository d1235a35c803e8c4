// fp8-gemm, right in an unusual way (tests/checking/test_fp8_students.py): each lane loads 16 codes of one row of
// A (lane l: row l % 16, codes 16 * (l / 16) ..), and every A register is fetched from the lane that holds it by
// __shfl_sync: a[0] (row g, codes 4t..) is word t of lane g, a[1] of lane g + 8, a[2] of lane g + 16, a[3] of g + 24.
#include <cuda_fp8.h>

__device__ __forceinline__ unsigned load4(const __nv_fp8_storage_t* p, int row, int rows, int k, int K)
{
    unsigned r = 0;
    if (row < rows)
        for (int j = 0; j < 4; ++j)
            if (k + j < K) r |= (unsigned)p[(size_t)row * K + k + j] << (8 * j);
    return r;
}

// word t of lane src's four words w[0..3]: every lane sends all four, each keeps the one it asks for
__device__ __forceinline__ unsigned word_of(const unsigned (&w)[4], int src, int t)
{
    unsigned r = 0;
    for (int q = 0; q < 4; ++q) {
        const unsigned v = __shfl_sync(0xffffffffu, w[q], src);
        if (q == t) r = v;
    }
    return r;
}

extern "C" __global__ void fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,
                                    int M, int N, int K, float scale_a, float scale_b)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int m0 = (blockIdx.y * 2 + warp) * 16, n0 = blockIdx.x * 16;
    float acc[2][4] = {};
    for (int k0 = 0; k0 < K; k0 += 32) {
        unsigned w[4];
        for (int q = 0; q < 4; ++q) w[q] = load4(A, m0 + (lane & 15), M, k0 + 16 * (lane >> 4) + 4 * q, K);
        unsigned a[4];
        for (int i = 0; i < 4; ++i) a[i] = word_of(w, g + 8 * i, t);
        for (int h = 0; h < 2; ++h) {
            unsigned b[2];
            b[0] = load4(B, n0 + 8 * h + g, N, k0 + 4 * t, K);
            b[1] = load4(B, n0 + 8 * h + g, N, k0 + 16 + 4 * t, K);
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
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
