"""Lesson helpers of notebooks 06 and 07 (grader.lessons.fast_gemm / precisions).

CPU tests run the new demo kernels on the emulator (or the GPU when there is one); the
`gpu` tests time them and check the cuBLAS routines of each precision."""
import numpy as np
import pytest

from grader.lessons import bank_conflicts as B
from grader.lessons import fast_gemm as F
from grader.lessons import precisions as P
from grader.lessons import records


def test_bank_model_matches_the_padded_rung_header():
    # 64 halves per row (128 B): all 8 rows in one bank group; 72: conflict-free.
    assert F.conflict_ways(64) == 8 and F.conflict_ways(128) == 8
    assert F.conflict_ways(72) == 1 and F.conflict_ways(80) == 2 and F.conflict_ways(96) == 4


def test_recorded_numbers_parse():
    rows = F.recorded_ladder(4096)
    names = [r["name"] for r in rows]
    assert names == [n for n in F.RUNGS if n in names]  # ladder order
    assert all(0 < r["ratio"] < 1 for r in rows)
    assert len(F.recorded_niter()) >= 4


def test_recorded_ladder_is_the_newest_run_with_the_most_rungs():
    """Without a GPU the notebook shows the newest recorded run that timed every rung of the
    current ladder, else the newest with the most rungs; its label names that run's GPU."""
    runs = F._runs()
    assert len(runs) >= 2 and all(r.startswith(F.RUN_HEADING) for r in runs)
    counts = [len(F._ladder_rows(r, 4096)) for r in runs]
    full = [i for i, c in enumerate(counts) if c == len(F.RUNGS)]
    chosen = full[-1] if full else max(i for i, c in enumerate(counts) if c == max(counts))
    run = runs[chosen]
    assert F.recorded_ladder(4096) == F._ladder_rows(run, 4096)
    assert F.recorded_gpu() == run.splitlines()[0][len(F.RUN_HEADING):].strip()
    gpu = F.recorded_gpu().split(" (")[0].split()
    assert F.recorded_label(F.WMMA_RECORD).startswith(f"recorded on {' '.join(gpu[:2])}, ")
    rows, source = F.ladder(4096)
    assert rows == F.recorded_ladder(4096) and F.recorded_gpu() in source
    missing = [n for n in F.RUNGS if n not in {r["name"] for r in rows}]
    assert ("not in that run: " + ", ".join(missing) in source) == bool(missing)


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
    import re

    rows = F.recorded_sweep(4096)
    run = F._sweep_run(4096)
    swizzle = next(r for r in F._ladder_rows(run, 4096) if r["name"] == "wmma_gemm_swizzle")
    assert rows[0]["defines"] == {} and rows[0]["tflops"] == swizzle["tflops"]  # the ladder's row, same run
    # every swizzle[...] row at 4096^3 of that run's sweep whose defines the live sweep sets, in order
    part = records.section(run, "### Tuning sweep")
    recorded = re.findall(r"^\| swizzle\[([\w=,]+)\] \| 4096\^3 \| yes[^|]*\| ([\d.]+) \| ([\d.]+) \| ([\d.]+)%",
                          part, re.M)
    plain = [(d, float(t), float(lib), float(pct)) for d, t, lib, pct in recorded
             if "FRAG_DB" not in d and "LEAN_ADDR" not in d]
    assert len(rows) == 1 + len(plain) >= 7
    for r, (d, t, lib, pct) in zip(rows[1:], plain):
        assert r["defines"] == {k: int(v) for k, v in (kv.split("=") for kv in d.split(","))}
        assert r["tflops"] == t and r["lib_tflops"] == lib and r["ok"]
        assert abs(r["ratio"] - pct / 100) < 1e-9  # the recorded % (paired rounds), not t / lib
    assert rows[1]["defines"] == {"GROUP_M": 8} and "GROUP_M 8" in rows[1]["label"]
    assert "16 warps" in rows[2]["label"]
    assert not any("FRAG_DB" in r["defines"] or "LEAN_ADDR" in r["defines"] for r in rows)
    assert F.recorded_sweep_label() == records.label_of(run, F.WMMA_RECORD)


def test_cublas_spread_covers_every_recorded_run():
    vals = sorted(v for v, _ in F._cublas_fp16_4096_records())
    # H200 ladder and history, RESULTS.md, notebooks 04-05 and 06-07, H100 ladder and sweep rows
    for v in (640.1, 647.2, 680.391, 687.8, 688.0, 695.0, 702.5, 720.7, 747.0, 772.0, 764.64,
              656.1, 678.2, 582.2, 586.6):
        assert v in vals
    for run in F._runs():  # every run's ladder cuBLAS figures
        assert all(r["lib_tflops"] in vals for r in F._ladder_rows(run, 4096))
    text = F.cublas_spread()
    assert f"{min(vals):.0f}-{max(vals):.0f} TFLOP/s" in text and f"the {len(vals)} measurements" in text
    assert "own run" in text and "own run" not in F.cublas_spread(ratios=False)


def test_recorded_plots_and_limits_without_a_gpu(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    rows, source = F.recorded_banks(), F.recorded_label(F.NOTEBOOK_RECORD)
    F.plot_bank_conflicts(rows, source)
    F.plot_bank_conflicts(None)
    F.plot_sweep(F.recorded_sweep(), 4096, source=F.recorded_label())
    for module in (F, B):  # as on a machine without a GPU
        monkeypatch.setattr(module, "device_info", lambda: None)
        monkeypatch.setattr(module, "has_gpu", lambda: False)
    assert "an H100/H200 (sm_90) allows 232448 B" in F.config_problem(256, 256, 64, 4, 4, 4)
    bank_rows, bank_source = F.bank_conflicts()
    assert bank_rows == rows and bank_source.startswith(source)
