"""The memory traffic of one launch, as a GPU would see it, measured on the CPU emulator.

A kernel built for this view (`compile_module(..., traffic=True)`) reports every load and store
to the runner (runtime/traffic.h), which groups them into warp requests and counts, per source
line: global-memory 32-byte sectors against the fewest that would hold the bytes used
(coalescing), shared-memory wavefronts against one per phase (bank conflicts), and per argument
the bytes loaded and stored (how often each input element is fetched from global memory).

    t = measure(source, "transpose", grid, block, [inp, out, rows, cols])
    t.sectors_per_request(write=True), t.efficiency(write=True), t.bank_ways(), t.reads_per_element("in")
    print("\\n".join(t.lines()))

Speed is not modelled: these are the counts a profiler would show (l1tex sectors per request,
shared wavefronts), which the lessons explain the speed by. Used by the grader's CPU verdicts
(grader.checking.lesson_point) and meant for the performance coach.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Sequence

from grader.emu.launch import compile_module


@dataclass
class Access:
    """One load or store instruction of the kernel, totalled over the launch."""

    line: int | None
    source: str
    space: str  # "global" | "shared"
    write: bool
    requests: int  # warp requests
    units: int  # global: sectors moved; shared: wavefronts
    ideal: int  # the fewest that would do
    bytes: int
    distinct: int = 0  # bytes at different addresses (shared: a broadcast word counts once)
    lanes: int = 0  # lanes that took part, over all requests (32 per request in a converged warp)

    @property
    def ratio(self) -> float:
        return self.units / self.ideal if self.ideal else 1.0

    @property
    def what(self) -> str:
        return f"{self.space} {'store' if self.write else 'load'}"

    def where(self) -> str:
        return f"line {self.line}: {self.source}" if self.line else "a line the emulator could not name"


@dataclass
class MemoryTraffic:
    accesses: list[Access] = field(default_factory=list)
    buffers: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # name -> (bytes, loaded, stored)

    def _sum(self, space: str, write: bool | None) -> tuple[int, int, int]:
        sel = [a for a in self.accesses if a.space == space and (write is None or a.write == write)]
        return sum(a.requests for a in sel), sum(a.units for a in sel), sum(a.ideal for a in sel)

    def sectors_per_request(self, write: bool) -> float:
        req, units, _ = self._sum("global", write)
        return units / req if req else 0.0

    def efficiency(self, write: bool) -> float:
        """The fewest sectors that hold the bytes used / the sectors moved (1.0: fully coalesced)."""
        _, units, ideal = self._sum("global", write)
        return ideal / units if units else 1.0

    def bank_ways(self, write: bool | None = None) -> float:
        """Shared-memory wavefronts per phase of a request (1.0: no bank conflicts)."""
        _, units, ideal = self._sum("shared", write)
        return units / ideal if ideal else 1.0

    def uses_shared(self) -> bool:
        return any(a.space == "shared" for a in self.accesses)

    def reads_per_element(self, name: str) -> float:
        """How many times each byte of argument `name` was loaded from global memory, on average."""
        nbytes, loaded, _ = self.buffers.get(name, (0, 0, 0))
        return loaded / nbytes if nbytes else 0.0

    def worst(self, space: str, write: bool | None = None) -> Access | None:
        sel = [a for a in self.accesses if a.space == space and (write is None or a.write == write)]
        return max(sel, key=lambda a: (a.units - a.ideal, a.units), default=None)

    def lines(self) -> list[str]:
        out = []
        for write in (False, True):
            req, units, ideal = self._sum("global", write)
            if req:
                out.append(f"global {'stores' if write else 'loads'}: {units / req:.1f} sectors of 32 bytes per "
                           f"warp request ({req} requests; {100 * ideal / units:.0f}% of the bytes moved are used)")
        req, units, ideal = self._sum("shared", None)
        if req:
            out.append(f"shared memory: {units / ideal:.1f}-way bank conflicts on average ({req} warp requests)"
                       if units > ideal else f"shared memory: no bank conflicts ({req} warp requests)")
        for name, (nbytes, loaded, _) in self.buffers.items():
            if loaded:
                out.append(f"'{name}': each element loaded {loaded / nbytes:.1f} times from global memory")
        return out

    def to_dict(self) -> dict:
        return dict(accesses=[asdict(a) for a in self.accesses], buffers={k: list(v) for k, v in self.buffers.items()})

    @classmethod
    def from_dict(cls, d: dict) -> "MemoryTraffic":
        return cls([Access(**a) for a in d["accesses"]], {k: tuple(v) for k, v in d["buffers"].items()})


def _pc_lines(so: str, filename: str, pcs: list[str]) -> dict[str, int]:
    """PC (hex offset) -> the user's line, the innermost frame in the user's file."""
    if not pcs:
        return {}
    try:
        # a PC here is a return address: the call is the byte before it
        r = subprocess.run(["addr2line", "-e", so, "-i", "-a", *[f"0x{int(p, 16) - 1:x}" for p in pcs]],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out: dict[str, int] = {}
    cur = None
    for ln in r.stdout.splitlines():
        if ln.startswith("0x"):
            cur = format(int(ln, 16) + 1, "x")
            continue
        m = re.match(r"^(.*):(\d+)(?: \(discriminator \d+\))?$", ln.strip())
        # (kernel.cpp: binutils 2.40's name for the user's file in some builds, see launch.py)
        if cur and cur not in out and m and os.path.basename(m.group(1)) in (filename, "kernel.cpp") \
                and int(m.group(2)) > 0:
            out[cur] = int(m.group(2))
    return out


def parse(lines: list[str], source: str, so: str, filename: str) -> MemoryTraffic:
    t = MemoryTraffic()
    raw = []
    for ln in lines:
        k, _, v = ln.partition("=")
        if k == "pc":
            pc, space, write, req, units, ideal, nbytes, *more = v.split(",")
            raw.append((pc, int(space), int(write), int(req), int(units), int(ideal), int(nbytes),
                        int(more[0]) if more else int(nbytes), int(more[1]) if len(more) > 1 else 32 * int(req)))
        elif k == "buffer":
            name, nbytes, loaded, stored = v.rsplit(",", 3)
            t.buffers[name] = (int(nbytes), int(loaded), int(stored))
    where = _pc_lines(so, filename, [r[0] for r in raw])
    src = source.replace("\r\n", "\n").split("\n")
    merged: dict[tuple, Access] = {}  # one entry per (line, space, write)
    for pc, space, write, req, units, ideal, nbytes, distinct, lanes in raw:
        line = where.get(pc)
        key = (line, space, write)
        a = merged.get(key)
        if a is None:
            text = src[line - 1].strip() if line and 0 < line <= len(src) else ""
            merged[key] = Access(line, text, "global" if space == 1 else "shared", bool(write), req, units, ideal,
                                 nbytes, distinct, lanes)
        else:
            a.requests += req
            a.units += units
            a.ideal += ideal
            a.bytes += nbytes
            a.distinct += distinct
            a.lanes += lanes
    t.accesses = sorted(merged.values(), key=lambda a: (a.line or 0, a.space, a.write))
    return t


def measure(source: str, kernel: str, grid, block, args: Sequence, *, shared_mem: int = 0,
            options: Sequence[str] = (), timeout: float = 60.0) -> MemoryTraffic:
    """Run `kernel` once on the emulator, observing every load and store (arrays are updated)."""
    from grader.emu.launch import _dim3

    mod = compile_module(source, options=options, traffic=True)
    packed, _ = mod._pack(kernel, args)
    lines: list[str] = []
    mod._run(kernel, _dim3(grid, "grid"), _dim3(block, "block"), packed, shared_mem, timeout, traffic=lines)
    return parse(lines, source, str(mod._built.so), mod._built.meta.get("filename", "kernel.cu"))
