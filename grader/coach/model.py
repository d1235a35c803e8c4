"""Where the time of one main-loop iteration goes, per SM, in clock cycles: a bottleneck model
built from the evidence (ptxas, SASS, the emulator's traffic), with the bound each resource sets and
the speed-up each fix would buy. The roofline point is the same numbers seen from far away.

Per SM, per iteration of the main loop (B resident blocks, each doing F FLOPs and moving S global
bytes and W shared-memory wavefronts per iteration):
    math      B*F / (tensor-core or FMA FLOP per clock)
    shared    B*W wavefronts (one per clock; a k-way bank conflict costs k) + spilled bytes / 128
    L1        B*X / 32: X the global sector bytes moved beyond the fewest that hold the bytes used
              (uncoalesced loads and stores), each such sector one L1 wavefront (a clock,
              Rates.scattered_sectors_per_clk); L1 and shared memory share one data path, so
              `shared + L1` is what that path is busy
    L2        B*S / (L2 bytes per clock per SM)
    latency   L / d: a load takes L cycles; d iterations' loads are in flight while one computes
    pipes     B*warps*n / rate for each narrow pipe (fp64 math, conversions, special functions, the
              integer ALU): the busiest of them; a float kernel whose loop converts to double and back, or
              computes its indices with / and % by a run-time value, is held here, not by `math`
    (math on tensor cores is divided by min(1, warps per scheduler / 2.5): fewer warps cannot keep
    the pipe fed, Rates.tensor_warps)
    (a divergent warp, `lanes` of its 32 lanes active in its requests: math and shared are what its
    instructions issue, L2 and L1 what its active lanes move, and the bound counts B*F*lanes FLOPs)
Loads overlapped with math (cp.async with groups left in flight, or register prefetch):
    t = max(math, pipes, shared + L1, L2, latency)
Not overlapped (load, wait, compute, in one stage):
    t = L + L2 + max(math, pipes, shared + L1)
L2 counts the bytes requested (L1 is assumed to catch a sector's other bytes when a later
request of the same warp uses them); an uncoalesced kernel pays in L1's sectors instead.
bound = B*F / t. A fix is scored by how much it shortens t; the largest speed-up is the first finding.

A kernel with no math (a transpose, a copy) has no FLOPs to spread these over: stream() bounds it by
the bytes it must move, t = max(DRAM, L2, shared + L1) for the whole launch, and scores removing bank
conflicts or uncoalesced sectors the same way (a 2-way conflict next to a transpose's DRAM traffic is no
bottleneck; a 32-way one is).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from grader.coach.machine import H100, Rates


@dataclass
class Evidence:
    """What the model needs, each number from a named source."""

    flops_iter: float  # per block per main-loop iteration (SASS: tensor/FMA instructions x warps)
    blocks: int  # resident per SM (occupancy)
    warps: int  # per block
    global_per_flop: float  # bytes loaded+stored per FLOP (emulator, scaled to the timed size)
    shared_per_flop: float  # wavefronts per FLOP as the kernel's addresses fall (emulator)
    shared_per_flop_ideal: float  # the same without bank conflicts
    spill_bytes_iter: float  # local-memory bytes per block per iteration (SASS LDL/STL x warps)
    overlapped: bool  # loads of later iterations in flight during the math (SASS)
    depth: int  # iterations in flight (cp.async groups; 1 for register prefetch)
    math: str  # "f16" | "f64" | "fp32"
    good_intensity: float  # FLOP/byte of a 128x128 block tile at this precision
    # global sector bytes moved per FLOP beyond the fewest sectors holding the bytes used (emulator:
    # 32-byte sectors per warp request against the ideal; 0 when every request is coalesced)
    global_excess_per_flop: float = 0.0
    # the share of a warp's lanes that take part in its requests (emulator; 1.0: no divergence). SASS's
    # instructions issue for the whole warp, so flops_iter and the shared and spill traffic are per warp
    # as issued, and a divergent warp does only `lanes` of that work (global_per_flop and
    # global_excess_per_flop are per FLOP done, as the emulator counts them)
    lanes: float = 1.0
    # warp instructions per warp per iteration on each narrow pipe (SASS; Rates.pipe_per_clk): "fp64",
    # "convert", "mufu"; and of those, the ones there only because a value is double
    pipes: dict = field(default_factory=dict)
    fp64_pipes: dict = field(default_factory=dict)
    # of global_per_flop, the bytes of an output read or written beyond its one final store (emulator: an output
    # buffer's loads and its stores past one per element, e.g. atomicAdd into C inside the main loop)
    output_per_flop: float = 0.0


@dataclass
class Result:
    terms: dict  # name -> cycles per iteration per SM
    serial: bool
    cycles: float
    flop_per_clk: float  # per SM
    tflops: float  # the bound
    peak_tflops: float  # of the math alone
    intensity: float  # FLOP per global byte requested
    gains: dict = field(default_factory=dict)  # fix -> speed-up factor
    warps_per_scheduler: float = 0.0  # set where too few to feed the tensor pipe
    rates: str = ""
    busiest_pipe: str = ""  # which of Rates.pipe_per_clk sets terms["pipes"]
    pipe_cycles: dict = field(default_factory=dict)  # each of Rates.pipe_per_clk -> its cycles per iteration
    stream: bool = False  # a data-movement kernel (stream()): terms DRAM, L2, shared, L1; no math
    bandwidth: float = 0.0  # stream(): the bytes per second (of unique data) the model allows

    def to_dict(self) -> dict:
        return asdict(self)


def _peak(ev: Evidence, r: Rates) -> float:
    return {"f16": r.tensor_f16, "f64": r.tensor_f64}.get(ev.math, r.fp32)


def _per_scheduler(ev: Evidence, blocks: int) -> float:
    return blocks * max(ev.warps, 1) / 4


def _pipe_cycles(ev: Evidence, r: Rates, B: int, fp64: bool = True, alu: bool = True) -> dict:
    """Clocks per SM per iteration of each narrow pipe; without the instructions that are there only because a
    value is double where `fp64` is False, without the integer ALU's where `alu` is False."""
    out = {}
    for pipe, rate in r.pipe_per_clk:
        n = ev.pipes.get(pipe, 0) - (0 if fp64 else ev.fp64_pipes.get(pipe, 0))
        out[pipe] = 0.0 if pipe == "alu" and not alu else B * max(ev.warps, 1) * n / rate
    return out


def _pipes(ev: Evidence, r: Rates, B: int, fp64: bool = True, alu: bool = True) -> tuple[float, str]:
    """Clocks per SM per iteration of the busiest narrow pipe, and its name."""
    return _busiest(_pipe_cycles(ev, r, B, fp64, alu))


def _busiest(c: dict) -> tuple[float, str]:
    name = max(c, key=c.get) if c and max(c.values()) > 0 else ""
    return (c[name] if name else 0.0), name


def _time(ev: Evidence, r: Rates, *, blocks=None, g=None, w=None, spill=None, overlapped=None, depth=None,
          fed=None, excess=None, lanes=None, fp64=True, alu=True):
    B = ev.blocks if blocks is None else blocks
    x = ev.global_excess_per_flop if excess is None else excess
    if g is not None and ev.global_per_flop:  # fewer bytes requested: fewer wasted sectors too
        x *= g / ev.global_per_flop
    g = ev.global_per_flop if g is None else g
    w = ev.shared_per_flop if w is None else w
    spill = ev.spill_bytes_iter if spill is None else spill
    ov = ev.overlapped if overlapped is None else overlapped
    d = max(ev.depth if depth is None else depth, 1)
    F = ev.flops_iter
    done = F * (ev.lanes if lanes is None else lanes)  # the FLOPs the iteration's active lanes do
    # too few warps per scheduler leave the tensor pipe idle between dependent instructions
    per_sched = _per_scheduler(ev, B)
    if fed is None:
        fed = min(1.0, per_sched / r.tensor_warps) if ev.math in ("f16", "f64") and per_sched > 0 else 1.0
    terms = {
        "math": B * F / _peak(ev, r) / fed,
        "shared": B * (F * w + spill / r.smem_bytes_per_clk),
        "L2": B * done * g / r.per_clk(r.l2_bytes_per_s),
        "latency": r.load_latency / d if ov else float(r.load_latency),
        "L1": B * done * x / 32 / r.scattered_sectors_per_clk,
        "pipes": _pipes(ev, r, B, fp64, alu)[0],
    }
    pipe = terms["shared"] + terms["L1"]  # shared memory and L1 share one data path
    compute = max(terms["math"], terms["pipes"])
    if ov:
        t = max(compute, pipe, terms["L2"], terms["latency"])
    else:
        t = terms["latency"] + terms["L2"] + max(compute, pipe)
    return t, terms


def run(ev: Evidence, r: Rates = H100, next_blocks: int | None = None) -> Result:
    t, terms = _time(ev, r)
    B, F = max(ev.blocks, 1), ev.flops_iter
    cycles = _pipe_cycles(ev, r, B)
    fpc = B * F * ev.lanes / t if t else 0.0
    res = Result(terms=terms, serial=not ev.overlapped, cycles=t, flop_per_clk=fpc, tflops=r.tflops(fpc),
                 peak_tflops=r.tflops(_peak(ev, r)),
                 intensity=1 / ev.global_per_flop if ev.global_per_flop else float("inf"), rates=r.name,
                 busiest_pipe=_busiest(cycles)[1], pipe_cycles=cycles)

    def gain(**kw):
        t2, _ = _time(ev, r, **kw)
        return t / t2 if t2 else 1.0

    # the output stored once: no reads of it, no stores past one per element, in the main loop
    g0 = ev.global_per_flop
    if 0 < ev.output_per_flop < g0:
        g0 = g0 - ev.output_per_flop
        res.gains["output"] = gain(g=g0)
    # global traffic: up to a 128x128 block tile's intensity, or (already there) a quarter less traffic; beyond
    # what storing the output once gives
    if g0:
        target = min(g0, 1 / ev.good_intensity)
        if target >= g0 / 1.1:  # already near a 128x128 tile: a quarter less traffic
            target = g0 * 0.75
        res.gains["global"] = gain(g=target) / res.gains.get("output", 1.0)
    # coalesced: every global request moves only the sectors that hold the bytes it uses
    if ev.global_excess_per_flop:
        res.gains["coalescing"] = gain(excess=0.0)
    res.gains["conflicts"] = gain(w=ev.shared_per_flop_ideal)
    # half the shared traffic per FLOP (a warp tile twice as large), beyond removing the conflicts
    res.gains["shared"] = gain(w=ev.shared_per_flop_ideal / 2) / res.gains["conflicts"]
    res.gains["spills"] = gain(spill=0.0)
    # the pipe fed by enough warps (more warps per SM, the same work each)
    per_sched = _per_scheduler(ev, B)
    if ev.math in ("f16", "f64") and per_sched < r.tensor_warps:
        res.gains["warps"] = gain(fed=1.0)
        res.warps_per_scheduler = per_sched
    res.gains["pipeline"] = gain(overlapped=True, depth=2) if not ev.overlapped else gain(depth=ev.depth + 1)
    if next_blocks and next_blocks > ev.blocks:
        t2, _ = _time(ev, r, blocks=next_blocks)
        res.gains["occupancy"] = (next_blocks * F * ev.lanes / t2) / fpc if fpc and t2 else 1.0
    # the loop in float: no fp64 math, no conversions to or from double
    if any(ev.fp64_pipes.values()):
        res.gains["fp64"] = gain(fp64=False)
    # integer index arithmetic off the ALU pipe (an upper bound: the loop keeps some, e.g. its counter)
    if ev.pipes.get("alu"):
        res.gains["alu"] = gain(alu=False)
    # every lane busy: the same instructions do 1/lanes times the work (and move that much more data)
    if 0 < ev.lanes < 1.0:
        t2, _ = _time(ev, r, lanes=1.0)
        res.gains["divergence"] = t / (ev.lanes * t2) if t2 else 1.0
    return res


# ---------------------------------------------------------------- kernels that only move data

@dataclass
class Stream:
    """A kernel that does no math the model counts (a transpose, a copy): what it moves, totalled over the
    emulator's launch. Its time is set by the DRAM traffic it cannot avoid (every element read and
    written once), unless L2, or the L1/shared data path (shared wavefronts + uncoalesced sectors), is
    busier."""

    unique_bytes: float  # each buffer's bytes read and written, at most once each (DRAM)
    requested_bytes: float  # bytes the warps request (L2)
    shared_wavefronts: float  # as the kernel's addresses fall (bank conflicts cost extra)
    shared_wavefronts_ideal: float  # the same without conflicts
    excess_sectors: float  # global sectors moved beyond the fewest that hold the bytes used

    def to_dict(self) -> dict:
        return asdict(self)


def _stream_time(ev: Stream, r: Rates, *, shared=None, excess=None):
    """Clocks per SM for the emulator's launch spread over all SMs (the ratios are what matter)."""
    w = ev.shared_wavefronts if shared is None else shared
    x = ev.excess_sectors if excess is None else excess
    terms = {
        "DRAM": ev.unique_bytes / r.per_clk(r.dram_bytes_per_s) / r.sms,
        "L2": ev.requested_bytes / r.per_clk(r.l2_bytes_per_s) / r.sms,
        "shared": w / (r.smem_bytes_per_clk / 128) / r.sms,
        "L1": x / r.scattered_sectors_per_clk / r.sms,
    }
    return max(terms["DRAM"], terms["L2"], terms["shared"] + terms["L1"]), terms


def stream(ev: Stream, r: Rates = H100) -> Result:
    """The bound of a data-movement kernel (as a share of the DRAM rate) and the speed-up of each fix:
    no bank conflicts ("conflicts"), every global request coalesced ("coalescing")."""
    t, terms = _stream_time(ev, r)
    frac = terms["DRAM"] / t if t else 1.0  # of the DRAM rate this kernel can reach
    res = Result(terms=terms, serial=False, cycles=t, flop_per_clk=0.0, tflops=0.0, peak_tflops=0.0,
                 intensity=0.0, rates=r.name, stream=True, bandwidth=frac * r.dram_bytes_per_s)
    for key, kw in (("conflicts", dict(shared=ev.shared_wavefronts_ideal)), ("coalescing", dict(excess=0.0))):
        t2, _ = _stream_time(ev, r, **kw)
        res.gains[key] = t / t2 if t2 else 1.0
    return res
