"""The Hopper convolution (kernels/conv2d_wgmma_tma.cu) checked, then timed beside cuDNN.

wgmma fed by the TMA in im2col mode, on an H100/H200: its tensor maps, launch, checks and timing.

    python -m grader.bench.conv_tma [--out FILE] [--variants NAME ...] [--max-seconds S]

1. Every variant (tile shape, stages, blocks per SM: VARIANTS) is checked in a child process
   with a time limit (a wait on an mbarrier nobody completes would hang the caller): at the odd
   small shapes, the TVM layer and every ResNet-50 3x3 layer it supports, on fresh U(-1, 1)
   inputs, y poisoned with NaN, against the float64 GEMM of grader.problems.conv with the
   fp32-accumulation bound. A variant wrong at any shape is printed WRONG and never timed.
2. At each layer the right variants are timed alone (the sweep), and the fastest is timed in
   alternating rounds with cuDNN (torch conv2d, fp16, channels_last, cudnn.benchmark) on the same
   x and w (grader.runtime.timing.paired): the ratio is cuDNN time / ours (> 1: faster).
The summary line reads `TVM layer: <r>x cuDNN`. Without a GPU it says so and exits 2.

The pure part (every field of both tensor maps and the coordinates of every copy, from the layer's
shape, and a model of what the im2col copy gathers) is grader.problems.tma_im2col; its names are
used from here too.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import secrets
import subprocess
import sys
import time

import numpy as np

from grader.bench import cudnn
from grader.problems import conv, numerics
from grader.problems.tma_im2col import (BLOCK_K, DEFAULT, M_of, MapParams, Variant, im2col_box,  # noqa: F401
                                        k_tiles, probe_cases, small_tensor_fix, tensor_map_params, tile_start)

FILE = "conv2d_wgmma_tma"
KERNEL = "conv2d_wgmma_tma"

TVM_SHAPE = (256, 256, 14, 14, 512, 3, 3, 1)  # N, C, H, W, K, R, S, pad (as grader.bench.conv)
RESNET_LAYERS = {  # batch 32, stride 1, 3x3, pad 1: ResNet-50's 3x3 convolutions
    "resnet50 56x56 64->64": (32, 64, 56, 56, 64, 3, 3, 1),
    "resnet50 28x28 128->128": (32, 128, 28, 28, 128, 3, 3, 1),
    "resnet50 14x14 256->256": (32, 256, 14, 14, 256, 3, 3, 1),
    "resnet50 7x7 512->512": (32, 512, 7, 7, 512, 3, 3, 1),
}
LAYERS = {"TVM b256 14x14 256->512": TVM_SHAPE, **RESNET_LAYERS}
# Odd small shapes: a last tile past the batch, R != S (the corner and offset order W before H),
# pad 0 and pad 2, one image, 1x1.
SMALL_SHAPES = [(1, 64, 5, 7, 64, 3, 3, 1), (3, 128, 7, 9, 128, 3, 3, 1), (2, 64, 13, 11, 256, 3, 3, 0),
                (2, 64, 9, 9, 128, 1, 1, 0), (1, 64, 6, 8, 128, 5, 3, 2), (2, 192, 10, 6, 256, 3, 5, 1)]
AIM = 0.8  # issue #35: >= 0.8x cuDNN
CHECK_TIMEOUT = 120.0  # seconds for one variant's checks (compile, 10 shapes, float64 references on the GPU)
PROBE_TIMEOUT = 90.0  # seconds for the copy-alone probe (kernels/tma_im2col_probe.cu)
TIMING_RESERVE = 120.0  # seconds kept for building the right variants, the sweep and the pairings (--budget)

_FP16, _SWIZZLE_128B, _L2_128B, _L2_256B, _OOB_ZERO = 6, 3, 2, 3, 0


VARIANTS = [  # most promising first: with --budget, the last ones may go unchecked (and untimed)
    DEFAULT,                                              # hgemm_wgmma's shape: 197696 B, one block per SM
    Variant(persistent=True),                             # the same, one block per SM over all tiles
    Variant(block_n=64, stages=4, min_blocks=2),          # K = 64 layers; two blocks per SM
    Variant(block_m=64, block_n=128, stages=4, min_blocks=2),  # small layers: more blocks (one's epilogue, other's math)
    Variant(block_n=128, stages=6, persistent=True),
    Variant(block_m=64, block_n=64, stages=6, min_blocks=2),
    Variant(stages=3),
    Variant(block_n=128, stages=6),
    Variant(block_m=64, block_n=256, stages=4),           # one consumer, 255 registers, no setmaxnreg
    Variant(block_n=64, stages=4, min_blocks=2, persistent=True),
    Variant(block_m=64, block_n=128, stages=4, min_blocks=2, persistent=True),
    Variant(block_n=64, stages=8),
]


def variant_named(name: str) -> Variant:
    for v in VARIANTS:
        if v.name == name:
            return v
    raise ValueError(f"no variant {name!r}; have: {', '.join(v.name for v in VARIANTS)}")


# ---------------------------------------------------------------- the driver (GPU)
_P = ctypes.c_void_p  # any pointer: the map, the address, the arrays
_SIGNATURES = {  # as cuda.h declares them (a CPU test compares)
    "cuTensorMapEncodeIm2col": [_P, ctypes.c_int, ctypes.c_uint32, _P, ctypes.POINTER(ctypes.c_uint64),
                                ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int),
                                ctypes.POINTER(ctypes.c_int), ctypes.c_uint32, ctypes.c_uint32,
                                ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int],
    "cuTensorMapEncodeTiled": [_P, ctypes.c_int, ctypes.c_uint32, _P, ctypes.POINTER(ctypes.c_uint64),
                               ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
                               ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int],
}


def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    for name, args in _SIGNATURES.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    return lib


def _arr(ctype, values):
    return (ctype * len(values))(*values)


def _to_device(tmap) -> object:
    import cupy

    return cupy.asarray(np.frombuffer(bytes(tmap), dtype=np.uint8))  # CuPy allocations are 256-byte aligned


def _driver_version(lib) -> int:
    v = ctypes.c_int(0)
    return v.value if lib.cuDriverGetVersion(ctypes.byref(v)) == 0 else 0


def encode_maps(x, w, p: MapParams):
    """Both CUtensorMaps (128 bytes each, copied to the device) for x (NHWC) and w (KRSC) on the GPU."""
    lib = _driver()
    u64, u32, i32 = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int
    tx = (ctypes.c_uint8 * 128)()
    rc = lib.cuTensorMapEncodeIm2col(
        ctypes.addressof(tx), _FP16, 4, ctypes.c_void_p(x.data.ptr), _arr(u64, p.x_dims), _arr(u64, p.x_strides),
        _arr(i32, p.lower_corner), _arr(i32, p.upper_corner), p.channels_per_pixel, p.pixels_per_column,
        _arr(u32, p.x_element_strides), 0, _SWIZZLE_128B, _L2_128B, _OOB_ZERO)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeIm2col failed with CUresult {rc}: {p}")
    tw = (ctypes.c_uint8 * 128)()
    rc = lib.cuTensorMapEncodeTiled(
        ctypes.addressof(tw), _FP16, 2, ctypes.c_void_p(w.data.ptr), _arr(u64, p.w_dims), _arr(u64, p.w_strides),
        _arr(u32, p.w_box), _arr(u32, (1, 1)), 0, _SWIZZLE_128B, _L2_256B, _OOB_ZERO)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {rc}: {p}")
    version = _driver_version(lib)
    tx = small_tensor_fix(bytearray(bytes(tx)), x.nbytes, version)
    tw = small_tensor_fix(bytearray(bytes(tw)), w.nbytes, version)
    return _to_device(tx), _to_device(tw)


class ConvTma:
    """The kernel of one variant, compiled by NVRTC for sm_90a and loaded as a cubin."""

    def __init__(self, variant: Variant = DEFAULT):
        from grader.bench.mma import CubinModule
        from grader.runtime import kernels

        self.variant = variant
        self.module = CubinModule(kernels.source(FILE), variant.options)
        self.fn = self.module.function(KERNEL)
        self.fn.max_dynamic_shared_size_bytes = variant.shared_mem
        from grader.runtime.device import device_info

        info = device_info()
        self.sms = info.sm_count if info else 132

    def bind(self, x, w, y, pad: int):
        """A no-argument launcher of y = conv(x, w) (the maps are built once, kept alive with it)."""
        N, H, W, C = x.shape
        K, R, S, _ = w.shape
        p = tensor_map_params(N, C, H, W, K, R, S, pad, self.variant, self.sms)
        tx, tw = encode_maps(x, w, p)
        i = np.int32
        args = (tx, tw, y, i(N), i(C), i(H), i(W), i(K), i(R), i(S), i(pad))
        block = (self.variant.threads, 1, 1)

        def launch():
            self.fn(p.grid, block, args, shared_mem=self.variant.shared_mem)

        launch.keep = (tx, tw)
        return launch

    @property
    def registers(self) -> int:
        return self.fn.num_regs


class ConvTmaModule:
    """ConvTma behind the module interface grader.bench.crosscheck launches through: args are
    those of the kernel's signature with x (N, H, W, C) and w (K, R, S, C) as device arrays."""

    backend = "gpu"

    def __init__(self, variant: Variant = DEFAULT):
        self.conv = ConvTma(variant)

    @property
    def xp(self):
        import cupy

        return cupy

    def launch(self, kernel, grid, block, args, shared_mem=0):
        x, w, y, *_, pad = args
        self.conv.bind(x, w, y, int(pad))()


def crosscheck_case(shape, rng, variant: Variant = DEFAULT):
    """A grader.problems.kinds.Case of the kernel at one layer shape: float64 reference and bound."""
    from grader.problems.kinds import Case, Expected, poisoned

    N, C, H, W, K, R, S, pad = shape
    x = rng.uniform(-1, 1, (N, H, W, C)).astype(np.float16)
    w = rng.uniform(-1, 1, (K, R, S, C)).astype(np.float16)
    ref, abs_ref = conv.conv2d_nhwc_reference(x, w, pad)
    p = tensor_map_params(N, C, H, W, K, R, S, pad, variant)
    y = poisoned((N, p.P, p.Q, K), np.float32)
    return Case(f"{shape}", [x, w, y, N, C, H, W, K, R, S, pad], [2], p.grid, (variant.threads, 1, 1),
                variant.shared_mem, {2: Expected(ref, numerics.gemm_bound(abs_ref, R * S * C))})


def check(mod: ConvTma, shape, seed: int):
    """Fresh inputs, y poisoned, compared with the float64 GEMM and the fp32-accumulation bound."""
    import cupy

    N, C, H, W, K, R, S, pad = shape
    x, w = conv.conv_inputs(N, C, H, W, K, R, S, seed, cupy)
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    y = cupy.full((N, P, Q, K), np.nan, dtype=cupy.float32)
    mod.bind(x, w, y, pad)()
    cupy.cuda.runtime.deviceSynchronize()
    ref, abs_ref = conv.conv2d_nhwc_reference(x, w, pad)
    return numerics.compare(y.get().reshape(-1, K), ref, numerics.gemm_bound(abs_ref, R * S * C))


# ---------------------------------------------------------------- the copy alone (diagnosis)
PROBE_FILE = "tma_im2col_probe"
PROBE_SHAPES = [(2, 128, 5, 7, 64, 3, 3, 1), (1, 64, 6, 8, 64, 5, 3, 2), (3, 64, 9, 6, 64, 3, 5, 1),
                (2, 64, 9, 9, 64, 1, 1, 0)]


def _probe_main() -> int:
    """`--probe` (a child of probe_copies): one JSON line per shape and pixels per column, then DONE."""
    import cupy

    from grader.bench.mma import CubinModule
    from grader.runtime import kernels

    fn = CubinModule(kernels.source(PROBE_FILE)).function(PROBE_FILE)
    for shape in PROBE_SHAPES:
        N, C, H, W, K, R, S, pad = shape
        x = conv.random_uniform((N, H, W, C), np.float16, 11)
        xd = cupy.asarray(x)
        wd = cupy.zeros((K, R, S, C), dtype=cupy.float16)
        for bm in (64, 128):
            p, cases = probe_cases(shape, bm)
            tx, _ = encode_maps(xd, wd, p)
            smem = bm * 128 + 1024 + 8
            fn.max_dynamic_shared_size_bytes = smem
            wrong = []
            for start, c0, offsets, m0 in cases:
                got = cupy.full((bm, BLOCK_K), 0xFFFF, dtype=cupy.uint16)
                i = np.int32
                fn((1, 1, 1), (128, 1, 1), (tx, got, i(c0), i(start[0]), i(start[1]), i(start[2]), i(offsets[0]),
                                             i(offsets[1]), i(bm)), shared_mem=smem)
                want = im2col_box(x, p, start, c0, offsets).view(np.uint16)
                bad = np.argwhere(got.get() != want)
                if len(bad):
                    wrong.append(dict(m0=m0, c0=c0, offsets=offsets, n_bad=int(len(bad)),
                                      first=[int(v) for v in bad[0]]))
            print("PROBE " + json.dumps(dict(shape=shape, pixels=bm, copies=len(cases), wrong=len(wrong),
                                             first_wrong=wrong[0] if wrong else None)), flush=True)
    print("DONE", flush=True)
    return 0


class ProbeModule:
    """The probe behind grader.bench.crosscheck's module interface. A case's args: x (N, H, W, C),
    out (pixels x 64, uint16), then c0, w0, h0, n0, off_w, off_h, pixels (the kernel's) and
    R, S, pad (for the tensor map)."""

    backend = "gpu"

    def __init__(self):
        from grader.bench.mma import CubinModule
        from grader.runtime import kernels

        self.fn = CubinModule(kernels.source(PROBE_FILE)).function(PROBE_FILE)

    @property
    def xp(self):
        import cupy

        return cupy

    def launch(self, kernel, grid, block, args, shared_mem=0):
        import cupy

        x, out, c0, w0, h0, n0, off_w, off_h, pixels, R, S, pad = args
        N, H, W, C = x.shape
        p = tensor_map_params(N, C, H, W, 64, R, S, pad, Variant(block_m=pixels, block_n=64))
        tx, _ = encode_maps(x, cupy.zeros((64, R, S, C), dtype=cupy.float16), p)
        self.fn.max_dynamic_shared_size_bytes = shared_mem
        i = np.int32
        self.fn(tuple(grid), tuple(block), (tx, out, *(i(v) for v in (c0, w0, h0, n0, off_w, off_h, pixels))),
                shared_mem=shared_mem)


def probe_crosscheck_case(shape, rng, block_m: int = 128, which: int = -1):
    """A grader.problems.kinds.Case of one probe copy (the last tile's, tap `which`): exact."""
    from grader.problems.kinds import Case, Expected

    N, C, H, W, K, R, S, pad = shape
    x = rng.uniform(-1, 1, (N, H, W, C)).astype(np.float16)
    p, cases = probe_cases(shape, block_m)
    start, c0, offsets, m0 = cases[which]
    want = im2col_box(x, p, start, c0, offsets).view(np.uint16).astype(np.float64)
    out = np.full((block_m, BLOCK_K), 0xFFFF, dtype=np.uint16)
    return Case(f"{shape} tile {m0} c0 {c0} offsets {offsets}",
                [x, out, c0, *start, *offsets, block_m, R, S, pad], [1], (1, 1, 1), (128, 1, 1),
                block_m * 128 + 1024 + 8, {1: Expected(want, 0.0, exact=True)})


def _child_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "grader.bench.conv_tma", *args]


IDLE_TIMEOUT = 60.0  # seconds a child may go without a line: one shape's launch and float64 reference


def _child(args: list[str], tag: str, timeout: float, idle: float = IDLE_TIMEOUT) -> tuple[list[dict], str]:
    """Run `python -m grader.bench.conv_tma ARGS` with a time limit, and a shorter one between two of
    its lines (a launch waiting on an mbarrier nobody completes shows as silence): its `TAG {json}`
    lines, and why it did not reach DONE (empty when it did). A child stopped is stopped with
    everything it started and reaped (grader.runtime.proctree): its CUDA context, and a kernel still
    waiting, are gone before we go on."""
    import threading

    from grader.runtime import proctree

    proc = subprocess.Popen(_child_command(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # one pipe, drained by one reader
    lines: list[str] = []
    last = [time.monotonic()]

    def read():
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            last[0] = time.monotonic()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    start, why = time.monotonic(), ""
    while proc.poll() is None:
        now = time.monotonic()
        if now - start > timeout or now - last[0] > idle:
            proctree.stop(proc)
            quiet = now - last[0] > idle
            why = (f"HANG: no line for {idle:.0f} s" if quiet else f"HANG: not done within {timeout:.0f} s") + \
                " (a wait on an mbarrier nobody completes?)"
            break
        time.sleep(0.2)
    proc.wait()
    reader.join(timeout=10)
    if not why and "DONE" not in lines:  # it stopped before the end: say why (its last line)
        why = (lines[-1] if lines else f"exit status {proc.returncode}")[:300]
    rows = [json.loads(line[len(tag) + 1:]) for line in lines if line.startswith(tag + " ")]
    return rows, why


def probe_copies(timeout: float = 90.0) -> tuple[list[dict], str]:
    """The im2col copy alone on the GPU (kernels/tma_im2col_probe.cu) against im2col_box."""
    return _child(["--probe"], "PROBE", timeout)


def check_shapes(variant: Variant) -> list[tuple]:
    return [s for s in SMALL_SHAPES + list(LAYERS.values()) if variant.supports(s[1], s[4])]


def _check_main(name: str) -> int:
    """`--check NAME` (the child of check_variant): one JSON line per shape, then exit 0 / 1."""
    variant = variant_named(name)
    mod = ConvTma(variant)
    ok = True
    for shape in check_shapes(variant):
        cmp = check(mod, shape, secrets.randbits(31))
        ok &= cmp.ok
        detail = (f"correct (worst error {cmp.worst_ratio:.2g} of the bound)" if cmp.ok else
                  f"WRONG: {cmp.n_bad} of {M_of(shape) * shape[4]} outputs outside the bound "
                  f"({cmp.n_nonfinite} NaN/Inf), first at {cmp.first_bad} (pixel, channel)")
        print("CHECK " + json.dumps(dict(shape=shape, ok=bool(cmp.ok), detail=detail, regs=mod.registers)),
              flush=True)
    print("DONE", flush=True)
    return 0 if ok else 1


def check_variant(variant: Variant, timeout: float = 120.0) -> tuple[bool, list[dict], str]:
    """Check one variant in a child process with a time limit (_child): (all right, rows, why not)."""
    rows, why = _child(["--check", variant.name], "CHECK", timeout)
    ok = not why and len(rows) == len(check_shapes(variant)) and all(r["ok"] for r in rows)
    return ok, rows, why


# ---------------------------------------------------------------- timing
_torch = cudnn.torch_or_none  # a module name of its own: the tests stand in for it


def time_layer(mods: dict, shape, max_seconds: float, out=print) -> dict:
    """Sweep the right variants at one layer, then pair the fastest with cuDNN."""
    import cupy

    from grader.runtime.timing import benchmark, paired

    N, C, H, W, K, R, S, pad = shape
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    flops = 2.0 * N * P * Q * K * R * S * C
    x, w = conv.conv_inputs(N, C, H, W, K, R, S, 7, cupy)
    y = cupy.empty((N, P, Q, K), dtype=cupy.float32)
    ws = x.nbytes + w.nbytes + y.nbytes
    sweep = {}
    for v, mod in mods.items():
        if v.supports(C, K):
            sweep[v] = benchmark(mod.bind(x, w, y, pad), working_set_bytes=ws, max_seconds=max_seconds / 6).median_ms
    row = dict(shape=shape, flops=flops, sweep={v.name: ms for v, ms in sweep.items()})
    if not sweep:
        return row
    best = min(sweep, key=sweep.get)
    row["variant"] = best.name
    f = mods[best].bind(x, w, y, pad)
    torch = _torch()
    if torch is None:
        row["ms"] = sweep[best]
        return row
    p = paired(f, cudnn.conv(torch, x, w, pad), working_set_bytes=ws, max_seconds=2 * max_seconds)
    row.update(ms=p.kernel.median_ms, cudnn_ms=p.baseline.median_ms, ratio=p.ratio,
               torch=torch.__version__, cudnn=str(torch.backends.cudnn.version()))
    return row


def _tf(flops: float, ms: float | None) -> str:
    return f"{flops / (ms * 1e-3) / 1e12:.0f}" if ms else "-"


TIMING_HEADER = ("| layer | variant | ours ms | TFLOP/s | cuDNN ms | TFLOP/s | ours / cuDNN speed | sweep (ms) |",
                 "|---|---|---|---|---|---|---|---|")


def check_row(name: str, r: dict) -> str:
    """One row of the correctness table: a variant at one shape (a CHECK line of its child)."""
    return f"| {name} | {r['regs']} | {tuple(r['shape'])} | {r['detail']} |"


def layer_row(name: str, r: dict) -> str:
    """One row of the timing table (TIMING_HEADER): time_layer's result at one layer (notebook 08 reads them)."""
    if "variant" not in r:
        return f"| {name} | no right variant supports C={r['shape'][1]}, K={r['shape'][4]} | | | | | | |"
    cudnn = f"{r['cudnn_ms']:.4f} | {_tf(r['flops'], r['cudnn_ms'])} | {r['ratio']:.2f}x" if "ratio" in r else "- | - | -"
    sweep = ", ".join(f"{k}: {ms:.4f}" for k, ms in r["sweep"].items())
    return f"| {name} | {r['variant']} | {r['ms']:.4f} | {_tf(r['flops'], r['ms'])} | {cudnn} | {sweep} |"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.conv_tma", description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the Markdown report to this file")
    ap.add_argument("--variants", nargs="+", help="variant names (default: all of VARIANTS)")
    ap.add_argument("--max-seconds", type=float, default=1.5, help="per paired timing (each variant of the sweep gets a sixth)")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds for the whole run (0: no limit): checks stop starting when too little is left "
                         "for the timing, the timing stops before the end")
    ap.add_argument("--check", metavar="NAME", help=argparse.SUPPRESS)
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.check:
        return _check_main(args.check)
    if args.probe:
        return _probe_main()
    from grader.runtime.device import device_info

    info = device_info()
    if info is None:
        print("needs a GPU: no CUDA device found", file=sys.stderr)
        return 2
    if info.cc < 90:
        print(f"needs sm_90a (an H100/H200): this GPU is {info.arch}", file=sys.stderr)
        return 2
    variants = [variant_named(n) for n in args.variants] if args.variants else VARIANTS
    lines, rc = report(info, variants, max_seconds=args.max_seconds, budget=args.budget, sink=args.out)
    return rc


def _say(line: str) -> None:
    print(line, flush=True)


def report(info, variants=None, *, max_seconds: float = 1.5, budget: float = 0.0, heading: str = "##",
           out=_say, sink: str | None = None) -> tuple[list[str], int]:
    """Check every variant (children with time limits), then sweep and pair with cuDNN at every layer.
    Returns the Markdown lines (each also passed to `out` as it comes, and written to the file `sink`
    line by line, so a run stopped at its limit leaves what it had) and 0, or 1 when no variant is
    right. `budget` > 0: seconds for the whole report."""
    variants = variants or VARIANTS
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"{heading} conv2d_wgmma_tma (wgmma + TMA im2col) vs cuDNN — {info.name} ({info.arch}, "
             f"{info.sm_count} SMs), driver supports CUDA {info.driver}, CUDA runtime {info.runtime}, {now}", "",
             "`python -m grader.bench.conv_tma`. Correctness first: fresh U(-1,1) inputs, y poisoned (NaN), float64 "
             "reference, bound (K_gemm+2) 2^-24 (|A||B|) + 1e-6, at every shape below; a variant wrong anywhere is "
             "not timed."]

    if sink:
        open(sink, "w").close()

    def say(line):
        lines.append(line)
        out(line)
        if sink:
            with open(sink, "a") as f:
                f.write(line + "\n")

    header, lines = lines, []
    for line in header:
        say(line)
    start = time.time()

    def left() -> float:
        return budget - (time.time() - start) if budget else float("inf")

    # The copy alone first: a diagnosis for the checks below, not a gate (they gate the timing).
    t0 = time.time()
    rows, why = probe_copies(timeout=min(PROBE_TIMEOUT, max(left() - TIMING_RESERVE, 1)))
    for line in ["", f"{heading}# The im2col copy alone ({PROBE_FILE}.cu) against the model (im2col_box)", "",
                 "| shape (N,C,H,W,K,R,S,pad) | pixels per column | copies | equal to the model | first that differs |",
                 "|---|---|---|---|---|"]:
        say(line)
    for r in rows:
        say(f"| {tuple(r['shape'])} | {r['pixels']} | {r['copies']} | {r['copies'] - r['wrong']} | "
            f"{r['first_wrong'] or '-'} |")
    if why:
        say(f"| FAILED: {why} | | | | |")
    out(f"   (probe: {time.time() - t0:.0f} s)")
    for line in ["", f"{heading}# Correctness of the convolution", "",
                 "| variant | registers | shape (N,C,H,W,K,R,S,pad) | result |", "|---|---|---|---|"]:
        say(line)

    good = []
    for v in variants:
        t0 = time.time()
        if left() < TIMING_RESERVE + 30:
            say(f"| {v.name} | | | not checked: out of time (--budget {budget:.0f}) |")
            continue
        ok, rows, why = check_variant(v, timeout=min(CHECK_TIMEOUT, left() - TIMING_RESERVE))
        for r in rows:
            say(check_row(v.name, r))
        if why:
            say(f"| {v.name} | | | FAILED: {why} |")
        if not ok:
            say(f"| {v.name} | | | **WRONG or FAILED: not timed** |")
            out(f"!! {v.name} is WRONG or did not finish: it is not timed")
        else:
            good.append(v)
        out(f"   ({v.name}: {time.time() - t0:.0f} s)")
    if not good:
        say("")
        say("No variant is right: nothing timed.")
        say("TVM layer: WRONG (not timed)")
        return lines, 1

    mods = {v: ConvTma(v) for v in good}
    torch = _torch()
    base = (f"cuDNN = torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}) conv2d, fp16 in and out, "
            "channels_last, cudnn.benchmark" if torch is not None else "cuDNN: torch not available here")
    say("")
    say(f"{heading}# Timing: each layer's fastest variant, paired with cuDNN in alternating rounds")
    say("")
    say(base + ". Ours writes fp32 (cuDNN fp16). Ratio = cuDNN time / ours (> 1: faster). TFLOP/s = 2 M K R S C / time.")
    say("")
    for line in TIMING_HEADER:
        say(line)
    results = {}
    for name, shape in LAYERS.items():
        if left() < 20:
            say(f"| {name} | not timed: out of time (--budget {budget:.0f}) | | | | | | |")
            results[name] = {}
            continue
        try:
            r = time_layer(mods, shape, max_seconds)
        except Exception as e:  # noqa: BLE001 - one layer that fails to launch or time: say so, go on
            say(f"| {name} | FAILED: {type(e).__name__}: {str(e).splitlines()[0][:200]} | | | | | | |")
            results[name] = {}
            continue
        results[name] = r
        say(layer_row(name, r))
        if "variant" in r:
            out("RESULT " + json.dumps(r))
    tvm = results["TVM b256 14x14 256->512"]
    resnet = [results[n]["ratio"] for n in RESNET_LAYERS if "ratio" in results[n]]
    say("")
    say(f"TVM layer: {tvm['ratio']:.2f}x cuDNN" if "ratio" in tvm else "TVM layer: not paired (no cuDNN or no variant)")
    if resnet:
        say(f"ResNet-50 3x3 layers: {min(resnet):.2f}-{max(resnet):.2f}x cuDNN "
            f"({len(resnet)} of {len(RESNET_LAYERS)} layers paired); aim >= {AIM}x")
    return lines, 0


if __name__ == "__main__":
    sys.exit(main())
