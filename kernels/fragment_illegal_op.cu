/*
 * fragment_illegal_op: adding a per-column bias to an accumulator tile, D = C + bias[col],
 * three ways. Only element-wise operations that treat every x[i] alike are legal on a
 * fragment, because which element x[i] holds is unspecified (CUDA C++ Programming Guide,
 * "Warp Matrix Functions": "the mapping of matrix elements into fragment internal storage is
 * unspecified and subject to change in future architectures").
 *
 * add_bias_guess       WRONG everywhere: guesses that lane L holds row L / 2, columns
 *                      8 * (L % 2) + i (a natural-looking, made-up layout).
 * add_bias_positional  NOT PORTABLE: uses the sm_80 / sm_90 layout measured in notebook 05
 *                      (column 2t + (i & 1) + 8 (i >> 2), t = lane & 3). Right on Ampere and
 *                      Hopper, wrong on Volta, which lays fragments out differently.
 * add_bias_portable    PORTABLE: broadcast the bias into a 16 x 16 tile in shared memory and
 *                      load it into a fragment of the SAME type; x[i] of both fragments then
 *                      hold the same element, whatever the layout, so a uniform add is legal.
 * scale_relu           LEGAL: acc.x[i] = max(alpha * acc.x[i], 0), the same for every i.
 *
 * C, D: 16 x 16 fp32 row-major; bias: 16 floats. Launch: block (32, 1, 1), grid (1, 1, 1).
 */
#include <mma.h>
using namespace nvcuda;

typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> Acc;

extern "C" __global__ void add_bias_guess(const float* C, const float* bias, float* D)
{
    Acc c;
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    const int lane = threadIdx.x;
    for (int i = 0; i < c.num_elements; ++i)
        c.x[i] += bias[8 * (lane % 2) + i];  // assumes a layout nobody promised
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void add_bias_positional(const float* C, const float* bias, float* D)
{
    Acc c;
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    const int t = threadIdx.x & 3;
    for (int i = 0; i < c.num_elements; ++i)
        c.x[i] += bias[2 * t + (i & 1) + 8 * (i >> 2)];  // the sm_80/sm_90 layout only
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void add_bias_portable(const float* C, const float* bias, float* D)
{
    __shared__ __align__(32) float tile[16 * 16];
    for (int e = threadIdx.x; e < 256; e += 32)
        tile[e] = bias[e % 16];  // row r of the tile = bias
    __syncwarp();
    Acc c, b;
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    wmma::load_matrix_sync(b, tile, 16, wmma::mem_row_major);  // same type, same layout
    for (int i = 0; i < c.num_elements; ++i)
        c.x[i] += b.x[i];
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void scale_relu(const float* C, float alpha, float* D)
{
    Acc c;
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; ++i)
        c.x[i] = fmaxf(alpha * c.x[i], 0.0f);  // the same for every i: legal
    wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}
