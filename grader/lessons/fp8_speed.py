"""Notebook 11, section 6: what FP8 and 2:4 sparsity buy, measured.

The newest run recorded in kernels/RESULTS-fp8.md (`python -m grader.bench.fp8` on a GPU) is read
back and drawn on any machine, always labelled with its GPU and date; on an sm_89+ GPU the same
bench (its checks first, then paired timing) measures the FP8 rung against the fp16 rung here, so
that the notebook and the record say the same thing by the same code.
"""
from __future__ import annotations

import re
import statistics

from grader.bench import fp8 as bench
from grader.lessons import records

RECORD = "RESULTS-fp8.md"
HEADING = "## FP8 and 2:4-sparse GEMMs vs the libraries"
# The bars, top to bottom, and what each multiplies (its colour)
BARS = ((bench.CUBLAS, "fp16"), (bench.RUNG, "fp16"), (bench.FP8, "FP8"), (bench.FP8_WGMMA, "FP8"),
        (bench.FP8_WGMMA_FAST, "FP8"), (bench.LT, "FP8"), (bench.SPARSE, "2:4 fp16"), (bench.CSLT, "2:4 fp16"))
COLOURS = {"fp16": "#8c959f", "FP8": "#1f6feb", "2:4 fp16": "#bf8700"}
NAMES = {bench.CUBLAS: "cuBLAS fp16", bench.RUNG: "fp16 rung (mma.sync, notebook 10)",
         bench.FP8: "FP8 mma.sync (this notebook)", bench.FP8_WGMMA: "FP8 wgmma + TMA (course)",
         bench.FP8_WGMMA_FAST: "FP8 wgmma, fast accumulation", bench.LT: "cuBLASLt FP8",
         bench.SPARSE: "2:4 mma.sp (this notebook)", bench.CSLT: "cuSPARSELt 2:4"}
# NVIDIA H100 SXM datasheet, dense tensor TFLOP/s (the sparse peaks are twice these)
PEAKS = {"fp16": 989.0, "FP8": 1979.0}


def _number(cell: str) -> float | None:
    m = re.match(r"\s*([\d.]+)", cell)
    return float(m.group(1)) if m else None


def recorded(text: str | None = None) -> dict | None:
    """The newest run of the record: {"label", "sizes", "tflops": {n: {name: TFLOP/s}},
    "ratio": {(kernel, baseline, n): ratio}}; each TFLOP/s the median over the pairings it was timed
    in at that size (as the bench's summary says). None when no run is recorded."""
    text = records.record(RECORD) if text is None else text
    runs = [m.start() for m in re.finditer("^" + re.escape(HEADING), text, re.M)]
    if not runs:
        return None
    run = text[runs[-1]:]
    seen: dict[int, dict[str, list[float]]] = {}
    ratio: dict[tuple, float] = {}
    for line in run.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not re.fullmatch(r"\d+\^3", cells[1]):
            continue
        k, n, b = cells[0], int(cells[1][:-2]), cells[2]
        kt, bt, pct = _number(cells[3]), _number(cells[4]), _number(cells[6])  # % of baseline: 3 figures
        if kt is None or bt is None:  # a pairing not timed (its note says why)
            continue
        seen.setdefault(n, {}).setdefault(k, []).append(kt)
        seen[n].setdefault(b, []).append(bt)
        ratio[(k, b, n)] = pct / 100
    if not seen:
        return None
    return {"label": records.label_of(run, RECORD), "sizes": sorted(seen),
            "tflops": {n: {k: statistics.median(v) for k, v in by.items()} for n, by in seen.items()},
            "ratio": ratio}


def takeaways(rec: dict | None) -> list[str]:
    """What the record says, in sentences computed from it (the notebook's prose quotes no number)."""
    if rec is None:
        return ["No GPU run is recorded yet: `python -m grader.bench.fp8 --out kernels/RESULTS-fp8.md` on an sm_89+ GPU."]
    out = []

    def each(k, b, fmt):
        got = [(n, rec["ratio"][(k, b, n)]) for n in rec["sizes"] if (k, b, n) in rec["ratio"]]
        return ", ".join(f"{fmt(r)} at {n}³" for n, r in got)

    pairs = [(bench.LT, bench.CUBLAS, "cuBLASLt's FP8 GEMM against cuBLAS fp16", lambda r: f"{r:.2f}x"),
             (bench.CSLT, bench.CUBLAS, "cuSPARSELt's 2:4 GEMM against dense cuBLAS fp16", lambda r: f"{r:.2f}x"),
             (bench.FP8_WGMMA, bench.LT, "the course's FP8 wgmma against cuBLASLt FP8", lambda r: f"{100 * r:.0f}%"),
             (bench.FP8, bench.RUNG, "this notebook's FP8 mma.sync against the fp16 rung", lambda r: f"{r:.3f}x"),
             (bench.SPARSE, bench.RUNG, "this notebook's 2:4 mma.sp against the fp16 rung", lambda r: f"{r:.3f}x")]
    for k, b, what, fmt in pairs:
        said = each(k, b, fmt)
        if said:
            out.append(f"{what}: {said}")
    return out


def plot(rec: dict | None = None):
    """Horizontal bars of every contender's TFLOP/s, one panel a size, log scale (the naive rungs are
    1-2 % of the libraries), the datasheet's dense peaks as dashed lines; titled with the record's label."""
    import matplotlib.pyplot as plt

    rec = recorded() if rec is None else rec
    if rec is None:
        return records.not_recorded_figure("FP8 and 2:4 speeds: not measured yet (needs a GPU run of grader.bench.fp8)")
    sizes = rec["sizes"]
    fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 4.2), sharey=True, squeeze=False)
    for ax, n in zip(axes[0], sizes):
        shown = [(k, fam) for k, fam in BARS if k in rec["tflops"][n]]
        ys = list(range(len(shown)))[::-1]
        vals = [rec["tflops"][n][k] for k, _ in shown]
        ax.barh(ys, vals, color=[COLOURS[f] for _, f in shown])
        for y, v in zip(ys, vals):
            ax.text(v * 1.05, y, f"{v:,.0f}" if v >= 100 else f"{v:.1f}", va="center", fontsize=9)
        for fam, peak in PEAKS.items():
            ax.axvline(peak, color=COLOURS[fam], ls="--", lw=1, label=f"{fam} dense peak, datasheet: {peak:,.0f}")
        ax.set_xscale("log")
        ax.set_xlim(5, 5000)
        ax.set_yticks(ys, [NAMES.get(k, k) for k, _ in shown])
        ax.set_xlabel("TFLOP/s (log scale; 2:4 counts the dense product's flops)")
        ax.set_title(f"{n}³")
    fig.suptitle(rec["label"], fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, [lab.replace("datasheet", "H100 SXM datasheet") for lab in labels], loc="lower center",
               ncol=len(labels), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    plt.show()
    return fig


LIVE = (bench.FP8, bench.RUNG, bench.CUBLAS, bench.FP8_WGMMA, bench.LT)
LIVE_PAIRS = ((bench.FP8, bench.RUNG), (bench.FP8_WGMMA, bench.RUNG), (bench.FP8_WGMMA, bench.LT),
              (bench.LT, bench.CUBLAS))


def measure_here(n: int = 2048, seconds: float = 1.5, out=print) -> list[str]:
    """On an sm_89+ GPU: the record's checks (at 256³ and its edge shapes), then its pairings of
    LIVE_PAIRS at n³, each `seconds` of alternating rounds; the rows as the record writes them.
    Elsewhere one line saying why nothing was timed (the plot above is then the record)."""
    from grader.lessons import measuring
    from grader.runtime.device import device_info

    if measuring.autograding():  # no grade reads it: the GPU's time goes to the grading
        return [f"FP8 timing: {measuring.WHY}; the plot above is the record."]
    info = device_info()
    if info is None or info.cc < 89:
        here = "no GPU here" if info is None else f"this GPU is {info.arch}"
        return [f"Not measured here ({here}; FP8 tensor cores need sm_89 or newer): the plot above is the record."]
    cands = [c for c in bench.contenders(check_sizes=(256,)) if c.name in LIVE]
    _, results = bench.measure(cands, (n,), LIVE_PAIRS,
                               timer=lambda f, b, ws: bench.time_pair(f, b, ws, max_seconds=seconds),
                               out=lambda s: s.startswith("check") and out(s))  # progress: the checks
    return [bench.HEAD] + [bench.row(r) for r in results]
