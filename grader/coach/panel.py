"""The coach's panel, "where the time goes", for one correct kernel of a speed-graded exercise:
the static part everywhere (CPU too), the measured part where Nsight Compute can read counters.
`Panel.text()` for the CLI, `Panel.html()` for notebooks and feedback pages, `Panel.to_dict()` for JSON.
Used by grader.checking.check for every speed-graded verdict.
"""
from __future__ import annotations

import html
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from grader.coach import findings as F
from grader.coach import model, sass, static
from grader.coach.machine import H100, RATES_SOURCE
from grader.coach.roofline import recorded_points, ridge

_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tc-coach")


def start(source: str, kernel: str, options=(), arch: int = 90) -> Future:
    """Compile to a cubin and disassemble in the background (NVRTC and nvdisasm release the GIL):
    the check runs the emulator meanwhile, so the panel adds little to its time."""
    return _POOL.submit(sass.build, source, kernel, tuple(options), arch)


@dataclass
class Panel:
    exercise: str
    arch: int
    lines: list[str] = field(default_factory=list)  # the static summary
    findings: list = field(default_factory=list)  # F.Finding, main bottleneck first
    model: dict | None = None
    measured: dict | None = None  # the summary of ncu's counters
    measured_lines: list[str] = field(default_factory=list)
    not_measured: str = ""  # why there are no counters
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # where a number came from, when not its usual source
    point: dict | None = None  # roofline point: intensity, tflops (model)
    seconds: float = 0.0  # what the static part cost in the foreground
    waited: float = 0.0  # how long the check waited for the background compile + disassembly
    detail: bool = False

    def to_dict(self) -> dict:
        return dict(exercise=self.exercise, arch=self.arch, lines=self.lines,
                    findings=[f.to_dict() for f in self.findings], model=self.model, measured=self.measured,
                    measured_lines=self.measured_lines, not_measured=self.not_measured, missing=self.missing, notes=self.notes,
                    point=self.point, seconds=round(self.seconds, 3), waited=round(self.waited, 3))

    @property
    def first(self):
        return self.findings[0] if self.findings else None

    def text(self) -> str:
        out = [f"  where the time goes (coach; static part modelled for an {H100.name.split(' (')[0]} at sm_{self.arch}):"]
        out += [f"    {l}" for l in self.lines]
        for n, f in enumerate(self.findings[:4 if self.detail else 3], 1):
            out.append(f"    {n}. {f.text()}")
        if self.measured_lines:
            out.append("    measured (Nsight Compute, one launch):")
            out += [f"      {l}" for l in self.measured_lines]
        elif self.not_measured:
            out.append(f"    measured: not here ({self.not_measured})")
        for m in self.missing:
            out.append(f"    (missing: {m})")
        for m in self.notes:
            out.append(f"    (note: {m})")
        if self.detail:
            out.append(f"    ({RATES_SOURCE})")
        return "\n".join(out)

    def html(self) -> str:
        items = "".join(f"<li>{html.escape(l)}</li>" for l in self.lines)
        fl = "".join(f"<li><b>{html.escape(f.sentence)}</b>"
                     + (f" <i>(fix: ~{f.gain:.1f}x)</i>" if f.gain > 1 else "")
                     + f"<br>Next: {html.escape(f.next_step)} <span style='color:#555'>({html.escape(f.section)})</span></li>"
                     for f in self.findings[:4 if self.detail else 3])
        meas = ("<div><b>Measured</b> (Nsight Compute, one launch):<ul>"
                + "".join(f"<li>{html.escape(l)}</li>" for l in self.measured_lines) + "</ul></div>"
                if self.measured_lines else
                f"<div style='color:#555'>Measured: not here ({html.escape(self.not_measured)})</div>"
                if self.not_measured else "")
        miss = "".join(f"<div style='color:#555'>missing: {html.escape(m)}</div>" for m in self.missing)
        miss += "".join(f"<div style='color:#777'>note: {html.escape(m)}</div>" for m in self.notes)
        return (f"<details open style='margin-top:6px'><summary><b>Where the time goes</b> "
                f"<span style='color:#555'>(coach; static part modelled for an H100 SXM at sm_{self.arch})</span></summary>"
                f"<ul style='margin:2px 0'>{items}</ul><ol style='margin:2px 0'>{fl}</ol>{meas}{miss}"
                f"<div style='color:#777;font-size:0.85em'>{html.escape(RATES_SOURCE)}</div></details>")


def _kb(b: int) -> str:
    return f"{b / 1024:.1f} KB"


def build(*, exercise: str, source: str, kernel: str, options, arch: int, threads: int, smem_dynamic: int,
          problem, traffic=None, traffic_dims=None, perf_dims=None, built: dict | Future | None = None,
          measure: bool = False, launch: dict | None = None, measure_dims: dict | None = None,
          detail: bool = False, reference: str | None = None, traffic_why: str | None = None,
          sections: dict | None = None) -> Panel:
    """`sections`: the exercise's Exercise.coach_sections, where its findings point."""
    t0 = time.perf_counter()
    if isinstance(built, Future):
        built = built.result()
    waited = time.perf_counter() - t0
    t0 = time.perf_counter()
    st = static.collect(source, kernel, options, arch=arch, threads=threads, smem_dynamic=smem_dynamic,
                        traffic=traffic, traffic_dims=traffic_dims, perf_dims=perf_dims, problem=problem, built=built,
                        traffic_why=traffic_why)
    p = Panel(exercise, arch, missing=list(st.missing), notes=list(st.notes), detail=detail)
    r, occ, loop = st.resources, st.occupancy, st.loop
    if r:
        p.lines.append(f"resources: {r['registers']} registers/thread, spills {r['spill_stores']} B stored / "
                       f"{r['spill_loads']} B loaded, shared {_kb(r['shared_bytes'] + smem_dynamic)} per block")
    if occ:
        p.lines.append(f"occupancy: {occ.line()}")
    if loop is not None and any(op in sass.KINDS or op in sass.TENSOR_OPS for op in loop.counts):
        where = "main loop" if loop.in_loop else "whole kernel (no loop found)"
        mix = [f"{n} {op}" for op, n in sorted(loop.counts.items(), key=lambda x: -x[1])
               if op in sass.KINDS or op in sass.TENSOR_OPS or op in ("FFMA", "DFMA")
               or any(op in ops for ops in sass.PIPES.values())]
        tc = loop.tensor or 0
        ratios = []
        ldg = loop.n("LDG", "LDGSTS")
        lds = loop.n("LDS", "LDSM")
        if tc and ldg:
            ratios.append(f"{tc / ldg:.1f} tensor ops per global load/copy")
        if tc and lds:
            ratios.append(f"{tc / lds:.1f} per shared load")
        ov = ("loads overlapped with math" + (f" ({loop.wait_depth} cp.async group(s) left in flight at the wait)"
                                               if loop.n("LDGSTS") and loop.wait_depth else "")) \
            if loop.overlapped else "loads NOT overlapped with math"
        math = loop.tensor + loop.fp_flops
        p.lines.append(f"SASS, {where}, per warp: {', '.join(mix[:9])}" + (f"; {'; '.join(ratios)}" if ratios else "")
                       + (f"; {ov}" if math else ""))
    tr = st.traffic
    if tr:
        size = " ".join(f"{k}={v}" for k, v in (traffic_dims or {}).items())
        reads = ", ".join(f"{k} {v:.1f}x" for k, v in tr["reads"].items())
        used = (f"global loads {100 * tr['efficiency_load']:.0f}% / stores {100 * tr['efficiency_store']:.0f}% "
                "of the bytes moved used (coalescing); ")
        inten = (f"{F.flop_per_byte(1 / tr['global_per_flop'])} FLOP per global byte at the timed size; "
                 + (used if min(tr["efficiency_load"], tr["efficiency_store"]) < 1 / F.BOTTLENECK else "")
                 if tr["global_per_flop"] else used)
        lanes = (f"on average {32 * tr['lanes']:.0f} of 32 lanes in a warp's requests (divergence); "
                 if tr.get("lanes", 1.0) < 0.95 else "")
        p.lines.append(f"memory (emulator, {size}): {inten}{lanes}inputs loaded {reads}; shared memory "
                       + (f"loads {tr['ways_load']:.1f}-way, stores {tr['ways_store']:.1f}-way"
                          if tr["uses_shared"] else "not used"))
        if detail:
            for c in tr.get("conflicted", []):
                p.lines.append(f"  shared {'store' if c['write'] else 'load'} at line {c['line']}: {c['ratio']:.1f}-way "
                               f"bank conflicts ({c['source']})")
    res = None
    if st.evidence is not None:
        occ_next = None
        if occ and occ.limiter in ("registers", "shared memory"):
            others = [v for k, v in occ.by.items() if k != occ.limiter]
            occ_next = min(others) if others else None
        res = model.run(st.evidence, H100, next_blocks=occ_next)
        p.model = res.to_dict()
        t = res.terms
        p.lines.append(f"model, cycles per main-loop iteration per SM: math {t['math']:.0f}, shared {t['shared']:.0f}, "
                       f"L2 {t['L2']:.0f}, load latency {t['latency']:.0f}"
                       + (f", L1 for uncoalesced sectors {t['L1']:.0f}" if t.get("L1") else "")
                       + (f", {res.busiest_pipe} pipe {t['pipes']:.0f}" if t.get("pipes", 0) > t["math"] else "")
                       + " ("
                       + ("overlapped: the largest sets the pace" if not res.serial else "not overlapped: they add up")
                       + f") -> at most ~{res.tflops:.0f} of {res.peak_tflops:.0f} TFLOP/s")
        p.point = dict(intensity=res.intensity, tflops=res.tflops,
                       ridge=ridge(H100, st.evidence.math, "l2"))
        beside = ""
        if reference:
            known = recorded_points(reference)
            if "model" in known and reference != exercise:
                beside += f"; the reference solution ({reference}): {known['model'][0]:.0f} FLOP/B, bound ~{known['model'][1]:.0f}"
            if "cublas" in known:
                beside += f"; cuBLAS measured {known['cublas'][0]:.0f} TFLOP/s ({known['cublas'][1]})"
        p.lines.append(f"roofline: {F.flop_per_byte(res.intensity)} FLOP per byte requested, the L2 ridge at "
                       f"{p.point['ridge']:.0f}: {'below (memory side)' if res.intensity < p.point['ridge'] else 'above (compute side)'}"
                       + beside)
    elif st.stream is not None:  # no math: a data-movement kernel, modelled per byte it must move
        res = model.stream(st.stream, H100)
        p.model = res.to_dict()
        t = res.terms
        p.lines.append(f"model (no math: a data-movement kernel), clocks per SM for the emulator's launch: DRAM "
                       f"{t['DRAM']:.1f}, L2 {t['L2']:.1f}, shared {t['shared']:.1f}"
                       + (f", L1 for uncoalesced sectors {t['L1']:.1f}" if t["L1"] else "")
                       + f" (the largest sets the pace; shared and L1 share one path) -> at most "
                       f"~{100 * res.bandwidth / H100.dram_bytes_per_s:.0f}% of the DRAM rate")
    p.findings = F.rank(st, res, sections)
    p.seconds, p.waited = time.perf_counter() - t0, waited
    if measure:
        from grader.coach import measured

        dims = measure_dims or perf_dims
        got = measured.measure(source, kernel, options, problem, dims, launch or {},
                               flops=problem.flops(dims) if hasattr(problem, "flops") else None)
        if got["ok"]:
            add_measured(p, got["summary"])
        else:
            p.not_measured = got["why"]
    return p


def add_measured(p: Panel, summary: dict) -> None:
    """Nsight Compute's numbers into the panel; a coalescing finding quotes the sectors per request measured."""
    from grader.coach import measured

    p.measured = dict(summary)
    p.measured_lines = measured.lines(summary)
    spr = {w: summary[f"{d}_sectors_per_request"] for d, w in (("gld", "loads"), ("gcp", "cp.async copies"),
                                                              ("gst", "stores")) if f"{d}_sectors_per_request" in summary}
    for f in p.findings:
        if f.key == "coalescing" and spr:
            f.sentence += (" Nsight Compute measured " + ", ".join(f"{w} {v:.1f}" for w, v in spr.items())
                           + " sectors per request in one launch on the GPU.")
