/*
 * sgemm_regblock_db: sgemm_regblock.cu plus double buffering, fp32, row-major.
 * A is M x K, B is K x N, C is M x N. The ladder's last rung.
 *
 * What changed from sgemm_regblock: two copies of each shared-memory tile. While the block
 * computes on one, every thread has already issued the global loads of the NEXT K-step into
 * registers; after the math it stores them into the other copy. The loads' latency hides
 * behind 512 FMAs per thread, and one __syncthreads() per K-step is enough instead of two
 * (the copy being written is not the copy being read).
 * Same tiles as sgemm_regblock: 128 x 128 per block of 256 threads, 8 x 8 per thread in
 * registers, BK = 8, A stored transposed and padded, float4 loads from global (when K and N
 * are multiples of 4) and from shared memory. Edges are loaded as zeros and stores are
 * guarded, so any M, N, K >= 1 is correct.
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
    __shared__ __align__(16) float As[2][BK][BM + PAD];  // two copies of A's tile, transposed
    __shared__ __align__(16) float Bs[2][BK][BN + PAD];  // two copies of B's tile
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int a_row = tid / 2, a_col = (tid % 2) * 4;
    const int b_row = tid / 32, b_col = (tid % 32) * 4;
    const bool vec = (K % 4 == 0) && (N % 4 == 0);

    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    // prologue: the first K-step into copy 0
    float4 a = load4(A, bm + a_row, a_col, M, K, vec);
    float4 b = load4(B, b_row, bn + b_col, K, N, vec);
    As[0][a_col + 0][a_row] = a.x;
    As[0][a_col + 1][a_row] = a.y;
    As[0][a_col + 2][a_row] = a.z;
    As[0][a_col + 3][a_row] = a.w;
    *reinterpret_cast<float4*>(&Bs[0][b_row][b_col]) = b;
    __syncthreads();

    int cur = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) {  // issue the next K-step's global loads now; use them after the math
            a = load4(A, bm + a_row, k0 + BK + a_col, M, K, vec);
            b = load4(B, k0 + BK + b_row, bn + b_col, K, N, vec);
        }
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[8], rb[8];
            float4 t;
            t = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4]);
            ra[0] = t.x; ra[1] = t.y; ra[2] = t.z; ra[3] = t.w;
            t = *reinterpret_cast<const float4*>(&As[cur][k][64 + ty * 4]);
            ra[4] = t.x; ra[5] = t.y; ra[6] = t.z; ra[7] = t.w;
            t = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4]);
            rb[0] = t.x; rb[1] = t.y; rb[2] = t.z; rb[3] = t.w;
            t = *reinterpret_cast<const float4*>(&Bs[cur][k][64 + tx * 4]);
            rb[4] = t.x; rb[5] = t.y; rb[6] = t.z; rb[7] = t.w;
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] += ra[i] * rb[j];
        }
        if (more) {  // fill the other copy; nobody reads it during this step
            const int nxt = cur ^ 1;
            As[nxt][a_col + 0][a_row] = a.x;
            As[nxt][a_col + 1][a_row] = a.y;
            As[nxt][a_col + 2][a_row] = a.z;
            As[nxt][a_col + 3][a_row] = a.w;
            *reinterpret_cast<float4*>(&Bs[nxt][b_row][b_col]) = b;
            __syncthreads();  // the next copy is complete, and everyone finished this one
            cur = nxt;
        }
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
