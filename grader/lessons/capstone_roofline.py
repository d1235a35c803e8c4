"""Notebook 09, ceilings and where the course's kernels stand: the roofline (plot_roofline,
roof_at), cuBLAS's peaks beside the WMMA kernels (cublas_context, wmma_gap), and the run's key
numbers in sentences (headline)."""
from __future__ import annotations

import re

import numpy as np

from grader.lessons.capstone_run import recorded_label

def plot_roofline(res):
    """Roofline: min(peak, intensity x bandwidth) for each measured peak; every course kernel
    at (compulsory-traffic intensity, achieved TFLOP/s). Pure data movers (0 FLOPs) go in a
    side panel as a fraction of the copy bandwidth. Sized for a projector: text >= 10 pt, the
    legend below the axes, ceiling labels right of every kernel."""
    import matplotlib.pyplot as plt

    roof = res["roofline"]
    bw = roof["copy_gbs"] * 1e9
    flop_pts = [p for p in roof["kernels"] if p["flops"] > 0]
    ncol = 4
    rows = -(-len(flop_pts) // ncol)  # legend rows
    legend_in = 0.45 + 0.24 * rows  # inches of figure height under the panels for the legend
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(14, 5.6 + legend_in),
                                  gridspec_kw=dict(width_ratios=[3, 1]))
    ai = np.logspace(-1, 5, 200)
    styles = ["-", "--", "-.", ":"]
    peaks = sorted(roof["peaks_tflops"].items(), key=lambda kv: -kv[1])
    for k, ((label, peak), ls) in enumerate(zip(peaks, styles)):
        ax.loglog(ai, np.minimum(peak, ai * bw / 1e12), ls, color="#444", lw=1.2)
        # label at the right end, above its line unless the next higher ceiling is close
        below = k > 0 and peaks[k - 1][1] < 1.5 * peak
        ax.text(9e4, peak / 1.1 if below else peak * 1.1, f"{label}: {peak:.0f}", fontsize=10, ha="right",
                va="top" if below else "bottom")
    markers = {"CUDA cores": "o", "tensor cores": "s"}
    cmap = plt.get_cmap("tab20")
    for i, p in enumerate(flop_pts):
        x = p["flops"] / p["bytes"]
        yv = p["flops"] / (p["ms"] * 1e-3) / 1e12
        jitter = 1 + 0.06 * ((i % 5) - 2)
        ax.loglog(x * jitter, yv, markers.get(p["unit"], "^"), color=cmap(i % 20), ms=8,
                  label=f"{p['kernel']} ({p['size']}): {yv:.1f}")
    ax.set_xlim(0.07, 1.2e5)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of compulsory DRAM traffic)", fontsize=11)
    ax.set_ylabel("TFLOP/s", fontsize=11)
    ax.tick_params(labelsize=10)
    ax.set_title(f"Roofline of {res['meta']['gpu']} (measured ceilings); "
                 "circles: CUDA cores, squares: tensor cores", fontsize=11)
    ax.grid(True, which="both", alpha=0.2)
    handles, labels = ax.get_legend_handles_labels()
    mem = [p for p in roof["kernels"] if p["flops"] == 0]
    gbs = [p["bytes"] / (p["ms"] * 1e-3) / 1e9 for p in mem]
    ax2.barh(range(len(mem)), gbs, color="#bf8700")
    for i, v in enumerate(gbs):
        ax2.text(v, i, f" {v:.0f}", va="center", fontsize=10)
    ax2.axvline(roof["copy_gbs"], color="#444", ls="--")
    ax2.text(roof["copy_gbs"], -0.6, "copy ", fontsize=10, ha="right", va="center")
    ax2.set_yticks(range(len(mem)))
    ax2.set_yticklabels([p["kernel"] for p in mem], fontsize=10)
    ax2.set_xlim(0, max(gbs + [roof["copy_gbs"]]) * 1.15)
    ax2.set_ylim(len(mem) - 0.5, -0.9)
    ax2.tick_params(axis="x", labelsize=10)
    ax2.set_xlabel("GB/s (read + written)", fontsize=11)
    ax2.set_title("data movement (0 FLOPs)", fontsize=11)
    # the legend below both panels (it would cover the points inside the axes)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=10, frameon=False,
               title="kernel (size): TFLOP/s achieved", title_fontsize=10)
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    # the bandwidth roof's label, turned to the line's angle on screen (known once laid out)
    x0, x1 = 0.3, 3.0
    (px0, py0), (px1, py1) = ax.transData.transform([(x0, x0 * bw / 1e12), (x1, x1 * bw / 1e12)])
    ax.annotate(f"copy {roof['copy_gbs']:.0f} GB/s", (x0, x0 * bw / 1e12), xytext=(4, 8),
                textcoords="offset points", rotation=np.degrees(np.arctan2(py1 - py0, px1 - px0)),
                rotation_mode="anchor", fontsize=10)
    return fig


def roof_at(res, point: dict) -> dict:
    """Where a roofline point stands: intensity, achieved TFLOP/s, the bandwidth roof at that
    intensity and the compute ceiling of its precision (the cuBLAS peak of that precision)."""
    roof = res["roofline"]
    x = point["flops"] / point["bytes"]
    achieved = point["flops"] / (point["ms"] * 1e-3) / 1e12
    bw_roof = x * roof["copy_gbs"] * 1e9 / 1e12
    prec = "fp" + str(8 * np.dtype(point["precision"]).itemsize)
    compute = cublas_peaks(res).get(prec, max(roof["peaks_tflops"].values()))
    return dict(kernel=point["kernel"], size=point["size"], intensity=x, tflops=achieved, bw_roof=bw_roof,
                compute_roof=compute, compute_label=f"cuBLAS {prec}", roof=min(bw_roof, compute))


def cublas_peaks(res) -> dict:
    """cuBLAS fp16 / fp32 / fp64 TFLOP/s of a run (its roofline ceilings, measured at 8192^3)."""
    out = {}
    for key, v in res["roofline"]["peaks_tflops"].items():
        m = re.match(r"cuBLAS (fp\d+)", key)
        if m:
            out[m.group(1)] = v
    return out


def cublas_context(res) -> str:
    """This run's cuBLAS fp16 at 4096^3 and wmma_gemm_swizzle's share of it, then (for loaded
    results) the spread of cuBLAS fp16 across every recorded run, so the ratio is read as one run's."""
    row = res["salerno"]["ms"].get("4096", {})
    if "cublas_fp16" not in row:
        return ""
    lib = 2 * 4096**3 / (row["cublas_fp16"] * 1e-3) / 1e12
    out = f"In this run, {recorded_label(res)}: cuBLAS fp16 at 4096³ ran at {lib:.0f} TFLOP/s"
    if "tensor_cores" in row:
        mine = 2 * 4096**3 / (row["tensor_cores"] * 1e-3) / 1e12
        kernel = res["salerno"].get("tensor_cores_kernel", "wmma_gemm_swizzle")
        out += f"; {kernel} {mine:.0f} TFLOP/s = {100 * mine / lib:.1f}% of it"
    out += "."
    if res["meta"].get("loaded_from"):
        from grader.lessons.fast_gemm import cublas_spread

        out += " " + cublas_spread()
    return out


def wmma_gap(res) -> str:
    """Where the gap from the WMMA GEMM to cuBLAS fp16 lies, in this run's numbers: the share of
    cuBLAS that WMMA reaches with its operands already in registers (the instructions' own
    limit) and the share the GEMM kernel reaches; the difference is the kernel's."""
    peaks = res["roofline"]["peaks_tflops"]
    lib = peaks.get("cuBLAS fp16 (tensor cores)")
    ceiling = next((v for k, v in peaks.items() if k.startswith("WMMA registers only")), None)
    row = res["salerno"]["ms"].get("4096", {})
    if not lib or not ceiling or "tensor_cores" not in row or "cublas_fp16" not in row:
        return ""
    share = row["cublas_fp16"] / row["tensor_cores"]
    top = ceiling / lib
    kernel = res["salerno"].get("tensor_cores_kernel", "wmma_gemm_swizzle")
    return (f"In this run, {recorded_label(res)}: WMMA with its operands in registers ran at {ceiling:.0f} TFLOP/s, "
            f"{100 * top:.0f}% of cuBLAS fp16 ({lib:.0f}, both at 8192³); {kernel} reached {100 * share:.0f}% of "
            f"cuBLAS fp16 at 4096³. So about {100 * (1 - top):.0f} points of the gap lie beyond what WMMA's "
            f"instructions can do, and about {100 * (top - share):.0f} points are the kernel's.")


def headline(res) -> list[str]:
    """Sentences with the run's key numbers (printed, not typed)."""
    out = []
    s = res["salerno"]["ms"]
    big = max((int(n) for n, r in s.items() if "tensor_cores" in r and "cuda_cores" in r), default=None)
    if big:
        r = s[str(big)]
        kernel = res["salerno"].get("tensor_cores_kernel", "wmma_gemm_swizzle")
        out.append(f"At n = {big}: tensor cores ({kernel}) {r['tensor_cores']:.1f} ms, CUDA cores "
                   f"({res['salerno']['cuda_cores_kernel']}) {r['cuda_cores']:.1f} ms: "
                   f"{r['cuda_cores'] / r['tensor_cores']:.1f}x; cuBLAS fp16 {r['cublas_fp16']:.1f} ms "
                   f"({r['tensor_cores'] / r['cublas_fp16']:.2f}x the course kernel's speed).")
    cpu = max((int(n) for n, r in s.items() if "cpu_numpy" in r and "cublas_fp16" in r), default=None)
    if cpu:
        r = s[str(cpu)]
        out.append(f"At n = {cpu}: CPU NumPy {r['cpu_numpy']:.0f} ms vs cuBLAS fp16 {r['cublas_fp16']:.2f} ms "
                   f"({r['cpu_numpy'] / r['cublas_fp16']:.0f}x).")
    if res.get("conv_layers"):
        t = res["conv_layers"][0]
        line = (f"conv2d at the TVM layer: implicit-GEMM WMMA {t['kernel_ms']:.3f} ms, "
                f"{t['speedup_vs_im2col_cublas']:.2f}x faster than the fp16 im2col kernel (kernels/im2col.cu) "
                f"+ cuBLAS fp16 ({t['im2col_cublas_ms']:.3f} ms, "
                f"the TVM table's \"im2col kernel + cuBLAS fp16\" row)")
        fp32 = next(iter(res.get("tvm", {}).get("conv2d", {}).get("without tensor cores", {}).values()), None)
        if fp32:
            line += (f", {fp32 / t['kernel_ms']:.1f}x faster than fp32 im2col + cuBLAS fp32 on CUDA cores "
                     f"({fp32:.3f} ms)")
        if "cudnn_ms" in t:
            line += f"; cuDNN {t['cudnn_ms']:.3f} ms (ours runs at {t['kernel_vs_cudnn']:.2f}x cuDNN's speed)"
        out.append(line + ".")
    return out
