"""The lesson's point without a GPU: what a speed-graded exercise's CPU verdict says about the
memory traffic the emulator observed (grader.emu.traffic), in the exercise's own terms.

Speed credit stays GPU-only. This item never changes a score: it reports the numbers (sectors
per warp request, bank-conflict ways, loads per input element) and says plainly when the kernel
does not yet do what the lesson is about: a transpose whose reads or writes are not coalesced or
whose tile has bank conflicts, a "tiled" GEMM that never stages tiles (each input element still
fetched once per output row or column).
"""
from __future__ import annotations

from grader.checking.verdict import SKIP, Item
from grader.emu.traffic import MemoryTraffic
from grader.problems import kinds as P

NAME = "memory traffic"
NOT_YET = "not yet what the lesson is about"


def observed_case(ex) -> int | None:
    """Which correctness case the traffic is observed on (the last CPU size; None: no view)."""
    if ex.target is None or isinstance(ex.problem, (P.FragmentProbe,)):
        return None
    return len(ex.cpu_sizes) - 1


def _coalescing(t: MemoryTraffic, what: str) -> list[str]:
    """Problems with coalescing, worst line named."""
    out = []
    for write in (False, True):
        eff = t.efficiency(write)
        if eff < 0.5:
            w = t.worst("global", write)
            out.append(f"{what} {'writes' if write else 'reads'} are not coalesced: a warp's "
                       f"{'store' if write else 'load'} touches {t.sectors_per_request(write):.0f} sectors of 32 bytes "
                       f"where {t.sectors_per_request(write) * eff:.0f} would hold its bytes ({w.where()})")
    return out


def _banks(t: MemoryTraffic) -> list[str]:
    ways = t.bank_ways()
    if ways < 1.5:
        return []
    w = t.worst("shared")
    return [f"the shared-memory tile has {w.ratio:.0f}-way bank conflicts ({w.where()}): the lanes of a warp "
            f"hit the same bank {w.ratio:.0f} times, so the access is replayed; pad each row by one element"]


def point(ex, t: MemoryTraffic, dims: dict, launch: dict) -> str:
    """The number the lesson is about, said when the kernel does it."""
    p = ex.problem
    if isinstance(p, P.Transpose):
        return (f"reads and writes coalesced ({t.sectors_per_request(False):.0f} and {t.sectors_per_request(True):.0f} "
                f"sectors per warp request), shared tile {t.bank_ways():.1f}-way")
    if isinstance(p, P.Gemm) and "A" in t.buffers:
        return (f"each element of A is loaded {t.reads_per_element('A'):.1f} times and each of B "
                f"{t.reads_per_element('B'):.1f} times from global memory (M = {dims['M']}, N = {dims['N']})")
    lines = t.lines()
    return lines[0] if lines else "no global memory traffic seen"


def judge(ex, t: MemoryTraffic, dims: dict, launch: dict) -> tuple[list[str], list[str]]:
    """(problems: what the lesson is about that the kernel does not do yet, facts: the numbers)."""
    facts = t.lines()
    problems: list[str] = []
    p = ex.problem
    if isinstance(p, P.Transpose):
        problems += _coalescing(t, "global")
        if not t.uses_shared() and problems:
            problems[-1] += "; stage each 32x32 tile in shared memory so both sides move whole rows"
        problems += _banks(t)
    elif isinstance(p, P.Gemm) and p.launch_rule == "tile":
        M, N, tile = dims["M"], dims["N"], launch.get("tile", 32)
        a, b = t.reads_per_element("A"), t.reads_per_element("B")
        tiled_a, tiled_b = -(-N // tile), -(-M // tile)
        if not t.uses_shared() or a > 1.5 * tiled_a or b > 1.5 * tiled_b:
            problems.append(f"each element of A is loaded {a:.0f} times and each of B {b:.0f} times from global "
                            f"memory (M = {M}, N = {N}): a kernel that stages TILE x TILE tiles in shared memory "
                            f"loads them about N/TILE = {tiled_a} and M/TILE = {tiled_b} times"
                            + ("" if t.uses_shared() else "; this one never uses shared memory"))
        problems += _coalescing(t, "global")
        problems += _banks(t)
    elif isinstance(p, P.Gemm) and p.launch_rule == "block":
        N, M = dims["N"], dims["M"]
        a, b = t.reads_per_element("A"), t.reads_per_element("B")
        if not t.uses_shared() or a >= N / 16 or b >= M / 16:
            problems.append(f"each element of A is loaded {a:.0f} times and each of B {b:.0f} times from global "
                            f"memory, as often as the naive one-warp-per-tile kernel (N/16 = {N // 16}, M/16 = "
                            f"{M // 16}): stage block tiles in shared memory and reuse them across warps")
        problems += _banks(t)
    return problems, facts


def item(ex, t: MemoryTraffic, dims: dict, launch: dict) -> Item:
    problems, facts = judge(ex, t, dims, launch)
    size = ", ".join(f"{k}={v}" for k, v in dims.items())
    head = (f"{NOT_YET}: " + "; ".join(problems) if problems
            else "as the lesson intends: " + point(ex, t, dims, launch))
    msg = head + f"\n  seen on the emulator at {size}:\n" + "\n".join("    " + f for f in facts)
    return Item(NAME, SKIP, msg, kind="lesson-point" if problems else "",
                where=dict(traffic=t.to_dict(), problems=problems))
