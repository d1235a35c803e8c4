/*
 * transpose (tiled): out = in^T for a rows x cols fp32 matrix through a shared-memory tile,
 * so that both the reads of `in` and the writes of `out` are coalesced
 * (out is cols x rows: out[c * rows + r] = in[r * cols + c]).
 *
 * Each block copies one 32 x 32 tile of `in` into shared memory row by row (coalesced reads),
 * waits, then writes the tile's columns as rows of `out` (coalesced writes): the transpose
 * happens inside shared memory. The tile is declared [32][33]: reading a column of a [32][32]
 * float tile hits one bank 32 times (a 32-way bank conflict); the extra column shifts each
 * row by one bank so a column read touches 32 different banks.
 * 32 x 8 threads, each moving 4 elements (CUDA samples' TILE_DIM 32 / BLOCK_ROWS 8).
 *
 * Launch: block (32, 8, 1), grid (ceil(cols / 32), ceil(rows / 32), 1). Any rows, cols >= 1.
 * Check:  python -m grader.bench_conv   (transpose rows: correctness, then GB/s beside a copy)
 */
#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols)
{
    // BEGIN SOLUTION (about 14 lines)
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];  // +1: no bank conflicts on column reads

    int c = blockIdx.x * TILE_DIM + threadIdx.x;
    int r = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (c < cols && r + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(r + j) * cols + c];
    __syncthreads();  // the whole tile must be in shared memory before anyone reads a column

    // Swap the block's roles: x now runs along a row of `out` (a column of the tile).
    int oc = blockIdx.y * TILE_DIM + threadIdx.x;  // column of `out` = row of `in`
    int orow = blockIdx.x * TILE_DIM + threadIdx.y;  // row of `out` = column of `in`
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (oc < rows && orow + j < cols)
            out[(size_t)(orow + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
    // END SOLUTION
}
