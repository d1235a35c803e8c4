// fp8-gemm adversarial mistake fp8_cp_async_not_waited (grader.checking.exercises): tests/checking/fp8_right/
// cp_async_zero_fill.cu without its cp.async.wait_group 0: the copies are committed, and the __syncthreads() that
// follows waits for the threads, not for the copies, so the fragments may read the tiles before they land
#include <cuda_fp8.h>

__device__ __forceinline__ void copy16(void* dst, const void* src, int bytes)
{
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(d), "l"(src), "r"(bytes));
}

extern "C" __global__ void fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,
                                    int M, int N, int K, float scale_a, float scale_b)
{
    __shared__ __align__(16) unsigned char sA[32][32];
    __shared__ __align__(16) unsigned char sB[16][32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int mb = blockIdx.y * 32, n0 = blockIdx.x * 16, wm = warp * 16;
    float acc[2][4] = {};
    for (int k0 = 0; k0 < K; k0 += 32) {
        // 64 chunks of A, 32 of B: the 64 threads take one of A and half of them one of B
        for (int e = threadIdx.x; e < 96; e += blockDim.x) {
            const bool isA = e < 64;
            const int c = isA ? e : e - 64, r = c / 2, kc = k0 + 16 * (c % 2);
            const int row = (isA ? mb : n0) + r, rows = isA ? M : N;
            unsigned char* dst = isA ? &sA[r][16 * (c % 2)] : &sB[r][16 * (c % 2)];
            const __nv_fp8_storage_t* base = isA ? A : B;
            const int left = row < rows ? max(0, min(16, K - kc)) : 0;
            if (K % 16 == 0)
                copy16(dst, left ? base + (size_t)row * K + kc : base, left);
            else
                for (int j = 0; j < 16; ++j) dst[j] = j < left ? base[(size_t)row * K + kc + j] : 0;
        }
        asm volatile("cp.async.commit_group;\n" ::);
        __syncthreads();
        unsigned a[4];
        a[0] = *reinterpret_cast<const unsigned*>(&sA[wm + g][4 * t]);
        a[1] = *reinterpret_cast<const unsigned*>(&sA[wm + g + 8][4 * t]);
        a[2] = *reinterpret_cast<const unsigned*>(&sA[wm + g][16 + 4 * t]);
        a[3] = *reinterpret_cast<const unsigned*>(&sA[wm + g + 8][16 + 4 * t]);
        for (int h = 0; h < 2; ++h) {
            const unsigned b0 = *reinterpret_cast<const unsigned*>(&sB[8 * h + g][4 * t]);
            const unsigned b1 = *reinterpret_cast<const unsigned*>(&sB[8 * h + g][16 + 4 * t]);
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
        }
        __syncthreads();  // the next k-step's copies overwrite the tiles
    }
    const float s = scale_a * scale_b;
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const int r = mb + wm + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];
        }
}
