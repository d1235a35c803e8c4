"""Plumbing for notebook 03 (GEMM on CUDA cores): the ladder of kernels, the tile picture and
its widget, and the GFLOPS sweep and plot. The kernels themselves live in kernels/ and are
shown in the notebook; the CPU baseline is teaching code in the notebook."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

from grader.lessons import measuring
from grader.problems import gemm, gemm_launch
from grader.runtime import kernels


@dataclass(frozen=True)
class Rung:
    label: str
    file: str  # kernels/FILE.cu
    spec: gemm_launch.GemmSpec
    idea: str


LADDER = (
    Rung("naive", "sgemm_naive", gemm_launch.sgemm_naive(), "one thread per element of C, operands from global memory"),
    Rung("tiled 16", "sgemm_tiled", gemm_launch.sgemm_tiled(16), "16x16 tiles of A and B staged in shared memory"),
    Rung("tiled 32", "sgemm_tiled", gemm_launch.sgemm_tiled(32), "32x32 tiles (the Salerno paper's listing 3)"),
    Rung("regblock", "sgemm_regblock", gemm_launch.sgemm_regblock(), "128x128 block tile, 8x8 outputs per thread in registers, float4"),
    Rung("regblock+db", "sgemm_regblock_db", gemm_launch.sgemm_regblock(), "plus double-buffered shared memory"),
)


def load(rung: Rung, backend: str = "auto", source: str | None = None):
    from grader.runtime import backend as be

    return be.load(source or kernels.source(rung.file), backend, rung.spec.options)


def check_ladder(sizes=((130, 257, 33), (64, 64, 64)), backend: str = "auto", seed: int = 1) -> list[dict]:
    """Run every rung once per size on fresh inputs and compare to the float64 reference."""
    rows = []
    for rung in LADDER:
        mod = load(rung, backend)
        for (M, N, K) in sizes:
            r = gemm.run_once(mod, rung.spec, M, N, K, seed=seed)
            rows.append(dict(kernel=rung.label, size=f"{M}x{N}x{K}", backend=mod.backend,
                             result=str(r.comparison), ok=r.comparison.ok))
    return rows


def measure_ladder(n: int = 4096, extra: dict | None = None, max_seconds: float = 1.0) -> list[dict]:
    """GPU only. GFLOPS = 2 n^3 / median time of every rung (checked first at 1000x777x333)
    and of cuBLAS fp32 (cupy.matmul) at n^3, same inputs, same process. `extra` maps a label
    to (source, GemmSpec): e.g. the student's kernel; one that fails is reported, not timed.
    Under nbgrader autograde, notebook 09's recorded run where there is one (lessons.measuring)."""
    recorded, source = recorded_ladder()
    if recorded and measuring.skip("the GEMM ladder's speed", f"the ladder {source} is shown"):
        return recorded
    import cupy

    from grader.runtime.timing import benchmark

    A, B = gemm.random_inputs(n, n, n, "float32", seed=0, xp=cupy)
    C = cupy.zeros((n, n), dtype=cupy.float32)
    flops = 2.0 * n ** 3
    rows = []
    t = benchmark(lambda: cupy.matmul(A, B, out=C), working_set_bytes=3 * A.nbytes, max_seconds=max_seconds)
    lib = t.gflops(flops)
    todo = [(r.label, kernels.source(r.file), r.spec) for r in LADDER]
    todo += [(label, src, spec) for label, (src, spec) in (extra or {}).items()]
    for label, src, spec in todo:
        row = dict(kernel=label, n=n)
        try:
            from grader.runtime import backend as be

            mod = be.load(src, "gpu", spec.options)
            r = gemm.run_once(mod, spec, 1000, 777, 333, seed=3)
            if not r.comparison.ok:
                raise ValueError(f"wrong result at 1000x777x333: {r.comparison}")
            f = mod.bind(spec.kernel, spec.grid(n, n, n), spec.block, [A, B, C, n, n, n])
            tk = benchmark(f, working_set_bytes=3 * A.nbytes, max_seconds=max_seconds)
            row.update(gflops=tk.gflops(flops), ms=tk.median_ms, ratio=tk.gflops(flops) / lib)
        except Exception as e:  # the student's kernel: report, never raise
            row.update(error=f"{type(e).__name__}: {e}")
        rows.append(row)
    rows.append(dict(kernel="cuBLAS fp32", n=n, gflops=lib, ms=t.median_ms, ratio=1.0))
    return rows


def recorded_ladder() -> tuple[list[dict], str]:
    """(rows like measure_ladder's, provenance) from notebook 09's saved GPU run
    (kernels/capstone-results-*.json), for machines without a GPU; ([], "") if none."""
    from grader.lessons.capstone import load

    res = load()
    if not res:
        return [], ""
    label = {r.file: r.label for r in LADDER if r.label != "tiled 16"}  # 09 times the 32x32 tile
    # cuBLAS at the kernels' own size (4096^3) when the run has it; its roofline peak is at 8192^3
    ms = res["salerno"]["ms"].get("4096", {}).get("cublas_fp32")
    lib = 2 * 4096**3 / ms / 1e6 if ms else res["roofline"]["peaks_tflops"]["cuBLAS fp32 (CUDA cores)"] * 1e3
    rows = [dict(kernel=label[k["kernel"]], n=4096, gflops=k["flops"] / k["ms"] / 1e6, ms=k["ms"])
            for k in res["roofline"]["kernels"] if k["kernel"] in label and k["size"] == "4096^3"]
    for r in rows:
        r["ratio"] = r["gflops"] / lib
    rows.append(dict(kernel="cuBLAS fp32", n=4096, gflops=lib, ratio=1.0))
    m = res["meta"]
    return rows, f"recorded on {m['gpu']}, {m['date']} (kernels/{m['loaded_from']})"


def plot_ladder(rows: list[dict], title: str = "", cpu: dict | None = None):
    """Horizontal bars of GFLOPS, each labelled with its GFLOPS and their % of the cuBLAS fp32
    bar drawn with them (so every % is bar over bar); `cpu` adds CPU baselines (label -> GFLOPS)
    in grey. Returns the figure."""
    import matplotlib.pyplot as plt

    good = [r for r in rows if "gflops" in r]
    labels = [r["kernel"] for r in good]
    vals = [r["gflops"] for r in good]
    colors = ["#0969da" if r["kernel"] != "cuBLAS fp32" else "#2da44e" for r in good]
    if cpu:
        labels = list(cpu) + labels
        vals = list(cpu.values()) + vals
        colors = ["#888888"] * len(cpu) + colors
    fig, ax = plt.subplots(figsize=(9.5, 0.55 * len(labels) + 1.6))
    y = np.arange(len(labels))[::-1]
    ax.barh(y, vals, color=colors)
    ax.set_xscale("log")
    lib = next((r["gflops"] for r in good if r["kernel"] == "cuBLAS fp32"), None)
    for yy, v in zip(y, vals):
        txt = f"{v:,.0f}" if v >= 10 else f"{v:.3g}"
        if lib:
            txt += f"  ({100 * v / lib:.1f}% of cuBLAS)"
        ax.text(v, yy, " " + txt, va="center", fontsize=11)
    ax.set_yticks(y, labels, fontsize=11)
    ax.set_xlabel("GFLOPS = 2MNK / time (log scale)", fontsize=11)
    ax.set_xlim(right=max(vals) * 300)
    ax.set_title(textwrap.fill(title, 80), fontsize=11)
    plt.tight_layout()
    plt.show()
    return fig


def k_steps(tile: int, K: int) -> int:
    """How many K-steps a block takes: ceil(K / tile)."""
    return -(-K // tile)


def tile_picture(tile: int = 4, M: int = 12, N: int = 12, K: int = 12, bi: int = 1, bj: int = 2,
                 step: int = 1):
    """A, B and C as grids: the block (bi, bj) owns the marked tile of C; at K-step `step`
    (1-based: 1 .. ceil(K / tile)) it copies the marked tile of A (rows of its tile, columns
    (step-1)*tile..) and of B into shared memory. Already-used tiles are faint. A step past the
    last is drawn as the last, and the title says so."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    steps = k_steps(tile, K)
    asked, step = step, min(max(step, 1), steps)
    fig, axs = plt.subplots(1, 3, figsize=(12, 4.6), gridspec_kw=dict(width_ratios=[K, N, N]),
                            layout="constrained")
    fig.get_layout_engine().set(wspace=0.08)

    def grid(ax, rows, cols, name):
        for r in range(rows):
            for c in range(cols):
                ax.add_patch(Rectangle((c, rows - 1 - r), 1, 1, fill=False, edgecolor="#cccccc", lw=0.5))
        ax.set_xlim(0, cols), ax.set_ylim(0, rows), ax.set_aspect("equal"), ax.axis("off")
        ax.set_title(name, fontsize=13)

    def box(ax, rows, r0, c0, h, w, color, alpha):
        ax.add_patch(Rectangle((c0, rows - r0 - h), w, h, facecolor=color, alpha=alpha, edgecolor=color, lw=2))

    grid(axs[0], M, K, f"A ({M}x{K})")
    grid(axs[1], K, N, f"B ({K}x{N})")
    grid(axs[2], M, N, f"C ({M}x{N})")
    r0, c0 = bi * tile, bj * tile
    for s in range(step):
        a = 0.55 if s == step - 1 else 0.15
        box(axs[0], M, r0, s * tile, tile, tile, "#cf222e", a)
        box(axs[1], K, s * tile, c0, tile, tile, "#0969da", a)
    box(axs[2], M, r0, c0, tile, tile, "#8250df", 0.5)
    note = f" (asked for step {asked}: there are only {steps})" if asked != step else ""
    # named as CUDA names it, (blockIdx.x, blockIdx.y): x runs along the columns of C in notebook 03
    fig.suptitle(f"block (blockIdx.x, blockIdx.y) = ({bj}, {bi}): tile row {bi}, column {bj} of C; "
                 f"K-step {step} of {steps}{note}: loads {tile}x{tile} of A and of B "
                 f"into shared memory,\nthen each of its {tile * tile} threads does {tile} FMAs from them",
                 fontsize=12)
    return fig


def tile_controls(K: int = 16):
    """The widget's dials: tile size, and a K-step slider over 1 .. ceil(K / tile) that follows
    the tile size (its value is clamped into the new range by the slider itself)."""
    import ipywidgets as w

    tile = w.Dropdown(options=[2, 4, 8], value=4, description="tile")
    step = w.IntSlider(1, 1, k_steps(tile.value, K), description="K-step")

    def follow(change):  # registered before interactive's own observer: the slider is right first
        step.max = k_steps(change["new"], K)

    tile.observe(follow, names="value")
    return tile, step


def tile_widget(M: int = 16, N: int = 16, K: int = 16):
    """The tile picture with a tile-size dropdown and a K-step slider (see tile_controls)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    tile, step = tile_controls(K)

    def show(tile, step):
        tile_picture(tile=tile, M=M, N=N, K=K, bi=1, bj=1 if tile > 4 else 2, step=step)
        plt.show()

    return w.interactive(show, tile=tile, step=step)


def traffic(n: int) -> list[dict]:
    """Napkin math at n^3: FMAs per value loaded from global (or L2) memory and from
    shared memory, per rung (exact counts from the kernels' loop structure)."""
    rows = [dict(kernel="naive", global_per_fma=2.0, shared_per_fma=0.0)]
    for t in (16, 32):
        rows.append(dict(kernel=f"tiled {t}", global_per_fma=2.0 / t, shared_per_fma=2.0))
    rows.append(dict(kernel="regblock (128x128, 8x8)", global_per_fma=2.0 / 128, shared_per_fma=16 / 64))
    return rows
