/*
 * im2col: unfold the sliding windows of a convolution into the rows of a matrix, so that a
 * convolution becomes one GEMM: y = col x Wmat, with Wmat[(c*R + r)*S + s][k] = w[k][c][r][s].
 *
 * x is NCHW fp16. With P = (H + 2*pad - R) / stride + 1 and Q = (W + 2*pad - S) / stride + 1,
 * col is (N*P*Q) x (C*R*S) fp16, row-major: row (n*P + p)*Q + q holds the window of output
 * pixel (n, p, q), column (c*R + r)*S + s holds
 *     x[n][c][p*stride - pad + r][q*stride - pad + s]   (0 where that falls in the padding).
 * One thread per element of col; consecutive threads write consecutive elements (coalesced
 * writes), and neighbouring windows re-read the same input pixels (R*S/stride^2 times: the
 * cost of materialising the matrix that implicit GEMM avoids).
 *
 * Index arithmetic is 32-bit: 64-bit integer division is emulated in software on GPUs and
 * made an earlier version 4x slower.
 * Launch: block (256, 1, 1), grid (ceil(N*P*Q*C*R*S / 256), 1, 1). Any sizes with
 *         N*C*H*W and N*P*Q*C*R*S < 2^31 elements; stride >= 1, pad >= 0.
 * Check:  python -m grader.bench_conv   (im2col rows; reference grader.conv.im2col_nchw)
 */
#include <cuda_fp16.h>

extern "C" __global__ void im2col(const half* x, half* col, int N, int C, int H, int W,
                                  int R, int S, int pad, int stride)
{
    // BEGIN SOLUTION (about 16 lines)
    const int P = (H + 2 * pad - R) / stride + 1;
    const int Q = (W + 2 * pad - S) / stride + 1;
    const int CRS = C * R * S;
    const int total = N * P * Q * CRS;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;

    int column = idx % CRS;  // (c*R + r)*S + s
    int row = idx / CRS;  // (n*P + p)*Q + q
    int s = column % S, r = (column / S) % R, c = column / (R * S);
    int q = row % Q, p = (row / Q) % P, n = row / (P * Q);
    int h = p * stride - pad + r;
    int w = q * stride - pad + s;
    half v = __float2half(0.0f);
    if (h >= 0 && h < H && w >= 0 && w < W)
        v = x[((n * C + c) * H + h) * W + w];
    col[idx] = v;
    // END SOLUTION
}
