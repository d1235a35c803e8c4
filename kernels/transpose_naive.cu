/*
 * transpose (naive): out = in^T for a rows x cols fp32 matrix, row-major in and out
 * (out is cols x rows: out[c * rows + r] = in[r * cols + c]).
 *
 * Each block handles one 32 x 32 tile; its 32 x 8 threads walk the tile in 4 steps of 8 rows
 * (the CUDA samples' TILE_DIM 32 / BLOCK_ROWS 8 scheme), so each thread moves 4 elements.
 * The reads are coalesced (a warp reads 32 consecutive floats of one row of `in`), but the
 * writes are strided: the same warp writes 32 floats that lie `rows` floats apart in `out`,
 * one 32-byte sector per float. This is the "before" picture of the memory-layout lesson.
 *
 * Launch: block (32, 8, 1), grid (ceil(cols / 32), ceil(rows / 32), 1). Any rows, cols >= 1.
 * Check:  python -m grader.bench_conv   (transpose rows: correctness, then GB/s beside a copy)
 */
#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols)
{
    int c = blockIdx.x * TILE_DIM + threadIdx.x;  // column of `in` this thread reads
    int r0 = blockIdx.y * TILE_DIM + threadIdx.y;  // first row of `in` this thread reads
    if (c >= cols) return;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        int r = r0 + j;
        if (r < rows)
            out[(size_t)c * rows + r] = in[(size_t)r * cols + c];  // read along a row, write down a column
    }
}
