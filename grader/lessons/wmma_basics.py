"""Plumbing for notebook 04 (WMMA basics): the one-tile demo, the leading-dimension picture,
the zero-padding picture, the column-major kernel, and the timing sweep of the naive WMMA
GEMM beside the CUDA-core kernels of notebook 03 and cuBLAS."""
from __future__ import annotations

import secrets
from functools import lru_cache

import numpy as np

from grader.problems import gemm, gemm_launch, numerics
from grader.runtime import kernels


@lru_cache(maxsize=None)
def module(name: str, backend: str = "auto", options: tuple[str, ...] = ()):
    """kernels/<name>.cu compiled for `backend` (cached)."""
    from grader.runtime.backend import load

    return load(kernels.source(name), backend, options)


def _seed() -> int:
    return secrets.randbits(32)


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


# ------------------------------------------------------------------------ one tile
def one_tile(backend: str = "auto", seed: int | None = None) -> dict:
    """D = A B + C for one 16x16x16 tile (kernels/wmma_one_tile.cu) on fresh U(-1,1) data,
    compared to the float64 product of the same fp16 inputs."""
    m = module("wmma_one_tile", backend)
    xp = m.xp
    rng = np.random.default_rng(_seed() if seed is None else seed)
    A = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    B = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    C = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    D = xp.full((16, 16), np.nan, dtype=np.float32)
    m.launch("wmma_one_tile", (1, 1, 1), (32, 1, 1), [xp.asarray(A), xp.asarray(B), xp.asarray(C), D])
    ref = A.astype(np.float64) @ B.astype(np.float64) + C
    D = _host(D)
    return dict(A=A, B=B, C=C, D=D, ref=ref, max_err=float(np.abs(D - ref).max()), backend=m.backend)


def loaded_tile(lda: int, backend: str = "auto") -> np.ndarray:
    """Which elements of a 16 x 32 row-major A does load_matrix_sync(a, A, lda) put in the
    16x16 tile? A[r, c] = 32 r + c and B = I, so D = the loaded tile, as indices into A."""
    m = module("wmma_one_tile", backend)
    xp = m.xp
    A = np.arange(16 * 32, dtype=np.float16)  # exact: integers below 2048
    I = np.eye(16, dtype=np.float16)
    D = xp.full((16, 16), np.nan, dtype=np.float32)
    m.launch("wmma_one_tile_ld", (1, 1, 1), (32, 1, 1), [xp.asarray(A), xp.asarray(I), D, lda])
    return _host(D).astype(np.int64)


def plot_ldm(lda: int = 32, backend: str = "auto"):
    """Left: A (16 x 32, row-major) with the elements the fragment loaded coloured by the row
    of the tile they landed in; the intended tile (A[:, :16]) outlined. Right: the tile."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    tile = loaded_tile(lda, backend)
    right = int((tile == np.arange(16)[:, None] * 32 + np.arange(16)).sum())
    grid = np.full((16, 32), np.nan)
    for r in range(16):
        for c in range(16):
            v = tile[r, c]
            if 0 <= v < 512:
                grid[v // 32, v % 32] = r
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.2), gridspec_kw=dict(width_ratios=[2, 1]))
    ax0.imshow(grid, cmap="viridis", vmin=0, vmax=15)
    ax0.add_patch(Rectangle((-0.5, -0.5), 16, 16, fill=False, ec="red", lw=2))
    ax0.set_title(f"A, 16 x 32 row-major: elements loaded with ldm = {lda}\n(colour = tile row they "
                  "land in; red: the tile we wanted)", fontsize=9)
    ax0.set_xlabel("column of A")
    ax0.set_ylabel("row of A")
    ax0.set_xticks([0, 8, 16, 24, 31])
    ax0.set_yticks([0, 8, 15])
    ax1.set_xticks([0, 8, 15])
    ax1.set_yticks([0, 8, 15])
    ax1.set_xlabel("tile column")
    ax1.imshow(tile // 32, cmap="viridis", vmin=0, vmax=15)
    ax1.set_title(f"the tile: row of A each element came from\n{right}/256 elements right", fontsize=9)
    plt.tight_layout()
    plt.show()
    return right


# ------------------------------------------------------------------------ padding
def padded_shape(M: int, N: int, K: int, multiple: int = 16) -> tuple[int, int, int]:
    up = lambda x: -(-x // multiple) * multiple  # noqa: E731
    return up(M), up(N), up(K)


def pad(X: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """X in the top-left corner of a rows x cols zero matrix."""
    out = np.zeros((rows, cols), dtype=X.dtype)
    out[:X.shape[0], :X.shape[1]] = X
    return out


def plot_padding(M: int = 33, N: int = 40, K: int = 20):
    """C (M x N) on the 16 x 16 tile grid: full tiles, partial tiles (padded with zeros), and
    the fraction of the padded work that is wasted."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    Mp, Np, Kp = padded_shape(M, N, K)
    fig, ax = plt.subplots(figsize=(5, 5 * Mp / max(Np, 1) if Np else 4))
    for tr in range(0, Mp, 16):
        for tc in range(0, Np, 16):
            partial = tr + 16 > M or tc + 16 > N
            ax.add_patch(Rectangle((tc, tr), 16, 16, facecolor="#ffd8b5" if partial else "#c8e6c9",
                                   edgecolor="black", lw=1))
    ax.add_patch(Rectangle((0, 0), N, M, fill=False, ec="#0969da", lw=2.5, hatch="//", alpha=0.6))
    ax.set_xlim(0, Np)
    ax.set_ylim(Mp, 0)
    ax.set_aspect("equal")
    waste = 1 - (M * N * K) / (Mp * Np * Kp)
    ax.set_title(f"C is {M} x {N} (blue), K = {K}: padded to {Mp} x {Np}, K = {Kp}\n"
                 f"green: full tiles, orange: partial tiles; {100 * waste:.0f}% of the "
                 "tensor-core work multiplies zeros", fontsize=9)
    plt.tight_layout()
    plt.show()
    return waste


# ------------------------------------------------------------------------ column-major
def colmajor(M: int, N: int, K: int, alpha: float, beta: float, backend: str = "auto",
             seed: int | None = None) -> dict:
    """Run kernels/wmma_gemm_colmajor.cu (the CUDA 9 post's kernel) on column-major data:
    C = alpha A B + beta C. A column-major M x K matrix is the row-major K x M matrix A.T."""
    m = module("wmma_gemm_colmajor", backend)
    xp = m.xp
    rng = np.random.default_rng(_seed() if seed is None else seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    C = rng.uniform(-1, 1, (M, N)).astype(np.float32)
    col = lambda X: xp.asarray(np.ascontiguousarray(X.T))  # noqa: E731  column-major storage
    a, b, c = col(A), col(B), col(C)
    spec = gemm_launch.wmma_colmajor()
    m.launch(spec.kernel, spec.grid(M, N, K), spec.block, [a, b, c, M, N, K, alpha, beta])
    out = _host(c).T  # back to the logical M x N matrix
    ref = alpha * (A.astype(np.float64) @ B.astype(np.float64)) + beta * C
    bound = numerics.gemm_bound(np.abs(alpha) * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))),
                                K) + 1e-6 * abs(beta)
    ok = bool(np.all(np.abs(out - ref) <= bound))
    return dict(C=out, ref=ref, max_err=float(np.abs(out - ref).max()), ok=ok, backend=m.backend)


# ------------------------------------------------------------------------ timing sweep
def _student_ok(source: str) -> bool:
    """Does the student's wmma_gemm pass the check of the exercise the naive WMMA kernel solves
    (wmma-gemm)? (It runs in a child process, so a crashing kernel cannot poison this notebook's
    GPU context.)"""
    from grader.checking import exercises
    from grader.checking.check import check

    try:
        return check(exercises.solved_by("wmma_gemm_naive").id, source).correct
    except Exception:
        return False


def sweep(sizes=(256, 512, 1024, 2048, 4096), student_source: str | None = None,
          max_seconds: float = 0.3) -> dict:
    """TFLOP/s of each kernel at n x n x n on this GPU: the CUDA-core kernels of notebook 03,
    the naive WMMA GEMM (and the student's, if it is correct), cuBLAS fp32 and fp16.
    Every kernel is checked at 256^3 before it is timed."""
    import cupy

    from grader.runtime.backend import load
    from grader.runtime.timing import benchmark

    entries = [("CUDA cores: naive fp32 (03)", "sgemm_naive", gemm_launch.sgemm_naive()),
               ("CUDA cores: tiled fp32 (03)", "sgemm_tiled", gemm_launch.sgemm_tiled(32)),
               ("tensor cores: naive WMMA (04)", "wmma_gemm_naive", gemm_launch.wmma_naive())]
    runs = []
    for label, name, spec in entries:
        m = module(name, "gpu", spec.options)
        if not gemm.run_once(m, spec, 256, 256, 256, seed=_seed()).comparison.ok:
            raise RuntimeError(f"{name} gave a wrong result: not timed")
        runs.append((label, m, spec))
    if student_source is not None and _student_ok(student_source):
        runs.append(("your WMMA kernel", load(student_source, "gpu"), gemm_launch.wmma_naive()))
    out = {"sizes": list(sizes), "tflops": {}}
    for label, m, spec in runs:
        out["tflops"][label] = []
        for n in sizes:
            A, B = gemm.random_inputs(n, n, n, spec.in_dtype, 0, cupy)
            C = cupy.zeros((n, n), dtype=spec.out_dtype)
            fn = m.bind(spec.kernel, spec.grid(n, n, n), spec.block, [A, B, C, n, n, n])
            t = benchmark(fn, working_set_bytes=A.nbytes + B.nbytes + C.nbytes, max_seconds=max_seconds)
            out["tflops"][label].append(t.tflops(2.0 * n ** 3))
    for label, dtype in (("cuBLAS fp32", "float32"), ("cuBLAS fp16 (tensor cores)", "float16")):
        out["tflops"][label] = []
        for n in sizes:
            A, B = gemm.random_inputs(n, n, n, dtype, 0, cupy)
            C = cupy.empty((n, n), dtype=dtype)
            t = benchmark(lambda: cupy.matmul(A, B, out=C), working_set_bytes=3 * A.nbytes,
                          max_seconds=max_seconds)
            out["tflops"][label].append(t.tflops(2.0 * n ** 3))
    return out


STYLE = {"CUDA cores: naive fp32 (03)": ("#8c959f", "o--"), "CUDA cores: tiled fp32 (03)": ("#57606a", "s--"),
         "tensor cores: naive WMMA (04)": ("#2da44e", "D-"), "your WMMA kernel": ("#bf3989", "x:"),
         "cuBLAS fp32": ("#0969da", "^--"), "cuBLAS fp16 (tensor cores)": ("#8250df", "v-")}


def recorded_4096() -> tuple[dict, str]:
    """TFLOP/s at 4096^3 of the kernels `sweep` times, from notebook 09's saved GPU run
    (kernels/capstone-results-*.json), for machines without a GPU: ({label: TFLOP/s}, provenance)."""
    from grader.lessons.capstone import load

    res = load()
    if not res:
        return {}, ""
    files = {"sgemm_naive": "CUDA cores: naive fp32 (03)", "sgemm_tiled": "CUDA cores: tiled fp32 (03)",
             "wmma_gemm_naive": "tensor cores: naive WMMA (04)"}
    t = {files[k["kernel"]]: k["flops"] / k["ms"] / 1e9 for k in res["roofline"]["kernels"]
         if k["kernel"] in files and k["size"] == "4096^3"}
    ms = res["salerno"]["ms"].get("4096", {})
    for label, key in (("cuBLAS fp32", "cublas_fp32"), ("cuBLAS fp16 (tensor cores)", "cublas_fp16")):
        if key in ms:
            t[label] = 2.0 * 4096 ** 3 / ms[key] / 1e9
    m = res["meta"]
    return t, f"recorded on {m['gpu']}, {m['date']} (kernels/{m['loaded_from']})"


def plot_bars(tflops: dict, title: str):
    """Horizontal bars of TFLOP/s (log scale), each with its % of cuBLAS fp16."""
    import matplotlib.pyplot as plt

    labels = list(tflops)
    vals = [tflops[k] for k in labels]
    ref = tflops.get("cuBLAS fp16 (tensor cores)")
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(labels) + 1.3))
    y = np.arange(len(labels))[::-1]
    ax.barh(y, vals, color=[STYLE.get(k, ("black",))[0] for k in labels])
    for yy, v in zip(y, vals):
        ax.text(v, yy, f" {v:.1f}" + (f"  ({100 * v / ref:.1f}% of cuBLAS fp16)" if ref else ""),
                va="center", fontsize=10)
    ax.set_yticks(y, labels, fontsize=10)
    ax.set_xscale("log")
    ax.set_xlim(right=max(vals) * 300)  # room for the labels
    ax.set_xlabel("TFLOP/s at 4096³  (2 n³ / time, log scale)")
    ax.set_title(title, fontsize=10)
    plt.tight_layout()
    plt.show()
    return fig


def plot_sweep(result: dict, device: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, ys in result["tflops"].items():
        color, fmt = STYLE.get(label, ("black", "o-"))
        ax.plot(result["sizes"], ys, fmt, color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(result["sizes"], [str(n) for n in result["sizes"]])
    ax.set_xlabel("n  (C = A B, all n x n)")
    ax.set_ylabel("TFLOP/s  (2 n³ / time)")
    ax.set_title(f"GEMM on {device}, measured now", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    plt.tight_layout()
    plt.show()
