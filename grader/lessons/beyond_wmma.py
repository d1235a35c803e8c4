"""Notebook 10 (beyond WMMA): the mma.sync and ldmatrix layouts, the swizzle, the mma.sync
ladder, Hopper's wgmma rung and fp64 past m8n8k4.

Every function either runs a kernel on this machine's backend (the GPU, or the CPU emulator for
correctness), measures on the GPU beside cuBLAS in the same run, or, without a GPU, shows what
kernels/RESULTS-mma.md recorded (python -m grader.bench.mma), always labelled; a rung that no
run has measured yet is drawn as such, never as a number. The kernels, their defaults and launch
rules come from grader.bench.mma (Rung, LADDER, WGMMA, DMMA).
"""
from __future__ import annotations

import re
import secrets
import textwrap
from pathlib import Path

import numpy as np

from grader.bench import mma as bench_mma
from grader.bench import wmma as bench_wmma
from grader.lessons import measuring
from grader.lessons.bank_conflicts import plot_bank_maps
from grader.lessons.fast_gemm import code, diff, what_changed  # noqa: F401 - the notebook uses them too
from grader.problems import gemm, gemm_launch, numerics
from grader.problems.mma import banks_of_read, ldmatrix_passes, ldsm_layout_reference, peak_reference
from grader.runtime import backend, kernels
from grader.runtime.device import NotHere, cannot_run, device_info, has_gpu

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
RECORD = "RESULTS-mma.md"  # grader.bench.mma's runs
WMMA_RECORD = "RESULTS-wmma.md"  # notebook 06's runs: the WMMA baseline when RESULTS-mma.md has none
BASELINE = bench_mma.BASELINE
RUNGS = [BASELINE] + [r.file for r in bench_mma.LADDER] + [bench_mma.WGMMA.file]
LABELS = {
    BASELINE: "notebook 06's best\nWMMA, fragments\ndouble-buffered",
    "mma_gemm_ldmatrix": "mma.sync +\nldmatrix\npadded rows",
    "mma_gemm_swizzled": "XOR-swizzled\nshared memory",
    "mma_gemm_tuned": "128x256x64\n3 stages",
    "hgemm_wgmma": "wgmma + TMA\n(sm_90a)",
}


def gpu_arch() -> int:
    return bench_mma.arch()


# ---------------------------------------------------------------- documented layouts
# PTX ISA 9.1, 9.7.14.5.8 (m16n8k16, f16): (row, col) of element i held by `lane`
def a_coord(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def b_coord(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    return 2 * t + (i & 1) + 8 * (i >> 1), g


def c_coord(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def owner_maps() -> dict[str, np.ndarray]:
    """lane that holds each element of A (16x16), B (16x8) and C/D (16x8) of mma.m16n8k16."""
    maps = {"A (16 x 16)": np.zeros((16, 16), int), "B (16 x 8)": np.zeros((16, 8), int),
            "C, D (16 x 8)": np.zeros((16, 8), int)}
    for lane in range(32):
        for i in range(8):
            maps["A (16 x 16)"][a_coord(lane, i)] = lane
        for i in range(4):
            maps["B (16 x 8)"][b_coord(lane, i)] = lane
            maps["C, D (16 x 8)"][c_coord(lane, i)] = lane
    return maps


def plot_owners():
    """Which lane holds which element of the three operands of one mma.m16n8k16."""
    import matplotlib.pyplot as plt

    maps = owner_maps()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), gridspec_kw=dict(width_ratios=[2, 1, 1]))
    for ax, (name, m) in zip(axes, maps.items()):
        ax.imshow(m % 8, cmap="tab10", vmin=0, vmax=9, aspect="auto")
        for (r, c), lane in np.ndenumerate(m):
            ax.text(c, r, str(lane), ha="center", va="center", fontsize=7)
        ax.set_title(name, fontsize=10)
        ax.set_xticks(range(m.shape[1]))
        ax.set_yticks(range(16))
        ax.tick_params(labelsize=7)
    fig.suptitle("mma.sync.m16n8k16: the lane holding each element (PTX ISA 9.1, 9.7.14.5.8); "
                 "colour = lane % 8", fontsize=10)
    plt.tight_layout()
    plt.show()
    return fig


_PROBE = r"""
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "the mma.m16n8k16 probe needs sm_80 or newer (mma.sync m16n8k16 with f16 inputs)"
#endif
#include <cuda_fp16.h>
extern "C" __global__ void probe(const unsigned* RA, const unsigned* RB, const float* RC, float* RD)
{
    const int l = threadIdx.x;
    float d[4];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(RA[4 * l]), "r"(RA[4 * l + 1]), "r"(RA[4 * l + 2]), "r"(RA[4 * l + 3]),
                   "r"(RB[2 * l]), "r"(RB[2 * l + 1]),
                   "f"(RC[4 * l]), "f"(RC[4 * l + 1]), "f"(RC[4 * l + 2]), "f"(RC[4 * l + 3]));
    for (int i = 0; i < 4; ++i) RD[4 * l + i] = d[i];
}
"""


def _pack(mat: np.ndarray, coord, n: int) -> np.ndarray:
    """[32, n/2] registers: element 2j in the low half of register j (fp16)."""
    bits = np.array([[mat[coord(lane, i)] for i in range(n)] for lane in range(32)]).astype(np.float16)
    bits = bits.view(np.uint16).astype(np.uint32)
    return (bits[:, 0::2] | bits[:, 1::2] << 16).astype(np.uint32)


def check_mma_layout(backend_name: str = "auto"):
    """One mma.sync.m16n8k16 on this machine's backend: every lane gets the registers the
    documented layout gives it, and D, read back by the same layout, must be A B + C."""
    module = backend.load(_PROBE, backend_name)
    xp = module.xp
    rng = np.random.default_rng(secrets.randbits(32))
    A = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    B = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    C = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    RC = np.array([[C[c_coord(lane, i)] for i in range(4)] for lane in range(32)], np.float32)
    RD = xp.full(128, np.nan, dtype=np.float32)
    module.launch("probe", (1, 1, 1), (32, 1, 1), [xp.asarray(_pack(A, a_coord, 8).ravel()),
                                                   xp.asarray(_pack(B, b_coord, 4).ravel()), xp.asarray(RC.ravel()), RD])
    out = (RD.get() if hasattr(RD, "get") else RD).reshape(32, 4)
    D = np.full((16, 8), np.nan)
    for lane in range(32):
        for i in range(4):
            D[c_coord(lane, i)] = out[lane, i]
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    bound = numerics.gemm_bound(np.abs(a64) @ np.abs(b64) + np.abs(C), 18)
    return numerics.compare(D, a64 @ b64 + C, bound)


# ---------------------------------------------------------------- ldmatrix
def plot_ldmatrix(trans: bool = False):
    """ldmatrix.x4 for one 16x16 fp16 tile: which lane gives the address of which row (left), and
    which lane receives each element in its registers (right; .trans: the 8x8 blocks transposed)."""
    import matplotlib.pyplot as plt

    addr = np.zeros((16, 16), int)  # lane giving the row address: rows 0-15 at col 0, then at col 8
    recv = np.zeros((16, 16), int)
    for lane in range(32):
        addr[lane & 15, 8 * (lane >> 4):8 * (lane >> 4) + 8] = lane
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for j in range(4):  # matrix j: rows 8(j%2).., cols 8(j//2)..
            r0, c0 = 8 * (j & 1), 8 * (j >> 1)
            for e in range(2):
                r, c = (2 * t + e, g) if trans else (g, 2 * t + e)
                recv[r0 + r, c0 + c] = lane
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, m, title in ((axes[0], addr, "lane whose address starts each 16-byte row (8 halves)"),
                         (axes[1], recv, f"lane that receives each element{' (.trans)' if trans else ''}")):
        ax.imshow(m % 8 if m is recv else m // 8, cmap="tab10", vmin=0, vmax=9, aspect="auto")
        for (r, c), lane in np.ndenumerate(m):
            if m is recv or c % 8 == 0:
                ax.text(c, r, str(lane), ha="center", va="center", fontsize=7)
        ax.set_title(title, fontsize=10)
        if m is addr:  # matrix j of the x4 load: register j of every lane
            for j in range(4):
                ax.text(8 * (j >> 1) + 4.5, 8 * (j & 1) + 3.5, f"matrix {j}\n-> register {j}", ha="center",
                        va="center", fontsize=10, color="white")
        ax.axhline(7.5, color="k", lw=1)
        ax.axvline(7.5, color="k", lw=1)
    fig.suptitle("ldmatrix.sync.aligned.m8n8.x4 on a 16 x 16 tile: 4 matrices of 8 x 8, one per register "
                 "(PTX ISA 9.1, 9.7.14.5.15)", fontsize=10)
    plt.tight_layout()
    plt.show()
    return fig


def check_ldmatrix(backend_name: str = "auto", layout: int = 2, warps: int = 4, iters: int = 7):
    """ldmatrix_layouts.cu (LAYOUT 0 plain, 1 padded, 2 swizzled) on this machine's backend: the
    words every lane summed must be those the documented ldmatrix layout gives."""
    module = backend.load(kernels.source("ldmatrix_layouts"), backend_name, (f"-DLAYOUT={layout}",))
    xp = module.xp
    M = np.random.default_rng(secrets.randbits(32)).uniform(-1, 1, (64, 64)).astype(np.float16)
    out = xp.zeros(warps * 32, dtype=np.uint32)
    module.launch("ldsm_layout", (warps // 2, 1, 1), (64, 1, 1), [xp.asarray(M.ravel()), out, iters])
    got = out.get() if hasattr(out, "get") else out
    return bool((got == ldsm_layout_reference(M, warps, iters)).all())


# ---------------------------------------------------------------- banks: padded vs swizzled
LAYOUT_NAMES = {"plain": "plain rows (128 B apart)", "padded": "padded rows (+16 B)", "swizzled": "XOR-swizzled"}


def plot_banks(chunk: int = 0):
    """The 32 banks the 8 rows of one 8x8 ldmatrix read touch, in the three layouts."""
    return plot_bank_maps([(f"{LAYOUT_NAMES[layout]}: {ldmatrix_passes(layout)} pass"
                            f"{'es' if ldmatrix_passes(layout) > 1 else ''}", banks_of_read(layout, chunk))
                           for layout in LAYOUT_NAMES], figsize=(14, 2.8))


def swizzle_map(rows: int = 8, chunks: int = 8) -> np.ndarray:
    """m[r, p]: the logical chunk stored at physical chunk p of row r (the swizzle is its own inverse)."""
    return np.array([[p ^ (r % 8) for p in range(chunks)] for r in range(rows)])


def plot_swizzle():
    """Where each 16-byte chunk of a row lands: chunk c of row r at position c XOR (r mod 8)."""
    import matplotlib.pyplot as plt

    m = swizzle_map()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.imshow(m, cmap="tab10", vmin=0, vmax=9)
    for (r, p), c in np.ndenumerate(m):
        ax.text(p, r, str(c), ha="center", va="center", fontsize=9)
    ax.set_xlabel("position in the row (16-byte chunk, banks 4p .. 4p+3)")
    ax.set_ylabel("row r")
    ax.set_title("logical chunk c stored at c XOR (r % 8): each column holds\n8 different chunks, each chunk "
                 "8 different columns", fontsize=9)
    plt.tight_layout()
    plt.show()
    return fig


def measure_banks() -> list[dict]:
    return bench_mma.banks_table(out=lambda s: None)


# ---------------------------------------------------------------- correctness on this machine
def check_rung(name: str, M: int | None = None, N: int | None = None, K: int | None = None,
               backend_name: str = "auto"):
    """One rung of the ladder (or the fp64 rung) on fresh random inputs, against float64."""
    rung = next(r for r in bench_mma.LADDER + [bench_mma.DMMA] if r.file == name)
    spec = rung.spec()
    bm, bn, bk = spec.multiple
    module = backend.load(kernels.source(rung.file), backend_name, rung.options)
    M, N, K = M or bm, N or 2 * bn, K or 5 * bk
    return gemm.run_once(module, spec, M, N, K, secrets.randbits(32)).comparison


def check_peak(f64_k: int | None = None, warps: int = 4, niter: int = 5, backend_name: str = "auto"):
    """mma_peak_niter (f16) or mma_peak_niter_f64 (m16n8k`f64_k`) on `warps` warps: C_w = niter A_w B_w."""
    opts = (f"-DF64_K={f64_k}",) if f64_k else ()
    module = backend.load(kernels.source("mma_peak_niter_f64" if f64_k else "mma_peak_niter"), backend_name, opts)
    xp = module.xp
    k, dtype = (f64_k, np.float64) if f64_k else (16, np.float16)
    rng = np.random.default_rng(secrets.randbits(32))
    A = rng.uniform(-1, 1, warps * 16 * k).astype(dtype)
    B = rng.uniform(-1, 1, warps * 8 * k).astype(dtype)
    C = xp.full(warps * 128, np.nan, dtype=np.float64 if f64_k else np.float32)
    module.launch("mma_peak_niter_f64" if f64_k else "mma_peak_niter", (warps, 1, 1), (32, 1, 1),
                  [xp.asarray(A), xp.asarray(B), C, niter])
    host = C.get() if hasattr(C, "get") else C
    return numerics.compare(host, *peak_reference(A, B, warps, niter, k))


def compile_wgmma() -> str:
    """NVRTC's view of the Hopper rung for sm_90a (no GPU needed): registers, spills, the wgmma
    instructions in its PTX."""
    from grader.runtime.ptx import summary

    out = bench_mma.nvrtc_sm90a(kernels.source("hgemm_wgmma"))
    res = out.resources["hgemm_wgmma"]
    return (f"hgemm_wgmma, sm_90a: {res.registers} registers, {res.spill_stores} B spilled; "
            f"tensor-core instructions: {summary(out.ptx)}")


def emulator_on_wgmma() -> str:
    """What the CPU emulator says about the Hopper rung (it does not model wgmma/TMA/mbarriers)."""
    from grader.runtime.errors import CourseError

    try:
        backend.load(kernels.source("hgemm_wgmma"), "emu")
    except CourseError as e:
        return str(e).splitlines()[0]
    return "the emulator compiled it (unexpected)"


def check_wgmma(sizes=((256, 512, 512), (1024, 1024, 1024))) -> str:
    """On an sm_90 GPU: the Hopper rung against float64 at a few sizes."""
    import cupy

    why = bench_mma.probe(bench_mma.WGMMA)  # first in a child process: a hang must not take this one
    if why:
        return why
    module = bench_mma.WgmmaGemm()
    spec = bench_mma.WGMMA.spec()
    results = []
    for M, N, K in sizes:
        run = gemm.run_once(module, spec, M, N, K, secrets.randbits(32), xp=cupy)
        results.append(f"{M}x{N}x{K}: {run.comparison}")
    return "; ".join(results)


# ---------------------------------------------------------------- recorded numbers (no GPU)
RUN_HEADING = "## Beyond WMMA: "


def _read(name: str) -> str:
    p = KERNELS / name
    return p.read_text() if p.is_file() else ""


def _runs() -> list[str]:
    text = _read(RECORD)
    starts = [m.start() for m in re.finditer("^" + re.escape(RUN_HEADING), text, flags=re.M)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def _rows_of(text: str, n: int) -> dict[str, dict]:
    """name -> row for every timed table row at n^3 (first occurrence of each name)."""
    out: dict[str, dict] = {}
    pat = re.compile(r"^\| ([\w\[\]=,.]+)(?: \([^|]*\))? \| %d\^3 \| yes[^|]*\| ([\d.]+) \| ([\d.]+) \| ([\d.]+)%%" % n,
                     flags=re.M)
    for m in pat.finditer(text):
        out.setdefault(m.group(1), dict(name=m.group(1), n=n, tflops=float(m.group(2)),
                                        lib_tflops=float(m.group(3)), ratio=float(m.group(4)) / 100))
    return out


def _label(text: str, name: str) -> str:
    gpu = re.search(r"NVIDIA [A-Z]\d+[\w ]*?(?= \()", text)
    date = re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", text)
    return f"recorded on {gpu.group(0) if gpu else 'a GPU'}{', ' + date.group(0) if date else ''} (kernels/{name})"


def recorded_ladder(n: int = 4096) -> tuple[list[dict], str]:
    """Rows of the newest run of kernels/RESULTS-mma.md with the most rungs; rungs no run has
    measured come back with tflops None. Without any run, notebook 06's recorded best rung
    (kernels/RESULTS-wmma.md) is the only measured bar."""
    runs = [(run, _rows_of(run, n)) for run in _runs()]
    runs = [r for r in runs if r[1]]
    if runs:
        text, found = max(reversed(runs), key=lambda r: len([k for k in r[1] if k in RUNGS]))
        source = _label(text, RECORD)
    else:
        wmma_runs = [t for t in re.split(r"(?m)^(?=## WMMA / DMMA kernels vs cuBLAS)", _read(WMMA_RECORD))
                     if BASELINE in _rows_of(t, n)]
        text = wmma_runs[-1] if wmma_runs else ""
        found = _rows_of(text, n)
        source = (_label(text, WMMA_RECORD) if text else "no record") + "; the mma.sync and wgmma rungs: no GPU run yet"
    rows = [found.get(name) or dict(name=name, n=n, tflops=None, lib_tflops=None, ratio=None) for name in RUNGS]
    return rows, source


def ladder(n: int = 4096) -> tuple[list[dict], str]:
    """(rows, source): measured now on a GPU (beside cuBLAS, paired), else recorded."""
    if not has_gpu():
        rows, source = recorded_ladder(n)
        return rows, source + "; no GPU here"
    rows = []
    base = next(r for r in bench_wmma.LADDER if r.file == BASELINE)
    candidates = [(BASELINE, base.spec(), lambda: bench_wmma._module(base.file, base.options))]
    candidates += [(r.file, r.spec(), lambda r=r: bench_mma.module_of(r)) for r in bench_mma.LADDER]
    # every rung, the Hopper one too: cannot_run() below names what this GPU lacks
    candidates.append((bench_mma.WGMMA.file, bench_mma.WGMMA.spec(), lambda: bench_mma.module_of(bench_mma.WGMMA)))
    for name, spec, make in candidates:
        why = cannot_run(name, spec.shared_mem)
        if not why and name == bench_mma.WGMMA.file:
            why = bench_mma.probe(bench_mma.WGMMA)
        if why:
            rows.append(dict(name=name, n=n, tflops=None, lib_tflops=None, ratio=None, detail=why))
            continue
        module = make()
        ok, worst, detail = bench_wmma.check_sizes(module, spec, (512,))
        if not ok:
            rows.append(dict(name=name, n=n, tflops=None, lib_tflops=None, ratio=None, detail=detail))
            continue
        t = bench_wmma.time_kernel(module, spec, n, max_seconds=1.0)
        rows.append(dict(name=name, n=n, **{k: t[k] for k in ("tflops", "lib_tflops", "ratio")}))
    if all(str(r.get("detail", "")).startswith("skipped here") for r in rows):  # a T4, a V100: the records
        recorded, source = recorded_ladder(n)
        return recorded, f"{source}; {rows[-1]['detail']} (and so on for every rung)"
    return rows, f"measured now on {device_info().name}"


def plot_ladder(rows: list[dict], source: str, extra: dict | None = None, aim: float = 0.70):
    """Each rung as its share of cuBLAS fp16 (paired: cuBLAS in the rung's own rounds = 100%);
    rungs not measured yet are drawn as empty outlines labelled so."""
    import matplotlib.pyplot as plt

    rows = list(rows) + ([extra] if extra else [])
    fig, ax = plt.subplots(figsize=(10.5, 4.8))
    for i, r in enumerate(rows):
        color = "#8c959f" if r["name"] == BASELINE else "#bf3989" if r is extra else "#0969da"
        if r.get("ratio") is None:
            ax.bar(i, 100, fill=False, ls=":", edgecolor="#8c959f")
            ax.text(i, 50, "not measured\nyet: needs\na GPU run", ha="center", va="center", fontsize=9, color="#57606a")
            continue
        pct = 100 * r["ratio"]
        ax.bar(i, pct, color=color)
        ax.text(i, pct, f"{pct:.1f}%\n{r['tflops']:.0f} TFLOP/s", ha="center", va="bottom", fontsize=10)
    ax.set_xticks(range(len(rows)), [LABELS.get(r["name"], r["name"]) for r in rows], fontsize=9)
    ax.axhline(100, color="#2da44e", ls="--")
    ax.axhline(100 * aim, color="#cf222e", ls=":")
    ax.text(len(rows) - 0.5, 100 * aim, f"aim of the mma.sync rungs: {100 * aim:.0f}%", ha="right", va="bottom",
            color="#cf222e", fontsize=9)
    ax.text(len(rows) - 0.5, 100, "cuBLAS fp16 in each rung's own rounds = 100%", ha="right", va="bottom",
            color="#2da44e", fontsize=9)
    ax.set_ylim(0, 118)
    ax.set_ylabel("% of cuBLAS fp16 (paired)")
    ax.set_title(textwrap.fill(f"Beyond WMMA at {rows[0]['n']}³, fp16 in, fp32 out — {source}", 100), fontsize=10)
    plt.tight_layout()
    plt.show()
    return fig


def recorded_fp64(n: int = 4096) -> tuple[list[dict], str]:
    """fp64 rows (WMMA m8n8k4 and mma.sync m16n8k16) of the newest run that has them; without
    one, dmma_gemm_fast from notebook 06/07's record and the new rung as not measured."""
    names = ["dmma_gemm_fast", "dmma_gemm_m16n8k16"]
    for run in reversed(_runs()):
        found = _rows_of(run, n)
        if any(k in found for k in names):
            return [found.get(k) or dict(name=k, n=n, tflops=None, ratio=None) for k in names], _label(run, RECORD)
    wmma_runs = [t for t in re.split(r"(?m)^(?=## WMMA / DMMA kernels vs cuBLAS)", _read(WMMA_RECORD))
                 if "dmma_gemm_fast" in _rows_of(t, n)]
    text = wmma_runs[-1] if wmma_runs else ""
    found = _rows_of(text, n)
    return ([found.get("dmma_gemm_fast") or dict(name="dmma_gemm_fast", n=n, tflops=None, ratio=None),
             dict(name="dmma_gemm_m16n8k16", n=n, tflops=None, ratio=None)],
            (_label(text, WMMA_RECORD) if text else "no record") + "; the m16n8k16 rung: no GPU run yet")


def fp64(n: int = 4096) -> tuple[list[dict], str]:
    why = cannot_run("dmma_gemm_m16n8k16")  # its header: Requires sm_90
    if not has_gpu() or why:
        rows, source = recorded_fp64(n)
        return rows, source + (f"; {why}" if why else "; no GPU here")
    rows = []
    for rung, make in ((bench_wmma.DMMA_FAST, lambda: bench_wmma._module(bench_wmma.DMMA_FAST.file,
                                                                           bench_wmma.DMMA_FAST.options)),
                       (bench_mma.DMMA, lambda: bench_mma.module_of(bench_mma.DMMA))):
        spec, module = rung.spec(), make()
        ok, _, detail = bench_wmma.check_sizes(module, spec, (512,))
        t = bench_wmma.time_kernel(module, spec, n, max_seconds=1.0) if ok else None
        rows.append(dict(name=rung.file, n=n, tflops=t["tflops"] if t else None, ratio=t["ratio"] if t else None))
    return rows, f"measured now on {device_info().name}"


def plot_fp64(rows: list[dict], source: str):
    import matplotlib.pyplot as plt

    labels = {"dmma_gemm_fast": "WMMA m8n8k4\n(notebook 07)", "dmma_gemm_m16n8k16": "mma.sync m16n8k16 .f64\n(sm_90)"}
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, r in enumerate(rows):
        if r.get("ratio") is None:
            ax.bar(i, 100, fill=False, ls=":", edgecolor="#8c959f")
            ax.text(i, 50, "not measured\nyet", ha="center", va="center", fontsize=9, color="#57606a")
            continue
        ax.bar(i, 100 * r["ratio"], color="#0969da" if i else "#8c959f")
        ax.text(i, 100 * r["ratio"], f"{100 * r['ratio']:.1f}%\n{r['tflops']:.1f} TFLOP/s", ha="center", va="bottom")
    ax.set_xticks(range(len(rows)), [labels[r["name"]] for r in rows])
    ax.axhline(100, color="#2da44e", ls="--")
    ax.set_ylim(0, 118)
    ax.set_ylabel("% of cuBLAS fp64 (paired)")
    ax.set_title(textwrap.fill(f"fp64 GEMM at {rows[0]['n']}³ — {source}", 70), fontsize=9)
    plt.tight_layout()
    plt.show()
    return fig


# ---------------------------------------------------------------- the student's kernel
def time_student(source: str, n: int = 4096, block_m=128, block_n=256, block_k=64, threads=256,
                 shared_mem=147456) -> dict:
    """An mma-gemm submission with the grader's -D values: checked at 512^3, then timed at n^3
    beside cuBLAS fp16 (GPU only). Raises when it is not correct."""
    from grader.runtime.gpu import GpuModule

    skipped = measuring.not_measured("timing your mma-gemm kernel")
    if skipped:
        raise skipped
    launch = dict(block_m=block_m, block_n=block_n, block_k=block_k, threads=threads, shared_mem=shared_mem)
    why = cannot_run("your mma-gemm kernel", shared_mem, min_arch=80)  # mma.sync m16n8k16 (the exercise's min_arch)
    if why:
        raise NotHere(why)
    spec = gemm_launch.student("block", launch, "mma_gemm", library="fp16", multiple=(block_m, block_n, block_k))
    module = GpuModule(source, spec.options)
    ok, _, detail = bench_wmma.check_sizes(module, spec, (512,))
    if not ok:
        raise ValueError(f"not correct yet: {detail}")
    t = bench_wmma.time_kernel(module, spec, n, max_seconds=1.0)
    return dict(name="your kernel", n=n, tflops=t["tflops"], lib_tflops=t["lib_tflops"], ratio=t["ratio"])


# ---------------------------------------------------------------- measured bank cost, ceilings
def bank_times() -> tuple[list[dict] | None, str]:
    """ldmatrix_layouts.cu per layout: measured now on a GPU, else the newest recorded run, else
    None (the plot then shows the model only)."""
    why = cannot_run("ldmatrix_layouts")
    if has_gpu() and not why:
        return measure_banks(), f"measured now on {device_info().name}"
    here = f"; {why}" if why else "; no GPU here"
    pat = re.compile(r"^\| (plain|padded|XOR-swizzled)[^|]*\| (\d+) \| yes \| ([\d.]+) ms \| ([\d.]+) \| ([\d.]+) \|", re.M)
    for run in reversed(_runs()):
        rows = [dict(layout={"plain": 0, "padded": 1, "XOR-swizzled": 2}[m.group(1)], ms=float(m.group(3)),
                     tbps=float(m.group(4))) for m in pat.finditer(run)]
        if rows:
            return rows, _label(run, RECORD) + here
    return None, "not measured yet (python -m grader.bench.mma --only banks on a GPU)" + here


def plot_bank_times(rows: list[dict] | None, source: str):
    """Passes per 8x8 read the bank model predicts, beside the measured time relative to the best."""
    import matplotlib.pyplot as plt

    names = list(LAYOUT_NAMES)
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    x = np.arange(3)
    w = 0.38 if rows else 0.6
    ax.bar(x - (w / 2 if rows else 0), [ldmatrix_passes(n) for n in names], w, color="#8c959f",
           label="predicted passes per 8x8 read (bank model)")
    if rows:
        best = min(r["ms"] for r in rows)
        ax.bar(x + w / 2, [next(r["ms"] for r in rows if r["layout"] == i) / best for i in range(3)], w,
               color="#0969da", label="measured time / best (ldsm_layout)")
    ax.set_xticks(x, [LAYOUT_NAMES[n] for n in names])
    ax.set_ylabel("x slower than conflict-free")
    ax.set_title(textwrap.fill(f"ldmatrix.x4 from a 64 x 64 fp16 tile — {source}", 80), fontsize=9)
    ax.legend(fontsize=8)
    plt.tight_layout()
    plt.show()
    return fig


def ceilings(niters=(1, 16, 256, 1024, 4096)) -> tuple[dict[str, list[tuple[int, float]]], str]:
    """Register-only TFLOP/s against niter: mma.sync m16n8k16 (8 accumulators) beside WMMA
    m16n16k16 (4 accumulators, notebook 06). Measured now on a GPU, else recorded."""
    why = cannot_run("mma_peak_niter")
    if has_gpu() and not why:
        curves: dict[str, list[tuple[int, float]]] = {}

        def collect(label):
            return lambda nacc, check, cells: curves.setdefault(label, list(zip(niters, map(float, cells))))
        info = device_info()
        blocks = 16 * info.sm_count
        m = bench_wmma._module("mma_peak_niter", ("-DNACC=8",))
        bench_mma._peak(m, "mma_peak_niter", np.float16, 16, niters, blocks, 256, 8, collect("mma.sync m16n8k16"))
        from grader.lessons.fast_gemm import measure_niter

        curves["WMMA m16n16k16 (notebook 06)"] = measure_niter(niters)
        return curves, f"measured now on {info.name}"
    curves = {}
    source = ""
    pat = re.compile(r"^\| mma m16n8k16 f16->f32 \| 8 \| ok \| (.*) \|$", re.M)
    for run in reversed(_runs()):
        m = pat.search(run)
        if m:
            heads = re.search(r"\| kernel \| NACC \| check \(niter=5\) \| (.*) \|", run).group(1)
            ns = [int(h.split()[1]) for h in heads.split(" | ")]
            curves["mma.sync m16n8k16"] = list(zip(ns, map(float, m.group(1).split(" | "))))
            source = _label(run, RECORD)
            break
    from grader.lessons.fast_gemm import recorded_gpu, recorded_niter

    curves["WMMA m16n16k16 (notebook 06)"] = recorded_niter()
    if not source:
        source = f"WMMA recorded on {recorded_gpu()} (kernels/RESULTS-wmma.md); mma.sync: no GPU run yet"
    return curves, source + (f"; {why}" if why else "; no GPU here")


def plot_ceilings(curves: dict[str, list[tuple[int, float]]], source: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.8, 3.6))
    for (label, pts), color in zip(curves.items(), ("#0969da", "#8c959f")):
        x, y = zip(*pts)
        ax.plot(x, y, "o-", color=color, label=label)
        ax.annotate(f"{y[-1]:.0f}", (x[-1], y[-1]), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tensor-core instructions per fragment load (niter)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(textwrap.fill(f"Registers only: the ceiling of each instruction — {source}", 75), fontsize=9)
    ax.legend(fontsize=8)
    plt.tight_layout()
    plt.show()
    return fig
