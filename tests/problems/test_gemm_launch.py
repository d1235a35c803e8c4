"""One description of a GEMM launch (grader.problems.gemm_launch): the grader, the bench ladders
and the lesson timers launch a kernel the same way.

- every exercise whose problem is a GEMM gives its reference kernel, at the default launch
  keywords, the launch the bench and the lessons use for that kernel file (entry point, dtypes,
  block, grid at every size the exercise checks and times, shared memory), and its cases are
  launched that way;
- every rung of the ladders, built through the launch keywords a student would give
  (Rung.launch), is launched as the ladder launches it; so is every conv2d configuration;
- the lesson timers of a student's kernel compile and launch it as the grader does;
- every grid covers C with one block per tile, edge tiles included, along the axis its rule says.
The grids, blocks and options of every kernel were compared before and after the description
moved into one module (issue #34, branch h-launch: 211 launches, all identical).
"""
from __future__ import annotations

import numpy as np
import pytest

from grader.bench import conv as bench_conv
from grader.bench import mma as bench_mma
from grader.bench import wmma as bench_wmma
from grader.checking.exercises import EXERCISES
from grader.problems import gemm_launch as GL
from grader.problems import kinds
from grader.problems.conv import out_size

GEMM_EXERCISES = [e for e in EXERCISES.values() if isinstance(e.problem, (kinds.Gemm, kinds.Conv2dWmma))]
BLOCK_RULE = [e for e in GEMM_EXERCISES if getattr(e.problem, "launch_rule", "block") == "block"
              and isinstance(e.problem, kinds.Gemm)]
RUNGS = [*bench_wmma.LADDER, *bench_wmma.SWEEP, bench_wmma.DMMA_FAST, *bench_mma.LADDER, *bench_mma.SWEEP,
         bench_mma.WGMMA, bench_mma.DMMA]


def _reference_launches() -> dict:
    """kernels/<file> -> the launch the bench and the lessons give it."""
    out = {"sgemm_naive": GL.sgemm_naive(), "sgemm_tiled": GL.sgemm_tiled(32), "wmma_gemm_naive": GL.wmma_naive(),
           "wmma_gemm_any_size": GL.wmma_any_size(), "wmma_gemm_epilogue": GL.wmma_epilogue(),
           "dmma_gemm_naive": GL.dmma_naive(), "conv2d_implicit_wmma": bench_conv.DEFAULT_CONFIG.spec}
    for rung in [*bench_wmma.LADDER, bench_wmma.DMMA_FAST, *bench_mma.LADDER, bench_mma.WGMMA, bench_mma.DMMA]:
        out[rung.file] = rung.spec()
    return out


def _gemm_dims(problem, dims: dict) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM an exercise's sizes ask for (a convolution's implicit GEMM too)."""
    if isinstance(problem, kinds.Conv2dWmma):
        P, Q = out_size(dims["H"], dims["R"], dims["pad"]), out_size(dims["W"], dims["S"], dims["pad"])
        return dims["N"] * P * Q, dims["K"], dims["R"] * dims["S"] * dims["C"]
    return dims["M"], dims["N"], dims["K"]


def _sizes(ex) -> list[dict]:
    return [*ex.cpu_sizes, *ex.gpu_sizes, *([ex.perf_size] if ex.perf_size else [])]


@pytest.mark.parametrize("ex", GEMM_EXERCISES, ids=lambda e: e.id)
def test_the_grader_launches_a_reference_as_the_bench_and_lessons_do(ex):
    refs = _reference_launches()
    assert ex.reference in refs, f"no bench or lesson launch of kernels/{ex.reference}.cu to compare with"
    ref, spec = refs[ex.reference], ex.problem.launch(ex.launch_defaults, ex.kernel)
    assert spec.kernel == ex.kernel
    assert (spec.kernel, spec.in_dtype, spec.out_dtype) == (ref.kernel, ref.in_dtype, ref.out_dtype)
    assert (spec.block, spec.shared_mem) == (ref.block, ref.shared_mem)
    for dims in _sizes(ex):
        M, N, K = _gemm_dims(ex.problem, dims)
        assert spec.grid(M, N, K) == ref.grid(M, N, K), dims
    # and what the grader's child process is handed is that launch
    case = ex.problem.make(ex.cpu_sizes[0], np.random.default_rng(0), dict(ex.launch_defaults), reference=False)
    assert (case.grid, case.block, case.shared_mem) == (spec.grid(*_gemm_dims(ex.problem, ex.cpu_sizes[0])),
                                                       spec.block, spec.shared_mem)
    assert ex.problem.options(ex.launch_defaults) == spec.options


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_a_rung_through_the_students_launch_keywords_is_launched_as_the_ladder_does(rung):
    """Rung.launch says which launch keywords build the rung as it is: the exercise's rule
    turns them into the ladder's own launch (for a persistent rung, timed with one block per SM,
    the launch of one block per tile that it computes right too: the same but for the grid)."""
    spec = rung.spec()
    if getattr(rung, "persistent", False):
        assert isinstance(spec, GL.PersistentSpec) and spec.grid(4096, 4096, 4096)[1:] == (1, 1)
        spec = bench_wmma.rung_spec(rung, spec.kernel, rung.kind == "dmma")
    student = GL.student("block", rung.launch, spec.kernel, spec.in_dtype, spec.out_dtype)
    assert (student.block, student.shared_mem) == (spec.block, spec.shared_mem)
    bm, bn, bk = spec.multiple
    for M, N, K in [(bm, bn, bk), (2 * bm, 3 * bn, 5 * bk), (4096, 4096, 4096), (8192, 8192, 8192)]:
        assert student.grid(M, N, K) == spec.grid(M, N, K)


def test_every_block_rule_exercise_has_a_ladder_rung_at_its_defaults():
    by_kernel = {}
    for rung in RUNGS:
        by_kernel.setdefault(rung.spec().kernel, []).append(rung.launch)
    for ex in BLOCK_RULE:
        assert ex.launch_defaults in by_kernel.get(ex.kernel, []), ex.id


def test_the_fp16_rung_baseline_is_the_ladders_tuned_rung():
    """fp8-gemm's baseline (mma_tuned) is the build of mma_gemm_tuned that grader.bench.fp8 pairs the
    FP8 kernel with on an H100 (the ladder's rung at its defaults), whose measured ratio sets the
    exercise's thresholds; on a GPU with 99 KB per block, the build the kernel's header names."""
    from grader.bench import fp8 as bench_fp8

    def same(a, b):
        return (a.kernel, a.block, a.tile, a.options, a.multiple, a.shared_mem) == \
            (b.kernel, b.block, b.tile, b.options, b.multiple, b.shared_mem)

    tuned = next(r for r in bench_mma.LADDER if r.file == bench_mma.TUNED)
    assert bench_fp8.RUNG == tuned.file
    assert same(GL.mma_tuned(227 * 1024), tuned.spec())  # an H100's 227 KB
    small = bench_mma.Rung(tuned.file, tuned.file, dict(BLOCK_K=32, STAGES=4))
    assert small.shared_mem == 98304 and same(GL.mma_tuned(99 * 1024), small.spec())
    assert same(GL.mma_tuned(GL.MMA_TUNED_SHARED), tuned.spec())
    assert not same(GL.mma_tuned(GL.MMA_TUNED_SHARED - 1), tuned.spec())


@pytest.mark.parametrize("cfg", [bench_conv.DEFAULT_CONFIG, bench_conv.MID_CONFIG, bench_conv.NARROW_CONFIG,
                                 bench_conv.WIDE64_CONFIG, *bench_conv.SWEEP], ids=str)
def test_the_conv_bench_launches_as_the_exercise_does(cfg):
    ex = next(e for e in GEMM_EXERCISES if isinstance(e.problem, kinds.Conv2dWmma))
    launch = dict(block_m=cfg.block_m, block_n=cfg.block_n, threads=cfg.threads, shared_mem=cfg.shared_bytes)
    spec = ex.problem.launch(launch)
    assert (spec.block, spec.shared_mem) == ((cfg.threads, 1, 1), cfg.shared_bytes)
    for N, C, H, W, K, R, S, pad in [bench_conv.TVM_SHAPE, *bench_conv.RESNET_LAYERS.values()]:
        if cfg.supports(C, K):
            M = N * out_size(H, R, pad) * out_size(W, S, pad)
            assert cfg.grid(N, H, W, K, R, S, pad) == spec.grid(M, K, R * S * C)


def _captured_lesson_launch(monkeypatch, lesson, launch: dict):
    """The GemmSpec a lesson's time_student(source, **launch) checks and times, and its options
    (no GPU needed: the module and the check are stand-ins that stop it there)."""
    import grader.runtime.gpu as gpu

    seen = {}

    class Module:
        def __init__(self, source, options=()):
            seen["options"] = tuple(options)

    def check_sizes(module, spec, sizes, seeds=1):
        seen["spec"] = spec
        return False, 0.0, "stopped by the test"

    monkeypatch.setattr(gpu, "GpuModule", Module)
    monkeypatch.setattr(bench_wmma, "check_sizes", check_sizes)
    with pytest.raises(ValueError, match="stopped by the test"):
        lesson.time_student("// source", **launch)
    return seen["spec"], seen["options"]


@pytest.mark.parametrize("lesson", ["fast_gemm", "beyond_wmma"])
def test_a_lesson_times_the_students_kernel_as_the_grader_launches_it(monkeypatch, lesson):
    import importlib

    module = importlib.import_module(f"grader.lessons.{lesson}")
    kernel = _captured_lesson_launch(monkeypatch, module, {})[0].kernel
    exercises = [e for e in BLOCK_RULE if e.kernel == kernel]
    assert exercises, f"no exercise grades {kernel}, the kernel grader.lessons.{lesson} times"
    for ex in exercises:
        for launch in [ex.launch_defaults, *(r.launch for r in RUNGS if r.spec().kernel == kernel)]:
            spec, options = _captured_lesson_launch(monkeypatch, module, launch)
            graded = ex.problem.launch(launch, ex.kernel)
            assert options == spec.options == graded.options
            assert (spec.kernel, spec.block, spec.shared_mem) == (graded.kernel, graded.block, graded.shared_mem)
            for M, N, K in [(512, 512, 512), (4096, 4096, 4096)]:
                assert spec.grid(M, N, K) == graded.grid(M, N, K)


@pytest.mark.parametrize("rule,launch", [("naive16", {}), ("tile", dict(tile=32)), ("tile", dict(tile=8)),
                                         ("warp16", {}), ("warp8", {}),
                                         ("block", dict(block_m=128, block_n=256, block_k=64, threads=256))])
def test_a_grid_gives_every_tile_of_c_one_block(rule, launch):
    """Rounded up along each axis (an edge tile gets a block, none is left over), rows of C along
    blockIdx.x only for the one-warp-per-tile rules (notebook 04's convention)."""
    spec = GL.student(rule, launch, "k")
    rows_axis = 0 if rule.startswith("warp") else 1
    tm, tn = spec.tile
    for M, N, K in [(1, 1, 1), (17, 33, 5), (1000, 777, 333), (tm, tn, 16), (tm + 1, 2 * tn - 1, 16)]:
        grid = spec.grid(M, N, K)
        rows, cols = grid[rows_axis], grid[1 - rows_axis]
        assert grid[2] == 1
        assert (rows - 1) * tm < M <= rows * tm and (cols - 1) * tn < N <= cols * tn, (M, N, grid)


# ---------------------------------------------------------------- against the kernels' own headers
def _header_launch(file: str) -> tuple[list[str], list[str]]:
    """(block, grid) expressions of the 'Launch: block (...), grid (...)' line of kernels/<file>.cu."""
    from grader.runtime import kernels

    text = kernels.source(file)
    start = text.index("Launch: block (")

    def group(at: int) -> tuple[list[str], int]:
        depth, parts, cur = 0, [], ""
        for i in range(at, len(text)):
            ch = text[i]
            if ch == "(":
                depth += 1
                if depth == 1:
                    continue
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return [*parts, cur.strip()], i
            if ch == "," and depth == 1:
                parts.append(cur.strip())
                cur = ""
            elif depth >= 1:
                cur += ch
        raise AssertionError(f"unbalanced Launch line in {file}.cu")

    block, end = group(text.index("(", start))
    grid, _ = group(text.index("grid (", end) + len("grid "))
    return block, grid


def _evaluate(exprs: list[str], env: dict) -> tuple[int, int, int]:
    import math

    values = [eval(e.replace("ceil(", "_ceil("), {"_ceil": math.ceil, "min": min, "__builtins__": {}}, dict(env))
              for e in exprs]
    assert all(float(v).is_integer() for v in values), (exprs, env, values)  # "/" without ceil: exact multiples
    return tuple(int(v) for v in values) + (1,) * (3 - len(values))


def _header_cases():
    """(file, spec, env of the header's names) for every GEMM launch the course makes."""
    from grader.problems import precisions

    named = [("sgemm_naive", GL.sgemm_naive(), {}), ("sgemm_tiled", GL.sgemm_tiled(16), dict(TILE=16)),
             ("sgemm_tiled", GL.sgemm_tiled(32), dict(TILE=32)), ("sgemm_regblock", GL.sgemm_regblock(), {}),
             ("sgemm_regblock_db", GL.sgemm_regblock(), {}), ("wmma_gemm_naive", GL.wmma_naive(), {}),
             ("wmma_gemm_any_size", GL.wmma_any_size(), {}), ("wmma_gemm_epilogue", GL.wmma_epilogue(), {}),
             ("wmma_gemm_colmajor", GL.wmma_colmajor(), {}), ("dmma_gemm_naive", GL.dmma_naive(), {})]
    named += [(k.file, k.spec(), {}) for k in precisions.KERNELS]
    for rung in RUNGS:
        env = {k: rung.value(k) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
        spec = rung.spec()
        sms = dict(SMS=spec.blocks) if isinstance(spec, GL.PersistentSpec) else {}  # a persistent grid's SMs
        named.append((rung.file, spec, dict(env, THREADS=rung.threads, **sms)))
    for max_shared in (99 * 1024, 227 * 1024):  # fp8-gemm's baseline (grader.problems.baselines)
        spec = GL.mma_tuned(max_shared)
        named.append(("mma_gemm_tuned", spec, dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=spec.multiple[2], THREADS=256)))
    return named


@pytest.mark.parametrize("file,spec,env", _header_cases(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_launch_is_what_its_kernel_header_says(file, spec, env):
    block, grid = _header_launch(file)
    bm, bn, bk = spec.multiple
    for M, N, K in {(bm, bn, bk), (2 * bm, 3 * bn, 5 * bk), (bm * 33, bn * 7, bk * 3)}:
        assert spec.grid(M, N, K) == _evaluate(grid, dict(env, M=M, N=N, K=K)), (file, M, N, K)
    if spec.multiple == (1, 1, 1):  # any size: the header's ceil at sizes no tile divides
        for M, N, K in [(1, 1, 1), (17, 33, 5), (1000, 777, 333)]:
            assert spec.grid(M, N, K) == _evaluate(grid, dict(env, M=M, N=N, K=K)), (file, M, N, K)
    assert spec.block == _evaluate(block, env)


@pytest.mark.parametrize("cfg", [bench_conv.DEFAULT_CONFIG, bench_conv.MID_CONFIG, *bench_conv.SWEEP], ids=str)
def test_the_conv_launch_is_what_its_kernel_header_says(cfg):
    block, grid = _header_launch("conv2d_implicit_wmma")
    env = dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, THREADS=cfg.threads)
    for N, C, H, W, K, R, S, pad in [bench_conv.TVM_SHAPE, *bench_conv.RESNET_LAYERS.values(), (3, 64, 7, 9, 128, 3, 3, 1)]:
        if cfg.supports(C, K):
            P, Q = out_size(H, R, pad), out_size(W, S, pad)
            assert cfg.grid(N, H, W, K, R, S, pad) == _evaluate(grid, dict(env, N=N, P=P, Q=Q, K=K))
    assert cfg.spec.block == _evaluate(block, env)
