"""Notebook 11's kernels as the lesson runs them (grader.lessons.fp8_kernels), on the emulator."""
import numpy as np

from grader.lessons import fp8_formats, fp8_kernels
from grader.problems import sparse24


def test_fp8_gemm_kernel_error_is_fp32_and_fp8_error_is_the_input_rounding():
    r = fp8_kernels.fp8_gemm(M=40, N=24, K=96, backend_name="emu")
    assert r["backend"] == "emu" and r["check"].ok
    assert set(r["tensor_ops"]) == {(16, 8, 32)}
    u8 = fp8_formats.facts("e4m3")["unit_roundoff"]
    assert r["kernel_error"] < 1e-6 < r["fp8_error"] < 2 * u8 + u8**2


def test_sparse_gemm_compresses_as_python_and_multiplies_the_pruned_matrix():
    r = fp8_kernels.sparse_gemm(M=32, N=16, K=64, backend_name="emu")
    assert r["compressed_as_python"] and r["check"].ok
    assert set(r["tensor_ops"]) == {(16, 8, 32)}
    # random (untrained) weights lose about half their energy to 2:4 pruning
    assert 0.2 < r["pruning_error"] < 0.8


def test_show_row_lists_what_prune_keeps():
    A = np.random.default_rng(0).uniform(-1, 1, (2, 16)).astype(np.float16)
    text = fp8_kernels.show_row(A)
    Av, Am = sparse24.compress(A)
    assert " ".join(f"{v:+.2f}" for v in Av[0].astype(float)) in text
    assert format(int(Am[0, 0]), "016b") in text
