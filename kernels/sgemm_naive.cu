/*
 * sgemm_naive: C = A * B on CUDA cores, fp32, all matrices row-major and contiguous.
 * A is M x K, B is K x N, C is M x N.
 *
 * One thread computes one element of C with a K-long dot product. threadIdx.x runs
 * along the columns of C, so the 32 threads of a warp read 32 neighbouring B elements and
 * write 32 neighbouring C elements (coalesced), while all of them read the same A element
 * (a broadcast). Every operand is re-read from global memory K times: the kernel is
 * memory-bound, which is what shared-memory tiling (sgemm_tiled.cu) fixes.
 *
 * Launch: block (16, 16), grid (ceil(N / 16), ceil(M / 16)). Any M, N, K >= 1.
 * Check:  python -m grader check sgemm-naive kernels/sgemm_naive.cu
 */
extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K)
{
    // BEGIN SOLUTION (about 7 lines)
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;  // the last blocks overhang the matrix edge
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
    // END SOLUTION
}
