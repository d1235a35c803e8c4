"""Notebook 07 (other precisions): TF32, BF16 and FP64 tensor cores beside fp16 and fp32.

- the formats (bits, unit roundoff, range) from their definitions;
- rounding helpers NumPy lacks (fp32 -> bf16 bits, fp32 -> tf32, both round-to-nearest-even);
- accuracy against float64 as K grows, on any backend (the CPU emulator at small K);
- speed of each naive kernel against the cuBLAS routine of the same precision (GPU).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np

from grader.problems import numerics

# The kernels' table and input rounding live with the other references (the cross-check uses
# them too); the lesson and notebook 07 reach them through this module.
from grader.problems.precisions import (  # noqa: F401
    KERNELS,
    Kernel,
    bf16_to_float,
    round_tf32,
    stored_inputs,
    to_bf16_bits,
    truncate_tf32,
)
from grader.runtime import backend, kernels
from grader.runtime.device import device_info


# ---------------------------------------------------------------- formats
@dataclass(frozen=True)
class Format:
    name: str
    exponent_bits: int
    mantissa_bits: int  # explicit fraction bits
    wmma: str  # WMMA shape and accumulator, "" for none
    min_arch: str
    use: str

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def unit_roundoff(self) -> float:
        return 2.0 ** -(self.mantissa_bits + 1)

    @property
    def max(self) -> float:
        bias = 2 ** (self.exponent_bits - 1) - 1
        return (2 - 2.0 ** -self.mantissa_bits) * 2.0 ** bias

    @property
    def min_normal(self) -> float:
        return 2.0 ** (2 - 2 ** (self.exponent_bits - 1))


FORMATS = [
    Format("fp64", 11, 52, "m8n8k4, fp64 accumulate (DMMA)", "sm_80",
           "science and engineering that needs IEEE double: solvers, simulations"),
    Format("fp32", 8, 23, "none (CUDA cores)", "-", "the default of most code; no tensor cores"),
    Format("tf32", 8, 10, "m16n16k8, fp32 accumulate", "sm_80",
           "fp32 matrix products (training) at tensor-core speed: fp32 range, fp16 precision"),
    Format("bf16", 8, 7, "m16n16k16 (+m32n8k16, m8n32k16), fp32 accumulate", "sm_80",
           "training and inference: fp32 range (no loss scaling), 8 bits of precision"),
    Format("fp16", 5, 10, "m16n16k16 (+m32n8k16, m8n32k16), fp16 or fp32 accumulate", "sm_70",
           "inference and mixed-precision training (with loss scaling): small range"),
]


def format_rows() -> list[dict]:
    return [dict(format=f.name, bits=f.bits, exponent=f.exponent_bits, mantissa=f.mantissa_bits,
                 unit_roundoff=f"{f.unit_roundoff:.1e}", max=f"{f.max:.2e}", min_normal=f"{f.min_normal:.1e}",
                 tensor_cores=f.wmma, since=f.min_arch, for_=f.use) for f in FORMATS]


_modules: dict = {}


def module(k: Kernel, backend_name: str = "auto"):
    key = (k.file, k.options, backend_name)
    if key not in _modules:
        _modules[key] = backend.load(kernels.source(k.file), backend_name, k.options)
    return _modules[key]


def run(k: Kernel, A64: np.ndarray, B64: np.ndarray, backend_name: str = "auto") -> np.ndarray:
    """C (float64 copy) of kernel k on the given float64 inputs, rounded as k stores them."""
    m = module(k, backend_name)
    xp = m.xp
    (a, b), _ = stored_inputs(k, A64, B64)
    M, K = A64.shape
    N = B64.shape[1]
    spec = k.spec()
    C = xp.full((M, N), np.nan, dtype=spec.out_dtype)
    m.launch(spec.kernel, spec.grid(M, N, K), spec.block, [xp.asarray(a), xp.asarray(b), C, M, N, K])
    return (C.get() if hasattr(C, "get") else C).astype(np.float64)


def check(k: Kernel, M=32, N=32, K=64, backend_name: str = "auto") -> numerics.Comparison:
    """k against the float64 product of the inputs it really multiplied."""
    rng = np.random.default_rng(secrets.randbits(32))
    A64, B64 = rng.uniform(-1, 1, (M, K)), rng.uniform(-1, 1, (K, N))
    C = run(k, A64, B64, backend_name)
    _, (a, b) = stored_inputs(k, A64, B64)
    bound = numerics.gemm_bound(np.abs(a) @ np.abs(b), K, accumulate=k.spec().accumulate)
    return numerics.compare(C, a @ b, bound)


# ---------------------------------------------------------------- accuracy vs K
def accuracy(Ks, M: int = 32, N: int = 32, seed: int = 0, backend_name: str = "auto",
             which=None) -> dict[str, dict]:
    """For each kernel and K: worst componentwise error, relative to (|A||B|)_ij, of
    - total: C vs the exact float64 product of the ORIGINAL float64 data (U(0,1)),
    - accumulation: C vs the float64 product of the inputs as the kernel rounded them.
    Returns {label: dict(K=[...], total=[...], accumulation=[...], kernel=Kernel)}."""
    rng = np.random.default_rng(seed)
    out = {k.label: dict(K=[], total=[], accumulation=[], kernel=k) for k in (which or KERNELS)}
    for K in Ks:
        A64, B64 = rng.uniform(0, 1, (M, K)), rng.uniform(0, 1, (K, N))
        exact, scale = A64 @ B64, np.abs(A64) @ np.abs(B64)
        for k in (which or KERNELS):
            C = run(k, A64, B64, backend_name)
            _, (a, b) = stored_inputs(k, A64, B64)
            seen = a @ b
            r = out[k.label]
            r["K"].append(K)
            r["total"].append(float(np.max(np.abs(C - exact) / scale)))
            r["accumulation"].append(float(np.max(np.abs(C - seen) / scale)))
    return out


def plot_accuracy(res: dict, where: str):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.8), sharey=True)
    floor = 1e-18
    for label, r in res.items():
        k = r["kernel"]
        style = "--" if "truncated" in label else "-"
        for ax, key in zip(axes, ("total", "accumulation")):
            ax.plot(r["K"], np.maximum(r[key], floor), style, marker="o", ms=4, color=k.color, label=label)
    units = [f for f in FORMATS if f.name in ("fp16", "bf16", "fp64")]
    for ax in axes:
        for f in units:
            ax.axhline(f.unit_roundoff, color="#d0d7de", lw=1, zorder=0)
    axes[0].set_title("total: vs exact float64 product\nof the original data", fontsize=11)
    axes[1].set_title("accumulation only: vs float64 product\nof the rounded inputs", fontsize=11)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("K (length of each dot product)", fontsize=11)
        ax.tick_params(labelsize=10)
    axes[0].set_ylabel("max |C - ref| / (|A||B|)", fontsize=11)
    # the unit roundoffs named in the right margin, off the curves
    right = axes[1].twinx()
    right.set_yscale("log")
    right.set_ylim(axes[1].get_ylim())
    right.set_yticks([f.unit_roundoff for f in units], [f"u({f.name})" for f in units])
    right.yaxis.set_minor_locator(NullLocator())
    right.tick_params(labelsize=10, colors="#57606a", length=0)
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=10, frameon=False)
    fig.suptitle(f"Accuracy vs K, U(0,1) data — {where}", fontsize=12)
    plt.tight_layout(rect=(0, 0.1, 1, 1))
    plt.show()


# ---------------------------------------------------------------- cuBLAS of each precision
def _cublas_gemm_ex(A, B, C, a_type: int, c_type: int, compute: int):
    """Row-major C = A B through cublasGemmEx (column-major: C^T = B^T A^T)."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    M, K = A.shape
    N = B.shape[1]
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    cublas.gemmEx(handle, 0, 0, N, M, K, one.ctypes.data, B.data.ptr, a_type, N, A.data.ptr, a_type, K,
                  zero.ctypes.data, C.data.ptr, c_type, N, compute, -1)


CUDA_R_32F, CUDA_R_16BF = 0, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77


def library(kind: str, A64, B64):
    """(fn, C): a no-argument function running the cuBLAS GEMM of precision `kind` on A64, B64
    (fp16 and fp64 through cupy.matmul; fp32 plain; tf32 and bf16 through cublasGemmEx)."""
    import cupy

    M, N = A64.shape[0], B64.shape[1]
    if kind in ("fp16", "fp32", "fp64"):
        dt = {"fp16": cupy.float16, "fp32": cupy.float32, "fp64": cupy.float64}[kind]
        A, B = cupy.asarray(A64, dtype=dt), cupy.asarray(B64, dtype=dt)
        C = cupy.empty((M, N), dtype=dt)
        return (lambda: cupy.matmul(A, B, out=C)), C
    if kind == "tf32":
        A, B = cupy.asarray(A64, dtype=cupy.float32), cupy.asarray(B64, dtype=cupy.float32)
        C = cupy.empty((M, N), dtype=cupy.float32)
        return (lambda: _cublas_gemm_ex(A, B, C, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32)), C
    if kind == "bf16":
        A = cupy.asarray(to_bf16_bits(np.asarray(A64, np.float32)))
        B = cupy.asarray(to_bf16_bits(np.asarray(B64, np.float32)))
        C = cupy.empty((M, N), dtype=cupy.float32)
        return (lambda: _cublas_gemm_ex(A, B, C, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F)), C
    raise ValueError(kind)


def library_error(kind: str, n: int = 256, K: int = 4096) -> float:
    """Worst componentwise error of cuBLAS `kind` vs the exact float64 product, relative to
    (|A||B|), on U(0,1) data: shows the library really ran in that precision."""
    rng = np.random.default_rng(1)
    A64, B64 = rng.uniform(0, 1, (n, K)), rng.uniform(0, 1, (K, n))
    fn, C = library(kind, A64, B64)
    fn()
    return float(np.max(np.abs(C.get().astype(np.float64) - A64 @ B64) / (A64 @ B64)))


def speed(n: int = 4096, extra=("wmma_gemm_swizzle", "dmma_gemm_fast")) -> list[dict]:
    """TFLOP/s of every kernel of KERNELS (tf32 rounded only) and of the fast fp16/fp64
    kernels, each beside the cuBLAS routine of its precision, at n^3 (GPU)."""
    import cupy

    from grader.bench import wmma as bench_wmma
    from grader.runtime.timing import benchmark

    rng = np.random.default_rng(0)
    A64, B64 = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, (n, n))
    flops = 2.0 * n ** 3
    lib_cache, rows = {}, []

    def lib(kind):
        if kind not in lib_cache:
            try:
                lib_cache[kind] = benchmark(library(kind, A64, B64)[0], max_seconds=1.0).tflops(flops)
            except Exception as e:  # noqa: BLE001 - report, do not stop the notebook
                print(f"cuBLAS {kind}: could not run ({type(e).__name__}: {e})")
                lib_cache[kind] = float("nan")
        return lib_cache[kind]

    for k in KERNELS:
        if k.prepare == "tf32t":
            continue
        m = module(k, "gpu")
        (a, b), _ = stored_inputs(k, A64, B64)
        spec = k.spec()
        C = cupy.empty((n, n), dtype=spec.out_dtype)
        fn = m.bind(spec.kernel, spec.grid(n, n, n), spec.block, [cupy.asarray(a), cupy.asarray(b), C, n, n, n])
        t = benchmark(fn, max_seconds=1.0).tflops(flops)
        rows.append(dict(label=k.label.split(" (")[0], kernel=k.file, precision=k.library, tflops=t,
                         lib_tflops=lib(k.library), color=k.color))
    for name in extra:
        r = bench_wmma.DMMA_FAST if name.startswith("dmma") else bench_wmma.Rung(name, name)
        spec = r.spec()
        m = bench_wmma._module(name, spec.options)
        kind = "fp64" if name.startswith("dmma") else "fp16"
        (a, b) = (A64, B64) if kind == "fp64" else (A64.astype(np.float16), B64.astype(np.float16))
        C = cupy.empty((n, n), dtype=spec.out_dtype)
        fn = m.bind(spec.kernel, spec.grid(n, n, n), spec.block, [cupy.asarray(a), cupy.asarray(b), C, n, n, n],
                    shared_mem=spec.shared_mem)
        t = benchmark(fn, max_seconds=1.0).tflops(flops)
        rows.append(dict(label=f"{kind} fast ({name})", kernel=name, precision=kind, tflops=t,
                         lib_tflops=lib(kind), color="#0550ae" if kind == "fp16" else "#116329"))
    for row in rows:
        row["ratio"] = row["tflops"] / row["lib_tflops"]
    return rows


def dmma_ceiling(niter: int = 4096, threads: int = 256) -> float:
    """TFLOP/s of dmma_peak_niter (4 accumulators): the most WMMA m8n8k4 gives here."""
    import cupy

    from grader.bench import wmma as bench_wmma
    from grader.runtime.timing import benchmark

    blocks = 16 * device_info().sm_count
    W = blocks * threads // 32
    m = bench_wmma._module("dmma_gemm_peak_niter")
    A = cupy.ones(W * 32)
    C = cupy.empty(W * 64)
    t = benchmark(m.bind("dmma_peak_niter", (blocks, 1, 1), (threads, 1, 1), [A, A, C, niter]), max_seconds=1.0)
    return t.tflops(W * niter * 2.0 * 8 * 8 * 4)


def plot_speed(rows: list[dict], n: int, ceiling: float | None = None):
    """Each kernel (bar, labelled with its % of the cuBLAS bar beside it) and cuBLAS of its own
    precision (bar, labelled with its TFLOP/s). Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12.5, 5.5))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["tflops"] for r in rows], 0.4, color=[r["color"] for r in rows], label="our kernel")
    ax.bar(x + 0.2, [r["lib_tflops"] for r in rows], 0.4, color="#d0d7de", edgecolor="#57606a",
           label="cuBLAS, same precision")
    for i, r in enumerate(rows):
        box = dict(facecolor="white", edgecolor="none", pad=1, alpha=0.85)  # readable over the ceiling line
        ax.text(i - 0.2, r["tflops"], f"{100 * r['ratio']:.0f}%", ha="center", va="bottom", fontsize=10, bbox=box,
                zorder=4)
        ax.text(i + 0.2, r["lib_tflops"], f"{r['lib_tflops']:.0f}", ha="center", va="bottom", fontsize=10, bbox=box,
                zorder=4)
    if ceiling:  # named in the legend: a label on the line would sit on the bars
        ax.axhline(ceiling, color="#2da44e", ls=":", lw=1.5, zorder=3,
                   label=f"fp64 ceiling of WMMA m8n8k4: {ceiling:.0f} TFLOP/s")
    ax.set_yscale("log")
    top = max([r["lib_tflops"] for r in rows] + [r["tflops"] for r in rows])
    ax.set_ylim(top=top * 8)  # room for the legend above the tallest bar
    def tick(label: str) -> str:  # at most ~12 characters a line, so neighbours do not touch at 10 pt
        label = label.replace(" tensor cores", "\ntensor cores").replace(" fast (", "\nfast\n(")
        return label.replace("_gemm_", "_gemm_\n") if "(" in label else label

    ax.set_xticks(x, [tick(r["label"]) for r in rows], fontsize=10)
    ax.tick_params(axis="y", labelsize=10)
    ax.set_ylabel("TFLOP/s (log)", fontsize=11)
    ax.set_title(f"Each kernel beside cuBLAS of its own precision, {n}³, {device_info().name}\n"
                 "(labels: our kernel as % of that cuBLAS; cuBLAS in TFLOP/s)", fontsize=11)
    ax.legend(fontsize=10, loc="upper center", ncol=3, frameon=False)
    plt.tight_layout()
    plt.show()
    return fig


def plot_formats():
    """Sign, exponent and mantissa bits of each format, to scale."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.4))
    for y, f in enumerate(reversed(FORMATS)):
        x = 0
        for width, color, name in ((1, "#cf222e", "sign"), (f.exponent_bits, "#0969da", "exponent"),
                                   (f.mantissa_bits, "#2da44e", "mantissa")):
            ax.barh(y, width, left=x, color=color, edgecolor="white", label=name if y == 0 else None)
            if width > 2:
                ax.text(x + width / 2, y, str(width), ha="center", va="center", color="white", fontsize=10)
            x += width
        ax.text(x + 0.7, y, f"u = {f.unit_roundoff:.0e}, max {f.max:.0e}", va="center", fontsize=10)
    ax.set_yticks(range(len(FORMATS)), [f.name for f in reversed(FORMATS)], fontsize=11)
    ax.tick_params(axis="x", labelsize=10)
    ax.set_xlim(0, 90)
    ax.set_xlabel("bits", fontsize=11)
    ax.legend(fontsize=10, loc="lower right")
    ax.set_title("The formats: exponent bits give range, mantissa bits give precision\n(u = unit roundoff)",
                 fontsize=11)
    plt.tight_layout()
    plt.show()
