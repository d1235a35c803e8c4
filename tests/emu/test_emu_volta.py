"""The emulator as Volta (sm_70): its m16n16k16 fragment layout equals the PTX ISA's table, its
WMMA products stay right with every row/col layout, and sm_80-only fragments are refused.

The table, as PTX ISA 8.7-9.2 section 9.7.14.5.1 "Matrix Fragments for mma.m8n8k4 with .f16
floating point type" gives it (transcribed here on its own, not imported from the grader):
    MMA computation 1: %laneid 0-3 (low group) and 16-19 (high group); 2: 4-7 and 20-23;
    3: 8-11 and 24-27; 4: 12-15 and 28-31.
    A row-major (a0..a3): row = %laneid % 4 if %laneid < 16, else (%laneid % 4) + 4; col = i
    A col-major:          row = i % 4 (+4 for the high group);  col = %laneid % 4
    B row-major (b0..b3): row = %laneid % 4; col = i (+4 for the high group)
    B col-major:          row = i; col = %laneid % 4 (+4 for the high group)
    C .f16 (c0..c7):      row = %laneid % 4 (+4 for the high group); col = i
    C .f32 (c0..c7):      row = X (+4 for the high group), X = (%laneid & 0b1) + (i & 0b10);
                          col = (i & 0b100) + (%laneid & 0b10) + (i & 0b1)
A WMMA m16n16k16 on Volta runs these per quad pair: computation q+1 produces the 8x8 tile of C
at rows 8*(q & 1), columns 8*(q >> 1), over K in four steps of 4 (slot i of A/B = element
i % 4 of step i // 4), as wmmae/wmma_extension's sm_70 maps (measured on V100s) also have it.
"""
import numpy as np
import pytest

from grader.problems import fragments
from grader.runtime.backend import EmuModule
from grader.runtime.errors import CompileError


def ptx_table(operand: str, layout: str, lane: int, i: int) -> tuple[int, int]:
    high = lane >= 16
    if operand == "a" and layout == "row":
        return lane % 4 + 4 * high, i
    if operand == "a":
        return i % 4 + 4 * high, lane % 4
    if operand == "b" and layout == "row":
        return lane % 4, i + 4 * high
    if operand == "b":
        return i, lane % 4 + 4 * high
    if operand == "c16":
        return lane % 4 + 4 * high, i
    x = (lane & 0b1) + (i & 0b10)
    return x + 4 * high, (i & 0b100) + (lane & 0b10) + (i & 0b1)


def volta_wmma(operand: str, layout: str, lane: int, i: int) -> tuple[int, int]:
    computation = (lane % 16) // 4  # 0..3
    r0, c0 = 8 * (computation & 1), 8 * (computation >> 1)
    if operand in ("c16", "c32"):
        r, c = ptx_table(operand, layout, lane, i)
        return r0 + r, c0 + c
    r, c = ptx_table(operand, layout, lane, i % 4)
    step = 4 * (i // 4)
    return (r0 + r, step + c) if operand == "a" else (step + r, c0 + c)


KINDS = {"a_f16_row": ("a", "row", 16), "a_f16_col": ("a", "col", 16), "b_f16_row": ("b", "row", 16),
         "b_f16_col": ("b", "col", 16), "acc_f32": ("c32", "", 8), "acc_f16": ("c16", "", 8),
         "acc_f32_mma": ("c32", "", 8)}


@pytest.fixture(scope="module")
def volta():
    return EmuModule(fragments.probe_source(70), arch=70)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_emulator_volta_map_equals_the_ptx_isa_table(volta, kind):
    operand, layout, n = KINDS[kind]
    k = fragments.KINDS[kind]
    held = np.full(32 * 16, -1, dtype=np.int32)
    volta.launch(k.kernel, (1,), (32,), [fragments.probe_input(kind), held])
    assert int((held >= 0).sum()) == 32 * n, "num_elements differs from Volta's"
    got = held[: 32 * n].reshape(32, n)
    want = np.array([[r * k.cols + c for r, c in (volta_wmma(operand, layout, lane, i) for i in range(n))]
                     for lane in range(32)])
    assert (got == want).all(), f"{kind}: first differing (lane, i) {tuple(np.argwhere(got != want)[0])}"
    assert (fragments.expected_map(kind, 70) == want).all(), "grader/problems/fragments.py disagrees"


def test_volta_differs_from_sm80():
    assert not (fragments.expected_map("a_f16_row", 70) == fragments.expected_map("a_f16_row", 80)).all()
    assert fragments.distinct_elements("a_f16_row", 70) == 16 and fragments.distinct_elements("a_f16_row", 80) == 8


MIXED = r"""
#include <mma.h>
using namespace nvcuda;
template <class LA, class LB, class TC>
__device__ void tile(const half* A, const half* B, float* D, int lda, int ldb) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, LA> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, LB> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, TC> acc;
    wmma::fill_fragment(acc, (TC)1.0f);
    wmma::load_matrix_sync(a, A, lda);
    wmma::load_matrix_sync(b, B, ldb);
    wmma::mma_sync(acc, a, b, acc);
    if (sizeof(TC) == 4) { wmma::store_matrix_sync((TC*)D, acc, 16, wmma::mem_row_major); return; }
    __shared__ TC tmp[256];
    wmma::store_matrix_sync(tmp, acc, 16, wmma::mem_col_major);
    for (int e = threadIdx.x; e < 256; e += 32) D[(e % 16) * 16 + e / 16] = (float)tmp[e];
}
extern "C" __global__ void rr(const half* A, const half* B, float* D) { tile<wmma::row_major, wmma::row_major, float>(A, B, D, 16, 16); }
extern "C" __global__ void rc(const half* A, const half* Bt, float* D) { tile<wmma::row_major, wmma::col_major, float>(A, Bt, D, 16, 16); }
extern "C" __global__ void cr(const half* At, const half* B, float* D) { tile<wmma::col_major, wmma::row_major, float>(At, B, D, 16, 16); }
extern "C" __global__ void cc16(const half* At, const half* Bt, float* D) { tile<wmma::col_major, wmma::col_major, half>(At, Bt, D, 16, 16); }
"""


@pytest.mark.parametrize("arch", [70, 75, None])
def test_wmma_products_right_with_every_layout(arch):
    rng = np.random.default_rng(7)
    m = EmuModule(MIXED, arch=arch)
    A = rng.integers(-3, 4, (16, 16)).astype(np.float16)  # small integers: every sum exact
    B = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    want = A.astype(np.float64) @ B.astype(np.float64) + 1.0
    for kernel, a, b in (("rr", A, B), ("rc", A, B.T), ("cr", A.T, B), ("cc16", A.T, B.T)):
        D = np.full((16, 16), np.nan, dtype=np.float32)
        m.launch(kernel, (1,), (32,), [np.ascontiguousarray(a), np.ascontiguousarray(b), D])
        assert (D == want).all(), f"sm_{arch or 90} {kernel}: {np.argwhere(D != want)[:3].tolist()}"


def test_wmma_gemm_kernels_on_volta():
    from grader.runtime import kernels

    rng = np.random.default_rng(3)
    M, N, K = 64, 64, 48
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    bound = K * 2.0**-23 * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)))
    C = np.full((M, N), np.nan, np.float32)
    EmuModule(kernels.source("wmma_gemm_naive"), arch=70).launch("wmma_gemm", (M // 16, N // 16), (32,),
                                                                  [A, B, C, M, N, K])
    assert (np.abs(C - ref) <= bound).all()
    Ccm = np.zeros((N, M), np.float32)  # column-major C, beta = 0
    EmuModule(kernels.source("wmma_gemm_colmajor"), arch=70).launch(
        "wmma_gemm_colmajor", (M // 64, N // 64), (128, 4), [np.asfortranarray(A).ravel(order="K"),
                                                             np.asfortranarray(B).ravel(order="K"), Ccm,
                                                             M, N, K, 1.0, 0.0])
    assert (np.abs(Ccm.T - ref) <= bound).all()


@pytest.mark.parametrize("arch", [70, 75])
def test_sm80_fragments_refused_below_sm80(arch):
    from grader.runtime import kernels

    with pytest.raises(CompileError) as e:
        EmuModule(kernels.source("dmma_gemm_naive"), arch=arch)
    assert "need sm_80 or newer" in str(e.value)


def test_bias_demo_positional_code_breaks_on_volta():
    """Notebook 05's point: code that indexes x[i] by the sm_80 layout is wrong on Volta."""
    from grader.lessons import fragment_maps as fm

    volta = fm.bias_demo("emu", plot=False, arch=70)
    hopper = fm.bias_demo("emu", plot=False)
    assert hopper["add_bias_positional"] == 0 and volta["add_bias_positional"] > 100
    assert volta["add_bias_portable"] == 0 and volta["scale_relu"] == 0
