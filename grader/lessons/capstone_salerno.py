"""Notebook 09, the Salerno paper's GEMM times beside this machine's: Fig. 6 redone
(plot_salerno), its tables (salerno_table, paper_table) and the speed-ups in words."""
from __future__ import annotations

import textwrap

from grader.lessons import seeds
from grader.lessons.capstone_run import recorded_label

COLORS = {"cpu_numpy": "#6e7781", "cuda_cores": "#0969da", "tensor_cores": "#2da44e",
          "cublas_fp16": "#8250df", "cublas_fp32": "#bf8700"}
# The paper's numbers, drawn in the colour of the same kind of hardware here, hollow and dotted.
PAPER_LABELS = {"cpu_numpy": "paper: CPU, OpenMP loop (Ryzen 5 3600; 16384 from its text)",
                "cuda_cores": "paper: CUDA cores, tiled kernel (RTX 2060)",
                "tensor_cores": "paper: tensor cores, WMMA (RTX 2060)"}


def _labels(res):
    s = res["salerno"]
    return {"cpu_numpy": "CPU (NumPy fp32)", "cuda_cores": f"CUDA cores ({s['cuda_cores_kernel']})",
            "tensor_cores": f"tensor cores ({s.get('tensor_cores_kernel', 'wmma_gemm_swizzle')})",
            "cublas_fp16": "cuBLAS fp16 (tensor cores)", "cublas_fp32": "cuBLAS fp32"}


def _tflops(n: int, ms: float) -> float:
    return 2 * n**3 / (ms * 1e-3) / 1e12


def paper_points() -> dict:
    """The Salerno paper's GEMM times as {kind: {n: ms}}, kinds named as this module's keys:
    Table I for the CPU (16384 from the text, see seeds.PAPER_CPU_16384_TEXT_MS), the text on
    its Fig. 6 for CUDA cores and tensor cores (16384 only)."""
    return {"cpu_numpy": {n: seeds.paper_cpu_ms(n) for n in sorted(seeds.PAPER_CPU_MS)},
            "cuda_cores": dict(seeds.PAPER_GPU_MS["cuda_cores"]),
            "tensor_cores": dict(seeds.PAPER_GPU_MS["tensor_cores"])}


def plot_salerno(res, y: str = "time", paper: bool = True):
    """Fig. 6 redone: GEMM time (or TFLOP/s) against n, one solid line per implementation on
    this machine; with `paper`, the Salerno paper's own times on dotted lines with hollow markers,
    in the colour of the same kind of hardware."""
    import matplotlib.pyplot as plt

    s = res["salerno"]
    labels = _labels(res)
    fig, ax = plt.subplots(figsize=(11.5, 5))
    for key, label in labels.items():
        ns = sorted(int(n) for n, row in s["ms"].items() if key in row)
        if not ns:
            continue
        ms = [s["ms"][str(n)][key] for n in ns]
        vals = ms if y == "time" else [_tflops(n, t) for n, t in zip(ns, ms)]
        ax.plot(ns, vals, "o-", color=COLORS[key], label=label)
    if paper:
        for key, pts in paper_points().items():
            ns = sorted(pts)
            vals = [pts[n] if y == "time" else _tflops(n, pts[n]) for n in ns]
            ax.plot(ns, vals, "s:", color=COLORS[key], mfc="white", ms=8, label=PAPER_LABELS[key])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (C = A B, all n x n)", fontsize=11)
    ax.set_ylabel("time per GEMM (ms)" if y == "time" else "TFLOP/s (2 n^3 / time)", fontsize=11)
    ax.tick_params(labelsize=10)
    ax.set_title(textwrap.fill(f"GEMM against n: {recorded_label(res)} (solid)"
                               + (f"; {seeds.PAPER['short']}, its Table I and Fig. 6 text (hollow)" if paper else ""),
                               90), fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)  # off the lines
    fig.tight_layout()
    return fig


def salerno_table(res):
    """This machine's GEMM times, every size and implementation of the run."""
    from grader.checking.display import table

    s = res["salerno"]
    labels = _labels(res)
    rows = []
    for n in s["sizes"]:
        row = s["ms"].get(str(n), {})
        d = {"n": n}
        for key, label in labels.items():
            d[label + " ms"] = f"{row[key]:.2f}" if key in row else "not run"
        d["tensor / CUDA cores speedup"] = (f"{row['cuda_cores'] / row['tensor_cores']:.1f}x"
                                            if "cuda_cores" in row and "tensor_cores" in row else "")
        rows.append(d)
    return table(rows)


def paper_rows(res) -> list[dict]:
    """Each time the Salerno paper gives (Table I's CPU row per n, its Fig. 6 text's CUDA-core
    and tensor-core times at 16384) beside this machine's time for the same n and kind:
    dict(kind, n, paper_ms, here, here_ms (None: not run), faster (paper_ms / here_ms or None)).
    GPU kinds get one row per kernel timed here: the course's (always) and the paper's own kind
    of kernel (when the run timed it)."""
    s, pts = res["salerno"], paper_points()
    ms = s["ms"]
    tc = s.get("tensor_cores_kernel", "wmma_gemm_swizzle")
    rows = [dict(kind="CPU", n=n, paper_ms=pts["cpu_numpy"][n], here="NumPy fp32 (a BLAS library)",
                 here_ms=ms.get(str(n), {}).get("cpu_numpy")) for n in pts["cpu_numpy"]]
    kinds = (("CUDA cores", "cuda_cores", [("cuda_cores", f"{s['cuda_cores_kernel']} (the course's fastest SGEMM)"),
                                            ("paper_cuda_cores", "sgemm_tiled (the paper's kind, its listing 3)")]),
             ("tensor cores", "tensor_cores", [("tensor_cores", f"{tc} (notebook 06)"),
                                                ("paper_tensor_cores",
                                                 "wmma_gemm_naive (the paper's kind, its listings 4-5)")]))
    for kind, key, mine in kinds:
        for n, paper_ms in sorted(pts[key].items()):
            for j, (k, what) in enumerate(mine):
                here = ms.get(str(n), {}).get(k)
                if here is None and j > 0:
                    continue  # the paper's kind of kernel: shown when the run timed it
                rows.append(dict(kind=kind, n=n, paper_ms=paper_ms, here=what, here_ms=here))
    for r in rows:
        r["faster"] = r["paper_ms"] / r["here_ms"] if r["here_ms"] else None
    return rows


def _ms(v: float) -> str:
    return f"{v:,.0f}" if v >= 1000 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def paper_table(res):
    """paper_rows as a table; the column of this machine says whether it was measured now or
    recorded (and where)."""
    from grader.checking.display import table

    here_col = ("this machine, recorded" if res["meta"].get("loaded_from") else "this machine, measured now")
    out = []
    for r in paper_rows(res):
        paper = _ms(r["paper_ms"])
        if r["kind"] == "CPU" and r["n"] == 16384:
            paper += f" (text; Table I prints {seeds.PAPER_CPU_MS[16384]:,.2f})"
        out.append({"kind": r["kind"], "n": r["n"], "paper ms": paper, f"{here_col}: what ran": r["here"],
                    f"{here_col} ms": _ms(r["here_ms"]) if r["here_ms"] else "not run (over the CPU time budget)"
                    if r["kind"] == "CPU" else "not run",
                    "x faster here": f"{r['faster']:,.0f}x" if r["faster"] else ""})
    return table(out)


def paper_speedups(res) -> list[str]:
    """Speedups inside each machine: the paper's at 16384, and this machine's at the sizes it ran."""
    pts, s = paper_points(), res["salerno"]
    cpu, cc, tc = (pts[k][16384] for k in ("cpu_numpy", "cuda_cores", "tensor_cores"))
    out = [f"The Salerno paper, n = 16384: CUDA cores {cpu / cc:.0f}x faster than its CPU, "
           f"tensor cores {cpu / tc:.0f}x; tensor cores over CUDA cores {cc / tc:.1f}x."]
    ms = s["ms"]
    both = [int(n) for n, r in ms.items() if "cuda_cores" in r and "tensor_cores" in r]
    if both:
        n = max(both)
        r = ms[str(n)]
        line = (f"This machine, {recorded_label(res)}: at n = {n}, tensor cores over CUDA cores "
                f"{r['cuda_cores'] / r['tensor_cores']:.1f}x ({s.get('tensor_cores_kernel', 'wmma_gemm_swizzle')} "
                f"over {s['cuda_cores_kernel']})")
        if "paper_cuda_cores" in r and "paper_tensor_cores" in r:
            line += (f", {r['paper_cuda_cores'] / r['paper_tensor_cores']:.1f}x with the paper's kinds of kernel "
                     "(wmma_gemm_naive over sgemm_tiled)")
        cpu_n = max((int(k) for k, v in ms.items() if "cpu_numpy" in v and "tensor_cores" in v), default=None)
        if cpu_n:
            v = ms[str(cpu_n)]
            line += (f"; at n = {cpu_n}, the largest its CPU ran: tensor cores {v['cpu_numpy'] / v['tensor_cores']:.0f}x "
                     f"faster than NumPy, CUDA cores {v['cpu_numpy'] / v['cuda_cores']:.0f}x")
        out.append(line + ".")
    return out


def paper_setup(res) -> str:
    """One line: what differs between the paper's setup and this run's."""
    p, m = seeds.PAPER_SETUP, res["meta"]
    return (f"Setups differ: the paper timed an OpenMP loop on an {p['cpu']} and simple kernels (tiled SGEMM, "
            f"one warp per WMMA tile) on a {p['gpu'].split(' (')[0]}, {p['statistic']}; here NumPy's BLAS on "
            f"{m['cpu_threads']} threads of {m['cpu']} and the course's tuned kernels on {m['gpu']}, medians.")
