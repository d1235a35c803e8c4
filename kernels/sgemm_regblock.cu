/*
 * sgemm_regblock: C = A * B on CUDA cores with 2D register blocking and float4 loads,
 * fp32, row-major. A is M x K, B is K x N, C is M x N. The ladder's rung after
 * sgemm_tiled.cu (the idea of siboehm/SGEMM_CUDA kernels 5-6).
 *
 * What changed from sgemm_tiled: a block of 256 threads computes a 128 x 128 tile of C,
 * and each thread an 8 x 8 sub-tile of it, held in 64 registers. Per step along K
 * (BK = 8) a thread reads 8 values of A and 8 of B from shared memory into registers and
 * does 64 FMAs with them: 4 FMAs per shared-memory load instead of the tiled kernel's 1/2.
 * - A's tile is stored transposed (As[k][m]) so a thread's 8 A values are contiguous;
 *   each row of As is padded by 4 floats so the transposing stores hit 32 different banks.
 * - A thread's 8 rows are two groups of 4 (ty*4 and 64 + ty*4), likewise its columns, so
 *   the 16 threads of a half-warp read 64 consecutive floats: float4 shared loads, no bank
 *   conflicts.
 * - Global loads are float4 (16 bytes per thread) when K and N are multiples of 4 (rows
 *   start 16-byte aligned); otherwise, and at the edges, scalar loads with bounds checks
 *   that fill zeros. So any M, N, K >= 1 is correct; the fast path is M, N multiples of
 *   128 and K of 8.
 *
 * Launch: block (256, 1, 1), grid (ceil(N / 128), ceil(M / 128)), blockIdx.x along the
 *         columns of C. Any M, N, K >= 1.
 * Check:  python -m pytest tests/lessons/test_lessons_01_03.py -k regblock
 *         (notebook 03 times it beside cuBLAS fp32)
 */
#define BM 128
#define BN 128
#define BK 8
#define THREADS 256
#define PAD 4

__device__ __forceinline__ float4 load4(const float* P, int r, int c, int rows, int cols, bool vec)
{
    // four consecutive floats of row r, columns c .. c+3; zeros outside the matrix
    if (vec && r < rows && c + 3 < cols)
        return *reinterpret_cast<const float4*>(P + (size_t)r * cols + c);
    float4 v;
    const float* p = P + (size_t)r * cols;
    v.x = (r < rows && c + 0 < cols) ? p[c + 0] : 0.0f;
    v.y = (r < rows && c + 1 < cols) ? p[c + 1] : 0.0f;
    v.z = (r < rows && c + 2 < cols) ? p[c + 2] : 0.0f;
    v.w = (r < rows && c + 3 < cols) ? p[c + 3] : 0.0f;
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM + PAD];  // A tile transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN + PAD];  // B tile: Bs[k][n]
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;  // 16 x 16 threads, each 8 x 8 outputs
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int a_row = tid / 2, a_col = (tid % 2) * 4;    // A tile 128 x 8: one float4 each
    const int b_row = tid / 32, b_col = (tid % 32) * 4;  // B tile 8 x 128: one float4 each
    const bool vec = (K % 4 == 0) && (N % 4 == 0);

    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        float4 a = load4(A, bm + a_row, k0 + a_col, M, K, vec);
        As[a_col + 0][a_row] = a.x;
        As[a_col + 1][a_row] = a.y;
        As[a_col + 2][a_row] = a.z;
        As[a_col + 3][a_row] = a.w;
        *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = load4(B, k0 + b_row, bn + b_col, K, N, vec);
        __syncthreads();  // the tiles are complete

        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[8], rb[8];
            float4 t;
            t = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
            ra[0] = t.x; ra[1] = t.y; ra[2] = t.z; ra[3] = t.w;
            t = *reinterpret_cast<const float4*>(&As[k][64 + ty * 4]);
            ra[4] = t.x; ra[5] = t.y; ra[6] = t.z; ra[7] = t.w;
            t = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
            rb[0] = t.x; rb[1] = t.y; rb[2] = t.z; rb[3] = t.w;
            t = *reinterpret_cast<const float4*>(&Bs[k][64 + tx * 4]);
            rb[4] = t.x; rb[5] = t.y; rb[6] = t.z; rb[7] = t.w;
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] += ra[i] * rb[j];  // 64 FMAs from 16 shared loads
        }
        __syncthreads();  // everyone is done with the tiles before they are overwritten
    }

    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        int r = bm + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (r >= M) continue;
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            int c = bn + h * 64 + tx * 4;
            float* out = C + (size_t)r * N + c;
            if (vec && c + 3 < N) {
                *reinterpret_cast<float4*>(out) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            } else {
                #pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (c + j < N) out[j] = acc[i][4 * h + j];
            }
        }
    }
}
