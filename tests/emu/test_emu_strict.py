"""The emulator is as strict as the GPU: the rules CUDA states for WMMA pointers and ldm, vector
loads, ldmatrix, and shared memory reached through any path are faults that name the rule and the
student's line (issue 25). A GPU does not check most of these: it computes wrong values."""
import re

import numpy as np
import pytest

from grader.checking.check import check
from grader.checking.verdict import FAIL, PASS
from grader.emu import compile_module
from grader.runtime import kernels
from grader.runtime.errors import KernelFault

HEAD = "#include <mma.h>\n#include <cuda_fp16.h>\nusing namespace nvcuda;\n"

# notebook 04's any-size exercise, written as a student might: full tiles straight from global
# memory whatever K is (ldm = K), edge tiles zero-padded through shared memory
ANY_SIZE_DIRECT = HEAD + r"""
extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K) {
    __shared__ half as[16][16];
    __shared__ half bs[16][16];
    __shared__ float cs[16][16];
    int tr = blockIdx.x * 16, tc = blockIdx.y * 16, lane = threadIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        if (tr + 16 <= M && k + 16 <= K) {
            wmma::load_matrix_sync(a, A + tr * K + k, K);
        } else {
            for (int e = lane; e < 256; e += 32) {
                int r = e / 16, c = e % 16;
                as[r][c] = (tr + r < M && k + c < K) ? A[(tr + r) * K + k + c] : __float2half(0.0f);
            }
            __syncwarp();
            wmma::load_matrix_sync(a, &as[0][0], 16);
        }
        if (k + 16 <= K && tc + 16 <= N) {
            wmma::load_matrix_sync(b, B + k * N + tc, N);
        } else {
            for (int e = lane; e < 256; e += 32) {
                int r = e / 16, c = e % 16;
                bs[r][c] = (k + r < K && tc + c < N) ? B[(k + r) * N + tc + c] : __float2half(0.0f);
            }
            __syncwarp();
            wmma::load_matrix_sync(b, &bs[0][0], 16);
        }
        wmma::mma_sync(acc, a, b, acc);
        __syncwarp();
    }
    wmma::store_matrix_sync(&cs[0][0], acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
        int r = e / 16, c = e % 16;
        if (tr + r < M && tc + c < N) C[(tr + r) * N + tc + c] = cs[r][c];
    }
}
"""


def _line(src, text, nth=1):
    """the 1-based line of the nth line of src containing text"""
    hits = [i for i, ln in enumerate(src.split("\n"), 1) if text in ln]
    return hits[nth - 1]


def _fault(src, kernel, grid, block, args, **kw):
    mod = compile_module(src)
    with pytest.raises(KernelFault) as e:
        mod.launch(kernel, grid, block, args, **kw)
    return e.value


def test_issue_example_ldm_31_fails_with_the_gpus_reason():
    """ldm = K = 31 passed 1/1 on the emulator while an H100 got 775,674 of 777,000 elements wrong."""
    v = check("wmma-gemm-any-size", ANY_SIZE_DIRECT, backend="emu")
    bad = [i for i in v.items if i.status == FAIL]
    assert bad, v.text()
    first = bad[0]
    assert first.kind == "wmma-ldm", v.text()
    assert "ldm = 31" in first.message and "multiple of 8" in first.message
    assert first.where.get("line") == _line(ANY_SIZE_DIRECT, "load_matrix_sync(a, A + tr * K + k, K)")
    assert "shared memory" in first.hint and "multiple of 8" in first.hint


def test_any_size_kernel_that_stages_unaligned_rows_passes():
    """The same kernel that loads directly only when K and N keep rows 16-byte aligned passes."""
    src = ANY_SIZE_DIRECT.replace("if (tr + 16 <= M && k + 16 <= K)", "if (tr + 16 <= M && k + 16 <= K && K % 8 == 0)")
    src = src.replace("if (k + 16 <= K && tc + 16 <= N)", "if (k + 16 <= K && tc + 16 <= N && N % 8 == 0)")
    v = check("wmma-gemm-any-size", src, backend="emu")
    assert all(i.status == PASS for i in v.items if i.name != "speed"), v.text()


ONE_TILE = HEAD + r"""
extern "C" __global__ void one(const half* A, const half* B, float* C, int off, int lda) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(a, A + off, lda);
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}
extern "C" __global__ void store_ldm(const half* A, float* C, int ldc) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    wmma::store_matrix_sync(C, acc, ldc, wmma::mem_row_major);
}
"""


def _one(off, lda):
    A = np.ones(64 * 64, np.float16)
    B = np.ones(256, np.float16)
    C = np.zeros(256, np.float32)
    return "one", (1,), (32,), [A, B, C, off, lda]


@pytest.mark.parametrize("off", [1, 8, 3])
def test_misaligned_wmma_pointer_is_a_fault(off):
    e = _fault(ONE_TILE, *_one(off, 16))
    assert e.kind == "misaligned-address"
    assert "256-bit (32-byte) aligned" in e.message and f"element {off} of 'A'" in e.message
    assert e.where.line == _line(ONE_TILE, "A + off")


@pytest.mark.parametrize("ldm", [17, 31, 20])
def test_ldm_not_a_multiple_of_8_halves_is_a_fault(ldm):
    e = _fault(ONE_TILE, *_one(0, ldm))
    assert e.kind == "wmma-ldm" and f"ldm = {ldm}" in e.message and "multiple of 8 for half" in e.message
    assert e.where.line == _line(ONE_TILE, "A + off")


def test_aligned_pointer_and_ldm_run():
    mod = compile_module(ONE_TILE)
    name, grid, block, args = _one(16, 24)
    mod.launch(name, grid, block, args)
    assert np.all(args[2] == 16.0)


def test_float_store_ldm_multiple_of_4():
    mod = compile_module(ONE_TILE)
    mod.launch("store_ldm", (1,), (32,), [np.zeros(256, np.float16), np.zeros(16 * 20, np.float32), 20])
    e = _fault(ONE_TILE, "store_ldm", (1,), (32,), [np.zeros(256, np.float16), np.zeros(16 * 18, np.float32), 18])
    assert e.kind == "wmma-ldm" and "multiple of 4 for float" in e.message


SHARED = HEAD + r"""
extern "C" __global__ void pad_not_zeroed(const half* A, float* C, int valid) {
    __shared__ half t[16][24];
    int lane = threadIdx.x;
    for (int e = lane; e < 256; e += 32) {
        int r = e / 16, c = e % 16;
        if (c < valid) t[r][c] = A[r * 16 + c];     // the padding (c >= valid) is never zeroed
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(a, &t[0][0], 24);
    wmma::load_matrix_sync(b, &t[0][0], 24);
    wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}
extern "C" __global__ void past_the_array(const half* A, float* C, int row) {
    __shared__ half t[16][16];
    for (int e = threadIdx.x; e < 256; e += 32) t[e / 16][e % 16] = A[e];
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::load_matrix_sync(a, &t[row][0], 16);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, (float)a.x[0]);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}
extern "C" __global__ void dyn_unwritten(const half* A, float* C, int n) {
    extern __shared__ half d[];
    for (int e = threadIdx.x; e < n; e += 32) d[e] = A[e];
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::load_matrix_sync(a, d, 16);
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fill_fragment(b, __float2half(1.0f));
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}
extern "C" __global__ void unused_prefetch(const half* A, float* C) {
    extern __shared__ half d[];     // a pipelined kernel may load fragments it never uses
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::load_matrix_sync(a, d, 16);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}
"""


@pytest.mark.parametrize("valid", [15, 9, 1])
def test_unwritten_padding_read_by_load_matrix_sync_is_named(valid):
    e = _fault(SHARED, "pad_not_zeroed", (1,), (32,), [np.ones(256, np.float16), np.zeros(256, np.float32), valid])
    assert e.kind == "uninitialized-shared"
    m = re.search(r"__shared__ t\[(\d+)\]\[(\d+)\]", e.message)  # by declared dims, not a flat index
    assert m and valid <= int(m[2]) < 16, e.message
    assert e.where.line == _line(SHARED, "load_matrix_sync(a, &t[0][0], 24)")


def test_fully_written_tile_passes():
    mod = compile_module(SHARED)
    C = np.zeros(256, np.float32)
    mod.launch("pad_not_zeroed", (1,), (32,), [np.ones(256, np.float16), C, 16])
    assert np.all(C == 16.0)


def test_wmma_load_past_a_shared_array_is_named():
    e = _fault(SHARED, "past_the_array", (1,), (32,), [np.ones(256, np.float16), np.zeros(256, np.float32), 8])
    assert e.kind == "shared-out-of-bounds" and "t[16][16]" in e.message
    assert e.where.line == _line(SHARED, "&t[row][0]")


def test_unwritten_dynamic_shared_memory_read_by_load_matrix_sync():
    e = _fault(SHARED, "dyn_unwritten", (1,), (32,), [np.ones(256, np.float16), np.zeros(256, np.float32), 200],
               shared_mem=512)
    assert e.kind == "uninitialized-shared" and "dynamic shared memory" in e.message
    assert e.where.line == _line(SHARED, "load_matrix_sync(a, d, 16)") and "mma_sync at line" in e.message
    mod = compile_module(SHARED)
    mod.launch("dyn_unwritten", (1,), (32,), [np.ones(256, np.float16), np.zeros(256, np.float32), 256],
               shared_mem=512)
    mod.launch("unused_prefetch", (1,), (32,), [np.ones(256, np.float16), np.zeros(256, np.float32)],
               shared_mem=512)


VEC = r"""
extern "C" __global__ void copy4(const float* in, float* out, int off) {
    int i = threadIdx.x;
    float4 v = reinterpret_cast<const float4*>(in + off)[i];
    reinterpret_cast<float4*>(out)[i] = v;
}
extern "C" __global__ void copy2h(const __half2* in, __half2* out) { out[threadIdx.x] = in[threadIdx.x]; }
"""


@pytest.mark.parametrize("off", [1, 2, 3])
def test_misaligned_float4_load_is_a_fault(off):
    e = _fault("#include <cuda_fp16.h>\n" + VEC, "copy4", (1,), (8,), [np.ones(64, np.float32), np.zeros(32, np.float32), off])
    assert e.kind == "misaligned-address" and "multiple of 16 bytes" in e.message and "'in'" in e.message
    assert e.where.line == _line("#include <cuda_fp16.h>\n" + VEC, "float4 v =")


def test_aligned_float4_copy_runs():
    mod = compile_module("#include <cuda_fp16.h>\n" + VEC)
    out = np.zeros(32, np.float32)
    mod.launch("copy4", (1,), (8,), [np.arange(64, dtype=np.float32), out, 4])
    assert np.array_equal(out, np.arange(4, 36, dtype=np.float32))


def test_plain_shared_reads_name_declared_dims():
    src = r"""extern "C" __global__ void k(float* out) {
        __shared__ float tile[4][8];
        if (threadIdx.x < 8) tile[0][threadIdx.x] = 1.0f;
        __syncthreads();
        out[threadIdx.x] = tile[threadIdx.x / 8][threadIdx.x % 8];
    }"""
    e = _fault(src, "k", (1,), (32,), [np.zeros(32, np.float32)])
    assert e.kind == "uninitialized-shared" and re.search(r"tile\[[123]\]\[[0-7]\]", e.message), e.message
    src2 = src.replace("tile[threadIdx.x / 8][threadIdx.x % 8]", "tile[0][threadIdx.x]")
    e = _fault(src2, "k", (1,), (32,), [np.zeros(32, np.float32)])
    assert e.kind == "shared-out-of-bounds" and "declared tile[4][8]" in e.message and "tile[0][31]" in e.message


def test_out_of_bounds_in_a_kernel_without_rewrites_names_its_line():
    """sgemm-naive's out-of-bounds reports had no line: a source with nothing to rewrite was named
    'kernel.cpp' by addr2line (binutils 2.40, DWARF 5), not the user's file."""
    src = r"""extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    if (row < M && col < N) C[row * N + col] = acc;
}"""
    e = _fault(src, "sgemm", (2, 3), (16, 16), [np.ones(33 * 9, np.float32), np.ones(9 * 17, np.float32),
                                                np.zeros(33 * 17, np.float32), 33, 17, 9])
    assert e.kind == "out-of-bounds" and e.where.line == _line(src, "acc += A[row * K + k]")
