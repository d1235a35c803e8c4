"""Notebook 11's section 6 (grader.lessons.fp8_speed): the FP8 record read back as the bench wrote it,
drawn as it reads, and the live cell saying why it times nothing without an FP8 GPU."""
import types

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from grader.bench import fp8 as bench  # noqa: E402
from grader.lessons import fp8_speed  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _results(rng):
    """Random timings of every pairing the bench makes at two sizes, one pairing not timed (its note)."""
    out = []
    for n in (1024, 2048):
        for k, b in bench.PAIRS:
            out.append(bench.Result(k, b, n, kernel_ms=float(rng.uniform(0.05, 50)),
                                    baseline_ms=float(rng.uniform(0.05, 50)), ratio=float(rng.uniform(0.01, 3))))
    out[3] = bench.Result(out[3].kernel, out[3].baseline, out[3].n, note="library not available here: no torch")
    return out


def test_the_record_reads_back_what_the_bench_wrote():
    rng = np.random.default_rng(7)
    results = _results(rng)
    checks = {name: bench.Check(True) for name in {r.kernel for r in results} | {r.baseline for r in results}}
    text = "# header\n\n" + bench.record("NVIDIA H100 80GB HBM3 (sm_90)", "2026-11-28 00:43 UTC", checks, results,
                                         (1024, 2048))
    rec = fp8_speed.recorded(text)
    assert rec["sizes"] == [1024, 2048] and "NVIDIA H100" in rec["label"] and "2026-11-28 00:43 UTC" in rec["label"]
    for n in (1024, 2048):
        for name in {r.kernel for r in results} | {r.baseline for r in results}:
            timed = [r.tflops(r.kernel_ms if r.kernel == name else r.baseline_ms) for r in results
                     if r.n == n and not r.note and name in (r.kernel, r.baseline)]
            # the table holds 1 decimal: the median of the rounded values is within 0.05 of the true one
            assert rec["tflops"][n][name] == pytest.approx(np.median(timed), abs=0.051), (name, n)
    for r in results:
        if r.note:
            assert (r.kernel, r.baseline, r.n) not in rec["ratio"]
        else:
            assert rec["ratio"][(r.kernel, r.baseline, r.n)] == pytest.approx(r.ratio, abs=5.1e-4)


def test_only_the_newest_run_counts_and_none_says_so():
    rng = np.random.default_rng(3)
    checks = {bench.FP8: bench.Check(True), bench.RUNG: bench.Check(True)}
    old = bench.record("NVIDIA A100", "2026-01-01 00:00 UTC", checks,
                       [bench.Result(bench.FP8, bench.RUNG, 512, 1.0, 2.0, 2.0)], (512,))
    new = bench.record("NVIDIA H100", "2026-11-28 00:43 UTC", checks,
                       [bench.Result(bench.FP8, bench.RUNG, 4096, float(rng.uniform(1, 9)), 1.0, 0.5)], (4096,))
    rec = fp8_speed.recorded(old + "\n" + new)
    assert rec["sizes"] == [4096] and "H100" in rec["label"]
    assert fp8_speed.recorded("# nothing measured yet\n") is None
    assert "No GPU run is recorded yet" in fp8_speed.takeaways(None)[0]
    fp8_speed.plot(None)  # draws the "not measured yet" panel, no error


def test_the_course_record_has_every_contender_at_both_sizes():
    rec = fp8_speed.recorded()
    assert rec is not None and len(rec["sizes"]) >= 1
    for n in rec["sizes"]:
        assert set(rec["tflops"][n]) == {k for k, _ in fp8_speed.BARS}, n
    said = "\n".join(fp8_speed.takeaways(rec))
    assert "cuBLASLt's FP8 GEMM against cuBLAS fp16" in said and "fp16 rung" in said


def test_the_plot_draws_the_numbers_it_labels():
    rec = fp8_speed.recorded()
    fig = fp8_speed.plot(rec)
    for ax, n in zip(fig.axes, rec["sizes"]):
        widths = sorted(p.get_width() for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0)
        assert widths == pytest.approx(sorted(rec["tflops"][n].values())), n
        labels = sorted(float(t.get_text().replace(",", "")) for t in ax.texts)
        assert labels == pytest.approx(widths, rel=0.01, abs=0.051), n
        assert ax.get_xscale() == "log" and "TFLOP/s" in ax.get_xlabel()
        assert ax.get_title() == f"{n}³"
    assert rec["label"] in fig._suptitle.get_text()


@pytest.mark.parametrize("info, said", [(None, "no GPU here"), (types.SimpleNamespace(cc=80, arch="sm_80"), "sm_80")])
def test_the_live_cell_says_why_it_times_nothing(monkeypatch, info, said):
    from grader.runtime import device

    monkeypatch.setattr(device, "device_info", lambda: info)
    monkeypatch.setattr(bench, "contenders", lambda *a, **k: pytest.fail("nothing may be built without an FP8 GPU"))
    lines = fp8_speed.measure_here(256)
    assert len(lines) == 1 and said in lines[0] and "sm_89" in lines[0]
