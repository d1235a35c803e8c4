"""Notebook 06's bank conflicts: which of the 32 shared-memory banks the rows of one ldmatrix 8x8
fragment read touch for each row padding (the bank model), the kernel that reads fragments at
each padding (kernels/smem_bank_conflicts.cu, ldsm_pad) checked on any backend and timed on a
GPU, and the plots. Without a GPU the times are those recorded in
kernels/RESULTS-notebooks-06-07.md, labelled as recorded.
"""
from __future__ import annotations

import re
import secrets
import textwrap

import numpy as np

from grader.lessons.records import label_of, record, section
from grader.problems import numerics
from grader.problems.demos import bank_kernel_reference
from grader.runtime import backend, kernels
from grader.runtime.device import device_info, has_gpu

NOTEBOOK_RECORD = "RESULTS-notebooks-06-07.md"  # notebook 06 run on a GPU: the padding table
PADS = (0, 8, 16, 24, 32, 40, 48, 56, 64)


def ldmatrix_banks(ld_halves: int, rows: int = 8) -> np.ndarray:
    """banks[r, j]: bank of the j-th 4-byte word of row r of one ldmatrix 8x8 read
    (8 rows of 16 bytes, rows ld_halves halves apart)."""
    start = np.arange(rows)[:, None] * ld_halves * 2  # byte address of each row
    words = (start + 4 * np.arange(4)[None, :]) // 4
    return words % 32


def conflict_ways(ld_halves: int) -> int:
    """Passes one 8x8 ldmatrix read needs: the most rows that share one bank."""
    banks = ldmatrix_banks(ld_halves)
    return int(np.bincount(banks.ravel(), minlength=32).max())


def plot_bank_maps(panels, figsize):
    """One bank map per (title, banks) panel: which of the 32 banks each row of one 8x8 ldmatrix
    read touches (banks[r] lists row r's banks), a colour per row (notebooks 06 and 10)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=figsize)
    for ax, (title, banks_per_row) in zip(np.atleast_1d(axes), panels):
        grid = np.full((8, 32), np.nan)
        for r, banks in enumerate(banks_per_row):
            grid[r, banks] = r
        ax.imshow(grid, cmap="tab10", aspect="auto", vmin=0, vmax=9)
        ax.set_xticks(range(0, 32, 4))
        ax.set_yticks(range(8))
        ax.set_xlabel("bank")
        ax.set_ylabel("row of the 8x8 read")
        ax.set_title(title, fontsize=9)
    plt.tight_layout()
    plt.show()
    return fig


def plot_banks(pads=(0, 8)):
    """Which banks the 8 rows of one 8x8 fragment read touch, for each padding."""
    plot_bank_maps([(f"row = {64 + pad} halves (pad {pad}): {conflict_ways(64 + pad)}-way", ldmatrix_banks(64 + pad))
                    for pad in pads], figsize=(4.5 * len(pads), 2.6))


def check_bank_kernel(pad: int = 8, backend_name: str = "auto", warps: int = 2, iters: int = 7):
    """ldsm_pad on the backend: out must equal the sum of its sub-tile products."""
    module = backend.load(kernels.source("smem_bank_conflicts"), backend_name, (f"-DPAD={pad}",))
    xp = module.xp
    rng = np.random.default_rng(secrets.randbits(32))
    M = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    out = xp.full(warps * 256, np.nan, dtype=np.float32)
    module.launch("ldsm_pad", (1, 1, 1), (32 * warps, 1, 1), [xp.asarray(M.ravel()), out, iters])
    host = (out.get() if hasattr(out, "get") else out).reshape(warps, 16, 16)
    return numerics.compare(host, *bank_kernel_reference(M, warps, iters))


def measure_bank_conflicts(pads=PADS, iters: int = 4096, threads: int = 256) -> list[dict]:
    """GPU: shared-memory fragment-load rate of ldsm_pad for each padding."""
    import cupy

    from grader.runtime.gpu import GpuModule
    from grader.runtime.timing import benchmark

    blocks = 8 * device_info().sm_count
    M = cupy.asarray(np.random.default_rng(0).uniform(-1, 1, 4096).astype(np.float16))
    out = cupy.empty(blocks * threads // 32 * 256, dtype=cupy.float32)
    rows = []
    for pad in pads:
        m = GpuModule(kernels.source("smem_bank_conflicts"), (f"-DPAD={pad}",))
        t = benchmark(m.bind("ldsm_pad", (blocks, 1, 1), (threads, 1, 1), [M, out, iters]), max_seconds=0.5)
        nbytes = blocks * threads / 32 * iters * 1024.0
        rows.append(dict(pad=pad, ld=64 + pad, ways=conflict_ways(64 + pad), ms=t.median_ms,
                         tbps=nbytes / (t.median_ms * 1e-3) / 1e12))
    return rows


def bank_conflicts(pads=PADS) -> tuple[list[dict], str]:
    """(rows, source): ldsm_pad measured now on a GPU, else the run recorded in
    kernels/RESULTS-notebooks-06-07.md."""
    if has_gpu():
        return measure_bank_conflicts(pads), f"measured now on {device_info().name}"
    return recorded_banks(), label_of(record(NOTEBOOK_RECORD), NOTEBOOK_RECORD) + "; no GPU here"


def plot_bank_conflicts(rows: list[dict] | None, source: str = "measured now"):
    """Predicted passes per 8x8 read (all pads) and, with rows (measured now or recorded),
    the time of ldsm_pad relative to the best padding."""
    import matplotlib.pyplot as plt

    pads = [r["pad"] for r in rows] if rows else list(PADS)
    ways = [conflict_ways(64 + p) for p in pads]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = np.arange(len(pads))
    w = 0.38 if rows else 0.6
    ax.bar(x - (w / 2 if rows else 0), ways, w, color="#8c959f", label="predicted passes (bank model)")
    if rows:
        best = min(r["ms"] for r in rows)
        ax.bar(x + w / 2, [r["ms"] / best for r in rows], w, color="#0969da",
               label="measured time / best (ldsm_pad)")
    ax.set_xticks(x, [f"{p}\n({64 + p})" for p in pads])
    ax.set_xlabel("SMEM_PAD in halves (row length)")
    ax.set_ylabel("x slower than conflict-free")
    title = "Bank conflicts of 16x16 fp16 fragment loads from shared memory"
    ax.set_title(textwrap.fill(title + (f" — time {source}" if rows else " (model only)"), 80), fontsize=10)
    ax.legend(fontsize=9)
    plt.tight_layout()
    plt.show()




def recorded_banks() -> list[dict]:
    """The padding table of kernels/RESULTS-notebooks-06-07.md (ldsm_pad measured on a GPU):
    dict(pad, ld, ways, ms, tbps) per row, `ways` being the bank model's passes."""
    part = section(record(NOTEBOOK_RECORD), "Bank conflicts (")
    pat = r"^\| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) ms \| ([\d.]+) TB/s \|"
    return [dict(pad=int(a), ld=int(b), ways=int(c), ms=float(d), tbps=float(e))
            for a, b, c, d, e in re.findall(pat, part, flags=re.M)]
