"""Notebook 08, section 9: the convolution ladder against cuDNN, measured.

Two benches write kernels/RESULTS-conv.md: `python -m grader.bench.conv` (the WMMA implicit GEMM
of section 7 at the TVM layer and ResNet-50's 3x3 layers, each paired with cuDNN) and
`python -m grader.bench.conv_tma` (the Hopper kernel, wgmma fed by the TMA in im2col mode, at the
same layers, paired with cuDNN). The newest dated run of each is read back as its bench wrote it and
drawn on any machine, each labelled with its GPU and date. They may come from different runs, even
different GPUs: what is drawn is each kernel's speed relative to cuDNN paired in its own run (a
ratio carries across GPUs; TFLOP/s do not). On an sm_90 GPU the Hopper bench's own correctness check
and a short pairing with cuDNN at the TVM layer run here too.
"""
from __future__ import annotations

import re

from grader.bench import conv as wmma_bench
from grader.bench import conv_tma as bench
from grader.lessons import measuring, records
from grader.problems.tma_im2col import M_of

RECORD = "RESULTS-conv.md"
# The headings the two benches write (their tests write records through the benches and read them here)
TMA_TITLE = "conv2d_wgmma_tma (wgmma + TMA im2col) vs cuDNN"
WMMA_RUN = "Layout and convolution kernels"
WMMA_TABLE = "### conv2d (implicit GEMM, WMMA, fp16 in, fp32 out) vs baselines"
PROBE_TITLE = "The im2col copy alone"

TVM = "TVM b256 14x14 256->512"
WMMA_NAMES = {"TVM RFC b256 14x14 256->512": wmma_bench.TVM_SHAPE, **wmma_bench.RESNET_LAYERS}  # bench_conv2d's rows
SERIES = (("wmma", "implicit GEMM, WMMA (section 7)", "#2da44e"),
          ("tma", "wgmma + TMA im2col (this section)", "#1f6feb"))
_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def flops(shape) -> float:
    N, C, H, W, K, R, S, pad = shape
    return 2.0 * M_of(shape) * K * R * S * C


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _number(cell: str) -> float | None:
    m = re.fullmatch(r"([\d.]+)x?", cell)
    return float(m.group(1)) if m else None


def _runs(text: str, heading: re.Pattern) -> list[tuple[str, str, int]]:
    """(heading line, body up to the next heading of its level or higher, position) of each run."""
    out = []
    for m in heading.finditer(text):
        level = len(m.group(1))
        nxt = re.compile(r"^#{1,%d} " % level, re.M).search(text, m.end())
        out.append((m.group(0), text[m.end():nxt.start() if nxt else len(text)], m.start()))
    return out


def _newest(runs):
    """The run whose heading has the latest date (the later one in the file on a tie), or None."""
    dated = [(_DATE.search(h).group(0) if _DATE.search(h) else "", pos, h, body) for h, body, pos in runs]
    return max(dated) if dated else None


def _tma_rows(body: str) -> dict:
    rows = {}
    for line in body.splitlines():
        c = _cells(line)
        if len(c) != 8 or c[0] not in bench.LAYERS:
            continue
        ms, cudnn_ms, ratio = _number(c[2]), _number(c[4]), _number(c[6])
        if ms is None:  # not timed, failed, or no right variant (the row says why)
            continue
        rows[bench.LAYERS[c[0]]] = dict(ms=ms, cudnn_ms=cudnn_ms, ratio=ratio, how=c[1])
    return rows


def _probe(body: str) -> tuple[int, int] | None:
    """(copies equal to the model, copies made) summed over the probe table, or None."""
    start = body.find(PROBE_TITLE)
    if start < 0:
        return None
    equal = made = 0
    for line in records.section(body[start:], PROBE_TITLE).splitlines():
        c = _cells(line)
        if len(c) == 5 and c[0].startswith("(") and c[2].isdigit() and c[3].isdigit():
            made, equal = made + int(c[2]), equal + int(c[3])
    return (equal, made) if made else None


def _wmma_rows(body: str) -> dict:
    rows = {}
    table = body[body.find(WMMA_TABLE):] if WMMA_TABLE in body else ""
    for line in table.splitlines():
        c = _cells(line)
        if len(c) != 11 or c[0] not in WMMA_NAMES:
            continue
        ms, cudnn_ms, ratio = _number(c[2]), _number(c[8]), _number(c[10])
        if ms is not None:
            rows[WMMA_NAMES[c[0]]] = dict(ms=ms, cudnn_ms=cudnn_ms, ratio=ratio, how=c[1])
    return rows


def recorded(text: str | None = None) -> dict | None:
    """The newest run of each rung in the record: {"layers": [(name, shape)], "wmma": run, "tma": run},
    a run being {"label", "heading", "rows": {shape: {"ms", "cudnn_ms", "ratio", "how"}}} (the Hopper
    run also "probe": (copies equal to the model, copies)), or None when it has no timed layer.
    None when neither rung is recorded."""
    text = records.record(RECORD) if text is None else text
    out = {"layers": list(bench.LAYERS.items())}
    tma_heading = re.compile(r"^(#{2,3}) " + re.escape(TMA_TITLE) + r" — .*$", re.M)
    wmma_heading = re.compile(r"^(##) " + re.escape(WMMA_RUN) + r" — .*$", re.M)
    tma_runs = [(h, b, p) for h, b, p in _runs(text, tma_heading) if _tma_rows(b)]
    wmma_runs = [(h, b, p) for h, b, p in _runs(text, wmma_heading) if _wmma_rows(b)]
    for key, runs, rows_of in (("tma", tma_runs, _tma_rows), ("wmma", wmma_runs, _wmma_rows)):
        newest = _newest(runs)
        if newest is None:
            out[key] = None
            continue
        _, _, heading, body = newest
        out[key] = {"label": records.label_of(heading, RECORD), "heading": heading, "rows": rows_of(body)}
        if key == "tma":
            out[key]["probe"] = _probe(body)
    return out if out["tma"] or out["wmma"] else None


def _ratios(run: dict | None, shapes) -> list[float]:
    return [run["rows"][s]["ratio"] for s in shapes if run and s in run["rows"] and run["rows"][s]["ratio"]]


def takeaways(rec: dict | None) -> list[str]:
    """What the record says, in sentences computed from it (the notebook's prose quotes no number)."""
    if rec is None or rec["tma"] is None:
        return ["No GPU run of the Hopper convolution is recorded yet: `python -m grader.bench.conv_tma --out FILE` "
                "on an H100/H200 (`.ci/gpu-conv-tma`), appended to kernels/RESULTS-conv.md."]
    tvm = dict(rec["layers"])[TVM]
    resnet = [s for name, s in rec["layers"] if name != TVM]
    out = []
    for key, what, _ in SERIES:
        run = rec[key]
        if run is None:
            continue
        said = []
        if _ratios(run, [tvm]):
            said.append(f"{_ratios(run, [tvm])[0]:.2f}x cuDNN at the TVM layer")
        r = _ratios(run, resnet)
        if r:
            said.append(f"{min(r):.2f}-{max(r):.2f}x on {len(r)} ResNet-50 3x3 layers")
        if said:
            out.append(f"{what}: {', '.join(said)}; {run['label']}")
    probe = rec["tma"].get("probe")
    if probe:
        out.append(f"the im2col copy alone, on the GPU: {probe[0]} of {probe[1]} copies equal the CPU model "
                   "(im2col_box) byte for byte")
    if rec["wmma"] and rec["wmma"]["label"] != rec["tma"]["label"]:
        out.append("the two rungs come from different runs: compare their ratios to cuDNN (each paired in its own "
                   "run), not their TFLOP/s")
    return out


def plot(rec: dict | None = None):
    """Per layer, each rung's speed relative to cuDNN paired in the same run (cuDNN = 1, the dashed
    line), labelled with the ratio and the TFLOP/s; the runs' GPUs and dates in the title."""
    import matplotlib.pyplot as plt

    rec = recorded() if rec is None else rec
    if rec is None:
        return records.not_recorded_figure("The convolution ladder: not measured yet (needs a GPU run of grader.bench.conv_tma)")
    layers = rec["layers"]
    fig, ax = plt.subplots(figsize=(10, 0.9 * len(layers) + 1.6))
    height = 0.38
    top = 0.0
    for k, (key, what, colour) in enumerate(SERIES):
        run = rec[key]
        if run is None:
            continue
        ys, vals, texts = [], [], []
        for i, (name, shape) in enumerate(layers):
            row = run["rows"].get(shape)
            if row and row["ratio"]:
                ys.append(len(layers) - 1 - i + (0.5 - k) * height)
                vals.append(row["ratio"])
                texts.append(f"{row['ratio']:.2f}x  ({flops(shape) / (row['ms'] * 1e-3) / 1e12:.0f} TFLOP/s)")
        ax.barh(ys, vals, height, color=colour, label=f"{what}: {run['label']}")
        for y, v, t in zip(ys, vals, texts):
            ax.text(v + 0.01, y, t, va="center", fontsize=8)
        top = max([top, *vals])
    ax.axvline(1.0, color="#8250df", ls="--", lw=1.2, label="cuDNN (PyTorch), paired with each kernel in its run")
    ax.set_yticks(range(len(layers))[::-1], [name for name, _ in layers])
    ax.set_xlim(0, max(1.3, top * 1.35))
    ax.set_xlabel("speed relative to cuDNN in the same run (cuDNN time / kernel time)")
    ax.set_title("conv2d, fp16 in, fp32 accumulate: the course's rungs against cuDNN (GPU and date of each run "
                 "below)", fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, frameon=False)
    fig.tight_layout()
    plt.show()
    return fig


def table_rows(rec: dict) -> list[dict]:
    """The numbers behind the plot, one row a layer (for grader.checking.display.table)."""
    rows = []
    for name, shape in rec["layers"]:
        d = {"layer": name}
        for key, short in (("wmma", "WMMA"), ("tma", "wgmma+TMA")):
            row = (rec[key] or {"rows": {}})["rows"].get(shape)
            d[f"{short} ms"] = f"{row['ms']:.4f}" if row else "-"
            d[f"{short} / cuDNN"] = f"{row['ratio']:.2f}x" if row and row["ratio"] else "-"
        row = (rec["tma"] or {"rows": {}})["rows"].get(shape)
        d["Hopper variant"] = row["how"] if row else "-"
        rows.append(d)
    return rows


def measure_here(seconds: float = 1.0, out=print) -> list[str]:
    """On an sm_90 GPU: the bench's own correctness check of one variant (its child process, every
    shape it supports, under a time limit), then the bench's pairing with cuDNN at the TVM layer
    (time_layer, `seconds` per pairing); the rows as the record writes them. The variant is the one
    the newest record timed at the TVM layer (the default build if none). Elsewhere, and while
    nbgrader autogrades, one line saying why nothing was timed."""
    from grader.runtime.device import device_info

    info = device_info()
    if info is None or info.cc != 90:  # sm_90a code runs on sm_90 only (the "a" features are not forward-compatible)
        here = "no GPU here" if info is None else f"this GPU is {info.arch}"
        return [f"Not measured here ({here}): the kernel is built for sm_90a (wgmma, TMA: an H100/H200), and the CPU "
                "emulator refuses TMA copies and mbarriers. The plot above is the record."]
    if measuring.skip("the Hopper convolution's speed", "the plot above is the record"):
        return []
    variant = _record_variant()
    out(f"checking {variant.name} at {len(bench.check_shapes(variant))} shapes (a child process, at most "
        f"{bench.CHECK_TIMEOUT:.0f} s) ...")
    ok, rows, why = bench.check_variant(variant, timeout=bench.CHECK_TIMEOUT)
    lines = [bench.check_row(variant.name, r) for r in rows]
    if not ok:
        return lines + [f"{variant.name}: {why or 'WRONG at a shape above'}: not timed."]
    r = bench.time_layer({variant: bench.ConvTma(variant)}, bench.TVM_SHAPE, seconds)
    lines += ["", *bench.TIMING_HEADER, bench.layer_row(TVM, r)]
    if "ratio" not in r:
        lines.append("cuDNN not paired here (no PyTorch with CUDA): only our time is shown.")
    return lines


def _record_variant() -> bench.Variant:
    rec = recorded()
    row = rec["tma"]["rows"].get(bench.TVM_SHAPE) if rec and rec["tma"] else None
    try:
        return bench.variant_named(row["how"]) if row else bench.DEFAULT
    except ValueError:  # a variant the bench no longer builds
        return bench.DEFAULT
