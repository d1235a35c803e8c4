"""Plumbing for notebook 01 (memory layout): the memory-map picture and its widget, and the
transpose bandwidth sweep. The teaching code (index functions, padding) lives in the notebook."""
from __future__ import annotations

import numpy as np


def element_offset(i: int, j: int, order: str, ld: int) -> int:
    """Offset (in elements) of (i, j): row-major i*ld + j, column-major j*ld + i."""
    return i * ld + j if order == "row" else j * ld + i


def memory_map(rows: int = 4, cols: int = 6, i: int = 1, j: int = 2, order: str = "row",
               ld: int | None = None, ax=None):
    """Draw a rows x cols matrix (left) and the memory it occupies (right, one cell per
    element, ld per row/column), with element (i, j) and its neighbours along the layout
    highlighted. Cells of memory that belong to the padding (ld > cols or rows) are grey."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    inner = cols if order == "row" else rows
    ld = inner if ld is None else ld
    if ld < inner:
        raise ValueError(f"ld must be at least {inner} (the length of a {'row' if order == 'row' else 'column'})")
    outer = rows if order == "row" else cols
    i, j = min(i, rows - 1), min(j, cols - 1)
    total = outer * ld
    target = element_offset(i, j, order, ld)
    if ax is None:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 3.8), gridspec_kw=dict(width_ratios=[1, 2.4]))
    else:
        fig, (a1, a2) = ax[0].figure, ax
    cmap = plt.get_cmap("tab10")
    for r in range(rows):
        for c in range(cols):
            line = r if order == "row" else c  # which row (column) of the layout this is in
            face = "#fdd835" if (r, c) == (i, j) else (*cmap(line % 10)[:3], 0.25)
            a1.add_patch(Rectangle((c, rows - 1 - r), 1, 1, facecolor=face, edgecolor="k", lw=0.5))
            a1.text(c + 0.5, rows - 0.5 - r, f"{element_offset(r, c, order, ld)}", ha="center",
                    va="center", fontsize=12)
    a1.set_xlim(0, cols), a1.set_ylim(0, rows), a1.set_aspect("equal"), a1.axis("off")
    a1.set_title(f"{rows}x{cols} matrix: offset of each element", fontsize=11)
    per_line = min(total, 20)  # wrap the strip so its cells are big enough to read
    n_lines = -(-total // per_line)
    for off in range(total):
        line, pos = divmod(off, ld)
        x, y = off % per_line, n_lines - 1 - off // per_line
        padding = pos >= inner
        if off == target:
            face = "#fdd835"
        elif padding:
            face = "#dddddd"
        else:
            face = (*cmap(line % 10)[:3], 0.25)
        a2.add_patch(Rectangle((x, y), 1, 1, facecolor=face, edgecolor="k", lw=0.4,
                               hatch="//" if padding else None))
        a2.text(x + 0.5, y + 0.5, str(off), ha="center", va="center", fontsize=11 if off < 100 else 9,
                bbox=dict(facecolor="#dddddd", edgecolor="none", pad=0.5) if padding else None)
    a2.set_xlim(0, per_line), a2.set_ylim(0, n_lines), a2.set_aspect("equal"), a2.axis("off")
    what = "row" if order == "row" else "column"
    a2.set_title(f"memory ({order}-major, ld={ld}): ({i},{j}) at offset {target} = "
                 + (f"{i}*{ld}+{j}" if order == "row" else f"{j}*{ld}+{i}")
                 + (f"\ngrey = padding after each {what}" if ld > inner else ""), fontsize=11)
    plt.tight_layout()
    return fig


def layout_widget():
    """The memory map with sliders: shape, layout, leading dimension and the element."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    rows, cols = w.IntSlider(4, 1, 8, description="rows"), w.IntSlider(6, 1, 8, description="cols")
    i, j = w.IntSlider(1, 0, 7, description="i"), w.IntSlider(2, 0, 7, description="j")
    order = w.ToggleButtons(options=["row", "col"], description="layout")
    pad = w.IntSlider(0, 0, 4, description="ld - inner")

    def show(rows, cols, i, j, order, pad):
        inner = cols if order == "row" else rows
        memory_map(rows, cols, i, j, order, inner + pad)
        plt.show()

    return w.interactive(show, rows=rows, cols=cols, i=i, j=j, order=order, pad=pad)


def transpose_bandwidth(sources: dict[str, str], sizes=(2048, 4096, 8192), max_seconds=1.0) -> dict:
    """GPU only. GB/s (2 * rows * cols * 4 bytes / median time) of each transpose source
    (name -> CUDA source of the course's transpose contract) and of a device-to-device copy,
    at n x n for each n in sizes. A source that fails to compile or is wrong is reported as
    the error text instead of timed."""
    import cupy

    from grader.problems import conv
    from grader.runtime import backend
    from grader.runtime.timing import benchmark

    out = {"sizes": list(sizes), "copy": [], "errors": {}}
    mods = {}
    for name, src in sources.items():
        try:
            mod = backend.load(src, "gpu")
            cmp = conv.check_transpose(mod, 257, 513, seed=7)
            if not cmp.ok:
                raise ValueError(f"wrong result: {cmp}")
            mods[name] = mod
            out[name] = []
        except Exception as e:  # a student's kernel: report, never raise
            out["errors"][name] = f"{type(e).__name__}: {e}"
    for n in sizes:
        a = cupy.random.random((n, n), dtype=cupy.float32)
        b = cupy.empty_like(a)
        nbytes = 2 * a.nbytes
        t = benchmark(lambda: b.__setitem__(Ellipsis, a), working_set_bytes=nbytes, max_seconds=max_seconds)
        out["copy"].append(nbytes / (t.median_ms * 1e-3) / 1e9)
        for name, mod in mods.items():
            grid, block = conv.transpose_launch(n, n)
            f = mod.bind("transpose", grid, block, [a, b, n, n])
            t = benchmark(f, working_set_bytes=nbytes, max_seconds=max_seconds)
            out[name].append(nbytes / (t.median_ms * 1e-3) / 1e9)
        del a, b
    return out


def plot_bandwidth(res: dict, device: str = ""):
    import matplotlib.pyplot as plt

    names = [k for k in res if k not in ("sizes", "copy", "errors")]
    sizes = res["sizes"]
    x = np.arange(len(sizes))
    width = 0.8 / (len(names) + 1)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    colors = ["#888888", "#cf222e", "#2da44e", "#0969da", "#8250df"]
    for k, name in enumerate(["copy"] + names):
        vals = res[name]
        bars = ax.bar(x + (k - len(names) / 2) * width, vals, width, label=name, color=colors[k % 5])
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v, f"{v:.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, [f"{n}x{n}" for n in sizes])
    ax.set_ylabel("GB/s (read + write)")
    ax.set_title(f"Transpose vs copy{' on ' + device if device else ''} (measured now)")
    ax.legend(fontsize=8)
    plt.tight_layout()
    plt.show()
    return fig
