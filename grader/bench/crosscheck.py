"""Same inputs, two backends: does the CPU emulator give what the GPU gives? (issue #4)

Every reference kernel in kernels/ gets a few cases: fresh inputs from one seed, outputs
poisoned, the float64 reference and the grader's bound of each output (grader.problems).
Each case runs on both backends from copies of the same arrays, and is judged three ways:
  - each backend against the float64 reference, as the grader judges a student;
  - the two outputs against each other: |gpu - emu| <= the same bound (equal where exact);
  - how many elements are bit-identical (the emulator does not promise the hardware's
    rounding order inside a tensor-core sum, so some last-bit differences are expected).

    python -m grader.bench.crosscheck [--out FILE] [--only NAME ...]

needs a GPU and g++; `ITEMS` and `compare` are what the CPU tests use.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from grader.checking import exercises
from grader.problems import numerics
from grader.problems.gemm_launch import GemmSpec, sgemm_regblock, wmma_colmajor
from grader.problems.kinds import Case, Expected, poisoned
from grader.runtime import kernels

SEED = 20261122


@dataclass(frozen=True)
class Item:
    name: str
    file: str  # kernels/<file>.cu
    kernel: str  # entry point (a case may name another through its label, see cases())
    options: tuple[str, ...]
    cases: Callable[[np.random.Generator], list[Case]]
    # why the emulator cannot run it (e.g. wgmma/TMA): then the GPU output is judged against the
    # float64 reference alone, and `load` builds the GPU module (None: backend.load)
    gpu_only: str = ""
    load: Callable[[], object] | None = None
    # (slack, why): a GPU-only output that misses the plain bound passes within slack x it, and its
    # row says so (fp8_checks.within_slack: the rule the bench judges the same kernel with)
    slack: tuple[float, str] | None = None


@dataclass
class Agreement:
    ok: bool  # both finite where the reference is, and |a - b| <= bound everywhere
    worst_ratio: float  # max |a - b| / bound (0 where both are equal)
    identical: float  # fraction of elements with the same bits
    n_bad: int


def compare(a: np.ndarray, b: np.ndarray, expected: Expected) -> Agreement:
    """Two backends' outputs for one case, judged with that output's bound."""
    a = np.asarray(a).reshape(expected.ref.shape)
    b = np.asarray(b).reshape(expected.ref.shape)
    same_bits = (np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)
                 == np.ascontiguousarray(b).view(np.uint8).reshape(b.size, -1)).all(axis=1).reshape(a.shape)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(a64) & np.isfinite(b64)
    diff = np.where(finite, np.abs(a64 - b64), np.inf)
    if expected.exact:
        bad = ~same_bits
        worst = 0.0 if not bad.any() else float("inf")
    else:
        bound = np.broadcast_to(np.asarray(expected.bound, dtype=np.float64), diff.shape)
        bad = ~same_bits & (diff > bound)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(same_bits, 0.0, diff / np.where(bound > 0, bound, np.inf))
        worst = float(np.nanmax(ratio)) if ratio.size else 0.0
    return Agreement(not bad.any(), worst, float(same_bits.mean()) if same_bits.size else 1.0,
                     int(bad.sum()))


# ------------------------------------------------------------------------------ case makers
def _u(rng, shape, dtype):
    return rng.uniform(-1, 1, shape).astype(dtype)


def gemm_case(spec: GemmSpec, M: int, N: int, K: int, rng, prepare=None) -> Case:
    """A case of the GEMM contract for `spec`; `prepare(A64, B64)` -> ((a, b) passed to the
    kernel, (a64, b64) the values it multiplies) for inputs stored in another format."""
    A64, B64 = rng.uniform(-1, 1, (M, K)), rng.uniform(-1, 1, (K, N))
    if prepare is None:
        a, b = A64.astype(spec.in_dtype), B64.astype(spec.in_dtype)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
    else:
        (a, b), (a64, b64) = prepare(A64, B64)
    ref = a64 @ b64
    bound = numerics.gemm_bound(np.abs(a64) @ np.abs(b64), K, accumulate=spec.accumulate)
    C = poisoned((M, N), spec.out_dtype)
    return Case(f"{M}x{N}x{K}", [a, b, C, M, N, K], [2], spec.grid(M, N, K), spec.block, spec.shared_mem,
                {2: Expected(ref, bound)})


def _exercise_item(ex: exercises.Exercise) -> Item:
    """An exercise's reference at its emulator sizes and the crosscheck's own (Exercise.crosscheck_sizes)."""
    launch = dict(ex.launch_defaults)

    def cases(rng):
        return [ex.problem.make(dims, rng, launch) for dims in (*ex.cpu_sizes, *ex.crosscheck_sizes)]

    return Item(f"{ex.reference} (exercise {ex.id})", ex.reference, ex.kernel,
                ex.problem.options(launch), cases)


def _gemm_item(name, file, spec: GemmSpec, sizes, prepare=None) -> Item:
    return Item(name, file, spec.kernel, spec.options,
                lambda rng: [gemm_case(spec, *s, rng, prepare) for s in sizes])


def _ladder_items() -> list[Item]:
    from grader.bench import wmma as bench_wmma

    items = []
    for rung in [*bench_wmma.LADDER, bench_wmma.DMMA_FAST]:
        spec = rung.spec()
        bm, bn, bk = spec.multiple
        items.append(_gemm_item(rung.name, rung.file, spec, [(bm, 2 * bn, 2 * bk), (2 * bm, bn, 3 * bk)]))
    return items


def _precision_items() -> list[Item]:
    from grader.problems import precisions as P

    items = []
    references = {ex.reference for ex in exercises.EXERCISES.values()}
    for k in P.KERNELS:
        if k.file in references:
            continue  # an exercise's reference: its item is the exercise's own
        spec = k.spec()
        items.append(_gemm_item(f"{k.file} ({k.label})", k.file, spec, [(32, 48, 64), (16, 32, 48)],
                                prepare=lambda A64, B64, k=k: P.stored_inputs(k, A64, B64)))
    return items


def _regblock_items() -> list[Item]:
    return [_gemm_item(f, f, sgemm_regblock(), [(128, 256, 40), (130, 129, 33)])
            for f in ("sgemm_regblock", "sgemm_regblock_db")]


def _transpose_naive(rng):
    from grader.problems.kinds import Transpose

    return [Transpose().make(dict(rows=r, cols=c), rng, {}) for r, c in ((33, 70), (64, 32))]


def _conv_direct(rng):
    from grader.problems.conv import conv2d_same, direct_launch

    out = []
    for H, W, R in ((20, 37, 3), (16, 16, 5)):
        img, mask = _u(rng, (H, W), np.float32), _u(rng, (R, R), np.float32)
        ref = conv2d_same(img.astype(np.float64), mask.astype(np.float64))
        bound = numerics.gemm_bound(conv2d_same(np.abs(img.astype(np.float64)), np.abs(mask.astype(np.float64))),
                                    R * R)
        grid, block = direct_launch(H, W)
        out.append(Case(f"{H}x{W}, {R}x{R}", [img, mask, poisoned((H, W), np.float32), H, W, R], [2],
                        tuple(grid), tuple(block), 0, {2: Expected(ref, bound)}))
    return out


def _colmajor(rng):
    out = []
    for M, N, K in ((64, 64, 32), (128, 64, 48)):
        A, B = _u(rng, (M, K), np.float16), _u(rng, (K, N), np.float16)
        C = _u(rng, (M, N), np.float32)
        alpha, beta = 1.5, -0.75
        a64, b64 = A.astype(np.float64), B.astype(np.float64)
        ref = alpha * (a64 @ b64) + beta * C.astype(np.float64)
        bound = numerics.gemm_bound(alpha * (np.abs(a64) @ np.abs(b64)) + abs(beta) * np.abs(C), K + 2)
        # column-major storage: the transposes' row-major bytes; C is updated in place
        out.append(Case(f"{M}x{N}x{K} col-major", [np.asfortranarray(A).ravel(order="K"),
                                                   np.asfortranarray(B).ravel(order="K"),
                                                   np.asfortranarray(C).ravel(order="K"), M, N, K, alpha, beta],
                        [2], wmma_colmajor().grid(M, N, K), wmma_colmajor().block, 0,
                        {2: Expected(ref.T.copy(), bound.T.copy())}))
    return out


def _one_tile(rng):
    A, B = _u(rng, (16, 16), np.float16), _u(rng, (16, 16), np.float16)
    C = _u(rng, (16, 16), np.float32)
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    bound = numerics.gemm_bound(np.abs(a64) @ np.abs(b64) + np.abs(C), 18)
    return [Case("16x16x16", [A, B, C, poisoned((16, 16), np.float32)], [3], (1, 1, 1), (32, 1, 1), 0,
                 {3: Expected(a64 @ b64 + C, bound)})]


def _one_tile_ld(rng):
    lda = 40
    A, B = _u(rng, (16, lda), np.float16), _u(rng, (16, 16), np.float16)
    a64, b64 = A[:, :16].astype(np.float64), B.astype(np.float64)
    return [Case(f"lda={lda}", [A, B, poisoned((16, 16), np.float32), lda], [2], (1, 1, 1), (32, 1, 1), 0,
                 {2: Expected(a64 @ b64, numerics.gemm_bound(np.abs(a64) @ np.abs(b64), 16))})]


def _niter(rng, warps=4, niter=5):
    from grader.problems.demos import niter_kernel_reference

    A, B = _u(rng, warps * 256, np.float16), _u(rng, warps * 256, np.float16)
    ref, bound = niter_kernel_reference(A, B, warps, niter)
    return [Case(f"{warps} warps, niter {niter}", [A, B, poisoned(warps * 256, np.float32), niter], [2],
                 (warps, 1, 1), (32, 1, 1), 0, {2: Expected(ref, bound)})]


def _dmma_niter(rng, warps=4, niter=5):
    A, B = rng.uniform(-1, 1, warps * 32), rng.uniform(-1, 1, warps * 32)
    a, b = A.reshape(warps, 8, 4), B.reshape(warps, 4, 8)
    ref = niter * np.matmul(a, b)
    bound = numerics.gemm_bound(niter * np.matmul(np.abs(a), np.abs(b)), niter * 4, accumulate="fp64")
    return [Case(f"{warps} warps, niter {niter}", [A, B, poisoned(warps * 64, np.float64), niter], [2],
                 (warps, 1, 1), (32, 1, 1), 0, {2: Expected(ref, bound)})]


def _bank(rng, warps=2, iters=7):
    from grader.problems.demos import bank_kernel_reference

    M = _u(rng, (64, 64), np.float16)
    ref, bound = bank_kernel_reference(M, warps, iters)
    return [Case(f"{warps} warps, {iters} iters", [M.ravel(), poisoned(warps * 256, np.float32), iters], [1],
                 (1, 1, 1), (32 * warps, 1, 1), 0, {1: Expected(ref, bound)})]


def _probes(rng):
    from grader.problems import fragments

    cases = []
    for kind, k in fragments.KINDS.items():
        held = np.full(32 * 16, -1, np.int32)
        ref = np.zeros(32 * 16)  # no float64 reference for every kind: the GPU is the reference
        case = Case(f"{kind}:{k.kernel}", [fragments.probe_input(kind), held], [1], (1, 1, 1), (32, 1, 1), 0,
                    {1: Expected(ref, 0.0, exact=True)})
        cases.append(case)
    return cases


def _illegal(rng):
    C, bias = _u(rng, (16, 16), np.float32), _u(rng, 16, np.float32)
    cases = []
    for entry in ("add_bias_guess", "add_bias_positional", "add_bias_portable"):
        ref = C.astype(np.float64) + bias.astype(np.float64)[None, :]
        cases.append(Case(f"{entry}", [C, bias, poisoned((16, 16), np.float32)], [2], (1, 1, 1), (32, 1, 1), 0,
                          {2: Expected(ref, 2.0**-23 * np.abs(ref))}))
    ref = np.maximum(1.5 * C.astype(np.float64), 0)
    cases.append(Case("scale_relu", [C, 1.5, poisoned((16, 16), np.float32)], [2], (1, 1, 1), (32, 1, 1), 0,
                      {2: Expected(ref, 2.0**-23 * np.abs(ref))}))
    return cases


def _mma_items() -> list[Item]:
    """Notebook 10: the mma.sync rungs (mma_gemm_tuned is exercise mma-gemm's reference), the fp64
    DMMA rung, the register-only ceilings, the ldmatrix layouts and the GPU-only wgmma rung."""
    from grader.bench import mma as bench_mma
    from grader.problems.mma import ldsm_layout_reference, peak_reference

    items = []
    for rung in bench_mma.LADDER[:2] + [bench_mma.DMMA]:
        spec = rung.spec()
        bm, bn, bk = spec.multiple
        items.append(_gemm_item(rung.name, rung.file, spec, [(bm, 2 * bn, 5 * bk), (2 * bm, bn, 3 * bk)]))
    # the persistent contender: 3 blocks walk 4 and 3 tiles (with K of one k-tile, the loader
    # crosses into the next tile inside the prologue)
    for rung in [r for r in bench_mma.CONTENDERS if r.persistent and r.kind == "mma"]:
        spec = dataclasses.replace(rung.spec(), blocks=3)
        bm, bn, bk = spec.multiple
        items.append(_gemm_item(rung.name, rung.file, spec, [(2 * bm, 2 * bn, 3 * bk), (bm, 3 * bn, bk)]))

    def peak(k, dtype, warps=4, niter=5):
        def cases(rng):
            A, B = _u(rng, warps * 16 * k, dtype), _u(rng, warps * 8 * k, dtype)
            ref, bound = peak_reference(A, B, warps, niter, k)
            out = poisoned(warps * 128, np.float64 if dtype == np.float64 else np.float32)
            return [Case(f"{warps} warps, niter {niter}", [A, B, out, niter], [2], (2, 1, 1), (64, 1, 1), 0,
                         {2: Expected(ref, bound)})]
        return cases

    items.append(Item("mma_peak_niter", "mma_peak_niter", "mma_peak_niter", (), peak(16, np.float16)))
    for k in (4, 8, 16):
        items.append(Item(f"mma_peak_niter_f64 (m16n8k{k})", "mma_peak_niter_f64", "mma_peak_niter_f64",
                          (f"-DF64_K={k}",), peak(k, np.float64)))

    def layouts(rng, warps=4, iters=7):
        M = _u(rng, (64, 64), np.float16)
        ref = ldsm_layout_reference(M, warps, iters).astype(np.float64)
        return [Case(f"{warps} warps, {iters} rounds", [M.ravel(), np.zeros(warps * 32, np.uint32), iters], [1],
                     (2, 1, 1), (64, 1, 1), 0, {1: Expected(ref, 0.0, exact=True)})]

    for layout in (0, 1, 2):
        items.append(Item(f"ldmatrix_layouts (LAYOUT={layout})", "ldmatrix_layouts", "ldsm_layout",
                          (f"-DLAYOUT={layout}",), layouts))
    w = bench_mma.WGMMA
    items.append(Item(w.name, w.file, "hgemm_wgmma", w.options,
                      lambda rng: [gemm_case(w.spec(), M, N, K, rng) for M, N, K in ((128, 256, 320), (256, 512, 128))],
                      gpu_only="wgmma.mma_async, TMA and mbarriers (sm_90a); the emulator does not model them",
                      load=lambda: bench_mma.WgmmaGemm(w)))
    for t in [r for r in bench_mma.CONTENDERS if r.kind == "tma"]:  # persistent: 3 blocks walk 4 and 3 tiles
        spec = dataclasses.replace(t.spec(), blocks=3) if t.persistent else t.spec()
        bm, bn, bk = spec.multiple
        sizes = ((2 * bm, 2 * bn, 5 * bk), (bm, 3 * bn, bk))
        items.append(Item(t.name, t.file, "mma_gemm", t.options,
                          lambda rng, spec=spec, sizes=sizes: [gemm_case(spec, *s, rng) for s in sizes],
                          gpu_only="TMA and mbarriers (sm_90); the emulator does not model them",
                          load=lambda t=t: bench_mma.WgmmaGemm(t)))
    return items


def _conv_tma_items() -> list[Item]:
    """Issue #35: the Hopper convolution (wgmma + TMA im2col), GPU only like hgemm_wgmma."""
    from grader.bench import conv_tma

    v = conv_tma.DEFAULT
    return [Item(f"{conv_tma.FILE} ({v.name})", conv_tma.FILE, conv_tma.KERNEL, v.options,
                 lambda rng: [conv_tma.crosscheck_case(s, rng, v) for s in ((1, 64, 5, 7, 256, 3, 3, 1),
                                                                            (2, 128, 9, 6, 256, 3, 5, 1))],
                 gpu_only="wgmma.mma_async, TMA (im2col) and mbarriers (sm_90a); the emulator does not model them",
                 load=lambda: conv_tma.ConvTmaModule(v)),
            Item(conv_tma.PROBE_FILE, conv_tma.PROBE_FILE, conv_tma.PROBE_FILE, (),
                 lambda rng: [conv_tma.probe_crosscheck_case(s, rng, bm) for s, bm in
                              ((conv_tma.PROBE_SHAPES[1], 64), (conv_tma.PROBE_SHAPES[2], 128))],
                 gpu_only="TMA (im2col) and mbarriers (sm_90); the emulator does not model them",
                 load=conv_tma.ProbeModule)]


def _items() -> list[Item]:
    items = [_exercise_item(ex) for ex in exercises.EXERCISES.values()]
    items += _ladder_items() + _precision_items() + _regblock_items() + _mma_items() + _conv_tma_items()
    items += [
        Item("transpose_naive", "transpose_naive", "transpose", (), _transpose_naive),
        Item("conv2d_direct_tiled", "conv2d_direct_tiled", "conv2d_direct", (), _conv_direct),
        Item("wmma_gemm_colmajor", "wmma_gemm_colmajor", "wmma_gemm_colmajor", (), _colmajor),
        Item("wmma_one_tile", "wmma_one_tile", "wmma_one_tile", (), _one_tile),
        Item("wmma_one_tile_ld", "wmma_one_tile", "wmma_one_tile_ld", (), _one_tile_ld),
        Item("wmma_peak_niter", "wmma_peak_niter", "wmma_peak_niter", (), _niter),
        Item("dmma_gemm_peak_niter", "dmma_gemm_peak_niter", "dmma_peak_niter", (), _dmma_niter),
        Item("smem_bank_conflicts (PAD=0)", "smem_bank_conflicts", "ldsm_pad", ("-DPAD=0",), _bank),
        Item("smem_bank_conflicts (PAD=8)", "smem_bank_conflicts", "ldsm_pad", ("-DPAD=8",), _bank),
        Item("fragment_probe (all 21 kinds)", "fragment_probe", "", (), _probes),
        Item("fragment_illegal_op", "fragment_illegal_op", "", (), _illegal),
    ]
    return items + _fp8_sparse_items()


def _fp8_sparse_items() -> list[Item]:
    """Notebook 11's foundation (issue #36): the e4m3 mma.sync GEMM and the 2:4 sparse mma.sp GEMM."""
    from grader.bench import fp8_checks, fp8_wgmma
    from grader.problems import fp8, sparse24

    return [Item("fp8_gemm_mma (e4m3, scaled)", "fp8_gemm_mma", "fp8_gemm", (),
                 lambda rng: [fp8.gemm_case(*s, rng) for s in ((32, 48, 64), (33, 20, 96))]),
            Item("sparse_gemm_mma_sp (2:4)", "sparse_gemm_mma_sp", "", (),
                 lambda rng: [sparse24.compress_case(48, 64, rng)]
                 + [sparse24.gemm_case(*s, rng) for s in ((32, 48, 64), (40, 24, 80))]),
            Item("fp8_gemm_wgmma (e4m3, scaled)", "fp8_gemm_wgmma", "fp8_gemm_wgmma", (),
                 lambda rng: [fp8_wgmma.DEFAULT.case(fp8.gemm_case(*s, rng))
                              for s in ((128, 128, 128), (256, 384, 640))],
                 gpu_only="wgmma.mma_async, TMA and mbarriers (sm_90a); the emulator does not model them",
                 load=fp8_wgmma.probed, slack=fp8_checks.FP8_ACCUMULATOR)]  # its first launches in a child process: a hang stops no run


ITEMS = _items()


def entry_of(item: Item, case: Case) -> str:
    """Items with several entry points name the one of each case in its label."""
    if item.kernel:
        return item.kernel
    return case.label.split(":")[-1]


# ------------------------------------------------------------------------------ running
def run_case(module, kernel: str, case: Case) -> dict[int, np.ndarray]:
    """Launch on copies of the case's arrays; the outputs as NumPy arrays."""
    xp = module.xp
    args = [xp.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args]
    module.launch(kernel, case.grid, case.block, args, shared_mem=case.shared_mem)
    out = {}
    for pos in case.outputs:
        a = args[pos]
        out[pos] = a.get() if hasattr(a, "get") else np.array(a)
    return out


def _vs_reference(out: np.ndarray, e: Expected) -> float:
    out = np.asarray(out, dtype=np.float64).reshape(e.ref.shape)
    if not np.isfinite(out).all():
        return float("inf")
    err = np.abs(out - e.ref)
    bound = np.broadcast_to(np.asarray(e.bound, dtype=np.float64), err.shape)
    if e.exact:
        return 0.0 if not err.any() else float("inf")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err == 0, 0.0, err / bound)  # bound 0 with an error: inf
    return float(np.max(ratio))


def cross_check(items=None, backends=("gpu", "emu"), seed: int = SEED, progress=print) -> list[dict]:
    """One row per case: the judgement of each backend against float64 and of the two
    against each other. `backends` is (first, second); the CPU tests pass ("emu", "emu")."""
    from grader.runtime.backend import load

    rows = []
    for item in items or ITEMS:
        src = kernels.source(item.file)
        if item.gpu_only and "emu" in backends:
            if "gpu" in backends:  # the GPU's output against float64 only
                rows += _gpu_only_rows(item, seed, progress)
            continue
        mods = {b: load(src, b, item.options) for b in dict.fromkeys(backends)}
        rng = np.random.default_rng(seed)
        for case in item.cases(rng):
            kernel = entry_of(item, case)
            outs = [run_case(mods[b], kernel, case) for b in backends]
            for pos in case.outputs:
                e = case.expected[pos]
                first, second = outs[0][pos], outs[1][pos]
                agree = compare(first, second, e)
                has_ref = e.ref.any() or not e.exact  # probes: the GPU is the reference
                row = dict(item=item.name, file=item.file, case=case.label, output=pos,
                           first_vs_ref=_vs_reference(first, e) if has_ref else None,
                           second_vs_ref=_vs_reference(second, e) if has_ref else None,
                           agree=agree.ok, worst=agree.worst_ratio, identical=agree.identical,
                           n_bad=agree.n_bad)
                rows.append(row)
                if progress:
                    progress(f"  {item.name:42s} {case.label:34s} "
                             f"{'agree' if agree.ok else 'DIFFER'} ({100 * agree.identical:.1f}% identical)")
    return rows


def _gpu_only_rows(item: Item, seed: int, progress) -> list[dict]:
    from grader.bench.fp8_checks import within_slack
    from grader.runtime.backend import load

    module = item.load() if item.load else load(kernels.source(item.file), "gpu", item.options)
    rows = []
    for case in item.cases(np.random.default_rng(seed)):
        out = run_case(module, entry_of(item, case), case)
        for pos in case.outputs:
            e = case.expected[pos]
            ratio = _vs_reference(out[pos], e)
            loose = ""
            if ratio > 1.0 and item.slack and not e.exact:
                loose = within_slack(np.asarray(out[pos]).reshape(e.ref.shape), e.ref, e.bound, item.slack)
            rows.append(dict(item=f"{item.name} (GPU only: {item.gpu_only})", file=item.file,
                             case=case.label + (f" ({loose})" if loose else ""),
                             output=pos, first_vs_ref=ratio, second_vs_ref=None, agree=ratio <= 1.0 or bool(loose),
                             worst=0.0, identical=0.0, n_bad=0))
            if progress:
                progress(f"  {item.name:42s} {case.label:34s} GPU only: "
                         f"{'ok' if ratio <= 1 else loose or 'WRONG'}")
    return rows


def _fmt(x) -> str:
    if x is None:
        return "n/a"
    if x == float("inf"):
        return "FAIL"
    return f"{x:.3g}"


def table(rows: list[dict], backends=("gpu", "emu")) -> str:
    a, b = backends
    lines = [f"| kernel | case | {a} vs float64 (worst/bound) | {b} vs float64 | |{a}-{b}| worst/bound "
             "| bit-identical | agree |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['item']} | {r['case']} | {_fmt(r['first_vs_ref'])} | {_fmt(r['second_vs_ref'])} | "
                     f"{_fmt(r['worst'])} | {100 * r['identical']:.1f}% | {'yes' if r['agree'] else '**no**'} |")
    n_ok = sum(r["agree"] for r in rows)
    files = sorted({r["file"] for r in rows})
    lines.append(f"\n{n_ok} of {len(rows)} outputs agree, over {len(files)} kernel files.")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.crosscheck", description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="append the Markdown report to this file")
    ap.add_argument("--only", nargs="+", help="kernel files to check (default: all)")
    args = ap.parse_args(argv)
    from grader.runtime.device import device_info

    info = device_info()
    if info is None:
        print("needs a GPU: no CUDA device found (the CPU tests run the emulator side)", file=sys.stderr)
        return 2
    items = [i for i in ITEMS if not args.only or i.file in args.only]
    rows = cross_check(items)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    report = (f"## Emulator vs GPU on the same inputs — {info.name} ({info.arch}), {now}\n\n"
              f"`python -m grader.bench.crosscheck`, seed {SEED}: every case ran on the GPU (CuPy) and on the "
              "CPU emulator from copies of the same arrays (outputs poisoned). Ratios are max |error| / the "
              "grader's bound (<= 1 passes; FAIL = outside it or not finite); exact outputs must be equal.\n\n"
              + table(rows))
    print("\n" + report)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + report + "\n")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
