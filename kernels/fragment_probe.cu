/*
 * probe: which lane of a warp holds which element of a WMMA fragment? (the Figure 5 experiment
 * of G. Arienzo, F. Coppola, L. Squitieri, University of Salerno, "Tensor Unit Evaluation").
 * NVIDIA calls the layout unspecified; these kernels measure it.
 *
 * `probe` loads a 16x16 half matrix M, with M[r*16 + c] = r*16 + c (exact in fp16), into
 *     wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> f
 * and every lane writes what it holds: held[lane * f.num_elements + i] = (int)f.x[i].
 * A value v read back at (lane, i) means lane `lane` holds element (v / cols, v % cols) in its
 * slot i. (num_elements is 16 for half A/B fragments on sm_80/sm_90: x[i + 8] repeats x[i].)
 *
 * The other kernels, probe_<kind>, do the same for the other fragment kinds: M is the
 * fragment's rows x cols matrix with every element equal to its ROW-MAJOR index r*cols + c,
 * stored in memory row-major, except for the *_col kinds, where the same logical matrix is
 * stored column-major (mem[c*rows + r] = r*cols + c), so the value always names the logical
 * element. Accumulators are loaded with mem_row_major. Sizes (rows x cols of M):
 *   a/b_f16_row|col 16x16, acc_f32/acc_f16 16x16, m32n8k16: A 32x16, B 16x8, acc 32x8,
 *   m8n32k16: A 8x16, B 16x32, acc 8x32, bf16 A/B 16x16 (bf16 bits; integers <= 256 exact),
 *   tf32 m16n16k8: A 16x8, B 8x16 (fp32 memory), acc 16x16, fp64 m8n8k4: A 8x4, B 4x8, acc 8x8.
 * `probe_acc_mma` (the one with a real mma_sync) takes 512 halves: a 16x16 A with values
 *   r*16 + c, then the 16x16 identity; it computes D = A * I on the tensor cores and dumps
 *   the fp32 D fragment (8 per lane): the layout of an accumulator that an mma produced.
 * Expected maps: grader/fragments.py (for the m16n16k16 kinds, the PTX ISA's mma.m16n8k16
 * fragment layout applied to two n8 halves); measured maps: fragment_maps_sm90.json. An H200
 * run found 0 mismatches against both, all 21 kinds (kernels/RESULTS-notebooks-04-05.md).
 *
 * Launch: block (32, 1, 1), grid (1, 1, 1): one warp. held has 32 * num_elements ints.
 * Requires: sm_80 (bf16, tf32 and fp64 fragments).
 * Check:  python -m grader.bench_conv --fragments-json kernels/fragment_maps_sm90.json
 */
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

__device__ __forceinline__ int to_int(half v) { return (int)__half2float(v); }
__device__ __forceinline__ int to_int(__nv_bfloat16 v) { return (int)__bfloat162float(v); }
__device__ __forceinline__ int to_int(float v) { return (int)v; }
__device__ __forceinline__ int to_int(double v) { return (int)v; }

template <typename Frag>
__device__ void dump(const Frag& f, int* held)
{
    // BEGIN SOLUTION (about 2 lines)
    for (int i = 0; i < f.num_elements; ++i)
        held[threadIdx.x * f.num_elements + i] = to_int(f.x[i]);
    // END SOLUTION
}

// The contract's probe: A 16x16 half, row-major.
extern "C" __global__ void probe(const half* M, int* held)
{
    // BEGIN SOLUTION (about 3 lines)
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// D = A * I on the tensor cores (M holds A, then I): the layout of an mma's result.
extern "C" __global__ void probe_acc_mma(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> d;
    wmma::load_matrix_sync(a, M, 16);
    wmma::load_matrix_sync(b, M + 256, 16);
    wmma::fill_fragment(d, 0.0f);
    wmma::mma_sync(d, a, b, d);
    dump(d, held);
}

// A 16x16, stored column-major
extern "C" __global__ void probe_a_f16_col(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// B 16x16
extern "C" __global__ void probe_b_f16_row(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// B 16x16, stored column-major
extern "C" __global__ void probe_b_f16_col(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// accumulator 16x16 fp32
extern "C" __global__ void probe_acc_f32(const float* M, int* held)
{
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> f;
    wmma::load_matrix_sync(f, M, 16, wmma::mem_row_major);
    dump(f, held);
}

// accumulator 16x16 fp16
extern "C" __global__ void probe_acc_f16(const half* M, int* held)
{
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> f;
    wmma::load_matrix_sync(f, M, 16, wmma::mem_row_major);
    dump(f, held);
}

// A 32x16
extern "C" __global__ void probe_a_m32n8k16(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// B 16x8
extern "C" __global__ void probe_b_m32n8k16(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 8);
    dump(f, held);
}

// accumulator 32x8
extern "C" __global__ void probe_acc_m32n8k16(const float* M, int* held)
{
    wmma::fragment<wmma::accumulator, 32, 8, 16, float> f;
    wmma::load_matrix_sync(f, M, 8, wmma::mem_row_major);
    dump(f, held);
}

// A 8x16
extern "C" __global__ void probe_a_m8n32k16(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_a, 8, 32, 16, half, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// B 16x32
extern "C" __global__ void probe_b_m8n32k16(const half* M, int* held)
{
    wmma::fragment<wmma::matrix_b, 8, 32, 16, half, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 32);
    dump(f, held);
}

// accumulator 8x32
extern "C" __global__ void probe_acc_m8n32k16(const float* M, int* held)
{
    wmma::fragment<wmma::accumulator, 8, 32, 16, float> f;
    wmma::load_matrix_sync(f, M, 32, wmma::mem_row_major);
    dump(f, held);
}

// A 16x16 bf16
extern "C" __global__ void probe_a_bf16(const __nv_bfloat16* M, int* held)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// B 16x16 bf16
extern "C" __global__ void probe_b_bf16(const __nv_bfloat16* M, int* held)
{
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// A 16x8 tf32
extern "C" __global__ void probe_a_tf32(const float* M, int* held)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 8);
    dump(f, held);
}

// B 8x16 tf32
extern "C" __global__ void probe_b_tf32(const float* M, int* held)
{
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 16);
    dump(f, held);
}

// accumulator 16x16 of m16n16k8
extern "C" __global__ void probe_acc_tf32(const float* M, int* held)
{
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> f;
    wmma::load_matrix_sync(f, M, 16, wmma::mem_row_major);
    dump(f, held);
}

// A 8x4 fp64
extern "C" __global__ void probe_a_f64(const double* M, int* held)
{
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 4);
    dump(f, held);
}

// B 4x8 fp64
extern "C" __global__ void probe_b_f64(const double* M, int* held)
{
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> f;
    wmma::load_matrix_sync(f, M, 8);
    dump(f, held);
}

// accumulator 8x8 fp64
extern "C" __global__ void probe_acc_f64(const double* M, int* held)
{
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> f;
    wmma::load_matrix_sync(f, M, 8, wmma::mem_row_major);
    dump(f, held);
    // END SOLUTION
}
