/*
 * sparse24_compress + sparse_gemm (naive): 2:4 structured sparsity on the tensor cores, fp16 in,
 * fp32 accumulate, with PTX mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 (notebook 11).
 * C = A * B; A (M x K) fp16 with at most 2 non-zeros in every 4 consecutive elements of a row
 * (after sparse24_compress's pruning), B (K x N) fp16, C (M x N) float; all row-major, contiguous.
 * Requires: sm_80 (mma.sp with .f16).
 *
 * 1. sparse24_compress prunes and compresses A: in each chunk of 4 columns of a row it keeps the
 *    2 largest magnitudes (the lower column on a tie) and writes them, in column order, to
 *    Av (M x K/2 halves), and their two 2-bit column indices to a 4-bit field of Am: one
 *    unsigned short per 16 columns of a row (Am is M x K/16), chunk j in bits 4j..4j+3, the
 *    lower index in the low 2 bits. A chunk with fewer non-zeros keeps zeros: the indices always
 *    name two different columns (equal ones are undefined behaviour for mma.sp).
 * 2. sparse_gemm multiplies: one warp computes a 16 x 16 tile of C as two 16 x 8 mma.sp tiles,
 *    walking K in steps of 32 (16 stored values per row), fragments loaded from global memory.
 *    Layouts: PTX ISA 9.1, 9.7.14.6.1 "Sparse matrix storage", 9.7.14.6.2.2 "Matrix Fragments for
 *    sparse mma.m16n8k32 with .f16 and .bf16 types" (g = lane / 4, t = lane % 4):
 *      A: the 16 x 16 stored values in the dense m16n8k16 A layout: a[0] row g, values 2t, 2t+1;
 *         a[1] row g+8; a[2], a[3] values 8 + 2t, 8 + 2t+1;
 *      B (32 x 8): b[j] column g, rows (k) 8j + 2t, 8j + 2t+1 (low half first);
 *      metadata: with sparsity selector 0, lanes 4g and 4g+1 hold it: lane 4g+h, bits 0-15 the
 *         fields of row g, columns 16h .. 16h+15 of the step; bits 16-31 those of row g+8;
 *      C/D: as mma.m16n8k16: c[0], c[1] row g, columns 2t, 2t+1; c[2], c[3] row g+8.
 * Half of A's multiplications are skipped: the tensor core reads B's rows the metadata names, so
 * a 16 x 8 x 32 sparse mma costs what a dense 16 x 8 x 16 does (Ampere/Hopper: twice the dense
 * rate on 2:4 weights).
 *
 * Launch: sparse24_compress: block (128, 1, 1), grid (ceil(M * K/16 / 128), 1); K a multiple of 16.
 *         sparse_gemm: block (64, 1, 1) (two warps stacked along M), grid (ceil(N / 16), ceil(M / 32));
 *         any M, N; K a multiple of 16 (rows and columns past the edges read as zero).
 * Check:  tests/emu/test_fp8_kernels.py (dense float64 product of the pruned A)
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "sparse_gemm_mma_sp needs sm_80 or newer (mma.sp with .f16)"
#endif
#include <cuda_fp16.h>

extern "C" __global__ void sparse24_compress(const half* A, half* Av, unsigned short* Am, int M, int K)
{
    const int id = blockIdx.x * blockDim.x + threadIdx.x;  // one (row, 16 columns) per thread
    const int groups = K / 16;
    if (id >= M * groups) return;
    const int r = id / groups, q = id % groups;
    unsigned short meta = 0;
    for (int j = 0; j < 4; ++j) {
        const half* x = A + (size_t)r * K + 16 * q + 4 * j;
        float mag[4];
        for (int i = 0; i < 4; ++i) mag[i] = fabsf(__half2float(x[i]));
        int i0 = 0;  // the largest magnitude, then the largest of the others
        for (int i = 1; i < 4; ++i) if (mag[i] > mag[i0]) i0 = i;
        int i1 = i0 == 0 ? 1 : 0;
        for (int i = 0; i < 4; ++i) if (i != i0 && mag[i] > mag[i1]) i1 = i;
        if (i1 < i0) { const int s = i0; i0 = i1; i1 = s; }
        Av[(size_t)r * (K / 2) + 8 * q + 2 * j] = x[i0];
        Av[(size_t)r * (K / 2) + 8 * q + 2 * j + 1] = x[i1];
        meta |= (unsigned short)((i0 | i1 << 2) << (4 * j));
    }
    Am[(size_t)r * groups + q] = meta;
}

// two stored values of row `row` from value column v (pair aligned), zero past the edges
__device__ __forceinline__ unsigned load_pair(const half* Av, int row, int M, int v, int KV)
{
    if (row >= M || v >= KV) return 0u;
    const unsigned lo = __half_as_ushort(Av[(size_t)row * KV + v]), hi = __half_as_ushort(Av[(size_t)row * KV + v + 1]);
    return lo | hi << 16;
}

// the metadata of row `row`, columns 16q .. 16q+15 (indices 0 and 1 past the edges: a valid field)
__device__ __forceinline__ unsigned load_meta(const unsigned short* Am, int row, int M, int q, int groups)
{
    return (row < M && q < groups) ? Am[(size_t)row * groups + q] : 0x4444u;
}

// B's elements (k, n) and (k+1, n), low half first; zero past the edges
__device__ __forceinline__ unsigned load_b(const half* B, int k, int n, int K, int N)
{
    const unsigned lo = (k < K && n < N) ? __half_as_ushort(B[(size_t)k * N + n]) : 0u;
    const unsigned hi = (k + 1 < K && n < N) ? __half_as_ushort(B[(size_t)(k + 1) * N + n]) : 0u;
    return lo | hi << 16;
}

extern "C" __global__ void sparse_gemm(const half* Av, const unsigned short* Am, const half* B, float* C,
                                       int M, int N, int K)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int m0 = (blockIdx.y * 2 + warp) * 16, n0 = blockIdx.x * 16;
    const int KV = K / 2, groups = K / 16;
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    for (int k0 = 0; k0 < K; k0 += 32) {
        const int v0 = k0 / 2;  // the step's first stored value
        unsigned a[4];
        a[0] = load_pair(Av, m0 + g, M, v0 + 2 * t, KV);
        a[1] = load_pair(Av, m0 + g + 8, M, v0 + 2 * t, KV);
        a[2] = load_pair(Av, m0 + g, M, v0 + 8 + 2 * t, KV);
        a[3] = load_pair(Av, m0 + g + 8, M, v0 + 8 + 2 * t, KV);
        // lanes 4g + h (selector 0) give the metadata; lanes 4g+2, 4g+3 load the same (unused)
        const int q = k0 / 16 + (t & 1);
        const unsigned e = load_meta(Am, m0 + g, M, q, groups) | load_meta(Am, m0 + g + 8, M, q, groups) << 16;
        for (int h = 0; h < 2; ++h) {
            const int n = n0 + 8 * h + g;
            unsigned b[4];
            for (int j = 0; j < 4; ++j) b[j] = load_b(B, k0 + 8 * j + 2 * t, n, K, N);
            asm volatile("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
                           "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
        }
    }
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const int r = m0 + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = acc[h][i];
        }
}
