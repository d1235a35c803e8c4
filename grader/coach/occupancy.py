"""Blocks per SM and what limits them: registers, shared memory, threads or the block count.

    occ = occupancy(arch=90, threads=128, registers=249, smem_static=0, smem_dynamic=107520)
    occ.blocks, occ.limiter, occ.warps, occ.fraction
"""
from __future__ import annotations

from dataclasses import dataclass

from grader.coach.machine import limits
from grader.runtime.launch import warp_registers


@dataclass
class Occupancy:
    blocks: int  # resident blocks per SM (0: the block does not fit at all)
    limiter: str  # "registers" | "shared memory" | "threads" | "blocks"
    by: dict  # limit -> blocks it allows
    warps: int  # resident warps per SM
    max_warps: int
    why_none: str = ""  # when blocks == 0

    @property
    def fraction(self) -> float:
        return self.warps / self.max_warps if self.max_warps else 0.0

    def line(self) -> str:
        if not self.blocks:
            return f"0 blocks per SM: {self.why_none}"
        others = ", ".join(f"{k} {v}" for k, v in self.by.items() if k != self.limiter)
        tied = " and ".join(k for k, v in self.by.items() if v == self.blocks)
        return (f"{self.blocks} block{'s' if self.blocks != 1 else ''} per SM ({self.warps} of {self.max_warps} warps, "
                f"{100 * self.fraction:.0f}% occupancy), limited by {tied} (each limit allows: "
                f"{self.limiter} {self.by[self.limiter]}, {others})")


def occupancy(*, arch: int, threads: int, registers: int, smem_static: int = 0, smem_dynamic: int = 0) -> Occupancy:
    L = limits(arch)
    warps_per_block = -(-threads // 32)
    regs_per_warp = warp_registers(max(registers, 1), L.reg_unit)
    smem = smem_static + smem_dynamic
    by = {
        "registers": (L.regs_per_sm // regs_per_warp) // warps_per_block if warps_per_block else 0,
        "shared memory": L.smem_per_sm // (smem + L.smem_reserved) if smem + L.smem_reserved else 0,
        "threads": L.warps_per_sm // warps_per_block if warps_per_block else 0,
        "blocks": L.blocks_per_sm,
    }
    if not smem:  # no shared memory: not a limit (the reserved 1 KB never binds before the block count)
        del by["shared memory"]
    why = ""
    if threads > L.threads_per_block:
        why = f"{threads} threads per block, more than sm_{arch}'s {L.threads_per_block}"
    elif registers > L.max_regs_per_thread:
        why = f"{registers} registers per thread, more than {L.max_regs_per_thread}"
    elif smem > L.smem_per_block:
        why = f"{smem} bytes of shared memory per block, more than sm_{arch}'s {L.smem_per_block}"
    elif by["registers"] == 0:
        why = f"{registers} registers x {threads} threads is more than the SM's {L.regs_per_sm} registers"
    if why:
        return Occupancy(0, "registers" if "register" in why else "shared memory" if "shared" in why else "threads",
                         by, 0, L.warps_per_sm, why)
    # the tightest limit; on a tie, name the resource a student can change (registers, shared memory first)
    limiter = min(by, key=lambda k: (by[k], list(by).index(k)))
    blocks = by[limiter]
    return Occupancy(blocks, limiter, by, blocks * warps_per_block, L.warps_per_sm)
