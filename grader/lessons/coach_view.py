"""Notebooks 06 and 10: the coach's panel ("where the time goes") for every rung of their ladders.

Static part (ptxas, SASS, occupancy, the emulator's memory traffic, the bottleneck model): the same
on every machine, so it is read from a record when there is one: kernels/coach-static.json (written
on a CPU by `python -m grader.bench.coach OUT --no-measure`, regenerated whenever the model or a
rung changes), else kernels/coach-h100.json's (written by `.ci/gpu-coach` on a GPU, with the model
of that day), else computed here (about 10 s per rung on a CPU);
`live=True` always computes it. Measured part (Nsight Compute's counters of one launch per rung): only
from kernels/coach-h100.json, labelled with the GPU and date it was recorded on; without it, the table
says it is not recorded.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from grader.bench import ladders
from grader.checking import exercises
from grader.coach import panel
from grader.coach.roofline import Point, plot
from grader.runtime import kernels

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
RECORD = KERNELS / "coach-h100.json"  # .ci/gpu-coach's OUT/coach.json, measured on a GPU
STATIC = KERNELS / "coach-static.json"  # grader.bench.coach --no-measure, on a CPU
TRAFFIC = dict(M=128, N=256, K=320)  # the CPU size check() observes for these exercises


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def recorded() -> dict | None:
    """kernels/coach-h100.json (written by .ci/gpu-coach), or None."""
    return _read(RECORD)


def recorded_label(rec: dict | None = None) -> str:
    rec = rec or recorded()
    return f"recorded on {rec.get('gpu') or 'a GPU'} {rec.get('date', '')}".strip() if rec else ""


LADDER = {"06": "wmma", "10": "mma"}  # notebook -> its ladder (grader.bench.ladders)


def rungs(notebook: str) -> list[tuple[str, str, str, dict]]:
    """(name, exercise, kernels/<file>, launch) of the notebook's ladder."""
    ex = exercises.graded_ladder(LADDER[notebook])
    return [(r.name, ex.id, r.file, r.launch) for r in ladders.rungs(ex)]


def static_panel(exercise: str, source: str, launch: dict) -> panel.Panel:
    """The panel a check() of `source` shows on the CPU (its static part)."""
    from grader.emu.traffic import measure

    ex = exercises.get(exercise)
    opts = ex.problem.options(launch)
    case = ex.problem.make(TRAFFIC, np.random.default_rng(0), launch, reference=False)
    built = panel.start(source, ex.kernel, opts, 90)
    tr = measure(source, ex.kernel, case.grid, case.block, case.args, shared_mem=case.shared_mem, options=opts)
    return panel.build(exercise=ex.id, source=source, kernel=ex.kernel, options=opts, arch=90,
                       threads=int(np.prod(case.block)), smem_dynamic=case.shared_mem, problem=ex.problem,
                       traffic=tr, traffic_dims=TRAFFIC, perf_dims=ex.perf_size, built=built,
                       sections=ex.coach_sections)


def ladder(notebook: str, live: bool = False) -> list[dict]:
    """One row per rung: name, static (the panel as a dict), static_from (where it came from),
    measured (ncu's summary, or None), text (the panel as check() prints it)."""
    rec, st = recorded() or {}, _read(STATIC) or {}
    by_name = {src: {k["name"]: k for k in r.get("kernels", [])} for src, r in (("h100", rec), ("static", st))}
    rows = []
    for name, ex_id, file, launch in rungs(notebook):
        got = None if live else next(((src, by_name[src][name]) for src in ("static", "h100")
                                      if by_name[src].get(name, {}).get("static")), None)
        if got:
            where = recorded_label(rec) if got[0] == "h100" else f"computed on a CPU {st.get('date', '')} (kernels/coach-static.json)"
            static, text = got[1]["static"], got[1].get("panel_text", "")
        else:
            p = static_panel(ex_id, kernels.source(file), launch)
            static, text, where = p.to_dict(), p.text(), "computed here"
        m = by_name["h100"].get(name, {}).get("measured", {})
        rows.append(dict(name=name, static=static, static_from=where, text=text,
                         measured=m.get("summary") if m.get("ok") else None))
    return rows


def _fmt(x, fmt="{:.0f}"):
    return "–" if x is None else fmt.format(x)


def _line(static: dict, head: str) -> str:
    return next((l for l in static.get("lines", []) if l.startswith(head)), "")


def table(rows: list[dict]):
    """An HTML table: per rung, the static numbers, the model's bound, the first finding, and the
    counters recorded on a GPU where kernels/coach-h100.json has them."""
    from IPython.display import HTML

    rec = recorded()
    label = recorded_label(rec) if rec else "not recorded yet (no kernels/coach-h100.json: run .ci/gpu-coach on a GPU)"
    head = ("<tr><th>rung</th><th>registers</th><th>blocks per SM</th><th>loads overlapped</th>"
            "<th>FLOP per byte</th><th>model bound TFLOP/s</th><th>first finding</th>"
            f"<th>tensor pipe %</th><th>occupancy %</th><th>smem ld ways</th><th>top stall</th></tr>")
    body = []
    for r in rows:
        s, m = r["static"], r["measured"] or {}
        res = s.get("model") or {}
        occ = _line(s, "occupancy:")
        blocks = occ[len("occupancy: "):].split(" (")[0].replace(" per SM", "") + (
            ", " + occ.split("limited by ")[1].split(" (")[0] if "limited by" in occ else "")
        regs = _line(s, "resources:").split(" registers")[0].split()[-1] if _line(s, "resources:") else "–"
        sass_line = _line(s, "SASS")
        ov = "–" if not sass_line else ("no" if "NOT overlapped" in sass_line else "yes")
        f = (s.get("findings") or [None])[0]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in (
            r["name"], regs, blocks, ov, _fmt(res.get("intensity")), _fmt(res.get("tflops")),
            f"{f['key']} (fix ~{f['gain']:.1f}x)" if f else "–",
            _fmt(m.get("tensor_pipe_pct")), _fmt(m.get("occupancy_pct")), _fmt(m.get("smem_ld_ways"), "{:.1f}"),
            (m.get("top_stalls") or [["–"]])[0][0] if m else "–")) + "</tr>")
    where = sorted({r["static_from"] for r in rows})
    cap = (f"<caption style='caption-side:bottom;text-align:left;color:#555'>static part: {html.escape('; '.join(where))}"
           f" (model of an H100 SXM); measured part (last four columns): {html.escape(label)}</caption>")
    return HTML(f"<table style='font-size:0.85em'>{cap}{head}{''.join(body)}</table>")


def roofline(rows: list[dict], title: str = ""):
    """The rungs on the roofline: each at the model's bound (circle: FLOP per byte requested from global
    memory) and, if recorded, at the speed ncu measured for its launch (star: FLOP per byte it moved from
    DRAM), with cuBLAS's recorded launch as a line."""
    pts = []
    for r in rows:
        res = r["static"].get("model")
        if res:
            pts.append(Point(r["name"], res["intensity"], res["tflops"], "model"))
        m = r["measured"]
        if m and m.get("tflops") and m.get("dram_intensity"):
            pts.append(Point(r["name"], m["dram_intensity"], m["tflops"], "measured"))
    cub = ((recorded() or {}).get("cublas") or {}).get("summary") or {}
    fig = plot(pts, title=title, cublas_tflops=cub.get("tflops"))
    try:
        from IPython.display import display

        display(fig)
    except ImportError:  # pragma: no cover - IPython comes with Jupyter
        pass
    return fig
