"""The roofline: FLOP/s against FLOP per byte, with the modelled GPU's roofs (L2 and HBM bandwidth,
tensor-core peak) and kernels as points. `plot` draws it on its own Agg figure (never pyplot state,
so a notebook's backend is left alone); in a notebook, display the returned figure.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from grader.coach.machine import H100, Rates


@dataclass
class Point:
    label: str
    intensity: float  # FLOP per byte
    tflops: float
    kind: str = "model"  # "model" (the bottleneck model's bound) | "measured"


def ridge(r: Rates = H100, math: str = "f16", memory: str = "l2") -> float:
    peak = {"f16": r.tensor_f16, "f64": r.tensor_f64}.get(math, r.fp32) * r.sms * r.clock_hz
    bw = r.l2_bytes_per_s if memory == "l2" else r.dram_bytes_per_s
    return peak / bw


def roof(intensity: float, r: Rates = H100, math: str = "f16", memory: str = "l2") -> float:
    """TFLOP/s the roof allows at `intensity`."""
    peak = {"f16": r.tensor_f16, "f64": r.tensor_f64}.get(math, r.fp32) * r.sms * r.clock_hz
    bw = r.l2_bytes_per_s if memory == "l2" else r.dram_bytes_per_s
    return min(peak, intensity * bw) / 1e12


def plot(points: list[Point], r: Rates = H100, math: str = "f16", title: str = "", cublas_tflops: float | None = None):
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.2), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = np.logspace(0, 3.3, 200)
    ax.loglog(xs, [roof(x, r, math, "l2") for x in xs], color="#444", label=f"L2 roof ({r.l2_bytes_per_s / 1e12:.1f} TB/s)")
    ax.loglog(xs, [roof(x, r, math, "dram") for x in xs], color="#999", ls="--", label="HBM roof (3.0 TB/s)")
    if cublas_tflops:
        ax.axhline(cublas_tflops, color="#1a7f37", ls=":", label=f"cuBLAS, measured ({cublas_tflops:.0f} TFLOP/s)")
    for p in points:
        style = dict(marker="o" if p.kind == "model" else "*", s=60 if p.kind == "model" else 120)
        ax.scatter([p.intensity], [p.tflops], zorder=3, label=f"{p.label} ({p.kind})", **style)
    ax.set_xlabel("FLOP per byte requested from global memory")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title or f"Roofline, {r.name}")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="both", alpha=0.2)
    return fig


KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def recorded_points(name: str) -> dict:
    """What the course's records say about kernel `name` (a ladder rung, e.g. an exercise's reference):
    {"model": (FLOP/B, TFLOP/s bound) from the static record, "cublas": TFLOP/s and label} where known.
    Records: kernels/coach-static.json (on a CPU, the current model) first for the model, then
    kernels/coach-h100.json (.ci/gpu-coach on a GPU), which alone has cuBLAS's measured launch."""
    out: dict = {}
    for fname in ("coach-static.json", "coach-h100.json"):
        try:
            rec = json.loads((KERNELS / fname).read_text())
        except (OSError, ValueError):
            continue
        for k in rec.get("kernels", []):
            m = (k.get("static") or {}).get("model")
            if k.get("name") == name and m and "model" not in out:
                out["model"] = (m["intensity"], m["tflops"])
        cub = ((rec.get("cublas") or {}).get("summary") or {})
        if cub.get("tflops") and "cublas" not in out:
            out["cublas"] = (cub["tflops"], f"{rec.get('gpu', 'a GPU')} {rec.get('date', '')}, {rec.get('size')}^3")
    return out
