"""Every number a speed plot prints agrees with what it draws (issue #15, item 4).

Notebook 06's ladder once drew a 322 TFLOP/s bar labelled "58.0%" under a cuBLAS line at 648
(322/648 is 49.7%): the % was a paired-round median, the line another run's cuBLAS. These tests
read the drawn matplotlib Axes (bars, lines, texts) of the speed plots of notebooks 03, 04, 06,
07, 08 and 09, on recorded runs and on rows made to disagree, and check each label against the
bar or line it sits on."""
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from grader.lessons import capstone, convolution, cuda_gemm, fast_gemm, precisions, seeds  # noqa: E402
from grader.lessons import wmma_basics  # noqa: E402

NUMBER = r"\d[\d,]*\.?\d*"  # no signs: every drawn value is positive, and "555-699" is a range


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(NUMBER, text)]


def bars(ax, horizontal=False):
    """(value, tip x, tip y) of every bar: its height (width for horizontal bars) and the point a
    label sits on, the middle of its top (of its right end)."""
    out = []
    for p in ax.patches:
        if not isinstance(p, Rectangle) or p.get_width() == 0 or p.get_height() == 0:
            continue
        if horizontal:
            out.append((p.get_x() + p.get_width(), p.get_x() + p.get_width(), p.get_y() + p.get_height() / 2))
        else:
            out.append((p.get_height(), p.get_x() + p.get_width() / 2, p.get_y() + p.get_height()))
    return out


def label_at(ax, x, y) -> str:
    """The text drawn at (x, y) in data coordinates (exactly one)."""
    hits = [t.get_text() for t in ax.texts if np.allclose(t.get_position(), (x, y), rtol=1e-9, atol=1e-9)]
    assert len(hits) == 1, f"{len(hits)} labels at ({x}, {y}): {hits}"
    return hits[0]


def hlines(ax) -> list[float]:
    """y of every horizontal reference line (axhline)."""
    return [line.get_ydata()[0] for line in ax.get_lines()
            if len(set(np.asarray(line.get_ydata(), dtype=float))) == 1 and len(line.get_ydata()) == 2]


# ------------------------------------------------------------------ notebook 06
ISSUE_ROWS = [  # the issue's H100 case: the fragdb bar's own paired cuBLAS was 555, another row's 648
    dict(name="wmma_gemm_naive", n=4096, tflops=28.6, lib_tflops=698.7, ratio=0.041),
    dict(name="wmma_gemm_swizzle", n=4096, tflops=300.0, lib_tflops=648.0, ratio=0.463),
    dict(name="wmma_gemm_fragdb", n=4096, tflops=322.0, lib_tflops=555.0, ratio=0.580),
]


def percent(text: str) -> float:
    return float(re.search(r"(\d+\.?\d*)%", text).group(1))


def check_share_bars(ax, rows):
    """Each bar's "X%" is the bar over the one reference line (cuBLAS), and X is the row's paired
    share; its TFLOP/s are the row's. With the line at 100, the bars are the shares themselves."""
    lines = hlines(ax)
    assert len(lines) == 1, lines
    ref = lines[0]
    drawn = bars(ax)
    assert len(drawn) == len(rows)
    labels = [label_at(ax, x, y) for _, x, y in drawn]
    for (height, _, _), r, label in zip(drawn, rows, labels):
        pct = percent(label)
        assert pct == pytest.approx(100 * height / ref, abs=0.051), (
            f"{r['name']}: labelled {pct}% on a bar of {height:.1f} under a line at {ref:.1f}")
        assert pct == pytest.approx(100 * r["ratio"], abs=0.051)
    for r, label in zip(rows, labels):
        assert re.search(r"(\d+) TFLOP/s", label), label
        assert float(re.search(r"(\d+) TFLOP/s", label).group(1)) == pytest.approx(r["tflops"], abs=0.51)


def test_ladder_bars_are_the_paired_shares_they_are_labelled_with():
    ax = fast_gemm.plot_ladder(ISSUE_ROWS, "test").axes[0]
    check_share_bars(ax, ISSUE_ROWS)
    line_label = next(t.get_text() for t in ax.texts if "cuBLAS" in t.get_text())
    lo, hi = numbers(line_label.split("(")[-1])[:2]
    assert (lo, hi) == (555, 699)  # the range of the rows' own cuBLAS, not one figure for all


def test_recorded_ladder_and_sweep_plots_agree_with_their_labels():
    rows = fast_gemm.recorded_ladder(4096)
    check_share_bars(fast_gemm.plot_ladder(rows, "recorded").axes[0], rows)
    sweep = fast_gemm.recorded_sweep(4096)
    ax = fast_gemm.plot_sweep(sweep, 4096, "recorded").axes[0]
    assert hlines(ax) == [100]
    for (height, x, y), r in zip(bars(ax), sweep):
        pct = percent(label_at(ax, x, y))
        assert pct == pytest.approx(height, abs=0.51) and pct == pytest.approx(100 * r["ratio"], abs=0.51)


def test_niter_plot_cublas_line_is_labelled_with_its_height():
    points = fast_gemm.recorded_niter()
    fig = fast_gemm.plot_niter(points, "recorded", cublas=650.4)
    ax = fig.axes[0]
    assert hlines(ax) == [650.4]
    assert any(f"({650.4:.0f})" in t.get_text() for t in ax.get_legend().get_texts())
    for (n, v), ann in zip(points, ax.texts):
        assert ann.xy == (n, v) and numbers(ann.get_text())[0] == pytest.approx(v, abs=0.51)


# ------------------------------------------------------------------ notebooks 03 and 04
def check_pct_of_reference_bar(ax, reference_label: str):
    """Horizontal bars labelled 'V  (X% of cuBLAS...)': V is the bar, X is bar / the cuBLAS bar."""
    names = [t.get_text() for t in ax.get_yticklabels()]
    drawn = bars(ax, horizontal=True)
    ys = [t.get_position()[1] for t in ax.get_yticklabels()]
    by_y = {round(yy, 6): (v, x, yy) for v, x, yy in drawn}
    ref = by_y[round(ys[names.index(reference_label)], 6)][0]
    for name, ytick in zip(names, ys):
        v, x, y = by_y[round(ytick, 6)]
        got = numbers(label_at(ax, x, y))
        assert got[0] == pytest.approx(v, rel=0.01, abs=0.051), name
        assert got[1] == pytest.approx(100 * v / ref, abs=0.051), name


def test_notebook_03_ladder_percentages_are_bar_over_the_cublas_bar():
    rows, source = cuda_gemm.recorded_ladder()
    if not rows:
        pytest.skip("no recorded run in kernels/")
    fig = cuda_gemm.plot_ladder(rows, source, cpu={"CPU: NumPy": 900.0})
    check_pct_of_reference_bar(fig.axes[0], "cuBLAS fp32")


def test_recorded_ladder_of_notebook_03_divides_by_cublas_at_the_same_size():
    rows, _ = cuda_gemm.recorded_ladder()
    res = capstone.load()
    if not rows or "cublas_fp32" not in res["salerno"]["ms"].get("4096", {}):
        pytest.skip("no recorded cuBLAS fp32 at 4096^3")
    lib = next(r for r in rows if r["kernel"] == "cuBLAS fp32")["gflops"]
    assert lib == pytest.approx(2 * 4096**3 / res["salerno"]["ms"]["4096"]["cublas_fp32"] / 1e6)


def test_notebook_04_bars_percentages_are_bar_over_the_cublas_bar():
    t, source = wmma_basics.recorded_4096()
    if not t:
        pytest.skip("no recorded run in kernels/")
    check_pct_of_reference_bar(wmma_basics.plot_bars(t, source).axes[0], "cuBLAS fp16 (tensor cores)")


# ------------------------------------------------------------------ notebook 07
def test_notebook_07_speed_labels_are_kernel_over_its_own_cublas(monkeypatch):
    class Info:
        name = "Test GPU"

    monkeypatch.setattr(precisions, "device_info", lambda: Info())
    rows = [dict(label="fp16 naive", precision="fp16", tflops=28.0, lib_tflops=650.0, color="#0969da"),
            dict(label="fp64 fast (dmma_gemm_fast)", precision="fp64", tflops=29.6, lib_tflops=57.2,
                 color="#116329")]
    for r in rows:
        r["ratio"] = r["tflops"] / r["lib_tflops"]
    ax = precisions.plot_speed(rows, 4096, ceiling=31.0).axes[0]
    drawn = bars(ax)
    kernels, libs = drawn[:len(rows)], drawn[len(rows):]
    for (k, kx, ky), (lib, lx, ly) in zip(kernels, libs):
        assert numbers(label_at(ax, kx, ky))[0] == pytest.approx(100 * k / lib, abs=0.51)
        assert numbers(label_at(ax, lx, ly))[0] == pytest.approx(lib, abs=0.51)


# ------------------------------------------------------------------ notebooks 08 and 09
def test_notebook_08_layer_bars_are_labelled_with_their_height():
    res = capstone.load()
    if not res:
        pytest.skip("no recorded run in kernels/")
    ax = convolution.plot_layers(res["conv_layers"], "recorded").axes[0]
    drawn = bars(ax)
    assert drawn
    for v, x, y in drawn:
        assert numbers(label_at(ax, x, y))[0] == pytest.approx(v, abs=0.51)


def test_notebook_09_tvm_plot_draws_the_rfc_and_this_gpu():
    res = capstone.load()
    if not res:
        pytest.skip("no recorded run in kernels/")
    fig = capstone.plot_tvm(res)
    drawn_rfc, drawn_here = [], []
    for ax in fig.axes:
        names = [t.get_text() for t in ax.get_yticklabels()]
        ys = [t.get_position()[1] for t in ax.get_yticklabels()]
        by_y = {round(yy, 6): (v, x, yy) for v, x, yy in bars(ax, horizontal=True)}
        for name, ytick in zip(names, ys):
            if round(ytick, 6) not in by_y:
                assert "no " in name  # an RFC row with nothing of its kind here
                continue
            v, x, y = by_y[round(ytick, 6)]
            assert numbers(label_at(ax, x, y))[0] == pytest.approx(v, rel=0.005)
            (drawn_rfc if name.startswith("TITAN V") else drawn_here).append(v)
    assert sorted(drawn_rfc) == sorted(seeds.TVM_TITAN_V_MS.values())
    here = [r["here_ms"] for r in capstone.tvm_compare_rows(res) if r["here_ms"]]
    assert sorted(drawn_here) == sorted(here)


def test_notebook_09_salerno_plot_draws_the_paper_and_this_machine():
    res = capstone.load()
    if not res:
        pytest.skip("no recorded run in kernels/")
    for y in ("time", "rate"):
        lines = {line.get_label(): line for line in capstone.plot_salerno(res, y).axes[0].get_lines()}
        for key, pts in capstone.paper_points().items():
            line = lines[capstone.PAPER_LABELS[key]]
            want = [pts[n] if y == "time" else 2 * n**3 / (pts[n] * 1e-3) / 1e12 for n in sorted(pts)]
            assert list(line.get_xdata()) == sorted(pts) and np.allclose(line.get_ydata(), want)
        cpu = lines["CPU (NumPy fp32)"]
        ms = res["salerno"]["ms"]["1024"]["cpu_numpy"]
        assert cpu.get_xdata()[0] == 1024
        assert cpu.get_ydata()[0] == pytest.approx(ms if y == "time" else 2 * 1024**3 / (ms * 1e-3) / 1e12)
    assert capstone.paper_points()["cpu_numpy"][8192] == seeds.PAPER_CPU_MS[8192]


def test_notebook_11_scaling_plot_draws_its_errors_and_the_labelled_roundoff():
    from grader.lessons import fp8_formats

    res = fp8_formats.scaling_error([32, 64], seed=0)
    ax = fp8_formats.plot_scaling(res).axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    lines = {line.get_label(): line for line in ax.get_lines()}
    for name, ys in res["errors"].items():
        drawn = next(v for k, v in lines.items() if name in k)
        assert np.allclose(drawn.get_ydata(), ys)
    (label, line), = [(k, v) for k, v in lines.items() if "roundoff" in k]
    assert 2.0 ** float(label.split("2^")[1]) == line.get_ydata()[0]
