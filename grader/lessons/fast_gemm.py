"""Notebook 06 (fast WMMA GEMM): the ladder, the niter sweep, the live sweep, the student's kernel.

Every function either measures on the GPU (in the calling process, beside cuBLAS in the same
run) or, without a GPU, runs the kernel on the CPU emulator for correctness and falls back
to the numbers recorded in kernels/RESULTS-wmma.md (ladder, niter, tuning sweep), always
labelled as recorded; cublas_spread() says how far cuBLAS itself moved between the recorded runs.
The kernels, their defaults and launch rules come from grader.bench.wmma (Rung, LADDER); the
bank-conflict section lives in grader.lessons.bank_conflicts.
"""
from __future__ import annotations

import difflib
import json
import re
import secrets
import textwrap

import numpy as np

from grader.bench import wmma as bench_wmma
from grader.lessons.bank_conflicts import (  # noqa: F401 - notebook 06 reads its bank-conflict section here too
    NOTEBOOK_RECORD, PADS, bank_conflicts, check_bank_kernel, conflict_ways, ldmatrix_banks, measure_bank_conflicts,
    plot_bank_conflicts, plot_banks, recorded_banks)
from grader.lessons import measuring
from grader.lessons.records import KERNELS, label_of, record, section
from grader.problems import gemm, gemm_launch, numerics
from grader.problems.demos import niter_kernel_reference
from grader.runtime import backend, kernels
from grader.runtime.device import NotHere, cannot_run, device_info, has_gpu

NAIVE = "wmma_gemm_naive"
RUNGS = [NAIVE] + [r.file for r in bench_wmma.LADDER]
LABELS = {
    "wmma_gemm_naive": "naive\n1 warp / 16x16",
    "wmma_gemm_smem": "smem\nstaging",
    "wmma_gemm_warptile": "warp\ntiles",
    "wmma_gemm_padded": "padded\nrows",
    "wmma_gemm_async": "cp.async\n3 stages",
    "wmma_gemm_swizzle": "swizzle +\nepilogue",
    "wmma_gemm_fragdb": "fragments\ndouble-buffered",
    "wmma_gemm_persistent": "persistent\nblocks",
}


# ---------------------------------------------------------------- text from the kernel files
def header(name: str) -> str:
    """The leading /* ... */ comment of kernels/NAME.cu, without the stars."""
    m = re.match(r"\s*/\*(.*?)\*/", kernels.source(name), flags=re.S)
    lines = [re.sub(r"^\s*\* ?", "", l) for l in (m.group(1) if m else "").splitlines()]
    return "\n".join(lines).strip()


def what_changed(name: str) -> str:
    """The 'What changed' paragraph of a rung's header (up to Measured / Defines)."""
    text = header(name)
    start = text.find("What changed")
    if start < 0:
        return text
    end = min([i for i in (text.find("\nMeasured", start), text.find("\nDefines", start),
                           text.find("\nCeiling", start)) if i > 0] or [len(text)])
    return text[start:end].strip()


def code(name: str) -> str:
    """Kernel text without its leading comment."""
    return re.sub(r"^\s*/\*.*?\*/\s*", "", kernels.source(name), flags=re.S)


def diff(old: str, new: str, context: int = 1) -> str:
    """Unified diff of two kernels' code (comments of the header left out)."""
    out = difflib.unified_diff(code(old).splitlines(), code(new).splitlines(), old + ".cu",
                               new + ".cu", n=context, lineterm="")
    return "\n".join(out)


# ---------------------------------------------------------------- specs and correctness
def rung(name: str, **defines) -> bench_wmma.Rung:
    return bench_wmma.Rung(name, name, {k: v for k, v in defines.items()})


def spec_of(name: str, **defines) -> gemm_launch.GemmSpec:
    return gemm_launch.wmma_naive() if name == NAIVE else rung(name, **defines).spec()


def check_rung(name: str, n: int = 128, K: int = 128, backend_name: str = "auto", **defines):
    """Run one rung on fresh random inputs (any backend) and compare to float64; on a GPU that
    cannot run it (arch, shared memory) the one line that says why, instead."""
    spec = spec_of(name, **defines)
    why = cannot_run(name, spec.shared_mem, backend=backend_name)
    if why:
        return why
    r = None if name == NAIVE else rung(name, **defines)
    module = backend.load(kernels.source(name), backend_name, r.options if r else ())
    return gemm.run_once(module, spec, n, n, K, secrets.randbits(32)).comparison


# ---------------------------------------------------------------- recorded numbers (no GPU)
WMMA_RECORD = "RESULTS-wmma.md"  # bench_wmma's final run: ladder, niter, tuning sweep


def _results() -> str:
    return record(WMMA_RECORD)


RUN_HEADING = "## WMMA / DMMA kernels vs cuBLAS — "  # bench_wmma.header(): one per recorded run


def recorded_label(name: str = WMMA_RECORD) -> str:
    """'recorded on <GPU>, <date> (kernels/<file>)' for a record file: for RESULTS-wmma.md the
    run recorded_ladder() shows, for the others the first GPU and date in the file."""
    return label_of(_recorded_run()[0] if name == WMMA_RECORD else record(name), name)


def _runs() -> list[str]:
    """The recorded bench_wmma runs of kernels/RESULTS-wmma.md, oldest first: each from its
    heading line to the next run's heading (notes between runs included)."""
    text = _results()
    starts = [m.start() for m in re.finditer("^" + re.escape(RUN_HEADING), text, flags=re.M)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def _ladder_rows(run: str, n: int) -> list[dict]:
    """The ladder rows at n^3 of one run's ladder table (first occurrence of each rung)."""
    rows, seen = [], set()
    pat = re.compile(r"^\| (wmma_gemm_\w+) \| %d\^3 \| yes[^|]*\| ([\d.]+) \| ([\d.]+) \| ([\d.]+)%%" % n,
                     flags=re.M)
    for m in pat.finditer(section(run, "### fp16 in, fp32 out: the fast-GEMM ladder")):
        if m.group(1) in seen or m.group(1) not in RUNGS:
            continue
        seen.add(m.group(1))
        rows.append(dict(name=m.group(1), n=n, tflops=float(m.group(2)),
                         lib_tflops=float(m.group(3)), ratio=float(m.group(4)) / 100))
    return rows


def _recorded_run(n: int = 4096) -> tuple[str, list[dict]]:
    """(run text, ladder rows) of the newest run whose ladder table has every rung of RUNGS;
    if none has all, the newest run with the most of them."""
    runs = [(run, _ladder_rows(run, n)) for run in _runs()]
    if not runs:
        return "", []
    return max(reversed(runs), key=lambda r: len(r[1]))  # max keeps the first (newest) of ties


def recorded_gpu(n: int = 4096) -> str:
    """The heading of the run recorded_ladder() shows: GPU, driver, runtime, date."""
    run = _recorded_run(n)[0]
    return run.splitlines()[0][len(RUN_HEADING):].strip() if run else "a GPU"


def recorded_ladder(n: int = 4096) -> list[dict]:
    """Ladder rows recorded in kernels/RESULTS-wmma.md: those of the newest run that timed
    every rung of the current ladder, else of the newest run with the most rungs."""
    return _recorded_run(n)[1]


def recorded_niter() -> list[tuple[int, float]]:
    """The amortisation table of the run recorded_ladder() shows."""
    text = _recorded_run()[0]
    part = text[text.find("### Amortisation"):]
    part = part[:part.find("\n### ", 5)]
    return [(int(a), float(b)) for a, b in re.findall(r"^\| (\d+) \| [\d.]+ us \| ([\d.]+) \|", part, re.M)]


SWIZZLE_DEFAULTS = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, WARP_M=4, WARP_N=4, STAGES=3, GROUP_M=16)


def sweep_label(defines: dict) -> str:
    """Short label of a wmma_gemm_swizzle configuration (its defines over the defaults)."""
    d = {**SWIZZLE_DEFAULTS, **defines}
    warps = (d["BLOCK_M"] // (16 * d["WARP_M"])) * (d["BLOCK_N"] // (16 * d["WARP_N"]))
    label = (f"{d['BLOCK_M']}x{d['BLOCK_N']}x{d['BLOCK_K']}\nwarp {16 * d['WARP_M']}x{16 * d['WARP_N']}"
             f"\n{warps} warps\n{d['STAGES']} stages")
    return label + (f"\nGROUP_M {d['GROUP_M']}" if d["GROUP_M"] != SWIZZLE_DEFAULTS["GROUP_M"] else "")


def _sweep_rows(run: str, n: int) -> list[dict]:
    """The swizzle[...] rows of one run's tuning sweep whose defines the live sweep can set
    (rows with other defines, e.g. session 3's FRAG_DB/LEAN_ADDR variants, now rung 6, are
    left out: sweep_label cannot tell them from the plain shape)."""
    rows = []
    pat = re.compile(r"^\| swizzle\[([\w=,]+)\] \| %d\^3 \| yes[^|]*\| ([\d.]+) \| ([\d.]+) \| ([\d.]+)%%" % n,
                     flags=re.M)
    for m in pat.finditer(section(run, "### Tuning sweep")):
        defines = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split(","))}
        if set(defines) <= set(SWIZZLE_DEFAULTS):
            rows.append(dict(label=sweep_label(defines), defines=defines, ok=True, tflops=float(m.group(2)),
                             lib_tflops=float(m.group(3)), ratio=float(m.group(4)) / 100))
    return rows


def _sweep_run(n: int = 4096) -> str:
    """The run recorded_sweep() shows: the one recorded_ladder() shows if it has a tuning sweep
    (and a swizzle row), else the newest run that has both."""
    def usable(run):
        return _sweep_rows(run, n) and any(r["name"] == "wmma_gemm_swizzle" for r in _ladder_rows(run, n))
    first = _recorded_run(n)[0]
    return first if usable(first) else next((r for r in reversed(_runs()) if usable(r)), first)


def recorded_sweep_label(n: int = 4096) -> str:
    """recorded_label() of the run recorded_sweep() shows."""
    return label_of(_sweep_run(n), WMMA_RECORD)


def recorded_sweep(n: int = 4096) -> list[dict]:
    """The tuning sweep of kernels/RESULTS-wmma.md (wmma_gemm_swizzle variants, see
    _sweep_run for which run), preceded by the default configuration's ladder row of that same
    run. Rows as sweep(): dict(label, defines, ok, tflops, lib_tflops, ratio)."""
    run = _sweep_run(n)
    default = next(r for r in _ladder_rows(run, n) if r["name"] == "wmma_gemm_swizzle")
    return [dict(label="default\n" + sweep_label({}), defines={}, ok=True, tflops=default["tflops"],
                 lib_tflops=default["lib_tflops"], ratio=default["ratio"])] + _sweep_rows(run, n)


def _cublas_fp16_4096_records() -> list[tuple[float, str]]:
    """(TFLOP/s, file) of every cuBLAS fp16 4096^3 measurement recorded in kernels/ (the H200
    and H100 runs of this course): one entry per distinct figure of a file (a table that
    times cuBLAS once repeats its figure on every row)."""
    out: list[tuple[float, str]] = []

    def add(name, values):
        for v in dict.fromkeys(values):  # one entry per distinct figure of a file's run
            out.append((float(v), name))

    # RESULTS.md: grader.bench, GFLOP/s
    add("RESULTS.md", [int(g) / 1000 for g in
                       re.findall(r"^\| \w+ \| 4096\^3 \|[^\n]*cuBLAS fp16: (\d+)", record("RESULTS.md"), re.M)])
    # RESULTS-wmma.md: every fp16 row at 4096^3 of every run (ladder and tuning sweep; each
    # row's own cuBLAS when the run paired them), then the tuning history's "cuBLAS a / b"
    text = _results()
    fp16_row = r"^\| (?:wmma_gemm_\w+|swizzle\[[\w=,]+\]|fragdb\[[\w=,]+\]) \| 4096\^3 \| yes[^|]*\| [\d.]+ \| ([\d.]+) \|"
    add(WMMA_RECORD, [v for run in _runs() for v in re.findall(fp16_row, run, re.M)]
        + re.findall(r"cuBLAS ([\d.]+) / [\d.]+\)", section(text, "## Tuning history")))
    # RESULTS-notebooks-04-05.md: the 4096 row of the sizes table (last column) and run 2's prose
    text = record("RESULTS-notebooks-04-05.md")
    add("RESULTS-notebooks-04-05.md", re.findall(r"^\| 4096 \|(?: [\d.]+ \|){4} ([\d.]+) \|", text, re.M)
        + re.findall(r"cuBLAS fp16 ([\d.]+) TFLOP/s", text))
    # RESULTS-notebooks-06-07.md: 06's "(cuBLAS x)", 07's fp16 column, the second run's "of x"
    text = record(NOTEBOOK_RECORD)
    add(NOTEBOOK_RECORD, re.findall(r"\(cuBLAS ([\d.]+)\)", section(text, "## 06"))
        + re.findall(r"\| fp16 ([\d.]+) \|", section(text, "## 07"))
        + re.findall(r"fp16 naive [\d.]+ \([\d.]+% of ([\d.]+)\)", section(text, "## Second run")))
    # the capstone's saved runs (notebook 09)
    for f in sorted(KERNELS.glob("capstone-results-*.json")):
        ms = json.loads(f.read_text()).get("salerno", {}).get("ms", {}).get("4096", {}).get("cublas_fp16")
        if ms:
            add(f.name, [round(2 * 4096**3 / (ms * 1e-3) / 1e12, 1)])
    return out


def cublas_spread(ratios: bool = True) -> str:
    """The range of cuBLAS fp16 at 4096^3 over the recorded runs, so that a ratio quoted from
    one run is not compared with a cuBLAS figure of another (`ratios`: say that too)."""
    recs = _cublas_fp16_4096_records()
    if not recs:
        return ""
    vals = [v for v, _ in recs]
    files = ", ".join(dict.fromkeys(f for _, f in recs))
    out = (f"cuBLAS fp16 at 4096³ measured {min(vals):.0f}-{max(vals):.0f} TFLOP/s in the {len(vals)} "
           f"measurements recorded on this course's H200 and H100 runs (kernels/: {files}).")
    if ratios:
        out += (" Each % of cuBLAS divides by the cuBLAS figure of its own run, so the same kernel's % "
                "differs from run to run.")
    return out


# ---------------------------------------------------------------- the ladder on a GPU
def measure_ladder(n: int = 4096, check_sizes=(256, 1024), names=None) -> list[dict]:
    """Check every rung, then time it at n^3 beside cuBLAS fp16 (same process, same size).
    Returns dict(name, n, tflops, lib_tflops, ratio, registers) per rung."""
    rows = []
    for name in names or RUNGS:
        spec = spec_of(name)
        why = cannot_run(name, spec.shared_mem)
        if why:  # left out of the plot; ladder() names it in the source line
            rows.append(dict(name=name, n=n, ok=False, skipped=why, detail=why, tflops=0.0, lib_tflops=0.0, ratio=0.0))
            continue
        module = bench_wmma._module(name, spec.options)
        ok, worst, detail = bench_wmma.check_sizes(module, spec, check_sizes)
        if not ok:
            rows.append(dict(name=name, n=n, ok=False, detail=detail, tflops=0.0, lib_tflops=0.0, ratio=0.0))
            continue
        t = bench_wmma.time_kernel(module, spec, n, max_seconds=1.0)
        rows.append(dict(name=name, n=n, ok=True, worst=worst, tflops=t["tflops"],
                         lib_tflops=t["lib_tflops"], ratio=t["ratio"],
                         registers=module.resources(spec.kernel).registers))
    return rows


def ladder(n: int = 4096) -> tuple[list[dict], str]:
    """(rows, source): measured now on a GPU, else recorded in kernels/RESULTS-wmma.md (the
    newest run with every rung, else the newest with the most; missing rungs are named)."""
    if has_gpu():
        rows = measure_ladder(n)
        skipped = [r["name"] for r in rows if r.get("skipped")]
        note = f" ({', '.join(skipped)} skipped here: this GPU cannot run them)" if skipped else ""
        return [r for r in rows if not r.get("skipped")], f"measured now on {device_info().name}{note}"
    rows = recorded_ladder(n)
    missing = [r for r in RUNGS if r not in {row["name"] for row in rows}]
    note = f"; not in that run: {', '.join(missing)}" if missing else ""
    return rows, f"recorded on {recorded_gpu(n)} (kernels/RESULTS-wmma.md{note}); no GPU here"


def plot_ladder(rows: list[dict], source: str, extra: dict | None = None):
    """Each rung as its share of cuBLAS fp16 (a bar, labelled with it and the rung's TFLOP/s).
    The share is the paired ratio: cuBLAS timed in alternating rounds with that rung
    (grader.runtime.timing.paired), so 100% is cuBLAS in the rung's own rounds, not one cuBLAS
    figure for all (cuBLAS moved by over 10% between rows of one run; the line's label gives the
    range). Returns the figure."""
    import matplotlib.pyplot as plt

    rows = list(rows) + ([extra] if extra else [])
    fig, ax = plt.subplots(figsize=(10, 4.6))
    names = [LABELS.get(r["name"], r["name"]) for r in rows]
    pct = [100 * r["ratio"] for r in rows]
    colors = ["#8c959f"] + ["#0969da"] * (len(rows) - 1 - (1 if extra else 0)) + (["#bf3989"] if extra else [])
    ax.bar(range(len(rows)), pct, color=colors[:len(rows)], tick_label=names)
    libs = [r["lib_tflops"] for r in rows if r.get("lib_tflops")]
    ax.axhline(100, color="#2da44e", ls="--")
    span = f"{min(libs):.0f}-{max(libs):.0f}" if libs and round(min(libs)) != round(max(libs)) else (
        f"{libs[0]:.0f}" if libs else "?")
    ax.text(len(rows) - 0.5, 100, f"cuBLAS fp16 in each rung's own rounds = 100% ({span} TFLOP/s)",
            ha="right", va="bottom", color="#2da44e", fontsize=11)
    for i, r in enumerate(rows):
        ax.text(i, pct[i], f"{pct[i]:.1f}%\n{r['tflops']:.0f} TFLOP/s", ha="center", va="bottom", fontsize=10)
    ax.set_ylim(0, 118)
    ax.set_ylabel("% of cuBLAS fp16 (paired)", fontsize=11)
    ax.tick_params(axis="x", labelsize=11)
    ax.set_title(textwrap.fill(f"The WMMA ladder at {rows[0]['n']}³, fp16 in, fp32 out — {source}", 100),
                 fontsize=11)
    plt.tight_layout()
    plt.show()
    return fig


# ---------------------------------------------------------------- amortisation (niter)
def check_niter_kernel(warps: int = 4, niter: int = 5, backend_name: str = "auto"):
    """wmma_peak_niter on `warps` warps: C_w must equal niter * A_w B_w."""
    module = backend.load(kernels.source("wmma_peak_niter"), backend_name)
    xp = module.xp
    rng = np.random.default_rng(secrets.randbits(32))
    A = rng.uniform(-1, 1, warps * 256).astype(np.float16)
    B = rng.uniform(-1, 1, warps * 256).astype(np.float16)
    C = xp.full(warps * 256, np.nan, dtype=np.float32)
    module.launch("wmma_peak_niter", (warps, 1, 1), (32, 1, 1), [xp.asarray(A), xp.asarray(B), C, niter])
    host = C.get() if hasattr(C, "get") else C
    return numerics.compare(host.reshape(warps, 16, 16), *niter_kernel_reference(A, B, warps, niter))


def measure_niter(niters=(1, 4, 16, 64, 256, 1024), threads: int = 256) -> list[tuple[int, float]]:
    """TFLOP/s of wmma_peak_niter (16 blocks per SM) for each niter, on the GPU."""
    import cupy

    from grader.runtime.timing import benchmark

    blocks = 16 * device_info().sm_count
    W = blocks * threads // 32
    m = bench_wmma._module("wmma_peak_niter")
    rng = np.random.default_rng(0)
    A = cupy.asarray(rng.uniform(-1, 1, W * 256).astype(np.float16))
    B = cupy.asarray(rng.uniform(-1, 1, W * 256).astype(np.float16))
    C = cupy.empty(W * 256, dtype=cupy.float32)
    out = []
    for niter in niters:
        t = benchmark(m.bind("wmma_peak_niter", (blocks, 1, 1), (threads, 1, 1), [A, B, C, niter]),
                      max_seconds=0.5)
        out.append((niter, t.tflops(W * niter * 2.0 * 16 ** 3)))
    return out


def niter(niters=(1, 4, 16, 64, 256, 1024)) -> tuple[list[tuple[int, float]], str]:
    if has_gpu():
        return measure_niter(niters), f"measured now on {device_info().name}"
    return recorded_niter(), f"recorded on {recorded_gpu()} (kernels/RESULTS-wmma.md); no GPU here"


def plot_niter(points, source: str, cublas: float | None = None):
    import matplotlib.pyplot as plt

    x, y = zip(*points)
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    ax.plot(x, y, "o-", color="#0969da", label="wmma_peak_niter")
    if cublas:
        ax.axhline(cublas, color="#2da44e", ls="--", label=f"cuBLAS fp16 GEMM ({cublas:.0f})")
    for a, b in points:
        ax.annotate(f"{b:.0f}", (a, b), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("mma_sync per fragment load (niter)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Amortisation: loads vs tensor-core work — {source}", fontsize=9)
    ax.legend(fontsize=8)
    plt.tight_layout()
    plt.show()
    return fig


# ---------------------------------------------------------------- live sweep
SM90_MAX_SHARED = 232448  # bytes of shared memory one block may opt in to on sm_90 (H100, H200)

def config_problem(block_m, block_n, block_k, warp_m, warp_n, stages, max_shared=None) -> str | None:
    """None when wmma_gemm_swizzle accepts these defines, else the reason (the kernel's
    static_asserts and the GPU's shared-memory limit, checked before compiling)."""
    if block_m % (16 * warp_m) or block_n % (16 * warp_n):
        return f"the warp tile {16 * warp_m}x{16 * warp_n} does not divide the block tile {block_m}x{block_n}"
    threads = 32 * (block_m // (16 * warp_m)) * (block_n // (16 * warp_n))
    if threads > 1024:
        return f"{threads} threads per block (> 1024)"
    if (block_m * block_k // 8) % threads or (block_k * block_n // 8) % threads:
        return f"{threads} threads cannot split the tiles into equal 16-byte copies"
    smem = rung("wmma_gemm_swizzle", BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                WARP_M=warp_m, WARP_N=warp_n, STAGES=stages).shared_mem
    if threads // 32 * 16 * (16 * warp_n + 4) * 4 > smem:
        return "the epilogue strips do not fit in the pipeline buffers"
    if max_shared is None and device_info() is not None:  # this GPU, TC_ARCH included: the one gate
        return cannot_run("wmma_gemm_swizzle", smem) or None
    limit = max_shared or SM90_MAX_SHARED
    if smem > limit:
        allows = (f"an H100/H200 (sm_90) allows {limit} B" if limit == SM90_MAX_SHARED
                  else f"the limit is {limit} B")
        return f"{smem} B of shared memory per block ({allows} per block)"
    return None


def run_config(block_m=128, block_n=128, block_k=64, warp_m=4, warp_n=4, stages=3, n=4096) -> dict:
    """Check (at 512^3) and time wmma_gemm_swizzle with these defines at n^3 vs cuBLAS fp16."""
    reason = config_problem(block_m, block_n, block_k, warp_m, warp_n, stages)
    if reason:
        return dict(ok=False, detail=reason)
    r = rung("wmma_gemm_swizzle", BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, WARP_M=warp_m,
             WARP_N=warp_n, STAGES=stages)
    spec = r.spec()
    try:
        module = bench_wmma._module(r.file, r.options)
    except Exception as e:  # noqa: BLE001 - a config the compiler rejects
        return dict(ok=False, detail=f"does not compile: {str(e).splitlines()[0][:160]}")
    ok, worst, detail = bench_wmma.check_sizes(module, spec, (max(512, block_m, block_n),))
    if not ok:
        return dict(ok=False, detail="wrong result: " + detail)
    t = bench_wmma.time_kernel(module, spec, n, max_seconds=1.0)
    return dict(ok=True, threads=spec.block[0], shared_mem=spec.shared_mem,
                registers=module.resources(spec.kernel).registers, **t)


def show_config(block_m=128, block_n=128, block_k=64, warp_m=4, warp_n=4, stages=3, n=4096):
    """One line per configuration: what it is and, on a GPU, how fast (printed)."""
    desc = (f"block {block_m}x{block_n}x{block_k}, warp tile {16 * warp_m}x{16 * warp_n}, "
            f"{stages} stages")
    reason = config_problem(block_m, block_n, block_k, warp_m, warp_n, stages)
    if reason:
        print(f"{desc}: not a valid configuration: {reason}")
        return None
    if not has_gpu():
        r = rung("wmma_gemm_swizzle", BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                 WARP_M=warp_m, WARP_N=warp_n, STAGES=stages)
        print(f"{desc}: {r.threads} threads, {r.shared_mem} B shared memory. "
              "Timing needs a GPU: none here, so this shows the configuration only "
              f"(a sweep {recorded_sweep_label()} is plotted two cells below).")
        return None
    res = run_config(block_m, block_n, block_k, warp_m, warp_n, stages, n)
    if not res["ok"]:
        print(f"{desc}: {res['detail']}")
    else:
        print(f"{desc}: {res['threads']} threads, {res['shared_mem']} B shared, {res['registers']} registers "
              f"-> {res['tflops']:.1f} TFLOP/s at {n}³ = {100 * res['ratio']:.1f}% of cuBLAS fp16 "
              f"({res['lib_tflops']:.0f})")
    return res


def sweep_widget(n=4096):
    import ipywidgets as widgets

    pow2 = lambda vals, v: widgets.Dropdown(options=vals, value=v)  # noqa: E731
    return widgets.interact_manual(
        lambda block_m, block_n, block_k, warp_m, warp_n, stages: show_config(
            block_m, block_n, block_k, warp_m, warp_n, stages, n),
        block_m=pow2([64, 128, 256], 128), block_n=pow2([64, 128, 256], 128),
        block_k=pow2([16, 32, 64, 128], 64), warp_m=pow2([1, 2, 4, 8], 4), warp_n=pow2([1, 2, 4, 8], 4),
        stages=pow2([2, 3, 4, 5], 3))


SWEEP_CONFIGS = [  # (label, kwargs): one change at a time from the default
    ("default 128x128x64\n64x64 warps, 3 st", {}),
    ("2 stages", dict(stages=2)),
    ("4 stages", dict(stages=4)),
    ("block_k 32", dict(block_k=32, stages=4)),
    ("warp 64x32\n(8 warps)", dict(warp_n=2)),
    ("warp 32x32\n(16 warps)", dict(warp_m=2, warp_n=2)),
    ("block 128x256\n(8 warps)", dict(block_n=256)),
]


def sweep(n=4096, configs=SWEEP_CONFIGS) -> list[dict]:
    """Each configuration timed against cuBLAS fp16 (run_config). Under nbgrader autograde, the
    sweep recorded in kernels/RESULTS-wmma.md (lessons.measuring)."""
    if n == 4096 and measuring.skip("the tuning sweep's speed", f"the sweep {recorded_sweep_label(n)} is shown"):
        return recorded_sweep(n)
    rows = []
    for label, kw in configs:
        res = run_config(n=n, **kw)
        rows.append(dict(label=label, **res))
    return rows


def plot_sweep(rows: list[dict], n=4096, source: str = "measured now"):
    """Each configuration's paired share of cuBLAS fp16 (a bar, labelled with it and its
    TFLOP/s), as plot_ladder. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4.4))
    pct = [100 * r["ratio"] if r.get("ok") else 0.0 for r in rows]
    ax.bar(range(len(rows)), pct, color=["#0969da"] + ["#8c959f"] * (len(rows) - 1),
           tick_label=[r["label"] for r in rows])
    ax.axhline(100, color="#2da44e", ls="--")
    for i, r in enumerate(rows):
        txt = f"{pct[i]:.0f}%\n{r['tflops']:.0f} TFLOP/s" if r.get("ok") else "invalid"
        ax.text(i, pct[i], txt, ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("% of cuBLAS fp16 (paired)")
    ax.set_ylim(0, 115)
    ax.set_title(textwrap.fill(f"wmma_gemm_swizzle at {n}³: share of cuBLAS fp16 timed in the same rounds "
                               f"(100%, dashed) — {source}", 100), fontsize=10)
    plt.xticks(fontsize=9)
    plt.tight_layout()
    plt.show()
    return fig


# ---------------------------------------------------------------- the student's kernel
def time_student(source: str, n: int = 4096, block_m=128, block_n=128, block_k=64, threads=128,
                 shared_mem=107520) -> dict:
    """Compile a wmma-gemm-fast submission with the grader's -D values, check it at 512^3 and
    time it at n^3 beside cuBLAS fp16 (GPU only). Raises on failure."""
    from grader.runtime.gpu import GpuModule

    skipped = measuring.not_measured("timing your wmma-gemm-fast kernel")
    if skipped:
        raise skipped
    launch = dict(block_m=block_m, block_n=block_n, block_k=block_k, threads=threads, shared_mem=shared_mem)
    why = cannot_run("your wmma-gemm-fast kernel", shared_mem)
    if why:
        raise NotHere(why)
    spec = gemm_launch.student("block", launch, "wmma_gemm", library="fp16", multiple=(block_m, block_n, block_k))
    module = GpuModule(source, spec.options)
    ok, worst, detail = bench_wmma.check_sizes(module, spec, (512,))
    if not ok:
        raise ValueError(f"not correct yet: {detail}")
    t = bench_wmma.time_kernel(module, spec, n, max_seconds=1.0)
    return dict(name="your kernel", n=n, **t)


def cublas_fp16(n: int = 4096) -> tuple[float, str]:
    """cuBLAS fp16 TFLOP/s at n^3: measured now on a GPU, else the recorded figure."""
    if has_gpu():
        import cupy

        from grader.runtime.timing import benchmark

        fn = bench_wmma._library_cache.get(("fp16", n))
        if fn is None:
            A, B = gemm.random_inputs(n, n, n, "float16", 0, cupy)
            C = cupy.empty((n, n), dtype=cupy.float16)
            bench_wmma._library_cache[("fp16", n)] = benchmark(lambda: cupy.matmul(A, B, out=C), max_seconds=1.0)
        return bench_wmma._library_cache[("fp16", n)].tflops(2.0 * n ** 3), "measured now"
    rows = recorded_ladder(n)
    return (rows[0]["lib_tflops"] if rows else float("nan")), f"recorded on {recorded_gpu()}"
