"""Notebook 09, the TVM RFC's TITAN V table beside this GPU's: the 4096^3 GEMM and the conv2d
layer with and without tensor cores (tvm_table, plot_tvm)."""
from __future__ import annotations

import textwrap

from grader.lessons import seeds
from grader.lessons.capstone_run import recorded_label

def tvm_rows(res) -> list[dict]:
    """This GPU's timings of the TVM RFC's two workloads: dict(workload, tensor_cores,
    implementation, ms, tflops) per implementation timed."""
    rows = []
    for workload, key, flops in (("GEMM 4096^3", "gemm_4096", 2.0 * 4096**3),
                                 ("conv2d b256 256->512 14x14 3x3", "conv2d", res["tvm"].get("conv2d_flops"))):
        for tc in ("without tensor cores", "with tensor cores"):
            for impl, ms in res["tvm"].get(key, {}).get(tc, {}).items():
                if ms is None:
                    continue
                rows.append(dict(workload=workload, tensor_cores=tc, implementation=impl, ms=ms,
                                 tflops=flops / (ms * 1e-3) / 1e12 if flops else None))
    return rows


def _counterpart(workload: str, impl: str, mine: dict) -> str | None:
    """The implementation timed here that stands beside the RFC's row `impl` ("tvm": code that is
    not a vendor library, i.e. the course's kernels; "library": cuBLAS for the GEMM, cuDNN for the
    convolution, else the library route timed here)."""
    names = [k for k, v in mine.items() if v is not None]
    if impl == "tvm":
        return next((k for k in names if k.endswith("(kernels/)")), None)
    first = ("cuBLAS",) if workload == "gemm" else ("cuDNN", "im2col + cuBLAS", "im2col kernel + cuBLAS")
    for prefix in first:
        hit = next((k for k in names if k.startswith(prefix)), None)
        if hit:
            return hit
    return None


def tvm_compare_rows(res) -> list[dict]:
    """The RFC's eight TITAN V rows, each beside this GPU's timing of the same workload, tensor
    cores or not, by the counterpart implementation (_counterpart; None: nothing of that kind
    here), then this GPU's other timings of the workload (rfc None). Rows: dict(workload,
    tensor_cores, rfc, rfc_ms, here, here_ms, faster)."""
    out = []
    names = {"tvm": "TVM", "library": None}
    for wl, key in (("gemm", "gemm_4096"), ("conv2d", "conv2d")):
        for tc in (False, True):
            mine = {k: v for k, v in res["tvm"].get(key, {}).get("with tensor cores" if tc else
                                                                   "without tensor cores", {}).items() if v is not None}
            for impl in ("tvm", "library"):
                here = _counterpart(wl, impl, mine)
                out.append(dict(workload=wl, tensor_cores=tc,
                                rfc=names[impl] or ("cuBLAS" if wl == "gemm" else "cuDNN"),
                                rfc_ms=seeds.TVM_TITAN_V_MS[(wl, impl, tc)], here=here,
                                here_ms=mine.pop(here) if here else None))
            out += [dict(workload=wl, tensor_cores=tc, rfc=None, rfc_ms=None, here=k, here_ms=v) for k, v in mine.items()]
    for r in out:
        r["faster"] = r["rfc_ms"] / r["here_ms"] if r["rfc_ms"] and r["here_ms"] else None
    return out


def tvm_table(res):
    """tvm_compare_rows as a table, this GPU's column labelled measured now or recorded."""
    from grader.checking.display import table

    gpu = res["meta"]["gpu"] + (", recorded" if res["meta"].get("loaded_from") else ", measured now")
    out = []
    for r in tvm_compare_rows(res):
        out.append({"workload": "GEMM 4096³" if r["workload"] == "gemm" else "conv2d, TVM layer", "tensor cores": "yes" if r["tensor_cores"] else "no",
                    "TITAN V (RFC)": r["rfc"] or "", "TITAN V ms": f"{r['rfc_ms']:.3f}" if r["rfc_ms"] else "",
                    f"{gpu}: what ran": r["here"] or "nothing of that kind here",
                    f"{gpu} ms": f"{r['here_ms']:.3f}" if r["here_ms"] else "",
                    "x faster here": f"{r['faster']:.1f}x" if r["faster"] else ""})
    return table(out)


def tvm_setup(res) -> str:
    """One line: what differs between the RFC's setup and this run's."""
    t, m = seeds.TVM_SETUP, res["meta"]
    conv = res["tvm"].get("conv2d", {}).get("without tensor cores", {})
    lib32 = ("cuDNN fp32 (TF32 off)" if any(k.startswith("cuDNN") for k in conv)
             else "im2col + cuBLAS fp32 (cuDNN fp32 not in this run)")
    return (f"Setups differ: the RFC ran TVM's generated kernels and 2019's cuBLAS / cuDNN on a {t['gpu']}, and "
            f"does not say what 'without tensor cores' ran in; here the course's hand-written kernels and today's "
            f"libraries on {m['gpu']}, 'without tensor cores' is fp32 on CUDA cores, and the convolution's library "
            f"row without them is {lib32}.")


def plot_tvm(res):
    """The RFC's TITAN V times (hatched grey) beside this GPU's (green: tensor cores, blue: CUDA
    cores), one panel per workload, log-scale ms, every bar labelled with its own ms; an RFC row
    with nothing of its kind here says so in place of the bar."""
    import matplotlib.pyplot as plt

    rows = tvm_compare_rows(res)
    gpu = res["meta"]["gpu"].replace("NVIDIA ", "")
    fig, axes = plt.subplots(1, 2, figsize=(14, 6.4))
    for ax, wl in zip(axes, ("gemm", "conv2d")):
        bars, y = [], 0.0  # (y, label, ms or None, colour, hatch), top to bottom
        for r in (r for r in rows if r["workload"] == wl):
            tc = "with TC" if r["tensor_cores"] else "no TC"
            if r["rfc"]:
                bars.append((y, f"TITAN V: {r['rfc']}, {tc}", r["rfc_ms"], "#d0d7de", "//"))
                y += 1
            color = "#2da44e" if r["tensor_cores"] else "#0969da"
            bars.append((y, f"{gpu}: {r['here'] or 'no ' + ('kernel' if r['rfc'] == 'TVM' else 'library')}"
                            + ("" if r["rfc"] else f", {tc}"), r["here_ms"], color, ""))
            y += 1.5  # a gap between pairs
        vals = [b[2] for b in bars if b[2]] or [1.0]
        for yy, label, v, color, hatch in bars:
            if v:
                ax.barh(yy, v, color=color, hatch=hatch, edgecolor="#57606a" if hatch else color)
                ax.text(v, yy, f" {v:.3g} ms", va="center", fontsize=10)
            else:
                ax.text(min(vals) / 1.8, yy, " nothing of this kind timed here", va="center", fontsize=9,
                        color="#57606a", style="italic")
        ax.set_yticks([b[0] for b in bars], [b[1] for b in bars], fontsize=9)
        ax.set_xscale("log")
        ax.set_xlim(min(vals) / 2, max(vals) * 6)  # room for the labels right of the longest bar
        ax.invert_yaxis()
        ax.set_xlabel("ms per call (log scale)", fontsize=10)
        ax.set_title(textwrap.fill(seeds.TVM_WORKLOADS[wl], 48), fontsize=11)
    fig.suptitle(textwrap.fill(f"The TVM RFC's table (TITAN V, hatched) and this GPU's, {recorded_label(res)}", 110),
                 fontsize=12)
    fig.tight_layout()
    return fig
