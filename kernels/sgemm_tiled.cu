/*
 * sgemm_tiled: C = A * B on CUDA cores with shared-memory tiles (listing 3 of the Salerno
 * paper: G. Arienzo, F. Coppola, L. Squitieri, University of Salerno, "Tensor Unit Evaluation"),
 * fp32, row-major. A is M x K, B is K x N, C is M x N.
 *
 * A block of TILE x TILE threads computes a TILE x TILE tile of C. For each step along K
 * the block copies one TILE x TILE tile of A and one of B into shared memory (each thread
 * copies one element of each), waits, and every thread accumulates TILE products from
 * shared memory. Each global element is now read N/TILE (or M/TILE) times instead of N (M).
 * Out-of-range elements are loaded as 0, so any M, N, K works.
 *
 * Launch: block (TILE, TILE), grid (ceil(N / TILE), ceil(M / TILE)).
 *         TILE is a compile-time constant: -DTILE=16 or 32 (default 32).
 * Check:  python -m grader check sgemm-tiled kernels/sgemm_tiled.cu --tile 32
 */
#ifndef TILE
#define TILE 32
#endif

extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K)
{
    // BEGIN SOLUTION (about 17 lines)
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // the whole tile must be loaded before anyone reads it
        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // ... and read by everyone before the next tile overwrites it
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
    // END SOLUTION
}
