"""Lesson helpers of notebooks 06 and 07 (grader.lessons.fast_gemm / precisions).

CPU tests run the new demo kernels on the emulator (or the GPU when there is one); the
`gpu` tests time them and check the cuBLAS routines of each precision."""
import numpy as np
import pytest

from grader.lessons import fast_gemm as F
from grader.lessons import precisions as P


def test_bank_model_matches_the_padded_rung_header():
    # 64 halves per row (128 B): all 8 rows in one bank group; 72: conflict-free.
    assert F.conflict_ways(64) == 8 and F.conflict_ways(128) == 8
    assert F.conflict_ways(72) == 1 and F.conflict_ways(80) == 2 and F.conflict_ways(96) == 4


def test_recorded_numbers_parse():
    rows = F.recorded_ladder(4096)
    assert [r["name"] for r in rows] == F.RUNGS
    assert all(0 < r["ratio"] < 1 for r in rows)
    assert len(F.recorded_niter()) >= 4


def test_sweep_rejects_impossible_configs():
    assert F.config_problem(128, 128, 64, 4, 4, 3) is None
    assert "threads" in F.config_problem(128, 128, 64, 1, 1, 3)
    assert "shared memory" in F.config_problem(256, 256, 64, 4, 4, 4, max_shared=232448)


@pytest.mark.parametrize("pad", [0, 8])
def test_bank_conflict_kernel_is_correct(pad):
    assert F.check_bank_kernel(pad).ok


def test_niter_kernel_is_correct():
    assert F.check_niter_kernel().ok


@pytest.mark.parametrize("name", F.RUNGS)
def test_every_rung_correct_on_this_backend(name):
    assert F.check_rung(name, 256, 128).ok


def test_rounding_helpers():
    x = np.random.default_rng(0).uniform(-4, 4, 10000).astype(np.float32)
    assert np.max(np.abs(P.bf16_to_float(P.to_bf16_bits(x)) - x) / np.abs(x)) <= 2.0**-8
    assert np.max(np.abs(P.round_tf32(x) - x) / np.abs(x)) <= 2.0**-11
    assert np.max(np.abs(P.round_tf32(x, 'even') - x) / np.abs(x)) <= 2.0**-11
    tie = np.array([1 + 2**-11], np.float32)  # exactly halfway between two tf32 values
    assert P.round_tf32(tie)[0] == np.float32(1 + 2**-10) and P.round_tf32(tie, 'even')[0] == 1.0
    assert P.to_bf16_bits(np.float32(1 + 3 * 2**-9))[()] == 0x3F81  # ties and above round up


@pytest.mark.parametrize("k", P.KERNELS, ids=lambda k: k.label)
def test_precision_kernels_correct(k):
    assert P.check(k).ok


def test_tf32_ties_round_like_the_kernel():
    # Random inputs hit an exact tf32 tie only now and then (1 in 8192 elements), which once
    # made the check above flaky; here every element of A is a tie, so a backend that rounds
    # ties differently from round_tf32 fails every time.
    k = P.KERNELS[2]
    rng = np.random.default_rng(3)
    mant = rng.integers(0, 2**10, (16, 8)).astype(np.uint32)
    a = ((np.uint32(127) << 23) | (mant << 13) | np.uint32(0x1000)).view(np.float32)  # 1.xxx + half ulp
    A64 = np.asarray(a, np.float64)
    B64 = np.eye(8, 16)
    C = P.run(k, A64, B64)
    assert np.array_equal(C[:, :8], P.round_tf32(a).astype(np.float64))


def test_truncated_tf32_is_biased():
    acc = P.accuracy([1024], which=[P.KERNELS[2], P.KERNELS[3]])
    rounded, truncated = (acc[k.label]["total"][0] for k in P.KERNELS[2:4])
    assert truncated > 5 * rounded


@pytest.mark.gpu
def test_gpu_library_precisions():
    assert P.library_error("fp32") < 1e-5
    assert 1e-5 < P.library_error("tf32") < 3e-3
    assert 1e-4 < P.library_error("bf16") < 2e-2


# ---------------------------------------------------------------- recorded GPU runs (no GPU needed)
def test_recorded_bank_table_parses_the_notebook_run():
    rows = F.recorded_banks()
    assert [r["pad"] for r in rows] == list(F.PADS)
    by_pad = {r["pad"]: r for r in rows}
    assert by_pad[0]["ms"] == 9.366 and by_pad[0]["tbps"] == 3.8 and by_pad[0]["ways"] == 8
    assert by_pad[8]["ms"] == 1.224 and by_pad[32]["ms"] == 4.680 and by_pad[64]["ms"] == 9.374
    assert all(r["ld"] == 64 + r["pad"] and r["ways"] == F.conflict_ways(r["ld"]) for r in rows)
    assert F.recorded_label(F.NOTEBOOK_RECORD) == (
        "recorded on NVIDIA H200, 2026-11-22 03:08 UTC (kernels/RESULTS-notebooks-06-07.md)")


def test_recorded_sweep_parses_the_tuning_sweep():
    rows = F.recorded_sweep(4096)
    assert len(rows) == 7
    assert rows[0]["defines"] == {} and rows[0]["tflops"] == 344.1  # the ladder's swizzle row, same run
    assert rows[1]["defines"] == {"GROUP_M": 8} and rows[1]["tflops"] == 343.6
    assert rows[4]["defines"] == dict(BLOCK_M=256, BLOCK_N=128, WARP_N=2, BLOCK_K=32, STAGES=4)
    assert rows[4]["tflops"] == 242.9 and abs(rows[4]["ratio"] - 0.379) < 1e-9
    assert all(r["lib_tflops"] == 640.1 and r["ok"] for r in rows)
    assert "16 warps" in rows[2]["label"] and "GROUP_M 8" in rows[1]["label"]
    assert F.recorded_label(F.WMMA_RECORD).startswith("recorded on NVIDIA H200, 2026-11-22 02:34 UTC")


def test_cublas_spread_covers_every_recorded_run():
    vals = sorted(v for v, _ in F._cublas_fp16_4096_records())
    for v in (640.1, 647.2, 680.391, 687.8, 688.0, 695.0, 702.5, 720.7, 747.0, 772.0):
        assert v in vals
    assert min(vals) == 640.1 and max(vals) == 772.0
    text = F.cublas_spread()
    assert "640-772 TFLOP/s" in text and "own run" in text and "own run" not in F.cublas_spread(ratios=False)


def test_recorded_plots_and_limits_without_a_gpu(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    rows, source = F.recorded_banks(), F.recorded_label(F.NOTEBOOK_RECORD)
    F.plot_bank_conflicts(rows, source)
    F.plot_bank_conflicts(None)
    F.plot_sweep(F.recorded_sweep(), 4096, source=F.recorded_label())
    monkeypatch.setattr(F, "device_info", lambda: None)  # as on a machine without a GPU
    monkeypatch.setattr(F, "has_gpu", lambda: False)
    assert "an H100/H200 (sm_90) allows 232448 B" in F.config_problem(256, 256, 64, 4, 4, 4)
    bank_rows, bank_source = F.bank_conflicts()
    assert bank_rows == rows and bank_source.startswith(source)
