"""Notebook 08's section 9 (grader.lessons.conv_tma_speed, grader.lessons.tma_copy): the convolution
ladder read back from records the two benches write (grader.bench.conv for the WMMA rung,
grader.bench.conv_tma for the Hopper one; their GPU parts replaced by random timings), drawn as it
reads; the live cell's paths; and the picture of one im2col copy against the im2col matrix."""
import re
import types

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from grader.bench import conv as wmma_bench  # noqa: E402
from grader.bench import conv_tma as ct  # noqa: E402
from grader.lessons import conv_tma_speed as speed  # noqa: E402
from grader.lessons import tma_copy  # noqa: E402
from grader.problems import conv, numerics  # noqa: E402

DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _info(name):
    return types.SimpleNamespace(name=name, arch="sm_90", sm_count=132, driver="13.0", runtime="13.2", cc=90)


_FAKE_TORCH = types.SimpleNamespace(__version__="2.11.0+fake",
                                    backends=types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91900)))
_OK = numerics.compare(np.zeros(4), np.zeros(4), np.ones(4))


def _tma_run(monkeypatch, gpu, rng, unpaired=()):
    """A Hopper record written by conv_tma.report, every GPU part replaced: per layer a random time,
    cuDNN time and ratio (the layers in `unpaired` without cuDNN). Returns (lines, {shape: timing})."""
    right = ct.variant_named("128x64x64 s4 b2")  # supports every layer
    monkeypatch.setattr(ct, "probe_copies", lambda timeout=0: (
        [dict(shape=s, pixels=64, copies=10 + i, wrong=i % 2, first_wrong=None) for i, s in enumerate(ct.PROBE_SHAPES)], ""))
    monkeypatch.setattr(ct, "check_variant", lambda v, timeout=0: (
        True, [dict(shape=s, ok=True, detail="correct", regs=90) for s in ct.check_shapes(v)], ""))
    monkeypatch.setattr(ct, "ConvTma", lambda v: object())
    monkeypatch.setattr(ct, "_torch", lambda: _FAKE_TORCH)
    given = {}

    def fake_time(mods, shape, max_seconds, out=None):
        ms = float(rng.uniform(0.01, 0.6))
        r = dict(shape=shape, flops=speed.flops(shape), sweep={v.name: ms for v in mods}, variant=right.name, ms=ms)
        if shape not in unpaired:
            r.update(cudnn_ms=float(rng.uniform(0.01, 0.6)), ratio=float(rng.uniform(0.05, 2.5)))
        given[shape] = r
        return r

    monkeypatch.setattr(ct, "time_layer", fake_time)
    lines, rc = ct.report(_info(gpu), [right], out=lambda s: None)
    assert rc == 0
    return lines, given


def _wmma_run(monkeypatch, tmp_path, gpu, rng, only=("conv",)):
    """A record written by `python -m grader.bench.conv --only ...` with every GPU part replaced.
    Returns (text, {shape: timing})."""
    monkeypatch.setattr(wmma_bench, "device_info", lambda: _info(gpu))
    monkeypatch.setattr(wmma_bench, "_torch", lambda: _FAKE_TORCH)
    monkeypatch.setattr(wmma_bench, "check_conv", lambda cfg, shapes=None: [((1, 32, 5, 7, 128, 3, 3, 1), _OK)])
    monkeypatch.setattr(wmma_bench, "module", lambda *a, **k: None)
    monkeypatch.setattr(conv, "check_conv_wmma", lambda *a, **k: _OK)
    given = {}

    def fake_time(shape, cfg=None, max_seconds=2.0, cudnn=True, **k):
        ms = float(rng.uniform(0.01, 0.9))
        r = dict(shape=shape, config="128x128x32, 128 threads, warps_m 2, 4 stages", flops=speed.flops(shape),
                 kernel_ms=ms, im2col_ms=0.5, gemm_ms=0.1, astype_ms=0.05, im2col_cublas_ms=0.7,
                 speedup_vs_im2col_cublas=0.7 / ms, gather_cublas_ms=0.6, speedup_vs_gather_cublas=0.6 / ms,
                 cudnn_ms=float(rng.uniform(0.01, 0.3)), kernel_vs_cudnn=float(rng.uniform(0.05, 1.5)))
        given[shape] = r
        return r

    monkeypatch.setattr(wmma_bench, "time_conv", fake_time)
    out = tmp_path / f"conv-{gpu.replace(' ', '_')}.md"
    assert wmma_bench.main(["--only", *only, "--out", str(out)]) == 0
    return out.read_text(), given


def _dated(text, date):
    return DATE.sub(date, text)


def test_the_record_reads_back_what_both_benches_wrote(monkeypatch, tmp_path):
    rng = np.random.default_rng(11)
    unpaired = (ct.RESNET_LAYERS["resnet50 28x28 128->128"],)
    tma_lines, tma_given = _tma_run(monkeypatch, "NVIDIA H100 80GB HBM3", rng, unpaired)
    wmma_text, wmma_given = _wmma_run(monkeypatch, tmp_path, "NVIDIA H200", rng)
    text = ("# Measured results\n\n" + _dated(wmma_text, "2026-11-22 06:54 UTC") + "\n"
            + _dated("\n".join(tma_lines), "2026-11-29 10:00 UTC") + "\n")
    rec = speed.recorded(text)
    assert [s for _, s in rec["layers"]] == list(ct.LAYERS.values())
    assert "NVIDIA H100" in rec["tma"]["label"] and "2026-11-29 10:00 UTC" in rec["tma"]["label"]
    assert "NVIDIA H200" in rec["wmma"]["label"] and "2026-11-22 06:54 UTC" in rec["wmma"]["label"]
    for shape, r in tma_given.items():
        got = rec["tma"]["rows"][shape]
        assert got["ms"] == pytest.approx(r["ms"], abs=5.1e-5) and got["how"] == r["variant"]
        if shape in unpaired:
            assert got["ratio"] is None and got["cudnn_ms"] is None
        else:
            assert got["ratio"] == pytest.approx(r["ratio"], abs=5.1e-3)
            assert got["cudnn_ms"] == pytest.approx(r["cudnn_ms"], abs=5.1e-5)
    for shape, r in wmma_given.items():
        got = rec["wmma"]["rows"][shape]
        assert got["ms"] == pytest.approx(r["kernel_ms"], abs=5.1e-5)
        assert got["ratio"] == pytest.approx(r["kernel_vs_cudnn"], abs=5.1e-3)
    made = sum(10 + i for i in range(len(ct.PROBE_SHAPES)))
    assert rec["tma"]["probe"] == (made - sum(i % 2 for i in range(len(ct.PROBE_SHAPES))), made)
    said = "\n".join(speed.takeaways(rec))
    assert "different runs" in said and f"{len(ct.RESNET_LAYERS) - 1} ResNet-50" in said


def test_the_plot_draws_the_numbers_it_labels(monkeypatch, tmp_path):
    rng = np.random.default_rng(5)
    tma_lines, tma_given = _tma_run(monkeypatch, "NVIDIA H200", rng)
    wmma_text, wmma_given = _wmma_run(monkeypatch, tmp_path, "NVIDIA H100 80GB HBM3", rng)
    rec = speed.recorded(_dated(wmma_text, "2026-11-22 06:54 UTC") + "\n" + _dated("\n".join(tma_lines), "2026-11-28 03:15 UTC"))
    fig = speed.plot(rec)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0]
    wanted = sorted([r["ratio"] for r in tma_given.values()] + [r["kernel_vs_cudnn"] for r in wmma_given.values()])
    assert sorted(b.get_width() for b in bars) == pytest.approx(wanted, abs=5.1e-3)
    # each bar's label: its ratio and the TFLOP/s of its time, at the bar's end
    for b in bars:
        y = b.get_y() + b.get_height() / 2
        text = next(t.get_text() for t in ax.texts if abs(t.get_position()[1] - y) < 1e-9)
        ratio, tflops = re.fullmatch(r"([\d.]+)x\s+\((\d+) TFLOP/s\)", text).groups()
        assert float(ratio) == pytest.approx(b.get_width(), abs=5e-3)
        given = [r for r in (*tma_given.values(), *wmma_given.values())
                 if abs(r.get("ratio", r.get("kernel_vs_cudnn")) - b.get_width()) < 5.1e-3]
        assert any(abs(speed.flops(r["shape"]) / (r.get("ms", r.get("kernel_ms")) * 1e-3) / 1e12 - float(tflops)) <= 1
                   for r in given), text
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("WMMA" in t and "NVIDIA H100" in t and "2026-11-22 06:54 UTC" in t for t in legend)
    assert any("TMA" in t and "NVIDIA H200" in t and "2026-11-28 03:15 UTC" in t for t in legend)
    ticks = {round(y): t.get_text() for y, t in zip(ax.get_yticks(), ax.get_yticklabels())}
    assert ticks == {len(ct.LAYERS) - 1 - i: name for i, name in enumerate(ct.LAYERS)}  # the first layer on top
    for b in bars:  # each bar beside its layer's tick, and its width that layer's ratio in its rung's run
        name = ticks[round(b.get_y() + b.get_height() / 2)]
        given = tma_given if b.get_facecolor()[:3] == matplotlib.colors.to_rgb(speed.SERIES[1][2]) else None
        r = (tma_given[ct.LAYERS[name]]["ratio"] if given is not None
             else wmma_given[ct.LAYERS[name]]["kernel_vs_cudnn"])
        assert b.get_width() == pytest.approx(r, abs=5.1e-3), name


def test_only_the_newest_dated_run_counts(monkeypatch, tmp_path):
    rng = np.random.default_rng(3)
    new, new_given = _tma_run(monkeypatch, "NVIDIA H100 80GB HBM3", rng)
    old, _ = _tma_run(monkeypatch, "NVIDIA H200", rng)
    # the newer run first in the file: the date decides, not the place
    text = _dated("\n".join(new), "2026-11-29 01:00 UTC") + "\n" + _dated("\n".join(old), "2026-11-28 03:15 UTC")
    rec = speed.recorded(text)
    assert "H100" in rec["tma"]["label"] and rec["wmma"] is None
    assert {s: r["ms"] for s, r in rec["tma"]["rows"].items()} == pytest.approx(
        {s: r["ms"] for s, r in new_given.items()}, abs=5.1e-5)
    # on the same date, the later in the file
    same = _dated("\n".join(new), "2026-11-28 03:15 UTC") + "\n" + _dated("\n".join(old), "2026-11-28 03:15 UTC")
    assert "H200" in speed.recorded(same)["tma"]["label"]
    speed.plot(rec)  # one rung only: draws


def test_one_run_of_both_benches_is_one_label(monkeypatch, tmp_path):
    """`python -m grader.bench.conv --only conv tma`: the Hopper section nested in the WMMA run."""
    rng = np.random.default_rng(8)
    _tma_run(monkeypatch, "NVIDIA H100 80GB HBM3", rng)  # its fakes stay in place for the nested report
    text, _ = _wmma_run(monkeypatch, tmp_path, "NVIDIA H100 80GB HBM3", rng, only=("conv", "tma"))
    rec = speed.recorded(text)
    assert rec["tma"]["label"] == rec["wmma"]["label"] and len(rec["tma"]["rows"]) == len(ct.LAYERS)
    assert "different runs" not in "\n".join(speed.takeaways(rec))


def test_nothing_recorded_says_so(monkeypatch):
    assert speed.recorded("# nothing measured yet\n") is None
    assert "No GPU run of the Hopper convolution" in speed.takeaways(None)[0]
    monkeypatch.setattr(speed, "recorded", lambda text=None: None)  # plot(None) reads the course's record
    fig = speed.plot(None)
    assert "not measured yet" in fig.axes[0].texts[0].get_text()


def test_the_course_record_has_both_rungs_paired_at_the_tvm_layer():
    """The notebook's plot on any machine: kernels/RESULTS-conv.md as it is (a later run may time fewer
    layers, cut short by its budget: the plot then lacks those bars, and says nothing false)."""
    rec = speed.recorded()
    assert rec is not None and rec["tma"] is not None and rec["wmma"] is not None
    for run in (rec["tma"], rec["wmma"]):
        assert set(run["rows"]) <= set(ct.LAYERS.values()) and run["rows"][ct.TVM_SHAPE]["ratio"]
    assert rec["tma"]["probe"] is not None
    rows = speed.table_rows(rec)
    assert [r["layer"] for r in rows] == list(ct.LAYERS) and rows[0]["wgmma+TMA / cuDNN"].endswith("x")


# ---------------------------------------------------------------- the live cell
@pytest.mark.parametrize("info, said", [(None, "no GPU here"), (types.SimpleNamespace(cc=80, arch="sm_80"), "sm_80"),
                                        (types.SimpleNamespace(cc=100, arch="sm_100"), "sm_100")])
def test_the_live_cell_says_why_it_times_nothing(monkeypatch, info, said):
    from grader.runtime import device

    monkeypatch.setattr(device, "device_info", lambda: info)
    monkeypatch.setattr(ct, "check_variant", lambda *a, **k: pytest.fail("nothing may run without sm_90"))
    monkeypatch.setattr(ct, "ConvTma", lambda *a, **k: pytest.fail("nothing may be built without sm_90"))
    lines = speed.measure_here()
    assert len(lines) == 1 and said in lines[0] and "sm_90a" in lines[0] and "emulator" in lines[0]


def test_on_hopper_the_live_cell_checks_then_pairs_at_the_tvm_layer(monkeypatch):
    from grader.runtime import device

    monkeypatch.setattr(device, "device_info", lambda: _info("NVIDIA H100 80GB HBM3"))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    want = speed._record_variant()
    assert want.name == speed.recorded()["tma"]["rows"][ct.TVM_SHAPE]["how"]  # the record's variant at the TVM layer
    calls = []
    monkeypatch.setattr(ct, "check_variant", lambda v, timeout=0: calls.append(("check", v)) or (
        True, [dict(shape=s, ok=True, detail="correct", regs=168) for s in ct.check_shapes(v)], ""))
    monkeypatch.setattr(ct, "ConvTma", lambda v: calls.append(("build", v)) or object())
    monkeypatch.setattr(ct, "time_layer", lambda mods, shape, s: calls.append(("time", shape, s)) or dict(
        shape=shape, flops=speed.flops(shape), sweep={want.name: 0.2}, variant=want.name, ms=0.2, cudnn_ms=0.18, ratio=0.9))
    lines = speed.measure_here(0.5, out=lambda s: None)
    assert calls == [("check", want), ("build", want), ("time", ct.TVM_SHAPE, 0.5)]
    rec = speed.recorded(f"## {speed.TMA_TITLE} — NVIDIA H100, 2026-12-01 00:00 UTC\n" + "\n".join(lines))
    assert rec["tma"]["rows"] == {ct.TVM_SHAPE: dict(ms=0.2, cudnn_ms=0.18, ratio=0.9, how=want.name)}  # as the record reads

    calls.clear()
    monkeypatch.setattr(ct, "check_variant", lambda v, timeout=0: calls.append(("check", v)) or (
        False, [dict(shape=ct.SMALL_SHAPES[1], ok=False, detail="WRONG: 3 of 99", regs=168)], ""))
    lines = speed.measure_here(0.5, out=lambda s: None)
    assert calls == [("check", want)] and "not timed" in lines[-1] and "WRONG: 3 of 99" in lines[0]

    calls.clear()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # a lesson demo measures nothing under autograde
    assert speed.measure_here(0.5) == [] and calls == []


# ---------------------------------------------------------------- one im2col copy, on the CPU
@pytest.mark.parametrize("shape, block_m", [(tma_copy.SMALL, 64), ((3, 128, 9, 6, 64, 3, 5, 1), 128),
                                            ((1, 64, 6, 8, 64, 5, 3, 2), 64)])
def test_every_copy_of_the_picture_is_the_im2col_block(shape, block_m):
    N, C, H, W, K, R, S, pad = shape
    M = N * conv.out_size(H, R, pad) * conv.out_size(W, S, pad)
    for m0 in range(0, M, block_m):
        for r in range(R):
            for s in range(S):
                f = tma_copy.fetch(shape, block_m, m0, (r, s), c0=C - 64)
                assert f["equal"], (m0, r, s)
                # the model's rows read what the definition says, and zeros exactly where it says
                for i, (px, why, at) in enumerate(zip(f["pixels"], f["outside"], f["padding_at"])):
                    n, pq = divmod(m0 + i, (M // N))
                    Q = conv.out_size(W, S, pad)
                    if why is None:
                        assert px == (n, pq // Q + r - pad, pq % Q + s - pad)
                    else:
                        assert px is None and (at is not None) == (why == "padding")


def test_the_picture_check_catches_a_copy_with_its_offsets_swapped(monkeypatch):
    real = tma_copy.im2col_box
    monkeypatch.setattr(tma_copy, "im2col_box", lambda x, p, start, c0, off: real(x, p, start, c0, off[::-1]))
    assert not tma_copy.fetch(tma_copy.SMALL, 64, 0, (0, 2))["equal"]
    assert tma_copy.fetch(tma_copy.SMALL, 64, 0, (1, 1))["equal"]  # the centre tap cannot tell


def test_the_picture_numbers_every_row_where_it_reads():
    f = tma_copy.fetch(tma_copy.SMALL, 64, 0, (0, 0))
    fig = tma_copy.plot_fetch(f)
    shown = sorted(int(t.get_text()) for ax in fig.axes for t in ax.texts)
    assert shown == [i for i, why in enumerate(f["outside"]) if why != "past the last image"]
    red = sum(t.get_color() == "#cf222e" for ax in fig.axes for t in ax.texts)
    assert red == f["outside"].count("padding") > 0
    assert f"{f['outside'].count('padding')} rows" in fig._suptitle.get_text()


def test_the_map_table_is_the_tensor_map_the_bench_encodes():
    from grader.problems.tma_im2col import tensor_map_params

    layers = {"small": (tma_copy.SMALL, tma_copy.SMALL_VARIANT), "TVM": (ct.TVM_SHAPE, ct.DEFAULT)}
    rows = {r["field"]: r for r in tma_copy.map_fields(layers)}
    for name, (shape, v) in layers.items():
        p = tensor_map_params(*shape, v)
        assert rows["globalDim"][name] == str(p.x_dims) and rows["pixelsPerColumn"][name] == str(v.block_m)
        assert rows["pixelBoxLowerCorner {W, H}"][name] == str(p.lower_corner)
        assert rows["pixelBoxUpperCorner {W, H}"][name] == str(p.upper_corner)
    assert ct._OOB_ZERO == 0 and rows["oobFill"]["TVM"] == "zeros"  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros


def test_the_producer_excerpt_is_the_kernels_one_thread_loop():
    loop = tma_copy.producer_loop()
    assert loop.startswith("if (wg == 0)") and loop.rstrip().endswith("}")
    assert "if (threadIdx.x == 0)" in loop
    order = [loop.index(s) for s in ("mbar_wait(empty", "mbar_expect_tx(full", "tma_load_im2col(", "tma_load_2d(")]
    assert order == sorted(order)
    assert "wgmma" not in loop  # the consumers' part is not in it


def test_notebook_08_ends_with_the_hopper_section_and_grades_nothing_new():
    from grader.classroom import notebook_file, notebooks

    for root in (notebooks.SOLUTIONS, notebooks.STUDENT):
        nb = notebook_file.read(root / "08-convolution" / "08-convolution.ipynb")
        heads = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## ")]
        last = nb.cells[heads[-1]:]
        assert nb.cells[heads[-1]].source.startswith("## 9. Hopper"), root
        code = "\n".join(c.source for c in last if c.cell_type == "code")
        for call in ("TC.map_fields(", "TC.producer_loop()", "TC.fetch(", "TC.plot_fetch(", "CT.recorded()",
                     "CT.plot(", "CT.takeaways(", "CT.measure_here("):
            assert call in code, (root, call)
        assert not any(c.metadata.get("nbgrader") for c in last), "section 9 grades nothing"
