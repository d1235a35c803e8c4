// fp8-gemm, right in an unusual way (tests/checking/test_fp8_students.py): ldmatrix_smem.cu's tiles, with B's fragments
// by two ldmatrix .x2 on generic addresses (no .shared: "l" pointers into __shared__) and A's by .x4 .shared::cta
// with a [reg + 0] address.
#include <cuda_fp8.h>
// A (32 x 32 codes) and B (16 x 32 codes) of each k-step staged in shared memory, fragments by ldmatrix:
// an 8x8 b16 matrix is 8 rows of 16 codes, so lane l's register holds codes 4t..4t+3 of row g
extern "C" __global__ void fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,
                                    int M, int N, int K, float scale_a, float scale_b)
{
    __shared__ __align__(16) unsigned char sA[32][32];
    __shared__ __align__(16) unsigned char sB[16][32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int mb = blockIdx.y * 32, n0 = blockIdx.x * 16, m0 = mb + warp * 16;
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    const unsigned a_base = static_cast<unsigned>(__cvta_generic_to_shared(&sA[0][0]));
    const unsigned b_base = static_cast<unsigned>(__cvta_generic_to_shared(&sB[0][0]));
    for (int k0 = 0; k0 < K; k0 += 32) {
        for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
            const int r = e / 32, k = e % 32;
            sA[r][k] = (mb + r < M && k0 + k < K) ? A[(size_t)(mb + r) * K + k0 + k] : 0;
        }
        for (int e = threadIdx.x; e < 16 * 32; e += blockDim.x) {
            const int r = e / 32, k = e % 32;
            sB[r][k] = (n0 + r < N && k0 + k < K) ? B[(size_t)(n0 + r) * K + k0 + k] : 0;
        }
        __syncthreads();
        unsigned a[4], b[4];
        {
            const int row = warp * 16 + (lane & 7) + 8 * ((lane >> 3) & 1), col = 16 * (lane >> 4);
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared::cta.b16 {%0, %1, %2, %3}, [%4 + 0];\n"
                         : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(a_base + row * 32 + col));
        }
        for (int h = 0; h < 2; ++h) {  // x2: lanes 0-15 give the rows (lanes 16-31's addresses are ignored)
            const int row = 8 * h + (lane & 7), col = 16 * ((lane >> 3) & 1);
            asm volatile("ldmatrix.sync.aligned.m8n8.x2.b16 {%0, %1}, [%2];"
                         : "=r"(b[2 * h]), "=r"(b[2 * h + 1]) : "l"(&sB[row][col]));
        }
        for (int h = 0; h < 2; ++h)
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * h]), "r"(b[2 * h + 1]));
        __syncthreads();
    }
    const float s = scale_a * scale_b;
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const int r = m0 + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];
        }
}
