"""Notebook 11's example kernels on the emulator (issue #36): kernels/fp8_gemm_mma.cu (e4m3
mma.sync m16n8k32, fp32 accumulate, per-tensor scales in the epilogue) and
kernels/sparse_gemm_mma_sp.cu (2:4 pruning + compression, mma.sp m16n8k32), against float64
references (grader.problems.fp8 / sparse24), and those references against the independent format
reference of test_emu_fp8.py. The GPU side of the same cases is grader.bench.crosscheck's
(`python -m grader.bench.crosscheck --only fp8_gemm_mma sparse_gemm_mma_sp`)."""
import math

import numpy as np
import pytest

from grader.emu import compile_module
from grader.problems import fp8, numerics, sparse24
from grader.problems.kinds import Case
from grader.runtime import kernels
from test_emu_fp8 import E4M3, E5M2, encode as ref_encode, value as ref_value


def _run(file: str, case: Case, kernel: str, options=()):
    mod = compile_module(kernels.source(file), options=options, name=file)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    res = mod.launch(kernel, case.grid, case.block, args)
    return {pos: args[pos] for pos in case.outputs}, res


def _within(out, e):
    out = np.asarray(out, np.float64).reshape(e.ref.shape)
    return np.isfinite(out).all() and (np.abs(out - e.ref) <= e.bound).all()


@pytest.mark.parametrize("fmt", [E4M3, E5M2])
def test_problem_codec_agrees_with_the_independent_reference(fmt):
    codes = np.arange(256, dtype=np.uint8)
    got = fp8.decode(codes, fmt)
    want = np.array([ref_value(c, fmt) for c in range(256)])
    assert np.array_equal(got, want, equal_nan=True)
    x = np.concatenate([want[np.isfinite(want)], (want[1:127] + want[:126]) / 2,  # every value and midpoint
                        np.random.default_rng(5).uniform(-1, 1, 2000) * 2.0 ** np.random.default_rng(6).integers(-20, 18, 2000),
                        [np.nan, 1e9, -1e9, 0.0, -0.0]])
    x = x[np.isfinite(x) | np.isnan(x)]
    assert np.array_equal(fp8.encode(x, fmt), [ref_encode(float(v), fmt, True) for v in x])


@pytest.mark.parametrize("M,N,K", [(32, 48, 64), (33, 20, 96), (16, 16, 32), (47, 9, 40)])
def test_fp8_gemm_matches_float64_of_the_decoded_codes(M, N, K):
    case = fp8.gemm_case(M, N, K, np.random.default_rng(M * N + K))
    out, res = _run("fp8_gemm_mma", case, "fp8_gemm")
    assert _within(out[2], case.expected[2])
    # every 16 x 8 x 32 step ran on the (emulated) tensor cores: 2 per warp tile and k-step
    warps = 2 * math.ceil(N / 16) * math.ceil(M / 32)  # two warps a block; each runs every k-step
    assert res.tensor_ops == {(16, 8, 32): warps * 2 * math.ceil(K / 32)}


def test_fp8_gemm_check_fails_a_kernel_that_drops_the_scales():
    """The bound is tight enough to see a missing epilogue scale (the test can fail)."""
    case = fp8.gemm_case(32, 32, 64, np.random.default_rng(9))
    unscaled = case.args[:6] + [1.0, 1.0]
    out, _ = _run("fp8_gemm_mma", Case(case.label, unscaled, case.outputs, case.grid, case.block), "fp8_gemm")
    assert not _within(out[2], case.expected[2])


def test_fp8_scaling_keeps_small_values_that_plain_e4m3_flushes():
    """Why per-tensor scales: values around 1e-4 are below half e4m3's smallest subnormal (2^-10)
    and become 0 unscaled; scaled to the format's range they keep about 2 significant digits."""
    x = np.random.default_rng(3).uniform(1e-4, 3e-4, 1000)
    assert (fp8.decode(fp8.encode(x)) == 0).mean() > 0.5
    codes, scale = fp8.quantize(x)
    assert np.max(np.abs(fp8.decode(codes) * scale - x) / x) < 2.0**-4


def test_sparse_compress_kernel_equals_the_python_compression():
    case = sparse24.compress_case(48, 64, np.random.default_rng(1))
    out, _ = _run("sparse_gemm_mma_sp", case, "sparse24_compress")
    assert np.array_equal(out[1], case.expected[1].ref.astype(np.float16))
    assert np.array_equal(out[2], case.expected[2].ref.astype(np.uint16))


def test_sparse_compression_round_trips_and_keeps_the_largest_two():
    A = np.random.default_rng(2).uniform(-1, 1, (16, 32)).astype(np.float16)
    Av, Am = sparse24.compress(A)
    dense = sparse24.decompress(Av, Am)
    pruned, _ = sparse24.prune(A)
    assert np.array_equal(dense, pruned.astype(np.float64))
    chunks = np.abs(A.astype(np.float64)).reshape(16, 8, 4)
    kept = (dense.reshape(16, 8, 4) != 0).sum(axis=2)
    assert (kept == 2).all()
    assert (np.abs(dense).reshape(16, 8, 4).max(axis=2) == chunks.max(axis=2)).all()


@pytest.mark.parametrize("M,N,K", [(32, 48, 64), (40, 24, 80), (16, 8, 32), (17, 33, 16)])
def test_sparse_gemm_matches_the_dense_product_of_the_pruned_a(M, N, K):
    case = sparse24.gemm_case(M, N, K, np.random.default_rng(M + N + K))
    out, res = _run("sparse_gemm_mma_sp", case, "sparse_gemm")
    assert _within(out[3], case.expected[3])
    assert set(res.tensor_ops) == {(16, 8, 32)}


def test_sparse_gemm_check_fails_wrong_metadata():
    """Metadata that names other columns gives another product, outside the bound."""
    case = sparse24.gemm_case(32, 16, 64, np.random.default_rng(4))
    Am = case.args[1].astype(np.uint32)
    other = np.zeros_like(Am)
    for j in range(4):  # every field's two indices moved one column on (still two different columns)
        lo, hi = (Am >> (4 * j)) & 3, (Am >> (4 * j + 2)) & 3
        other |= (((lo + 1) & 3) | ((hi + 1) & 3) << 2) << (4 * j)
    moved = Case(case.label, [case.args[0], other.astype(np.uint16)] + case.args[2:], case.outputs, case.grid,
                 case.block)
    out, _ = _run("sparse_gemm_mma_sp", moved, "sparse_gemm")
    assert not _within(out[3], case.expected[3])


def test_sparse_bound_is_the_course_gemm_bound():
    """The sparse case judges with the same componentwise bound as every fp32-accumulating GEMM."""
    case = sparse24.gemm_case(16, 8, 32, np.random.default_rng(0))
    Av, Am = case.args[0], case.args[1]
    dense = sparse24.decompress(Av, Am)
    b64 = case.args[2].astype(np.float64)
    assert np.array_equal(case.expected[3].bound, numerics.gemm_bound(np.abs(dense) @ np.abs(b64), 32))


@pytest.mark.parametrize("file", ["fp8_gemm_mma", "sparse_gemm_mma_sp"])
def test_kernels_compile_with_nvrtc_for_sm_89(file, nvrtc_of):
    """tests/test_compile.py compiles every kernel for sm_75/80/90 (both stacks); Ada is where FP8
    tensor cores begin, so here too."""
    from grader.runtime.compile import nvrtc_compile

    nvrtc_of("cuda13")
    out = nvrtc_compile(kernels.source(file), arch=89, stack="cuda13")
    assert out.uses_tensor_cores and all(r.spill_stores == 0 for r in out.resources.values())
