"""WMMA on the emulator: per-lane fragment layouts (FACTS.md "Fragment layout") and GEMMs
for every supported shape/type against float64 references."""
import numpy as np
import pytest

from grader.emu import compile_module

PROBES = r"""
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// A/B probe: load a matrix whose element (r, c) holds r*cols + c, row- and column-major
#define PROBE_AB(NAME, USE, M, N, K, MT, FT)                                                   \
extern "C" __global__ void NAME(const MT* row, const MT* col, int rows, int cols,             \
                                float* out_row, float* out_col, int* ne) {                    \
  wmma::fragment<wmma::USE, M, N, K, FT, wmma::row_major> fr;                                 \
  wmma::fragment<wmma::USE, M, N, K, FT, wmma::col_major> fc;                                 \
  wmma::load_matrix_sync(fr, row, cols);                                                       \
  wmma::load_matrix_sync(fc, col, rows);                                                       \
  int lane = threadIdx.x;                                                                      \
  for (int i = 0; i < fr.num_elements; ++i) {                                                  \
    out_row[lane * fr.num_elements + i] = (float)fr.x[i];                                      \
    out_col[lane * fc.num_elements + i] = (float)fc.x[i];                                      \
  }                                                                                            \
  if (lane == 0) *ne = fr.num_elements;                                                        \
}
PROBE_AB(a_h_16x16x16, matrix_a, 16, 16, 16, half, half)
PROBE_AB(b_h_16x16x16, matrix_b, 16, 16, 16, half, half)
PROBE_AB(a_h_32x8x16, matrix_a, 32, 8, 16, half, half)
PROBE_AB(b_h_32x8x16, matrix_b, 32, 8, 16, half, half)
PROBE_AB(a_h_8x32x16, matrix_a, 8, 32, 16, half, half)
PROBE_AB(b_h_8x32x16, matrix_b, 8, 32, 16, half, half)
PROBE_AB(a_bf_16x16x16, matrix_a, 16, 16, 16, __nv_bfloat16, __nv_bfloat16)
PROBE_AB(b_bf_16x16x16, matrix_b, 16, 16, 16, __nv_bfloat16, __nv_bfloat16)
PROBE_AB(a_tf_16x16x8, matrix_a, 16, 16, 8, float, wmma::precision::tf32)
PROBE_AB(b_tf_16x16x8, matrix_b, 16, 16, 8, float, wmma::precision::tf32)
PROBE_AB(a_d_8x8x4, matrix_a, 8, 8, 4, double, double)
PROBE_AB(b_d_8x8x4, matrix_b, 8, 8, 4, double, double)

// accumulator probe: load (r, c) -> r*N + c; and store x[i] = lane*num_elements + i
#define PROBE_C(NAME, M, N, K, T)                                                              \
extern "C" __global__ void NAME(const T* mat, float* out_load, T* stored, int* ne) {          \
  wmma::fragment<wmma::accumulator, M, N, K, T> c;                                            \
  wmma::load_matrix_sync(c, mat, N, wmma::mem_row_major);                                     \
  int lane = threadIdx.x;                                                                      \
  for (int i = 0; i < c.num_elements; ++i) out_load[lane * c.num_elements + i] = (float)c.x[i]; \
  for (int i = 0; i < c.num_elements; ++i) c.x[i] = (T)(float)(lane * c.num_elements + i);     \
  wmma::store_matrix_sync(stored, c, N, wmma::mem_row_major);                                  \
  if (lane == 0) *ne = c.num_elements;                                                         \
}
PROBE_C(c_f_16x16x16, 16, 16, 16, float)
PROBE_C(c_h_16x16x16, 16, 16, 16, half)
PROBE_C(c_f_32x8x16, 32, 8, 16, float)
PROBE_C(c_f_8x32x16, 8, 32, 16, float)
PROBE_C(c_f_16x16x8, 16, 16, 8, float)
PROBE_C(c_d_8x8x4, 8, 8, 4, double)
"""


def _facts_map(kind, use, lane, i):
    """(row, col) of element i of `lane`: the FACTS.md formulas for m16n16k16, tf32 A and f64;
    the mma.m16n8k16 tiling for m32n8k16; the H200 measurement for m8n32k16."""
    g, t = lane >> 2, lane & 3
    if kind == "16x16x16":
        j = i % 8
        if use == "a":
            return g + 8 * ((j >> 1) & 1), 2 * t + (j & 1) + 8 * (j >> 2)
        if use == "b":
            return 2 * t + (j & 1) + 8 * ((j >> 1) & 1), g + 8 * (j >> 2)
        return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)
    if kind == "16x16x8":
        if use == "a":
            return [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)][i]
        if use == "b":
            return [(t, g), (t + 4, g), (t, g + 8), (t + 4, g + 8)][i]
        return _facts_map("16x16x16", "c", lane, i)
    if kind == "8x8x4":
        return {"a": (g, t), "b": (t, g), "c": (g, 2 * t + i)}[use]
    if kind == "32x8x16":
        if use == "a":
            j = i % 16
            r, c = _facts_map("16x16x16", "a", lane, j % 8)
            return r + 16 * (j >> 3), c
        if use == "b":
            j = i % 4  # the n0..7 half of the m16n16k16 B layout
            return _facts_map("16x16x16", "b", lane, j)
        r, c = _facts_map("16x16x16", "c", lane, i % 4)
        return r + 16 * (i >> 2), c
    if kind == "8x32x16":  # B and C as measured on an H200 (kernels/fragment_maps_sm90.json)
        if use == "a":
            j = i % 4
            return g, 2 * t + (j & 1) + 8 * (j >> 1)
        if use == "b":
            return 2 * t + (i & 1) + 8 * ((i >> 2) & 1), g + 8 * ((i >> 1) & 1) + 16 * (i >> 3)
        return 2 * t + (i & 1), g + 8 * (i >> 1)  # transposed accumulator
    raise AssertionError(kind)


def _dims(kind, use):
    m, n, k = (int(x) for x in kind.split("x"))
    return {"a": (m, k), "b": (k, n), "c": (m, n)}[use]


AB_CASES = [
    ("a_h_16x16x16", "16x16x16", "a", np.float16, 16), ("b_h_16x16x16", "16x16x16", "b", np.float16, 16),
    ("a_h_32x8x16", "32x8x16", "a", np.float16, 16), ("b_h_32x8x16", "32x8x16", "b", np.float16, 16),
    ("a_h_8x32x16", "8x32x16", "a", np.float16, 16), ("b_h_8x32x16", "8x32x16", "b", np.float16, 16),
    ("a_bf_16x16x16", "16x16x16", "a", "bf16", 8), ("b_bf_16x16x16", "16x16x16", "b", "bf16", 8),
    ("a_tf_16x16x8", "16x16x8", "a", np.float32, 4), ("b_tf_16x16x8", "16x16x8", "b", np.float32, 4),
    ("a_d_8x8x4", "8x8x4", "a", np.float64, 1), ("b_d_8x8x4", "8x8x4", "b", np.float64, 1),
]
C_CASES = [
    ("c_f_16x16x16", "16x16x16", np.float32, 8), ("c_h_16x16x16", "16x16x16", np.float16, 8),
    ("c_f_32x8x16", "32x8x16", np.float32, 8), ("c_f_8x32x16", "8x32x16", np.float32, 8),
    ("c_f_16x16x8", "16x16x8", np.float32, 8), ("c_d_8x8x4", "8x8x4", np.float64, 2),
]


@pytest.fixture(scope="module")
def probes():
    return compile_module(PROBES, name="wmma_probes")


def _as(values, dtype):
    if dtype == "bf16":  # exact small integers: the top 16 bits of the float32
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(dtype)


@pytest.mark.parametrize("kernel,kind,use,dtype,ne", AB_CASES, ids=[c[0] for c in AB_CASES])
def test_ab_fragment_layout(probes, kernel, kind, use, dtype, ne):
    rows, cols = _dims(kind, use)
    idx = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    row = _as(idx, dtype)
    col = np.ascontiguousarray(_as(idx.T, dtype))
    out_r = np.full(32 * 16, -1, np.float32)
    out_c = np.full(32 * 16, -1, np.float32)
    nel = np.zeros(1, np.int32)
    probes.launch(kernel, 1, 32, [row, col, rows, cols, out_r, out_c, nel])
    assert nel[0] == ne
    expect = np.array([[_facts_map(kind, use, lane, i) for i in range(ne)] for lane in range(32)])
    expect = expect[..., 0] * cols + expect[..., 1]
    assert np.array_equal(out_r[: 32 * ne].reshape(32, ne), expect)
    assert np.array_equal(out_c[: 32 * ne].reshape(32, ne), expect)
    # every element of the matrix is held by some lane
    assert set(expect.ravel()) == set(range(rows * cols))


@pytest.mark.parametrize("kernel,kind,dtype,ne", C_CASES, ids=[c[0] for c in C_CASES])
def test_accumulator_layout(probes, kernel, kind, dtype, ne):
    rows, cols = _dims(kind, "c")
    mat = np.arange(rows * cols).reshape(rows, cols).astype(dtype)
    out = np.full(32 * ne, -1, np.float32)
    stored = np.full((rows, cols), -1, dtype)
    nel = np.zeros(1, np.int32)
    probes.launch(kernel, 1, 32, [mat, out, stored, nel])
    assert nel[0] == ne
    rc = np.array([[_facts_map(kind, "c", lane, i) for i in range(ne)] for lane in range(32)])
    assert np.array_equal(out.reshape(32, ne), rc[..., 0] * cols + rc[..., 1])
    owner = np.full((rows, cols), -1)
    for lane in range(32):
        for i in range(ne):
            owner[rc[lane, i, 0], rc[lane, i, 1]] = lane * ne + i
    assert (owner >= 0).all()
    assert np.array_equal(stored.astype(np.int64), owner)


GEMMS = r"""
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// one warp per MxN tile of C; A is row-major (or column-major if !AROW), B likewise;
// C is stored row-major (or column-major if CCOL)
template <int M, int N, int K, class FT, class MT, class CT, class LA, class LB, bool AROW, bool BROW, bool CCOL, bool TF32>
__device__ void gemm(const MT* A, const MT* B, CT* C, int Mm, int Nn, int Kk) {
  int tm = blockIdx.x * M, tn = blockIdx.y * N;
  wmma::fragment<wmma::matrix_a, M, N, K, FT, LA> a;
  wmma::fragment<wmma::matrix_b, M, N, K, FT, LB> b;
  wmma::fragment<wmma::accumulator, M, N, K, CT> c;
  wmma::fill_fragment(c, (CT)0);
  for (int k = 0; k < Kk; k += K) {
    if (AROW) wmma::load_matrix_sync(a, A + tm * Kk + k, Kk); else wmma::load_matrix_sync(a, A + k * Mm + tm, Mm);
    if (BROW) wmma::load_matrix_sync(b, B + k * Nn + tn, Nn); else wmma::load_matrix_sync(b, B + tn * Kk + k, Kk);
    if (TF32) {
      for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
      for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
    }
    wmma::mma_sync(c, a, b, c);
  }
  if (CCOL) wmma::store_matrix_sync(C + tn * Mm + tm, c, Mm, wmma::mem_col_major);
  else wmma::store_matrix_sync(C + tm * Nn + tn, c, Nn, wmma::mem_row_major);
}
#define R wmma::row_major
#define CM wmma::col_major
#define G(NAME, M, N, K, FT, MT, CT, LA, LB, AROW, BROW, CCOL, TF)                                    \
extern "C" __global__ void NAME(const MT* A, const MT* B, CT* C, int Mm, int Nn, int Kk) {           \
  gemm<M, N, K, FT, MT, CT, LA, LB, AROW, BROW, CCOL, TF>(A, B, C, Mm, Nn, Kk); }
G(g_h16_f, 16, 16, 16, half, half, float, R, R, true, true, false, false)
G(g_h16_f_cols, 16, 16, 16, half, half, float, CM, CM, false, false, true, false)
G(g_h16_h, 16, 16, 16, half, half, half, R, R, true, true, false, false)
G(g_h32x8_f, 32, 8, 16, half, half, float, R, CM, true, false, false, false)
G(g_h8x32_f, 8, 32, 16, half, half, float, R, CM, true, false, false, false)
G(g_bf16_f, 16, 16, 16, __nv_bfloat16, __nv_bfloat16, float, R, R, true, true, false, false)
G(g_tf32_f, 16, 16, 8, wmma::precision::tf32, float, float, R, R, true, true, false, true)
G(g_f64, 8, 8, 4, double, double, double, R, R, true, true, false, false)
G(g_f64_cols, 8, 8, 4, double, double, double, CM, CM, false, false, true, false)
"""

RNG = np.random.default_rng(11)


def _bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _tf32(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x1000) & ~np.uint64(0x1FFF)).astype(np.uint32)).view(np.float32)  # cvt.rna


GEMM_CASES = [
    # name, tile (m, n, k), input kind, acc dtype, A row-major?, B row-major?, C column-major?
    ("g_h16_f", (16, 16, 16), "half", np.float32, True, True, False),
    ("g_h16_f_cols", (16, 16, 16), "half", np.float32, False, False, True),
    ("g_h16_h", (16, 16, 16), "half", np.float16, True, True, False),
    ("g_h32x8_f", (32, 8, 16), "half", np.float32, True, False, False),
    # row-major A: a column-major 8-row tile would start 16 bytes into a column, against the
    # guide's 256-bit rule (the emulator faults there, tests/emu/test_emu_strict.py)
    ("g_h8x32_f", (8, 32, 16), "half", np.float32, True, False, False),
    ("g_bf16_f", (16, 16, 16), "bf16", np.float32, True, True, False),
    ("g_tf32_f", (16, 16, 8), "tf32", np.float32, True, True, False),
    ("g_f64", (8, 8, 4), "double", np.float64, True, True, False),
    ("g_f64_cols", (8, 8, 4), "double", np.float64, False, False, True),
]


@pytest.fixture(scope="module")
def gemms():
    return compile_module(GEMMS, name="wmma_gemms")


@pytest.mark.parametrize("name,tile,kind,acc,arow,brow,ccol", GEMM_CASES, ids=[c[0] for c in GEMM_CASES])
def test_wmma_gemm(gemms, name, tile, kind, acc, arow, brow, ccol):
    tm, tn, tk = tile
    M, N, K = 2 * tm * 2, 3 * tn, 4 * tk
    a = RNG.uniform(-1, 1, (M, K))
    b = RNG.uniform(-1, 1, (K, N))
    if kind == "half":
        A, B = a.astype(np.float16), b.astype(np.float16)
        a64, b64 = A.astype(np.float64), B.astype(np.float64)
    elif kind == "bf16":
        A, B = _bf16(a), _bf16(b)
        a64 = (A.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        b64 = (B.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    elif kind == "tf32":
        A, B = a.astype(np.float32), b.astype(np.float32)
        a64, b64 = _tf32(A).astype(np.float64), _tf32(B).astype(np.float64)
    else:
        A, B = a, b
        a64, b64 = a, b
    A_mem = A if arow else np.ascontiguousarray(A.T)
    B_mem = B if brow else np.ascontiguousarray(B.T)
    C = np.full((N, M) if ccol else (M, N), np.nan, acc)
    gemms.launch(name, (M // tm, N // tn), (32,), [A_mem, B_mem, C, M, N, K])
    got = (C.T if ccol else C).astype(np.float64)
    ref = a64 @ b64
    absprod = np.abs(a64) @ np.abs(b64)
    if acc == np.float64:
        bound = K * 2.0**-52 * absprod + 1e-15
    elif acc == np.float16:
        bound = (K / tk) * 2.0**-10 * absprod + 2.0**-10 * np.abs(ref) + 1e-3
    else:
        bound = K * 2.0**-24 * absprod + 1e-6
    assert np.isfinite(got).all()
    assert (np.abs(got - ref) <= bound).all(), np.abs(got - ref).max()
    # and the tolerance is tight enough to catch an error of one product term
    assert (np.abs(got - ref) < 0.5 * np.abs(a64[:, :1] @ b64[:1, :]).max() + 1).all()


def test_tf32_inputs_are_truncated_without_conversion():
    src = GEMMS.replace("G(g_h16_f,", "G(g_tf32_raw, 16, 16, 8, wmma::precision::tf32, float, float, R, R, true, true, false, false)\nG(g_h16_f,")
    mod = compile_module(src, name="wmma_gemms_raw")
    M = N = 16
    K = 64
    A = RNG.uniform(1, 2, (M, K)).astype(np.float32)
    B = RNG.uniform(1, 2, (K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    mod.launch("g_tf32_raw", (1, 1), (32,), [A, B, C, M, N, K])
    trunc = lambda x: (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    ref_trunc = trunc(A) @ trunc(B)
    assert np.abs(C - ref_trunc).max() <= K * 2.0**-24 * ref_trunc.max()
    assert (C - A.astype(np.float64) @ B.astype(np.float64)).mean() < -1e-3  # biased low, as FACTS.md says
