"""Check, then time, the layout and convolution kernels on this GPU; print markdown tables.

    python -m grader.bench.conv [--out FILE] [--sweep] [--fragments-json FILE] [--no-cudnn] [--only ... tma]

- transpose (naive, tiled): GB/s = 2 * rows * cols * 4 bytes / time, beside a device-to-device
  copy of the same bytes (cupy `b[...] = a`), at 4096^2 and 8192^2;
- im2col: time at the TVM RFC layer (NCHW fp16), GB/s of the matrix it writes;
- conv2d_direct (tiled, CUDA cores, fp32): GFLOP/s at 4096^2 with R = 3, 5, 7;
- conv2d (implicit GEMM on tensor cores): TFLOP/s at the TVM RFC layer (batch 256,
  256 -> 512 channels, 14x14, 3x3, pad 1) and at ResNet-50 layers (batch 32), beside
  (1) im2col + cuBLAS in this process: kernels/im2col.cu on the NCHW copy of x, then
      cupy.matmul of the fp16 im2col matrix with the fp16 weight matrix (cuBLAS, fp16 output,
      CuPy's default fp32 compute), then .astype(float32) for the fp32 output of the contract;
  (2) the same with the patch matrix gathered by CuPy slicing (grader.problems.conv.im2col_nhwc);
  (3) cuDNN through torch.nn.functional.conv2d (fp16, channels_last, cudnn.benchmark) when
      PyTorch is installed: a comparison only, never a course code path.
- conv2d_wgmma_tma (`--only ... tma`, on sm_90 only): the Hopper contender, wgmma fed by the TMA in im2col mode
  (grader.bench.conv_tma: every variant checked at every shape, then each layer's fastest paired
  with cuDNN in the same run).
Every kernel is checked on fresh random inputs (output poisoned with NaN) before it is timed;
a wrong kernel is reported and not timed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import secrets
import sys
import time

import numpy as np

from grader.bench import cudnn as cudnn_bench  # not `cudnn`: time_conv has a flag of that name
from grader.problems import conv, fragments
from grader.runtime import kernels
from grader.runtime.device import cannot_run, device_info
from grader.runtime.timing import benchmark, paired

TVM_SHAPE = (256, 256, 14, 14, 512, 3, 3, 1)  # N, C, H, W, K, R, S, pad
RESNET_LAYERS = {  # batch 32, stride 1, 3x3, pad 1 (ResNet-50's 3x3 convolutions)
    "resnet50 56x56 64->64": (32, 64, 56, 56, 64, 3, 3, 1),
    "resnet50 28x28 128->128": (32, 128, 28, 28, 128, 3, 3, 1),
    "resnet50 14x14 256->256": (32, 256, 14, 14, 256, 3, 3, 1),
    "resnet50 7x7 512->512": (32, 512, 7, 7, 512, 3, 3, 1),
}
SPEEDUP_TARGET = 3.0  # the target over in-process im2col + cuBLAS at TVM_SHAPE

DEFAULT_CONFIG = conv.WmmaConfig()
# Smaller tiles for layers whose default grid would not fill the GPU, and for K = 64.
MID_CONFIG = conv.WmmaConfig(block_m=64, block_n=128, threads=128, warps_m=2, stages=4)
NARROW_CONFIG = conv.WmmaConfig(block_m=64, block_n=64, threads=128, warps_m=2, stages=4)
WIDE64_CONFIG = conv.WmmaConfig(block_m=128, block_n=64, threads=128, warps_m=2, stages=4)
SWEEP = [
    conv.WmmaConfig(),
    conv.WmmaConfig(stages=3),
    conv.WmmaConfig(stages=5),
    conv.WmmaConfig(block_k=64, stages=3),
    conv.WmmaConfig(block_k=64, stages=2),
    conv.WmmaConfig(threads=256, stages=3),
    conv.WmmaConfig(threads=256, block_k=64, stages=3),
    conv.WmmaConfig(block_n=256, threads=256, block_k=64, stages=3),
    conv.WmmaConfig(block_m=256, threads=256, warps_m=4, stages=3),
    MID_CONFIG,
    WIDE64_CONFIG,
    NARROW_CONFIG,
]

_modules: dict = {}


def module(name: str, options: tuple[str, ...] = ()):
    from grader.runtime.gpu import GpuModule

    key = (name, tuple(options))
    if key not in _modules:
        _modules[key] = GpuModule(kernels.source(name), options)
    return _modules[key]


def config_for(C: int, K: int, M: int | None = None,
               preferred: conv.WmmaConfig | None = None) -> conv.WmmaConfig:
    """The first of (preferred, DEFAULT, MID, WIDE64, NARROW) that supports C and K, fits this
    GPU's shared memory (a T4 allows 64 KB per block) and whose grid fills every SM at least once
    (for M rows); else the last one that supports C and K and fits."""
    sms = device_info().sm_count if device_info() else 132
    chosen = None
    for cfg in (preferred or DEFAULT_CONFIG, DEFAULT_CONFIG, MID_CONFIG, WIDE64_CONFIG,
                NARROW_CONFIG):
        if not cfg.supports(C, K) or cannot_run("conv2d_implicit_wmma", cfg.shared_bytes):
            continue
        chosen = cfg
        if M is None or math.prod(cfg.spec.grid(M, K)) >= sms:
            return cfg
    if chosen is None:
        raise ValueError(f"no configuration supports C={C}, K={K}")
    return chosen


def _seed() -> int:
    return secrets.randbits(31)


# ----------------------------------------------------------------------------- transpose

def bench_transpose(sizes=(4096, 8192), max_seconds=2.0) -> str:
    import cupy

    lines = ["| kernel | size | correct | time | GB/s | % of copy |", "|---|---|---|---|---|---|"]
    mods = {n: module(n) for n in ("transpose_naive", "transpose_tiled")}
    ok = {}
    for name, mod in mods.items():
        cmps = [conv.check_transpose(mod, r, c, _seed())
                for r, c in [(1, 1), (33, 17), (1000, 1), (257, 513), (4096, 4096)]]
        ok[name] = all(c.ok for c in cmps)
        if not ok[name]:
            lines.append(f"| {name} | | WRONG: {'; '.join(str(c) for c in cmps if not c.ok)} | | | |")
    for n in sizes:
        a = cupy.random.random((n, n), dtype=cupy.float32)
        b = cupy.empty_like(a)
        nbytes = 2 * a.nbytes
        t_copy = benchmark(lambda: b.__setitem__(Ellipsis, a), working_set_bytes=nbytes,
                           max_seconds=max_seconds)
        copy_gbs = nbytes / (t_copy.median_ms * 1e-3) / 1e9
        lines.append(f"| copy (cupy b[...] = a) | {n}x{n} | - | {t_copy.median_ms:.4f} ms | "
                     f"{copy_gbs:.0f} | 100% |")
        for name, mod in mods.items():
            if not ok[name]:
                continue
            grid, block = conv.transpose_launch(n, n)
            f = mod.bind("transpose", grid, block, [a, b, n, n])
            t = benchmark(f, working_set_bytes=nbytes, max_seconds=max_seconds)
            gbs = nbytes / (t.median_ms * 1e-3) / 1e9
            lines.append(f"| {name} | {n}x{n} | yes | {t.median_ms:.4f} ms | {gbs:.0f} | "
                         f"{100 * gbs / copy_gbs:.0f}% |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- im2col, direct

def bench_im2col(max_seconds=2.0) -> str:
    import cupy

    mod = module("im2col")
    shapes = [(2, 3, 5, 7, 3, 3, 1, 1), (1, 4, 8, 8, 3, 3, 0, 2), (3, 2, 7, 5, 5, 3, 2, 2),
              (2, 16, 14, 14, 3, 3, 1, 1)]
    cmps = [conv.check_im2col(mod, *s, _seed()) for s in shapes]
    lines = ["| kernel | shape (N,C,H,W,R,S,pad,stride) | correct | time | GB/s written |",
             "|---|---|---|---|---|"]
    if not all(c.ok for c in cmps):
        lines.append(f"| im2col | | WRONG: {'; '.join(str(c) for c in cmps if not c.ok)} | | |")
        return "\n".join(lines)
    N, C, H, W, K, R, S, pad = TVM_SHAPE
    x = conv.random_uniform((N, C, H, W), np.float16, 1, cupy)
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    col = cupy.empty((N * P * Q, C * R * S), dtype=cupy.float16)
    grid, block = conv.im2col_launch(N, C, H, W, R, S, pad, 1)
    f = mod.bind("im2col", grid, block, [x, col, N, C, H, W, R, S, pad, 1])
    t = benchmark(f, working_set_bytes=x.nbytes + col.nbytes, max_seconds=max_seconds)
    lines.append(f"| im2col | {(N, C, H, W, R, S, pad, 1)} | yes ({len(shapes)} shapes) | "
                 f"{t.median_ms:.4f} ms | {col.nbytes / (t.median_ms * 1e-3) / 1e9:.0f} |")
    return "\n".join(lines)


def bench_direct(max_seconds=2.0) -> str:
    import cupy

    mod = module("conv2d_direct_tiled")
    cmps = [conv.check_direct(mod, H, W, R, _seed())
            for H, W, R in [(1, 1, 3), (17, 33, 3), (64, 50, 5), (31, 16, 7), (100, 3, 15)]]
    lines = ["| kernel | size | R | correct | time | GFLOP/s |", "|---|---|---|---|---|---|"]
    if not all(c.ok for c in cmps):
        lines.append(f"| conv2d_direct | | | WRONG: {'; '.join(str(c) for c in cmps if not c.ok)} | | |")
        return "\n".join(lines)
    n = 4096
    img = conv.random_uniform((n, n), np.float32, 1, cupy)
    out = cupy.empty_like(img)
    for R in (3, 5, 7):
        mask = conv.random_uniform((R, R), np.float32, 2, cupy)
        grid, block = conv.direct_launch(n, n)
        f = mod.bind("conv2d_direct", grid, block, [img, mask, out, n, n, R])
        t = benchmark(f, working_set_bytes=2 * img.nbytes, max_seconds=max_seconds)
        lines.append(f"| conv2d_direct (tiled) | {n}x{n} | {R} | yes | {t.median_ms:.4f} ms | "
                     f"{t.gflops(2.0 * n * n * R * R):.0f} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- conv2d (WMMA)

_torch = cudnn_bench.torch_or_none


def time_conv(shape, cfg: conv.WmmaConfig | None = None, max_seconds=2.0, cudnn=True,
              gather=True, baselines=True, auto_config=True) -> dict:
    """Time conv2d (WMMA) and the baselines at one shape; returns a dict of ms and ratios."""
    import cupy

    N, C, H, W, K, R, S, pad = shape
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    M, Kg = N * P * Q, R * S * C
    cfg = cfg if cfg is not None and not auto_config else config_for(C, K, M, cfg)
    flops = 2.0 * M * K * Kg
    x, w = conv.conv_inputs(N, C, H, W, K, R, S, 7, cupy)
    y = cupy.empty((N, P, Q, K), dtype=cupy.float32)
    mod = module("conv2d_implicit_wmma", cfg.options)
    f = mod.bind("conv2d", cfg.grid(N, H, W, K, R, S, pad), (cfg.threads, 1, 1),
                 [x, w, y, N, C, H, W, K, R, S, pad], shared_mem=cfg.shared_bytes)
    ws = x.nbytes + w.nbytes + y.nbytes
    out = dict(shape=shape, config=str(cfg), M=M, N_gemm=K, K_gemm=Kg, flops=flops)
    t = benchmark(f, working_set_bytes=ws, max_seconds=max_seconds)
    out["kernel_ms"] = t.median_ms
    out["kernel_spread"] = t.spread
    if not baselines:
        return out

    # (1) im2col kernel (NCHW) + cuBLAS fp16 + astype(float32)
    x_nchw = cupy.ascontiguousarray(x.transpose(0, 3, 1, 2))
    w_mat = cupy.ascontiguousarray(w.transpose(0, 3, 1, 2).reshape(K, Kg).T)  # (c,r,s) x k
    col = cupy.empty((M, Kg), dtype=cupy.float16)
    y16 = cupy.empty((M, K), dtype=cupy.float16)
    y32 = cupy.empty((M, K), dtype=cupy.float32)
    grid, block = conv.im2col_launch(N, C, H, W, R, S, pad, 1)
    im2col = module("im2col").bind("im2col", grid, block, [x_nchw, col, N, C, H, W, R, S, pad, 1])

    def gemm():
        cupy.matmul(col, w_mat, out=y16)

    def to32():
        y32[...] = y16

    def base():
        im2col()
        gemm()
        to32()

    ws_base = x.nbytes + col.nbytes + w.nbytes + y16.nbytes + y32.nbytes
    for name, fn in (("im2col", im2col), ("gemm", gemm), ("astype", to32)):
        out[f"{name}_ms"] = benchmark(fn, working_set_bytes=ws_base, max_seconds=max_seconds).median_ms
    # speedups: kernel and baseline in alternating rounds (grader.runtime.timing.paired), so a clock
    # that drifts during the run does not bias them; the ms figures are those rounds' medians
    p = paired(f, base, working_set_bytes=ws_base, max_seconds=2 * max_seconds)
    out["im2col_cublas_ms"] = p.baseline.median_ms
    out["speedup_vs_im2col_cublas"] = p.ratio

    if gather:  # (2) CuPy slicing gather (NHWC) + cuBLAS
        w_b = cupy.ascontiguousarray(conv.weights_as_b(w))

        def gather_base():
            a = conv.im2col_nhwc(x, R, S, pad)
            cupy.matmul(a, w_b, out=y16)
            to32()

        p = paired(f, gather_base, working_set_bytes=ws_base, max_seconds=2 * max_seconds)
        out["gather_cublas_ms"] = p.baseline.median_ms
        out["speedup_vs_gather_cublas"] = p.ratio
    del col, y16, y32

    torch = _torch() if cudnn else None
    if torch is not None:  # (3) cuDNN, comparison only
        p = paired(f, cudnn_bench.conv(torch, x, w, pad), working_set_bytes=ws, max_seconds=2 * max_seconds)
        out["cudnn_ms"] = p.baseline.median_ms
        out["kernel_vs_cudnn"] = p.ratio  # > 1: faster than cuDNN
        out["torch"] = torch.__version__
        out["cudnn"] = str(torch.backends.cudnn.version())
    return out


def check_conv(cfg: conv.WmmaConfig, shapes=None) -> list[tuple[tuple, object]]:
    mod = module("conv2d_implicit_wmma", cfg.options)
    shapes = shapes or [(1, 32, 5, 7, 128, 3, 3, 1), (3, 64, 7, 9, 128, 3, 3, 1),
                        (2, 32, 13, 11, 256, 3, 3, 0), (2, 96, 9, 9, 128, 1, 1, 0),
                        (1, 32, 6, 8, 128, 5, 3, 2), (8, 256, 14, 14, 512, 3, 3, 1)]
    results = []
    for s in shapes:
        if cfg.supports(s[1], s[4]):
            results.append((s, conv.check_conv_wmma(mod, cfg, *s, _seed())))
    return results


def _tf(r: dict, key: str) -> str:
    return f"{r['flops'] / (r[key] * 1e-3) / 1e12:.0f}" if key in r else "-"


def bench_conv2d(cfg: conv.WmmaConfig | None = None, max_seconds=2.0, cudnn=True,
                 full_check=True) -> tuple[str, list[dict]]:
    cfg = cfg or DEFAULT_CONFIG
    lines = ["Correctness (fresh U(-1,1) inputs, y poisoned, float64 reference, bound "
             "(K_gemm+2) 2^-24 (|A||B|) + 1e-6):", "",
             "| config | shape (N,C,H,W,K,R,S,pad) | result |", "|---|---|---|"]
    ok = True
    for c in dict.fromkeys([cfg, MID_CONFIG, NARROW_CONFIG]):
        for s, cmp in check_conv(c):
            ok &= cmp.ok
            lines.append(f"| {c} | {s} | {cmp} |")
    if full_check:
        s = TVM_SHAPE
        cmp = conv.check_conv_wmma(module("conv2d_implicit_wmma", cfg.options), cfg, *s, _seed())
        ok &= cmp.ok
        lines.append(f"| {cfg} | {s} (TVM RFC layer) | {cmp} |")
    if not ok:
        return "\n".join(lines + ["", "conv2d is WRONG: not timed"]), []
    lines += ["", "| layer | config | conv2d (WMMA) ms | TFLOP/s | im2col+cuBLAS ms (im2col / gemm / "
              "astype) | speedup | CuPy gather+cuBLAS ms | speedup | cuDNN ms | TFLOP/s | "
              "WMMA / cuDNN speed |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for name, shape in [("TVM RFC b256 14x14 256->512", TVM_SHAPE), *RESNET_LAYERS.items()]:
        r = time_conv(shape, cfg, max_seconds=max_seconds, cudnn=cudnn)
        r["layer"] = name
        rows.append(r)
        cud = (f"{r['cudnn_ms']:.4f} | {_tf(r, 'cudnn_ms')} | {r['kernel_vs_cudnn']:.2f}"
               if "cudnn_ms" in r else "- | - | -")
        lines.append(
            f"| {name} | {r['config']} | {r['kernel_ms']:.4f} | {_tf(r, 'kernel_ms')} | "
            f"{r['im2col_cublas_ms']:.4f} ({r['im2col_ms']:.3f} / {r['gemm_ms']:.3f} / "
            f"{r['astype_ms']:.3f}) | {r['speedup_vs_im2col_cublas']:.2f}x | "
            f"{r['gather_cublas_ms']:.4f} | {r['speedup_vs_gather_cublas']:.2f}x | {cud} |")
        print(lines[-1], flush=True)
    return "\n".join(lines), rows


def sweep(max_seconds=1.5) -> tuple[str, conv.WmmaConfig]:
    lines = ["| config | smem B | registers | correct | TVM ms | TFLOP/s |", "|---|---|---|---|---|---|"]
    best = None
    for cfg in SWEEP:
        try:
            mod = module("conv2d_implicit_wmma", cfg.options)
        except Exception as e:  # a configuration that does not compile
            lines.append(f"| {cfg} | | | compile error: {str(e).splitlines()[0]} | | |")
            continue
        checks = check_conv(cfg, [(3, 64, 7, 9, 128, 3, 3, 1), (2, 256, 14, 14, 512, 3, 3, 1)])
        good = all(c.ok for _, c in checks)
        regs = mod.resources("conv2d").registers
        if not good:
            lines.append(f"| {cfg} | {cfg.shared_bytes} | {regs} | WRONG | | |")
            continue
        r = time_conv(TVM_SHAPE, cfg, max_seconds=max_seconds, baselines=False, auto_config=False)
        if best is None or r["kernel_ms"] < best[0]:
            best = (r["kernel_ms"], cfg)
        lines.append(f"| {cfg} | {cfg.shared_bytes} | {regs} | yes | {r['kernel_ms']:.4f} | "
                     f"{_tf(r, 'kernel_ms')} |")
    return "\n".join(lines), (best[1] if best else DEFAULT_CONFIG)


# ----------------------------------------------------------------------------- fragments

def probe_fragments(json_path: str | None = None) -> str:
    from grader.runtime.gpu import GpuModule

    mod = GpuModule(kernels.source("fragment_probe"))
    info = device_info()
    record = dict(device=info.name, arch=info.arch, driver=info.driver, runtime=info.runtime,
                  date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                  note="held[lane][i] = row-major index (r * cols + c) of the element lane "
                       "holds in fragment slot x[i]; written by grader.bench.conv",
                  kinds={})
    lines = ["| kind | kernel | matrix | num_elements | expected from | matches expected |",
             "|---|---|---|---|---|---|"]
    for kind, k in fragments.KINDS.items():
        held = fragments.measure(kind, mod)
        record["kinds"][kind] = dict(kernel=k.kernel, shape=k.shape, use=k.use, element=k.element,
                                     rows=k.rows, cols=k.cols, num_elements=int(held.shape[1]),
                                     held=held.tolist())
        if fragments.has_expected(kind):
            exp = fragments.expected_map(kind)
            match = "yes" if exp.shape == held.shape and (exp == held).all() else (
                f"NO ({int((exp != held).sum()) if exp.shape == held.shape else 'shape'} differ)")
        else:
            match = "(no formula; measured map recorded)"
        lines.append(f"| {kind} | {k.kernel} | {k.rows}x{k.cols} | {held.shape[1]} | {k.source} | {match} |")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(record, f, indent=None, separators=(",", ":"))
            f.write("\n")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.conv")
    ap.add_argument("--out", help="append the markdown report to this file")
    ap.add_argument("--fragments-json", help="write the measured fragment maps to this JSON file")
    ap.add_argument("--sweep", action="store_true", help="also time conv2d configurations")
    ap.add_argument("--no-cudnn", action="store_true", help="skip the cuDNN comparison")
    ap.add_argument("--max-seconds", type=float, default=2.0)
    # "tma" (the Hopper contender, a few minutes) only when asked: .ci/gpu-record's conv step keeps its time
    ap.add_argument("--only", nargs="+", default=["fragments", "transpose", "im2col", "direct", "conv"],
                    choices=["fragments", "transpose", "im2col", "direct", "conv", "tma"])
    args = ap.parse_args(argv)
    info = device_info()
    if info is None:
        print("needs a GPU: no CUDA device found", file=sys.stderr)
        return 2
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"## Layout and convolution kernels — {info.name} ({info.arch}, {info.sm_count} SMs), "
             f"driver supports CUDA {info.driver}, CUDA runtime {info.runtime}, {now}",
             "", "Measured by `python -m grader.bench.conv`; times are medians of CUDA-event "
             "timings (grader.runtime.timing.benchmark: warm-up, repeats until 1% standard error, L2 "
             "flushed when the data fits in it)."]
    t0 = time.time()
    sections = [("fragments", "### WMMA fragment maps (kernels/fragment_probe.cu)",
                 lambda: probe_fragments(args.fragments_json)),
                ("transpose", "### Transpose (fp32), GB/s = 2 rows cols 4 B / time",
                 lambda: bench_transpose(max_seconds=args.max_seconds)),
                ("im2col", "### im2col (fp16, NCHW)", lambda: bench_im2col(args.max_seconds)),
                ("direct", "### Direct convolution on CUDA cores (fp32, single channel, same size)",
                 lambda: bench_direct(args.max_seconds))]
    for key, title, fn in sections:
        if key in args.only:
            text = fn()
            parts += ["", title, "", text]
            print("\n".join(parts[-4:]), flush=True)
    if "conv" in args.only:
        best = None
        if args.sweep:
            table, best = sweep()
            parts += ["", "### conv2d (WMMA) configurations at the TVM RFC layer", "", table,
                      "", f"Fastest: {best} (used below as the preferred configuration)."]
            print("\n".join(parts[-6:]), flush=True)
        text, rows = bench_conv2d(best, max_seconds=args.max_seconds, cudnn=not args.no_cudnn)
        torch = _torch() if not args.no_cudnn else None
        base = ("im2col+cuBLAS = kernels/im2col.cu on an NCHW copy of x, cupy.matmul on fp16 "
                "(cuBLAS, fp16 output), astype(float32); CuPy gather = grader.problems.conv.im2col_nhwc "
                "(9 strided slice copies) + the same matmul and astype")
        if torch is not None:
            base += (f"; cuDNN = torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}) "
                     "conv2d, fp16 in and out, channels_last, cudnn.benchmark")
        parts += ["", "### conv2d (implicit GEMM, WMMA, fp16 in, fp32 out) vs baselines", "",
                  base + ". Speedup = baseline time / conv2d time. TFLOP/s = 2 M N_gemm K_gemm / time.",
                  "", text]
        print("\n".join(parts[-3:]), flush=True)
        for r in rows:
            print("RESULT " + json.dumps({k: v for k, v in r.items()}), flush=True)
    if "tma" in args.only:  # the Hopper contender (wgmma + TMA im2col): its own checks, sweep and cuDNN pairing
        if info.cc >= 90:
            from grader.bench import conv_tma

            lines, _ = conv_tma.report(info, max_seconds=args.max_seconds, heading="###")
            parts += [""] + lines
        else:
            parts += ["", f"### conv2d_wgmma_tma: skipped, it needs sm_90a and this GPU is {info.arch}"]
            print(parts[-1], flush=True)
    text = "\n".join(parts) + "\n"
    print(f"\n(total {time.time() - t0:.0f} s)")
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
