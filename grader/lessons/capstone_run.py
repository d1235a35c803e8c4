"""Notebook 09's measurement (grader.lessons.capstone.run): every GEMM, the TVM workloads and
the roofline's ceilings timed on this GPU, each course kernel checked for correctness on the GPU
before it is timed; and the run's description (GPU, driver, host) that labels it wherever shown."""
from __future__ import annotations

import datetime
import platform
import secrets
import time
from pathlib import Path

import numpy as np

from grader.problems import conv, gemm, gemm_launch
from grader.runtime import kernels
from grader.runtime.device import cannot_run

SALERNO_SIZES = (1024, 2048, 4096, 8192, 16384)


# ----------------------------------------------------------------------------- progress

class Progress:
    """A progress bar (ipywidgets) plus one printed line per step, so a headless run's log
    shows where it is too."""

    def __init__(self, total: int, label: str = ""):
        self.total, self.done, self.t0 = total, 0, time.time()
        self.bar = None
        try:
            import ipywidgets as widgets
            from IPython import get_ipython
            from IPython.display import display

            if get_ipython() is not None:
                self.bar = widgets.IntProgress(min=0, max=total, description=label[:20])
                self.text = widgets.Label()
                display(widgets.HBox([self.bar, self.text]))
        except ImportError:
            pass

    def step(self, what: str):
        self.done += 1
        line = f"[{self.done}/{self.total}] {time.time() - self.t0:5.1f} s  {what}"
        if self.bar is not None:
            self.bar.value = min(self.done, self.total)
            self.text.value = what
        print(line, flush=True)


# ----------------------------------------------------------------------------- timing

def _time_gpu(fn, budget_s: float = 0.6, ws_bytes: int | None = None) -> float:
    """Median ms of `fn` (GPU work). Short kernels go through grader.runtime.timing.benchmark;
    a long one (>= 20 ms) is timed a few times with CUDA events, at least once."""
    import cupy

    from grader.runtime.timing import benchmark

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    fn()
    end.record()
    end.synchronize()
    first = cupy.cuda.get_elapsed_time(start, end)
    if first < 20:
        return benchmark(fn, working_set_bytes=ws_bytes, max_seconds=budget_s).median_ms
    reps = int(max(1, min(5, budget_s * 1e3 / first)))
    samples = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end))
    return float(np.median(samples))


def _time_cpu(fn, reps: int) -> float:
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return float(np.median(samples))


# ----------------------------------------------------------------------------- kernels

def _module(name, options=()):
    from grader.bench.conv import module

    return module(name, tuple(options))


def sgemm_specs() -> dict:
    """CUDA-core SGEMM kernels of the course present in kernels/ (name -> GemmSpec)."""
    specs = {"sgemm_naive": gemm_launch.sgemm_naive(), "sgemm_tiled": gemm_launch.sgemm_tiled(32)}
    for name in ("sgemm_regblock", "sgemm_regblock_db"):  # 128x128 tiles, 256 threads
        if (kernels.KERNELS_DIR / f"{name}.cu").is_file():
            specs[name] = gemm_launch.sgemm_regblock()
    return specs


def wmma_specs() -> dict:
    from grader.bench.wmma import DMMA_FAST, LADDER, dmma_naive

    out = {"wmma_gemm_naive": (gemm_launch.wmma_naive(), ())}
    for r in LADDER:
        out[r.file] = (r.spec(), r.options)
    out["dmma_gemm_naive"] = (dmma_naive(), ())
    out["dmma_gemm_fast"] = (DMMA_FAST.spec(), DMMA_FAST.options)
    return out


# the tensor-core GEMM of the Salerno and TVM tables: the first of these this GPU runs
TENSOR_CORE_KERNELS = ("wmma_gemm_swizzle", "wmma_gemm_async", "wmma_gemm_padded", "wmma_gemm_warptile",
                       "wmma_gemm_smem", "wmma_gemm_naive")


def _checked(name, spec, options=(), n=512) -> object | None:
    """The compiled module, after a correctness check at n^3 on fresh inputs (None if wrong)."""
    mod = _module(name, options or spec.options)
    run = gemm.run_once(mod, spec, n, n, n, seed=secrets.randbits(31))
    return mod if run.comparison.ok else None


def check_kernels(sg: dict, wm: dict, step=lambda what: None) -> tuple[dict, dict]:
    """({name: (module or None, spec)}, {name: why skipped}): every GEMM kernel checked once,
    those this GPU cannot run (arch, shared memory) skipped with the line that says why."""
    mods, skipped = {}, {}
    for name, (spec, opts) in [(k, (s, ())) for k, s in sg.items()] + list(wm.items()):
        why = cannot_run(name, spec.shared_mem)
        if why:
            skipped[name] = why
        mods[name] = (None if why else _checked(name, spec, opts), spec)
        step(why or f"checked {name}: {'correct' if mods[name][0] else 'WRONG (not timed)'}")
    return mods, skipped


def tensor_core_kernel(mods: dict) -> str:
    """wmma_gemm_swizzle, else the highest rung below it this GPU runs (a T4 lacks its shared memory)."""
    return next((k for k in TENSOR_CORE_KERNELS if mods.get(k, (None,))[0] is not None), TENSOR_CORE_KERNELS[-1])


def _time_spec(mod, spec, n, budget_s=0.6, cache=None) -> float:
    import cupy

    key = (spec.in_dtype, n)
    if cache is not None and key in cache:
        A, B = cache[key]
    else:
        A, B = gemm.random_inputs(n, n, n, spec.in_dtype, 1, cupy)
        if cache is not None:
            cache.clear()
            cache[key] = (A, B)
    C = cupy.empty((n, n), dtype=spec.out_dtype)
    f = mod.bind(spec.kernel, spec.grid(n, n, n), spec.block, [A, B, C, n, n, n], shared_mem=spec.shared_mem)
    ms = _time_gpu(f, budget_s, A.nbytes + B.nbytes + C.nbytes)
    del C
    return ms


def _cublas_ms(n, dtype, budget_s=0.6) -> float:
    import cupy

    rng = cupy.random.default_rng(3)
    A = rng.uniform(-1, 1, (n, n), dtype=cupy.float32).astype(dtype)
    B = rng.uniform(-1, 1, (n, n), dtype=cupy.float32).astype(dtype)
    C = cupy.empty((n, n), dtype=dtype)
    ms = _time_gpu(lambda: cupy.matmul(A, B, out=C), budget_s, 3 * A.nbytes)
    del A, B, C
    cupy.get_default_memory_pool().free_all_blocks()
    return ms


# ----------------------------------------------------------------------------- the run

def gpu_sizes(sizes=SALERNO_SIZES, fraction: float = 0.5) -> list[int]:
    """Sizes whose buffers (fp32 A, B, C and fp16 copies: about 22 n^2 bytes) fit in
    `fraction` of the free GPU memory."""
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    return [n for n in sizes if 22 * n * n < fraction * free]


def cpu_sizes(sizes=SALERNO_SIZES, budget_s: float = 6.0) -> tuple[list[int], float]:
    """Sizes whose predicted NumPy fp32 time (from a 1024^3 probe) stays under budget_s;
    returns (sizes, GFLOP/s of the probe)."""
    a = np.random.default_rng(0).uniform(-1, 1, (1024, 1024)).astype(np.float32)
    a @ a
    t = time.perf_counter()
    a @ a
    rate = 2 * 1024**3 / (time.perf_counter() - t)
    return [n for n in sizes if 2 * n**3 / rate < budget_s], rate / 1e9


def gpu_label(info) -> str:
    """The GPU a run is recorded as: its name, plus the arch it acted as under TC_ARCH (an H100
    acting as a T4 must not save, nor later load, its run as the H100's)."""
    return info.name + (f" as sm_{info.cc}" if info.emulated else "")


def _meta() -> dict:
    import cupy

    from grader.runtime.device import device_info

    info = device_info()
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return dict(gpu=gpu_label(info), arch=info.arch, sms=info.sm_count, memory_gib=info.memory_bytes / 2**30,
                driver=info.driver, runtime=info.runtime, cupy=cupy.__version__, numpy=np.__version__,
                cpu=cpu, cpu_threads=os.cpu_count(),
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def run(sizes=SALERNO_SIZES, cpu_budget_s: float = 3.0, budget_s: float = 0.4, conv_layers=True,
        progress: bool = True) -> dict:
    """Measure everything (GPU only); returns the results dict (see module docstring)."""
    import cupy

    from grader.runtime.device import has_gpu

    if not has_gpu():
        raise RuntimeError("capstone.run needs a GPU; use capstone.load() to see saved results")
    g_sizes = gpu_sizes(sizes)
    c_sizes, cpu_gflops = cpu_sizes(sizes, cpu_budget_s)
    sg = sgemm_specs()
    wm = wmma_specs()
    steps = (len(sg) + len(wm) + 2 + len(g_sizes) * 4 + 2 + len(c_sizes) + 4
             + (5 if conv_layers else 1) + 5)
    bar = Progress(steps, "capstone") if progress else None
    step = bar.step if bar else (lambda what: None)
    res = dict(meta=_meta(), salerno={}, tvm={}, roofline={}, conv_layers=[])
    res["meta"]["cpu_probe_gflops"] = cpu_gflops

    # 1. check every GEMM kernel once (correctness before speed)
    mods, res["meta"]["skipped"] = check_kernels(sg, wm, step)

    # 2. roofline ceilings
    roof = res["roofline"]
    n_copy = 1 << 28  # 256 Mi floats = 1 GiB, far beyond L2
    a = cupy.empty(n_copy, dtype=cupy.float32)
    b = cupy.empty_like(a)
    ms = _time_gpu(lambda: b.__setitem__(Ellipsis, a), budget_s)
    roof["copy_gbs"] = 2 * a.nbytes / (ms * 1e-3) / 1e9
    del a, b
    cupy.get_default_memory_pool().free_all_blocks()
    step(f"copy bandwidth {roof['copy_gbs']:.0f} GB/s (read + write)")
    peaks = {}
    for label, dt in (("cuBLAS fp16 (tensor cores)", cupy.float16), ("cuBLAS fp32 (CUDA cores)", cupy.float32),
                      ("cuBLAS fp64 (DMMA)", cupy.float64)):
        peaks[label] = 2 * 8192**3 / (_cublas_ms(8192, dt, budget_s) * 1e-3) / 1e12
    peaks["WMMA registers only (wmma_peak_niter)"] = _wmma_ceiling(budget_s)
    roof["peaks_tflops"] = peaks
    step("peaks: " + ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()) + " TFLOP/s")

    # 3. Salerno Table I / Fig. 6
    best_sgemm = _fastest_sgemm(mods, sg, budget_s)
    tc = tensor_core_kernel(mods)
    res["salerno"] = sal = dict(sizes=list(sizes), gpu_sizes=g_sizes, cpu_sizes=c_sizes, cuda_cores_kernel=best_sgemm,
                               tensor_cores_kernel=tc, ms={})
    step(f"fastest CUDA-core SGEMM at 2048^3: {best_sgemm}")
    cache: dict = {}
    for n in g_sizes:
        row = {}
        if mods[best_sgemm][0] is not None:
            row["cuda_cores"] = _time_spec(mods[best_sgemm][0], sg[best_sgemm], n, budget_s, cache)
        step(f"n={n}: {best_sgemm} {row.get('cuda_cores', float('nan')):.2f} ms")
        if mods[tc][0] is not None:
            row["tensor_cores"] = _time_spec(mods[tc][0], wm[tc][0], n, budget_s, cache)
        step(f"n={n}: {tc} {row.get('tensor_cores', float('nan')):.2f} ms")
        cache.clear()
        cupy.get_default_memory_pool().free_all_blocks()
        row["cublas_fp16"] = _cublas_ms(n, cupy.float16, budget_s)
        step(f"n={n}: cuBLAS fp16 {row['cublas_fp16']:.2f} ms")
        row["cublas_fp32"] = _cublas_ms(n, cupy.float32, budget_s)
        step(f"n={n}: cuBLAS fp32 {row['cublas_fp32']:.2f} ms")
        sal["ms"][str(n)] = row
    # the paper's own kinds of kernel (its listing 3 and listings 4-5) at the size its Fig. 6
    # text quotes, so that its row sits beside the same kind of kernel too
    big = max(g_sizes, default=None)
    sal["paper_kernels"] = {"paper_cuda_cores": "sgemm_tiled", "paper_tensor_cores": "wmma_gemm_naive"}
    for key, name in sal["paper_kernels"].items():
        mod, spec = mods[name]
        if big and mod is not None:
            sal["ms"][str(big)][key] = _time_spec(mod, spec, big, budget_s, cache)
        step(f"n={big}: {name} {sal['ms'].get(str(big), {}).get(key, float('nan')):.1f} ms")
    cache.clear()
    for n in c_sizes:
        A = np.random.default_rng(n).uniform(-1, 1, (n, n)).astype(np.float32)
        B = np.random.default_rng(n + 1).uniform(-1, 1, (n, n)).astype(np.float32)
        reps = 3 if n <= 2048 else 1
        sal["ms"].setdefault(str(n), {})["cpu_numpy"] = _time_cpu(lambda: A @ B, reps)
        step(f"n={n}: CPU NumPy {sal['ms'][str(n)]['cpu_numpy']:.0f} ms")
        del A, B

    # 4. roofline points: every course kernel
    pts = roof["kernels"] = []
    n = 4096
    for name, (mod, spec) in mods.items():
        if mod is None:
            continue
        ms = _time_spec(mod, spec, n, budget_s, cache)
        nbytes = n * n * (2 * np.dtype(spec.in_dtype).itemsize + np.dtype(spec.out_dtype).itemsize)
        pts.append(dict(kernel=name, size=f"{n}^3", flops=2.0 * n**3, bytes=nbytes, ms=ms,
                        unit="tensor cores" if name.startswith(("wmma", "dmma")) else "CUDA cores",
                        precision=spec.in_dtype))
    cache.clear()
    cupy.get_default_memory_pool().free_all_blocks()
    step(f"timed {len(pts)} GEMM kernels at 4096^3")
    pts.extend(_conv_points(budget_s))
    step("timed conv2d (direct, implicit WMMA), im2col, transpose")

    # 5. the TVM RFC table
    tvm = res["tvm"]
    tvm["gemm_4096"] = {
        "without tensor cores": {best_sgemm + " (kernels/)": res["salerno"]["ms"].get("4096", {}).get("cuda_cores"),
                                 "cuBLAS fp32": res["salerno"]["ms"].get("4096", {}).get("cublas_fp32")},
        "with tensor cores": {tc + " (kernels/)": res["salerno"]["ms"].get("4096", {}).get("tensor_cores"),
                              "cuBLAS fp16": res["salerno"]["ms"].get("4096", {}).get("cublas_fp16")},
    }
    from grader.lessons.convolution import time_layers

    layer_rows = time_layers(max_seconds=budget_s) if conv_layers else time_layers(
        names=["TVM RFC b256 14x14 256->512"], max_seconds=budget_s)
    for r in layer_rows:
        r.pop("kernel_spread", None)
        r["shape"] = list(r["shape"])
    res["conv_layers"] = layer_rows
    step(f"timed {len(layer_rows)} conv layers (implicit WMMA, im2col + cuBLAS, gather + cuBLAS, cuDNN)")
    t = layer_rows[0]
    without = _conv_without_tensor_cores(budget_s)
    tvm["conv2d"] = {
        "without tensor cores": {"im2col + cuBLAS fp32 (CuPy gather)": without},
        "with tensor cores": {"implicit GEMM WMMA (kernels/)": t["kernel_ms"],
                              "im2col kernel + cuBLAS fp16": t["im2col_cublas_ms"]},
    }
    if "cudnn_ms" in t:
        tvm["conv2d"]["with tensor cores"]["cuDNN fp16 (PyTorch)"] = t["cudnn_ms"]
    cudnn32 = _cudnn_fp32_ms(budget_s)
    if cudnn32 is not None:  # the RFC's "cudnn w/o tensor core" row, same library
        tvm["conv2d"]["without tensor cores"]["cuDNN fp32 (PyTorch, TF32 off)"] = cudnn32
    tvm["conv2d_flops"] = t["flops"]
    step("conv2d without tensor cores (fp32 im2col + cuBLAS fp32; cuDNN fp32 when PyTorch sees the GPU)")
    return res


def _fastest_sgemm(mods, specs, budget_s) -> str:
    best, best_ms = None, None
    for name in specs:
        if name == "sgemm_naive" or mods[name][0] is None:
            continue
        ms = _time_spec(mods[name][0], specs[name], 2048, budget_s)
        if best_ms is None or ms < best_ms:
            best, best_ms = name, ms
    return best or "sgemm_naive"


def _wmma_ceiling(budget_s) -> float:
    import cupy

    from grader.runtime.device import device_info

    m = _module("wmma_peak_niter")
    blocks, threads = 16 * device_info().sm_count, 256
    W = blocks * threads // 32
    A = cupy.ones(W * 256, dtype=cupy.float16)
    B = cupy.ones(W * 256, dtype=cupy.float16)
    C = cupy.empty(W * 256, dtype=cupy.float32)
    niter = 1024
    ms = _time_gpu(m.bind("wmma_peak_niter", (blocks, 1, 1), (threads, 1, 1), [A, B, C, niter]), budget_s)
    return W * niter * 2.0 * 16**3 / (ms * 1e-3) / 1e12


def _conv_points(budget_s) -> list[dict]:
    """Roofline points of the non-GEMM kernels (checked by grader.bench.conv's checks)."""
    import cupy

    from grader.bench.conv import TVM_SHAPE, config_for

    pts = []
    # direct convolution, fp32, 4096^2, R = 5
    H, R = 4096, 5
    mod = _module("conv2d_direct_tiled")
    if conv.check_direct(mod, 67, 45, R, secrets.randbits(31)).ok:
        img = conv.random_uniform((H, H), np.float32, 1, cupy)
        mask = conv.random_uniform((R, R), np.float32, 2, cupy)
        out = cupy.empty_like(img)
        grid, block = conv.direct_launch(H, H)
        ms = _time_gpu(mod.bind("conv2d_direct", grid, block, [img, mask, out, H, H, R]), budget_s)
        pts.append(dict(kernel="conv2d_direct_tiled", size=f"{H}^2, 5x5", flops=2.0 * H * H * R * R,
                        bytes=2 * img.nbytes, ms=ms, unit="CUDA cores", precision="float32"))
    # implicit GEMM conv at the TVM layer
    N, C, Hc, Wc, K, Rc, S, pad = TVM_SHAPE
    P = conv.out_size(Hc, Rc, pad)
    cfg = config_for(C, K, N * P * P)
    mod = _module("conv2d_implicit_wmma", cfg.options)
    if conv.check_conv_wmma(mod, cfg, 2, 64, 7, 9, 128, 3, 3, 1, secrets.randbits(31)).ok:
        x, w = conv.conv_inputs(N, C, Hc, Wc, K, Rc, S, 5, cupy)
        y = cupy.empty((N, P, P, K), dtype=cupy.float32)
        ms = _time_gpu(mod.bind("conv2d", cfg.grid(N, Hc, Wc, K, Rc, S, pad), (cfg.threads, 1, 1),
                                [x, w, y, N, C, Hc, Wc, K, Rc, S, pad], shared_mem=cfg.shared_bytes), budget_s)
        pts.append(dict(kernel="conv2d_implicit_wmma", size="TVM layer", flops=2.0 * N * P * P * K * Rc * S * C,
                        bytes=x.nbytes + w.nbytes + y.nbytes, ms=ms, unit="tensor cores", precision="float16"))
        # im2col at the same layer (data movement only: 0 FLOPs, bytes = read + written)
        mod2 = _module("im2col")
        if conv.check_im2col(mod2, 2, 3, 7, 5, 3, 3, 1, 1, secrets.randbits(31)).ok:
            xn = cupy.ascontiguousarray(x.transpose(0, 3, 1, 2))
            col = cupy.empty((N * P * P, C * Rc * S), dtype=cupy.float16)
            grid, block = conv.im2col_launch(N, C, Hc, Wc, Rc, S, pad, 1)
            ms = _time_gpu(mod2.bind("im2col", grid, block, [xn, col, N, C, Hc, Wc, Rc, S, pad, 1]), budget_s)
            pts.append(dict(kernel="im2col", size="TVM layer", flops=0.0, bytes=xn.nbytes + col.nbytes, ms=ms,
                            unit="memory", precision="float16"))
            del xn, col
        del x, w, y
    # transposes, 8192^2 fp32
    n = 8192
    a = conv.random_uniform((n, n), np.float32, 3, cupy)
    b = cupy.empty_like(a)
    for name in ("transpose_naive", "transpose_tiled"):
        mod = _module(name)
        if conv.check_transpose(mod, 257, 513, secrets.randbits(31)).ok:
            grid, block = conv.transpose_launch(n, n)
            ms = _time_gpu(mod.bind("transpose", grid, block, [a, b, n, n]), budget_s)
            pts.append(dict(kernel=name, size=f"{n}^2", flops=0.0, bytes=2 * a.nbytes, ms=ms, unit="memory",
                            precision="float32"))
    del a, b
    cupy.get_default_memory_pool().free_all_blocks()
    return pts


def _conv_without_tensor_cores(budget_s) -> float:
    """ms of the TVM layer as fp32 im2col (CuPy gather, NHWC) + cuBLAS fp32 (CUDA cores)."""
    import cupy

    from grader.bench.conv import TVM_SHAPE

    N, C, H, W, K, R, S, pad = TVM_SHAPE
    x, w = conv.conv_inputs(N, C, H, W, K, R, S, 9, cupy)
    x32, wb = x.astype(cupy.float32), cupy.ascontiguousarray(conv.weights_as_b(w).astype(cupy.float32))
    del x, w
    P = conv.out_size(H, R, pad)
    y = cupy.empty((N * P * P, K), dtype=cupy.float32)

    def f():
        cupy.matmul(conv.im2col_nhwc(x32, R, S, pad), wb, out=y)

    ms = _time_gpu(f, budget_s)
    del x32, wb, y
    cupy.get_default_memory_pool().free_all_blocks()
    return ms


def _cudnn_fp32_ms(budget_s) -> float | None:
    """ms of the TVM layer through cuDNN in fp32 on CUDA cores (PyTorch, NHWC), or None when
    PyTorch cannot reach the GPU. TF32 is switched off for the call: PyTorch lets fp32
    convolutions use TF32 tensor cores by default, which would not be "without tensor cores"."""
    from grader.bench.conv import TVM_SHAPE, _torch

    torch = _torch()
    if torch is None:
        return None
    N, C, H, W, K, R, S, pad = TVM_SHAPE
    cudnn = torch.backends.cudnn
    before = (cudnn.allow_tf32, cudnn.benchmark)
    try:
        cudnn.allow_tf32, cudnn.benchmark = False, True
        x = torch.rand((N, C, H, W), device="cuda").to(memory_format=torch.channels_last)
        w = torch.rand((K, C, R, S), device="cuda").to(memory_format=torch.channels_last)

        def f():
            torch.nn.functional.conv2d(x, w, padding=pad)

        f()
        torch.cuda.synchronize()
        return _time_gpu(f, budget_s)
    except Exception:  # noqa: BLE001 - a comparison row only; the run goes on without it
        return None
    finally:
        cudnn.allow_tf32, cudnn.benchmark = before


# ----------------------------------------------------------------------------- the run's label

def provenance(res: dict) -> str:
    m = res["meta"]
    where = (f"loaded from kernels/{m['loaded_from']}" if m.get("loaded_from")
             else "measured now")
    return (f"{m['gpu']} ({m['arch']}, {m['sms']} SMs, {m['memory_gib']:.0f} GiB), driver CUDA "
            f"{m['driver']}, runtime {m['runtime']}, CuPy {m['cupy']}, {m['date']}; host CPU: "
            f"{m['cpu']} ({m['cpu_threads']} threads), NumPy {m['numpy']} — {where}")


def recorded_label(res) -> str:
    """'recorded on <GPU>, <date> (kernels/<file>)' for loaded results, else 'measured now on <GPU>'."""
    m = res["meta"]
    if m.get("loaded_from"):
        return f"recorded on {m['gpu']}, {m['date']} (kernels/{m['loaded_from']})"
    return f"measured now on {m['gpu']}"
