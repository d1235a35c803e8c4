"""The static evidence of one kernel, everywhere (no GPU needed): ptxas's resources, occupancy,
the SASS mix of the main loop, and the memory traffic the emulator observed at a small size,
turned into the bottleneck model's inputs (grader.coach.model.Evidence).

Which source each number comes from, and why:
- FLOPs per iteration: SASS (the main loop's tensor-core or FMA instructions x warps per block);
- shared-memory loads per FLOP: SASS (LDS/LDSM in the loop, which are not predicated in practice;
  the emulator splits WMMA loads into per-element requests), their bank conflicts: the emulator; a
  wide LDS where the lanes read the same words (a broadcast) is one wavefront, not four: LDS
  wavefronts are at least one per instruction and what the different bytes the emulator saw need,
  at most SASS's count for distinct addresses;
- shared stores and global bytes per FLOP: the emulator (what executed; SASS counts predicated
  copy loops as if every iteration ran). Stores of the output are scaled from the observed K to
  the timed K (they do not grow with K).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from grader.coach import sass as sass_mod
from grader.coach.model import Evidence, Stream
from grader.coach.occupancy import Occupancy, occupancy


@dataclass
class Static:
    kernel: str
    arch: int
    threads: int
    smem_dynamic: int
    resources: dict | None  # ptxas: registers, shared_bytes, stack_bytes, spill_stores, spill_loads
    occupancy: Occupancy | None
    loop: sass_mod.Mix | None
    whole: sass_mod.Mix | None
    traffic: dict | None  # the emulator's summary (see _traffic)
    missing: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # where a number came from, when not its usual source
    evidence: Evidence | None = None
    stream: Stream | None = None  # a kernel without math: what it moves (model.stream)
    quotes: dict = field(default_factory=dict)  # source line -> its text, for the lines loop.lines names

    def to_dict(self) -> dict:
        d = asdict(self)
        return d


def _elem(problem) -> int:
    return {"uint8": 1, "float16": 2, "float32": 4, "float64": 8}.get(getattr(problem, "in_dtype", "float16"), 2)


def _traffic(t, flops: float, dims: dict, perf_dims: dict | None, problem=None) -> dict:
    """The emulator's numbers, per FLOP at the timed size."""
    loaded = sum(v[1] for v in t.buffers.values())
    stored = sum(v[2] for v in t.buffers.values())
    # an output's stores past one per element, and its reads past one (a beta*C epilogue reads C once): work of
    # the main loop (atomicAdd into C per product, C += per tile), growing with the sum, so never scaled below
    more = {k: max(0, v[1] - v[0]) + max(0, v[2] - v[0]) for k, v in t.buffers.items() if v[2] and v[0]}
    stored_more = sum(max(0, v[2] - v[0]) for k, v in t.buffers.items() if k in more)
    scale = 1.0
    summed = getattr(problem, "summed", None)
    if summed is not None and perf_dims:
        n, timed = summed(dims), summed(perf_dims)
        if n and timed:
            scale = n / timed  # output stores per FLOP shrink as the sum each output takes grows
    sh = [a for a in t.accesses if a.space == "shared"]
    st_bytes = sum(a.bytes for a in sh if a.write)
    gl = [a for a in t.accesses if a.space == "global"]
    # sector bytes moved beyond the fewest sectors that hold the bytes used (stores scaled as above)
    excess = sum((a.units - a.ideal) * 32 * (scale if a.write else 1.0) for a in gl)
    worst = t.worst("shared")
    worst_ld = t.worst("shared", False)
    return dict(
        flops=flops, loaded=loaded, stored=stored,
        global_per_flop=(loaded + (stored - stored_more) * scale + stored_more) / flops if flops else 0.0,
        output_per_flop=sum(more.values()) / flops if flops else 0.0,
        # each output's reads and stores per element, where it is read or stored more than once per element
        outputs={k: (t.buffers[k][1] / t.buffers[k][0], t.buffers[k][2] / t.buffers[k][0]) for k, m in more.items() if m},
        reads={k: (v[1] / v[0] if v[0] else 0.0) for k, v in t.buffers.items() if v[1]},
        shared_store_wf_per_flop=st_bytes / 128 / flops if flops else 0.0,
        ways_load=t.bank_ways(False), ways_store=t.bank_ways(True), ways=t.bank_ways(),
        shared_load_wf_emu=sum(min(a.bytes / 128, a.ideal) for a in sh if not a.write) / flops if flops else 0.0,
        # bytes of different words the shared loads read (a broadcast once), per FLOP
        shared_load_distinct_per_flop=sum(a.distinct for a in sh if not a.write) / flops if flops else 0.0,
        worst_shared=(dict(line=worst.line, source=worst.source, ratio=worst.ratio, write=worst.write)
                      if worst and worst.ratio > 1.01 else None),
        worst_shared_load=(dict(line=worst_ld.line, source=worst_ld.source, ratio=worst_ld.ratio)
                           if worst_ld and worst_ld.ratio > 1.01 else None),
        conflicted=[dict(line=a.line, source=a.source[:80], ratio=round(a.ratio, 2), write=a.write)
                    for a in sorted(sh, key=lambda a: -(a.units - a.ideal)) if a.ratio > 1.01][:5],
        efficiency_load=t.efficiency(False), efficiency_store=t.efficiency(True),
        global_excess_per_flop=excess / flops if flops else 0.0,
        sectors_per_request_load=t.sectors_per_request(False), sectors_per_request_store=t.sectors_per_request(True),
        uncoalesced=[_line(a) for a in sorted(gl, key=lambda a: -(a.units - a.ideal)) if a.units > 1.1 * a.ideal][:3],
        uses_shared=t.uses_shared(),
        # the share of a warp's lanes in its requests, over all of them (1.0: none diverge; a record without
        # lane counts, lanes 0, says nothing)
        lanes=(sum(a.lanes for a in t.accesses) / (32 * sum(a.requests for a in t.accesses))
               if all(a.lanes for a in t.accesses) and t.accesses else 1.0),
        # totals over the launch, for a kernel without math (model.Stream)
        unique_bytes=sum(min(v[0], v[1]) + min(v[0], v[2]) for v in t.buffers.values()),
        requested_bytes=loaded + stored, excess_sectors=sum(a.units - a.ideal for a in gl),
        shared_wavefronts=sum(a.units for a in sh), shared_wavefronts_ideal=sum(a.ideal for a in sh),
    )


def _line(a) -> dict:
    """One global load or store line that moves more sectors than the bytes it uses need."""
    return dict(line=a.line, source=a.source[:80], write=a.write, requests=a.requests,
                sectors_per_request=a.units / a.requests if a.requests else 0.0,
                used=a.ideal / a.units if a.units else 1.0,
                # bytes each lane moves per request, for a full warp (2: half, 4: float, 16: int4/float4)
                lane_bytes=a.bytes / a.requests / 32 if a.requests else 0.0,
                wasted_sectors=a.units - a.ideal)


def _math(loop) -> str:
    ops = " ".join(loop.tensor_ops) if loop else ""
    if "DMMA" in ops:
        return "f64"
    # FP8 mma.sync (QMMA, sm_89) at the fp16 rate: the model is an H100's, which runs it as HMMA
    if "HMMA" in ops or "HGMMA" in ops or "QMMA" in ops:
        return "f16"
    return "fp32"


def collect(source: str, kernel: str, options=(), *, arch: int = 90, threads: int, smem_dynamic: int = 0,
            traffic=None, traffic_dims: dict | None = None, perf_dims: dict | None = None, problem=None,
            built: dict | None = None, traffic_why: str | None = None) -> Static:
    """Everything static about `kernel`; `traffic` (grader.emu.traffic.MemoryTraffic) observed at
    `traffic_dims` of `problem`, or None (then the model has no memory numbers, and `traffic_why`
    says why there is none)."""
    b = built if built is not None else sass_mod.build(source, kernel, options, arch)
    missing = list(b.get("missing", []))
    notes = list(b.get("notes", []))
    res = b.get("resources")
    occ = None
    if res:
        occ = occupancy(arch=arch, threads=threads, registers=res["registers"], smem_static=res["shared_bytes"],
                        smem_dynamic=smem_dynamic)
    loop = whole = None
    if b.get("sass"):
        loop, whole = sass_mod.analyse(b["sass"])
    tr = None
    if traffic is not None and problem is not None and traffic_dims:
        flops = problem.flops(traffic_dims) if hasattr(problem, "flops") else 0.0
        tr = _traffic(traffic, flops, traffic_dims, perf_dims, problem)
    elif traffic is None:
        missing.append("no emulator traffic view (" + (traffic_why or "the kernel did not run on the emulator here")
                       + "), so no memory numbers and no bottleneck model")
    st = Static(kernel, arch, threads, smem_dynamic, res, occ, loop, whole, tr, missing, notes)
    text = source.splitlines()
    st.quotes = {ln: text[ln - 1].strip()[:80] for at in (loop.lines.values() if loop else ()) for ln in at
                 if 0 < ln <= len(text)}
    st.evidence = _evidence(st, problem)
    if tr and not tr["flops"] and tr["unique_bytes"]:  # no math to model: a data-movement kernel
        st.stream = Stream(tr["unique_bytes"], tr["requested_bytes"], tr["shared_wavefronts"],
                           tr["shared_wavefronts_ideal"], tr["excess_sectors"])
    return st


def _evidence(st: Static, problem) -> Evidence | None:
    loop, tr, occ = st.loop, st.traffic, st.occupancy
    if not loop or not tr or not occ or not tr["flops"] or not occ.blocks:  # (0 blocks: it does not launch)
        return None
    warps = -(-st.threads // 32)
    per_warp = loop.tensor_flops or loop.fp_flops
    if not per_warp:
        return None
    F = per_warp * warps
    # divergence: SASS's FLOPs are what a warp's instructions would do with 32 lanes; the emulator's
    # per-FLOP numbers are per FLOP done, `lanes` of that (under 0.95: the kernel idles lanes on purpose)
    lanes = tr.get("lanes", 1.0)
    lanes = lanes if lanes < 0.95 else 1.0
    # shared loads: SASS wavefronts per FLOP (per warp), times the emulator's load conflict ways
    lds = loop.wavefronts.get("LDS", 0)
    if lds and not loop.n("LDSM") and tr.get("shared_load_distinct_per_flop"):
        # SASS counts an LDS.128 as 4 wavefronts, as if every lane read its own 16 bytes; where the lanes
        # read the same words (a broadcast, e.g. As[ty][k..k+3] in a tiled SGEMM) it is one. At least one
        # per instruction, at least what the different bytes the emulator saw need, at most SASS's count.
        lds = min(lds, max(loop.n("LDS"), tr["shared_load_distinct_per_flop"] * lanes * per_warp / 128))
    ld_wf = lds + loop.wavefronts.get("LDSM", 0)
    w_load = ld_wf / per_warp if ld_wf else tr["shared_load_wf_emu"] * lanes
    w_store = tr["shared_store_wf_per_flop"] * lanes
    w = w_load * max(tr["ways_load"], 1.0) + w_store * max(tr["ways_store"], 1.0)
    spill = (loop.b("LDL") + loop.b("STL")) * warps
    depth = loop.wait_depth if (loop.n("LDGSTS") and loop.wait_depth) else 1
    return Evidence(flops_iter=F, blocks=occ.blocks, warps=warps, global_per_flop=tr["global_per_flop"],
                    shared_per_flop=w, shared_per_flop_ideal=w_load + w_store, spill_bytes_iter=spill,
                    overlapped=loop.overlapped, depth=depth, math=_math(loop),
                    good_intensity=128 / _elem(problem), global_excess_per_flop=tr["global_excess_per_flop"],
                    lanes=lanes, pipes=dict(loop.pipes), output_per_flop=tr.get("output_per_flop", 0.0),
                    # an fp64 exercise (DMMA, DGEMM) is double by design: its fp64 math is the work, not a defect
                    fp64_pipes={} if "float64" in (getattr(problem, "in_dtype", ""), getattr(problem, "out_dtype", ""))
                    else dict(loop.fp64_pipes))
