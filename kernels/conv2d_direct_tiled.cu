/*
 * conv2d_direct (tiled): single-channel 2D convolution on CUDA cores, fp32, the direct method
 * with a shared-memory tile of G. Arienzo, F. Coppola, L. Squitieri (University of Salerno),
 * "Tensor Unit Evaluation", listing 7. "same" output size, zero padding R/2:
 *     out[i][j] = sum_{a,b < R} mask[a][b] * img[i + a - R/2][j + b - R/2]   (0 outside)
 * (a correlation, as in CNN libraries: the mask is not flipped).
 *
 * Each 16 x 16 block computes a 16 x 16 tile of `out`. It first copies the (16 + R - 1)^2
 * input tile it needs (the tile plus a halo of R/2 on every side, zeros outside the image)
 * and the R x R mask into shared memory, waits, and then each thread computes one output
 * from shared memory: every input pixel is read from global memory about once per block
 * instead of R*R times.
 *
 * Launch: block (16, 16, 1), grid (ceil(W / 16), ceil(H / 16), 1). img, out are H x W
 *         row-major, mask is R x R row-major; R odd and R <= MAX_R (compile-time, default 15).
 * Check:  python -m grader.bench_conv   (reference grader.conv.conv2d_same)
 */
#ifndef MAX_R
#define MAX_R 15
#endif
#define TILE 16
#define SPAN (TILE + MAX_R - 1)

extern "C" __global__ void conv2d_direct(const float* img, const float* mask, float* out,
                                         int H, int W, int R)
{
    __shared__ float tile[SPAN][SPAN];
    __shared__ float m[MAX_R * MAX_R];
    if (R > MAX_R || R % 2 == 0) return;  // outside the contract: out stays untouched

    const int half_r = R / 2;
    const int span = TILE + R - 1;  // the part of `tile` this R uses
    const int row0 = blockIdx.y * TILE - half_r;  // image row of tile[0][*]
    const int col0 = blockIdx.x * TILE - half_r;
    const int tid = threadIdx.y * TILE + threadIdx.x;

    for (int e = tid; e < span * span; e += TILE * TILE) {  // the tile and its halo
        int i = e / span, j = e % span;
        int gi = row0 + i, gj = col0 + j;
        tile[i][j] = (gi >= 0 && gi < H && gj >= 0 && gj < W) ? img[(size_t)gi * W + gj] : 0.0f;
    }
    for (int e = tid; e < R * R; e += TILE * TILE)
        m[e] = mask[e];
    __syncthreads();

    int i = blockIdx.y * TILE + threadIdx.y;
    int j = blockIdx.x * TILE + threadIdx.x;
    if (i >= H || j >= W) return;
    float acc = 0.0f;
    for (int a = 0; a < R; ++a)
        for (int b = 0; b < R; ++b)
            acc += m[a * R + b] * tile[threadIdx.y + a][threadIdx.x + b];
    out[(size_t)i * W + j] = acc;
}
