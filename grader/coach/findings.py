"""The findings: each bottleneck the model sees, in one sentence with its numbers, one next step,
and the notebook section that teaches the fix. Ranked by the speed-up the model gives the fix, so
the first finding names the main bottleneck. Nothing here reads the kernel's text: only numbers.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from grader.coach import sass as sass_mod
from grader.coach.machine import H100
from grader.coach.model import Result
from grader.coach.static import Static

# Section titles as the notebooks spell them (tests/coach/test_coach.py checks they exist).
SECTIONS = {
    "01": {"coalescing": "7. Coalescing: why the layout decides the speed",
           "coalesced-tile": "8. Do: a coalesced transpose through shared memory (2 points)"},
    "02": {"precision": "8. Why tensor cores take fp16 and accumulate in fp32"},
    "03": {"tiling": "5. Shared-memory tiling: see the tiles", "regblock": "7. The ladder onward: register blocking"},
    "06": {"smem": "2. Rung 1: stage tiles in shared memory", "warp": "3. Rung 2: warp tiles",
           "banks": "4. Bank conflicts and padded rows", "async": "5. Asynchronous copies, stages, and `BLOCK_K`",
           "order": "6. Rung 5: block order and the epilogue — and the whole ladder",
           "sweep": "7. Sweep the shape live"},
    "10": {"ldmatrix": "2. `ldmatrix`: the warp loads fragments, each lane names a row",
           "swizzle": "4. Rung 2: swizzle the chunks instead of padding the rows",
           "pipeline": "5. Rung 3: a pipeline tuned for the layout", "wgmma": "8. Hopper: `wgmma` fed by TMA"},
}

# finding key -> (notebook, section key) where an exercise's record (Exercise.coach_sections) names
# no other: the fast-GEMM ladder of notebook 06, and coalescing in notebook 01
DEFAULT = {"global-low": ("06", "smem"), "global-l2": ("06", "order"), "conflicts": ("06", "banks"),
           "shared": ("06", "warp"), "spills": ("06", "warp"), "pipeline": ("06", "async"),
           "occupancy": ("06", "sweep"), "none": ("10", "wgmma"), "coalescing": ("01", "coalescing"),
           # global-low where the kernel already stages its tiles in shared memory: larger tiles
           "global-reuse": ("06", "warp"),
           # no notebook teaches divergence; 01's section 7 shows a warp's 32 threads issuing together
           "divergence": ("01", "coalescing"),
           # float math promoted to double: notebook 02 on what each precision costs and why fp32 accumulates
           "fp64": ("02", "precision"),
           # barriers beyond the two a tile loop needs: where notebook 03 places them and says why
           "barriers": ("03", "tiling"),
           # the output updated inside the main loop, and index math there: notebook 03's tiled loop keeps its sum
           # in a register and stores it once, with addresses stepped by constants
           "output": ("03", "tiling"), "integer": ("03", "tiling"),
           # a per-thread array in local memory: notebook 03's register blocking keeps its arrays in registers
           "local": ("03", "regblock")}

NOTEBOOK = {"01": "01 · Memory layout", "02": "02 · Precision", "03": "03 · GEMM on CUDA cores", "06": "06 · A fast WMMA GEMM", "10": "10 · Beyond WMMA"}
BOTTLENECK = 1.15  # a fix the model gives less than this speed-up is not called a bottleneck
# What the static model cannot see, said where it finds no bottleneck (a slow kernel may be slow for these)
UNSEEN = ("Not in the model: a barrier's wait (a main loop's barriers beyond two are listed, not ranked), a grid "
          "too small to fill the GPU, and lanes idle "
          "where they touch no memory (the emulator sees divergence only in loads and stores); if the measured "
          "speed is far under this bound, look there (on a GPU, --explain adds Nsight Compute's stall reasons).")


@dataclass
class Finding:
    key: str  # global-low | global-l2 | output | coalescing | conflicts | shared | spills | local | pipeline |
    # occupancy | divergence | fp64 | integer | barriers (not ranked: said after the rest) | none
    gain: float  # the model's speed-up for the fix
    sentence: str
    next_step: str
    section: str  # "notebook 06, section 4. Bank conflicts and padded rows"

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        g = f" [fix: ~{self.gain:.1f}x]" if self.gain > 1.0 else ""
        return f"{self.sentence}{g} Next: {self.next_step} ({self.section})"


def flop_per_byte(x: float) -> str:
    """FLOP per byte as a student reads it: whole numbers, but 0.25 is not '0'."""
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def section(sections: dict | None, key: str) -> str:
    """The notebook section that teaches the fix for `key`: the exercise's own (`sections`) or DEFAULT's."""
    nb, sec = (sections or {}).get(key) or DEFAULT[key]
    return f"notebook {NOTEBOOK[nb]}, section {SECTIONS[nb][sec]}"


def rank(st: Static, res: Result | None, sections: dict | None = None) -> list[Finding]:
    """The findings, the main bottleneck first (empty when there is too little evidence)."""
    if st.occupancy is not None and not st.occupancy.blocks:  # no speed to model: the GPU refuses the launch
        return [_no_launch(st, sections)] + _without_model(st, sections)
    if res is not None and res.stream:
        return _rank_stream(st, res, sections)
    if res is None or st.evidence is None:
        return _without_model(st, sections)
    ev, tr, occ = st.evidence, st.traffic or {}, st.occupancy
    out: list[Finding] = []
    terms = res.terms
    g = res.gains
    # global traffic
    inten = res.intensity
    if g.get("global", 1) >= BOTTLENECK:
        reads = ", ".join(f"{k} {v:.0f}x" for k, v in (tr.get("reads") or {}).items() if k in ("A", "B", "x", "w"))
        if inten < ev.good_intensity / 1.1:
            out.append(Finding("global-low", g["global"],
                               f"Global memory: {flop_per_byte(inten)} FLOP per byte requested (each input element loaded "
                               f"{reads or 'many times'} at the emulator's size); a 128x128 block tile in shared memory "
                               f"gives {ev.good_intensity:.0f}. At this intensity the model caps the kernel near "
                               f"{res.tflops:.0f} TFLOP/s.",
                               *_reuse_step(tr, sections)))
        else:
            big = inten >= 1.25 * ev.good_intensity  # already past a 128x128 tile (e.g. 128x256)
            out.append(Finding("global-l2", g["global"],
                               f"L2 bandwidth: {flop_per_byte(inten)} FLOP per byte requested keeps L2 busy "
                               f"{terms['L2']:.0f} cycles per main-loop iteration against {terms['math']:.0f} of math.",
                               "a block order that keeps tiles in L2 longer (GROUP_M), or larger tiles than registers "
                               "allow here: Hopper's wgmma reads operands from shared memory, freeing registers for "
                               "them" if big else
                               "a larger block tile (e.g. 128x256) or a block order that keeps tiles in L2 raises "
                               "FLOP per byte", section(sections, "none" if big else "global-l2")))
    if g.get("output", 1) >= BOTTLENECK:
        out.append(Finding("output", g["output"], _output_sentence(st, res),
                           "accumulate in a register (or a register tile) over the whole loop and store each output "
                           "once; where several blocks must add into one output (split-K), add one partial sum per "
                           "block, not one per product", section(sections, "output")))
    if g.get("coalescing", 1) >= BOTTLENECK:
        out.append(Finding("coalescing", g["coalescing"],
                           coalescing_sentence(tr) + f" The wasted sectors keep L1 busy {terms['L1']:.0f} cycles per "
                           f"main-loop iteration against {terms['math']:.0f} of math.",
                           coalescing_step(tr), section(sections, "coalescing")))
    if g.get("conflicts", 1) >= BOTTLENECK:
        out.append(Finding("conflicts", g["conflicts"],
                           _conflict_sentence(tr) + f"; shared memory is busy {terms['shared']:.0f} cycles per "
                           f"iteration against {terms['math']:.0f} of math.",
                           "pad each shared row (e.g. +8 halves) or swizzle the 16-byte chunks so the rows one "
                           "ldmatrix/fragment load reads fall in different banks" if ev.math != "fp32" else
                           "pad each shared row by one element (a [TILE][TILE + 1] float tile: row r starts r banks "
                           "further on), so lanes that walk down a column of the tile hit 32 different banks",
                           section(sections, "conflicts")))
    r = st.resources or {}
    if g.get("spills", 1) >= BOTTLENECK and not (r.get("spill_stores") or r.get("spill_loads")) \
            and r.get("stack_bytes"):  # local traffic without spills: an array ptxas put in the stack frame
        out.append(Finding("local", g["spills"],
                           f"Local memory, not spills: ptxas spilled nothing at {r.get('registers', 0)} registers, "
                           f"but each thread keeps {r['stack_bytes']} bytes in local memory (its stack frame) and the "
                           f"main loop moves {ev.spill_bytes_iter / max(ev.warps, 1):.0f} bytes of it per warp per "
                           f"iteration{_spill_lines(st, 'most at')}: an array indexed by a value the compiler cannot "
                           "resolve at compile time lives in local memory, not in registers.",
                           "index per-thread arrays only with compile-time constants (loops over them fully unrolled "
                           "with constant bounds), so they stay in registers; or keep the values in shared memory",
                           section(sections, "local")))
    elif g.get("spills", 1) >= BOTTLENECK:
        out.append(Finding("spills", g["spills"],
                           f"Register spills: ptxas spilled {r.get('spill_stores', 0)} bytes (stores) / "
                           f"{r.get('spill_loads', 0)} bytes (loads) per thread at {r.get('registers', 0)} registers; "
                           f"the main loop moves {ev.spill_bytes_iter / max(ev.warps, 1):.0f} bytes of local memory "
                           f"per warp per iteration{_spill_lines(st)}.",
                           "hold fewer accumulators per warp (a smaller warp tile) or ask for fewer blocks per SM "
                           "in __launch_bounds__, so everything fits in 255 registers", section(sections, "spills")))
    if g.get("pipeline", 1) >= BOTTLENECK:
        if not ev.overlapped:
            s = (f"Loads are not overlapped with math: each main-loop iteration waits ~{terms['latency']:.0f} cycles "
                 f"for its tile and {terms['L2']:.0f} more to stream it, then computes ({terms['math']:.0f} cycles) "
                 f"with nothing in flight.")
            step = ("keep 2-4 tiles in flight: cp.async into several shared buffers, wait with "
                    "__pipeline_wait_prior(STAGES-2), so the next tiles load while this one is computed")
        else:
            s = (f"Too few loads in flight: {ev.depth} stage(s) ahead cover {terms['latency']:.0f} of the ~"
                 f"{res.terms['latency'] * ev.depth:.0f} cycles a load takes.")
            step = "add a pipeline stage (STAGES + 1) or a smaller BLOCK_K with more stages"
        out.append(Finding("pipeline", g["pipeline"], s, step, section(sections, "pipeline")))
    if g.get("occupancy", 1) >= BOTTLENECK and occ:
        out.append(Finding("occupancy", g["occupancy"],
                           f"Occupancy: {occ.line()}.", _occupancy_step(st), section(sections, "occupancy")))
    if g.get("warps", 1) >= BOTTLENECK and not any(f.key == "occupancy" for f in out):
        w = res.warps_per_scheduler
        why = f", limited by {occ.limiter}" if occ else ""
        out.append(Finding("occupancy", g["warps"],
                           f"Too few warps to feed the tensor cores: {w:.0f} per scheduler ({4 * w:.0f} per SM"
                           f"{why}); between dependent matrix instructions the pipe idles (ncu's `wait` stall) "
                           f"unless about {H100.tensor_warps:g} warps per scheduler take turns.",
                           "more warps per SM: a smaller warp tile or fewer registers per thread so more warps fit, "
                           "or more independent mma per warp between dependent ones", section(sections, "occupancy")))
    if g.get("divergence", 1) >= BOTTLENECK:
        out.append(Finding("divergence", g["divergence"],
                           f"Warp divergence: on average {32 * ev.lanes:.0f} of a warp's 32 lanes take part in its "
                           f"loads and stores (the emulator); a warp's instructions issue for all 32, so each FMA and "
                           f"shared load does ~{100 * ev.lanes:.0f}% of the work it could.",
                           "give every lane the same work in the main loop (one output each, not some lanes computing "
                           "for idle neighbours): branch on the data, not on threadIdx.x",
                           section(sections, "divergence")))
    if g.get("alu", 1) >= BOTTLENECK:
        out.append(Finding("integer", g["alu"],
                           f"Integer arithmetic: per warp per iteration {st.loop.pipes.get('alu', 0)} integer "
                           f"instructions of index and address math (add, compare, select, shift, LEA)"
                           f"{_worst_lines(st, 'alu')}. An H100 runs 64 of them per clock per SM, half "
                           f"its fp32 rate: its ALU is busy {res.pipe_cycles.get('alu', 0):.0f} cycles per iteration "
                           f"against {terms['math']:.0f} of math.",
                           "take index arithmetic out of the inner loop: no / or % by a value known only at run time "
                           "(blockDim.x, N, K) there (a compile-time constant such as TILE, or a counter that steps "
                           "with the loop), pointers computed once and advanced by a constant stride, loops with "
                           "constant trip counts the compiler unrolls into fixed offsets", section(sections, "integer")))
    if g.get("fp64", 1) >= BOTTLENECK:
        out.append(Finding("fp64", g["fp64"], _fp64_sentence(st, res), "keep the main loop in float: a float "
                           "accumulator (several float partial sums where accuracy matters), literals with an f "
                           "(0.5f, not 0.5), float functions (expf, sqrtf, fabsf)", section(sections, "fp64")))
    if g.get("shared", 1) >= BOTTLENECK and not any(f.key == "conflicts" for f in out):
        what = "fragment loaded feeds too few mma" if ev.math != "fp32" else "value loaded feeds too few FMAs"
        out.append(Finding("shared", g["shared"],
                           f"Shared-memory bandwidth: {terms['shared']:.0f} cycles of shared traffic per iteration "
                           f"against {terms['math']:.0f} of math, without conflicts: each {what}.",
                           "a larger warp tile (more accumulator tiles per warp) reuses each loaded fragment "
                           "more often" if ev.math != "fp32" else
                           "more outputs per thread (register blocking: e.g. a 4x4 or 8x8 block of C held in "
                           "registers), so each value loaded from shared memory feeds several FMAs",
                           section(sections, "shared")))
    out.sort(key=lambda f: -f.gain)
    if not out:
        top = max(terms, key=terms.get)
        out.append(Finding("none", 1.0,
                           f"No single bottleneck in the model: {top} sets the pace ({terms[top]:.0f} cycles per "
                           f"iteration), the kernel's bound is ~{res.tflops:.0f} of {res.peak_tflops:.0f} TFLOP/s"
                           f"{_minor(g, tr)}. {UNSEEN}",
                           "past this, Hopper's wgmma + TMA", section(sections, "none")))
    return out + _barriers(st, sections)


def _barriers(st: Static, sections: dict | None) -> list[Finding]:
    """More barriers in the main loop than a loop over shared tiles needs (two: after a tile is stored, before
    it is overwritten), with their lines. The model charges no barrier's wait, so this is said, never ranked."""
    loop = st.loop
    n = loop.n("BAR") if loop is not None and loop.in_loop else 0
    if n <= 2:
        return []
    return [Finding("barriers", 1.0,
                    f"{n} barriers (__syncthreads) per main-loop iteration{_worst_lines(st, 'BAR', 3)}, where a loop "
                    "over shared tiles needs two (one after a tile is stored, one before it is overwritten). The "
                    "model does not charge a barrier's wait, nor the loads a barrier keeps from being merged or "
                    "issued early, so this is not ranked: if the measured speed is far under the bound, look here.",
                    "keep a __syncthreads() only between a shared-memory store and another thread's read of it "
                    "(or the store that overwrites what others still read)", section(sections, "barriers"))]


def _fp64_sentence(st: Static, res: Result) -> str:
    """What double precision costs in the main loop, and the source lines where SASS says it is."""
    loop, terms = st.loop, res.terms
    n = loop.fp64_pipes
    where = _worst_lines(st, "fp64")
    c = res.pipe_cycles or {res.busiest_pipe: terms["pipes"]}
    pipe = max((p for p in ("fp64", "convert") if p in c), key=c.get, default=res.busiest_pipe)
    return (f"Double precision in a float kernel's main loop: per warp per iteration {n.get('fp64', 0)} fp64 "
            f"instructions and {n.get('convert', 0)} conversions to or from double{where}. An H100 converts 16 "
            f"values per clock per SM (an eighth of its fp32 rate) and does fp64 at half of it (GeForce GPUs at "
            f"1/64): its {pipe} pipe is busy {c[pipe]:.0f} cycles per iteration against "
            f"{terms['math']:.0f} of float math.")


def _spill_lines(st: Static, verb: str = "reloaded most at") -> str:
    """Where the main loop's local loads and stores sit (SASS line info): the lines whose values ptxas keeps in
    local memory and reloads, which are not always the ones that made registers short."""
    at: dict = {}
    for key in ("LDL", "STL"):
        for ln, n in ((st.loop.lines or {}).get(key) or {}).items():
            at[ln] = at.get(ln, 0) + n
    top = sorted(at, key=lambda ln: -at[ln])[:2]
    quotes = [f"line {ln}: {st.quotes[ln]}" if st.quotes.get(ln) else f"line {ln}" for ln in top]
    return f" ({verb} {'; '.join(quotes)})" if quotes else ""


def _worst_lines(st: Static, key: str, most: int = 2) -> str:
    """' (line 12: `text`; line 14: ...)' for the source lines holding most of the main loop's `key`
    instructions (SASS line info), or '' where there is none."""
    at = (st.loop.lines or {}).get(key) or {}
    top = sorted(at, key=lambda ln: -at[ln])[:most]
    quotes = [f"line {ln}: {st.quotes.get(ln, '')}" if st.quotes.get(ln) else f"line {ln}" for ln in top]
    return f" ({'; '.join(quotes)})" if quotes else ""


def _minor(g: dict, tr: dict) -> str:
    """What the model sees but does not call a bottleneck (a fix worth 2-15%), so a student is not left
    guessing whether a defect they know of matters here."""
    worst = {"coalescing": (tr.get("uncoalesced") or [{}])[0], "conflicts": tr.get("worst_shared") or {}}
    names = {"coalescing": "uncoalesced global accesses", "conflicts": "bank conflicts", "spills": "spills",
             "fp64": "double precision in the loop", "alu": "integer arithmetic", "output": "the output updated in the loop"}
    minor = [f"{names[k]} ~{100 * (g[k] - 1):.0f}%"
             + (f" (worst: line {worst[k]['line']})" if worst.get(k, {}).get("line") else "")
             for k in names if 1.02 <= g.get(k, 1) < BOTTLENECK]
    if not minor:
        return ""
    return (f"; smaller costs the model sees: {', '.join(minor)} (each under {100 * (BOTTLENECK - 1):.0f}%: "
            "not the bottleneck)")


def _reuse_step(tr: dict, sections: dict | None) -> tuple[str, str]:
    """The next step for too little reuse of global data, and its section: staging in shared memory, or
    (where the kernel already stages its tiles there) a larger block tile so each staged tile feeds more math."""
    if tr.get("uses_shared"):
        return ("the kernel already stages its tiles in shared memory, but each one feeds too little math: a "
                "larger block tile (e.g. 128x128, 4 warps of 64x64 each: each warp holds more accumulator tiles, "
                "each thread more outputs) reuses every staged tile of A and B many more times",
                section(sections, "global-reuse"))
    return ("stage block tiles of A and B in shared memory and let each warp reuse them for several accumulator "
            "tiles", section(sections, "global-low"))


def _no_launch(st: Static, sections: dict | None) -> Finding:
    """A block that fits no SM: a GPU refuses the launch (and the emulator, for registers, as it does)."""
    occ, r = st.occupancy, st.resources or {}
    if occ.limiter == "registers":  # threads x registers over the SM's register file
        most = 65536 // max(st.threads, 1)
        step = (f"tell ptxas the block size: __launch_bounds__({st.threads}) before the kernel keeps it at "
                f"{min(most, 255)} registers per thread or fewer (it uses {r.get('registers', 0)} now, spilling the "
                "rest if it must), or launch fewer threads per block")
    elif occ.limiter == "shared memory":
        step = "use less shared memory per block (fewer or smaller stages or tiles)"
    else:
        step = "launch fewer threads per block"
    return Finding("occupancy", 1.0,
                   f"This block fits no SM, so a GPU refuses the launch ('too many resources requested for launch'): "
                   f"{occ.why_none}.",
                   step, section(sections, "occupancy"))


def _occupancy_step(st: Static) -> str:
    """Fewer of what limits the blocks per SM, with the number the student set where it is the launch's."""
    occ, r = st.occupancy, st.resources or {}
    if occ.limiter == "shared memory":
        parts = [f"this launch asks for {st.smem_dynamic / 1024:.0f} KB of dynamic shared memory"] \
            if st.smem_dynamic else []
        parts += [f"the kernel declares {r['shared_bytes'] / 1024:.0f} KB"] if r.get("shared_bytes") else []
        asked = f" ({' and '.join(parts)})" if parts else ""
        return (f"use less shared memory per block{asked}: ask for no more than the stages the kernel uses, or "
                "fewer or smaller stages, so another block fits on each SM")
    if occ.limiter == "registers":
        return (f"use fewer registers per thread ({r.get('registers', 0)} now): a smaller warp tile, or "
                "__launch_bounds__(THREADS, 2) if that does not spill, so another block fits on each SM")
    return f"use fewer {occ.limiter} per block so another block fits on each SM"


def coalescing_sentence(tr: dict) -> str:
    """What the emulator saw of the global accesses that move more sectors than they use, worst line first."""
    worst = (tr.get("uncoalesced") or [None])[0]
    what = "stores" if worst and worst["write"] else "loads"
    if worst is None:  # no line named (an older traffic record): the whole kernel's numbers
        eff = min(tr.get("efficiency_load", 1.0), tr.get("efficiency_store", 1.0))
        return f"Global accesses are not coalesced: {100 * eff:.0f}% of the bytes each warp moves are used."
    where = f"line {worst['line']} ({worst['source'][:60]})" if worst.get("line") else "a line the emulator could not name"
    return (f"Global {what} are not coalesced: {where} moves {worst['sectors_per_request']:.1f} sectors of 32 bytes "
            f"per warp request and uses {100 * worst['used']:.0f}% of the bytes it moves "
            f"(the kernel's global loads: {tr.get('sectors_per_request_load', 0):.1f}, stores: "
            f"{tr.get('sectors_per_request_store', 0):.1f} sectors per request).")


def coalescing_step(tr: dict) -> str:
    """The fix for the worst line, from how far apart its lanes' addresses fall and how wide each lane's access is."""
    worst = (tr.get("uncoalesced") or [None])[0]
    if worst is None:
        return "make consecutive lanes touch consecutive addresses (through a shared-memory tile for a transpose)"
    s, w = worst["sectors_per_request"], max(worst["lane_bytes"], 1.0)
    lanes = "consecutive threadIdx.x" if s < 24 else "each lane of a warp"
    apart = (f"{lanes} land ~{max(s / w, 2):.0f} elements apart" if s < 24  # s sectors: lanes ~s bytes apart
             else f"{lanes} touches its own 32-byte sector (neighbouring lanes a row or more apart)")
    step = (f"{apart}: let threadIdx.x run along the index that is contiguous in memory (the column of a row-major "
            "array, e.g. col = c % COLS, row = c / COLS for a copy index c = threadIdx.x + i * THREADS), so a warp "
            "covers consecutive addresses")
    if w < 8:
        step += ("; then widen each lane's access to 16 bytes (int4/float4: 8 halves or 4 floats; half2 at least) "
                 "so a warp moves 512 contiguous bytes per request")
    if worst["write"]:
        step += "; if the reads must run the other way (a transpose), go through a shared-memory tile"
    return step


def _rank_stream(st: Static, res: Result, sections: dict | None) -> list[Finding]:
    """A kernel that only moves data (model.stream): its fixes against the DRAM traffic it must move."""
    tr, terms, g = st.traffic or {}, res.terms, res.gains
    busy = (f"keep the L1/shared-memory path busy {terms['shared'] + terms['L1']:.0f} clocks per SM against "
            f"{terms['DRAM']:.0f} for the DRAM traffic every transpose or copy must move")
    out = []
    if g.get("coalescing", 1) >= BOTTLENECK:
        out.append(Finding("coalescing", g["coalescing"], coalescing_sentence(tr) + f" The wasted sectors {busy}.",
                           coalescing_step(tr), section(sections, "coalescing")))
    if g.get("conflicts", 1) >= BOTTLENECK:
        out.append(Finding("conflicts", g["conflicts"], _conflict_sentence(tr) + f"; the extra wavefronts {busy}.",
                           "pad each shared row so a column's elements fall in different banks (a [32][33] float "
                           "tile: row r starts r banks further on)", section(sections, "conflicts")))
    out.sort(key=lambda f: -f.gain)
    if not out:
        minor = [k for k in ("conflicts", "coalescing") if g.get(k, 1) > 1.01]
        top = max(terms, key=terms.get)
        out.append(Finding("none", 1.0,
                           f"No bottleneck in the model: {top} sets the pace, the kernel can reach ~"
                           f"{100 * res.bandwidth / H100.dram_bytes_per_s:.0f}% of the DRAM rate"
                           + (f" ({' and '.join(minor)} cost{'s' if len(minor) == 1 else ''} under "
                              f"{100 * (BOTTLENECK - 1):.0f}% here: not worth a change)" if minor else "") + f". {UNSEEN}",
                           "time it beside a device-to-device copy of the same bytes: that is its roof",
                           section(sections, "conflicts")))
    return out


def _output_sentence(st: Static, res: Result) -> str:
    """The output read or written more than once per element (the emulator), and the global atomics SASS puts in
    the main loop, with their line."""
    ev, tr, terms = st.evidence, st.traffic or {}, res.terms
    what = ", ".join(f"{k} read or updated {r:.0f}x and stored {w:.0f}x per element"
                     for k, (r, w) in (tr.get("outputs") or {}).items()) or "the output read or stored repeatedly"
    n = st.loop.n(*sass_mod.ATOMICS) if st.loop is not None else 0
    atomics = f"; {n} global atomics per warp per iteration{_worst_lines(st, 'atomic')}" if n else ""
    return (f"The output is updated inside the main loop: {what} at the emulator's size{atomics}. That is "
            f"{100 * ev.output_per_flop / ev.global_per_flop:.0f}% of the global bytes, each a read-modify-write at L2, "
            f"which is busy {terms['L2']:.0f} cycles per iteration against {terms['math']:.0f} of math.")


def _conflict_sentence(tr: dict) -> str:
    """The bank conflicts the emulator saw, and the worst line."""
    w = tr.get("worst_shared") or {}
    where = f" (worst: line {w['line']}, {w['ratio']:.0f}-way: {w['source'][:60]})" if w.get("line") else ""
    return (f"Shared-memory bank conflicts: loads {tr.get('ways_load', 1):.1f}-way, stores "
            f"{tr.get('ways_store', 1):.1f}-way on average{where}")


def _without_model(st: Static, sections: dict | None) -> list[Finding]:
    """Findings from raw evidence when the model lacks an input (no SASS, no traffic)."""
    out = []
    r = st.resources or {}
    if r.get("spill_stores") or r.get("spill_loads"):
        out.append(Finding("spills", 1.0, f"Register spills: ptxas spilled {r.get('spill_stores', 0)} / "
                           f"{r.get('spill_loads', 0)} bytes per thread.", "hold fewer values per thread",
                           section(sections, "spills")))
    tr = st.traffic or {}
    # without a model: the share of the bytes moved that is used, worst of loads and stores, as the gain
    eff = min(tr.get("efficiency_load", 1.0), tr.get("efficiency_store", 1.0))
    if eff < 1 / BOTTLENECK:
        out.append(Finding("coalescing", 1 / eff, coalescing_sentence(tr), coalescing_step(tr),
                           section(sections, "coalescing")))
    if tr.get("ways", 1) >= 1.5:
        out.append(Finding("conflicts", tr["ways"], f"Shared-memory bank conflicts: {tr['ways']:.1f}-way on average.",
                           "pad or swizzle the shared rows", section(sections, "conflicts")))
    if st.loop is not None and st.loop.in_loop and not st.loop.overlapped:
        out.append(Finding("pipeline", 1.0, "Loads are not overlapped with math in the main loop.",
                           "cp.async into several stages", section(sections, "pipeline")))
    out.sort(key=lambda f: -f.gain)
    return out
