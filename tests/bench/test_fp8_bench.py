"""grader.bench.fp8 (issue #36 items 2-3): the paired FP8 / 2:4-sparse record and .ci/gpu-fp8.

CPU: the correctness stage on the emulator (and that it fails a kernel that drops the scales), the
library check (right, wrong, fp16 output, FP8 accumulator slack), PyTorch missing -> "library not
available here", and the measurement loop + record writer on fake contenders and a fake timer.
GPU (marked `gpu`): every contender's check, and a small run of the whole bench writing a record.
"""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grader.bench import fp8 as bf
from grader.problems import fp8, gemm_launch, sparse24
from grader.problems.kinds import Case
from grader.runtime import kernels

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- the course kernels, on the emulator
def test_launch_specs_are_the_cases_launch():
    rng = np.random.default_rng(0)
    for spec, case, dims, file in ((gemm_launch.fp8_gemm_mma(), fp8.gemm_case(33, 20, 96, rng), slice(3, 6),
                                    "fp8_gemm_mma"),
                                   (gemm_launch.sparse_gemm_mma_sp(), sparse24.gemm_case(40, 24, 80, rng),
                                    slice(4, 7), "sparse_gemm_mma_sp")):
        assert case.args[dims] == [33, 20, 96] or case.args[dims] == [40, 24, 80]
        assert tuple(spec.grid(*case.args[dims])) == tuple(case.grid) and tuple(spec.block) == tuple(case.block)
        assert f"__global__ void {spec.kernel}(" in kernels.source(file)


@pytest.fixture(scope="module")
def emu():
    from grader.emu import compile_module

    return {f: compile_module(kernels.source(f), name=f) for f in ("fp8_gemm_mma", "sparse_gemm_mma_sp")}


def test_correctness_stage_passes_the_kernels_on_the_emulator(emu):
    rng = np.random.default_rng(1)
    c = bf.check_kernel(emu["fp8_gemm_mma"], "fp8_gemm", bf.fp8_cases([64, (33, 20, 96)], rng))
    assert c.ok and 0 < c.worst <= 1, c.cell
    c = bf.check_kernel(emu["sparse_gemm_mma_sp"], "sparse_gemm", bf.sparse_cases([64, (40, 24, 80)], rng))
    assert c.ok and 0 < c.worst <= 1, c.cell


class _DropsScales:
    """The real kernel launched with both scales 1: the epilogue a student forgets."""

    def __init__(self, module):
        self.module = module

    def launch(self, kernel, grid, block, args, **kw):
        args[6] = args[7] = 1.0
        return self.module.launch(kernel, grid, block, args, **kw)


def test_correctness_stage_fails_a_kernel_that_drops_the_scales(emu):
    c = bf.check_kernel(_DropsScales(emu["fp8_gemm_mma"]), "fp8_gemm", bf.fp8_cases([64], np.random.default_rng(2)))
    assert not c.ok and c.cell.startswith("WRONG: 64x64x64")


def test_the_contenders_checks_are_wired_right_on_the_emulator(emu, monkeypatch):
    """bench.fp8's own contenders (their cases, launches and arguments) through the check stage, with
    the emulator for the GPU and NumPy standing in for CuPy; PyTorch absent here: its rows say so."""
    import types

    shim = types.SimpleNamespace(asarray=np.asarray, zeros=np.zeros, empty=np.empty, float16=np.float16,
                                 float32=np.float32, matmul=np.matmul, from_dlpack=np.asarray)
    monkeypatch.setitem(sys.modules, "cupy", shim)
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(bf, "_gpu_module", lambda file: emu[file])
    monkeypatch.setattr(bf.bench_mma, "module_of", lambda rung: None)  # the fp16 rung: checked at 256k^3 only
    lines = []
    checks, results = bf.measure(bf.contenders(check_sizes=(64,), edges=((33, 20, 96),)), (), out=lines.append)
    assert checks[bf.FP8].ok and checks[bf.SPARSE].ok and 0 < checks[bf.FP8].worst <= 1, lines
    for lib in (bf.LT, bf.CSLT):
        assert checks[lib].cell.startswith("library not available here: PyTorch is not installed"), lines
    assert results == [] and [ln.split(":")[0] for ln in lines] == [f"check {c}" for c in bf.DESCRIBE]


class _Recorder:
    """A GPU module stand-in: bind() keeps the arguments and launches on the emulator."""

    def __init__(self, module):
        self.module, self.bound = module, []

    def bind(self, kernel, grid, block, args, shared_mem=0):
        self.bound.append(args)
        return lambda: self.module.launch(kernel, grid, block, args, shared_mem=shared_mem)


def test_the_timed_launches_compute_the_product_of_the_timing_inputs(emu, monkeypatch):
    """What is timed is the product asked for: Inputs and each course contender's launch, run on
    the emulator (NumPy for CuPy) and compared with the float64 product of the same inputs."""
    import types

    shim = types.SimpleNamespace(asarray=np.asarray, zeros=np.zeros, float32=np.float32)
    monkeypatch.setitem(sys.modules, "cupy", shim)
    rec = {f: _Recorder(m) for f, m in emu.items()}
    monkeypatch.setattr(bf, "_gpu_module", lambda file: rec[file])
    x = bf.Inputs(64, 7)
    by = {c.name: c for c in bf.contenders(check_sizes=(64,))}
    by[bf.FP8].build(x)()
    C = rec["fp8_gemm_mma"].bound[-1][2]
    ref = x.scale_a * x.scale_b * fp8.decode(x.a8) @ fp8.decode(x.b8).T
    assert np.abs(C - ref).max() <= 1e-4 * np.abs(ref).max()
    by[bf.SPARSE].build(x)()
    C = rec["sparse_gemm_mma_sp"].bound[-1][3]
    pruned = x.a16_pruned.astype(np.float64)
    assert (np.count_nonzero(pruned.reshape(64, 16, 4), axis=2) <= 2).all() and not np.array_equal(pruned, x.a16)
    ref = pruned @ x.b16.astype(np.float64)
    assert np.abs(C - ref).max() <= 1e-4 * np.abs(ref).max()


# ---------------------------------------------------------------- the library check
def _fp8_product(case, scaled=True):
    a, b, sa, sb = case.args[0], case.args[1], case.args[6], case.args[7]
    s = sa * sb if scaled else 1.0
    return (s * (fp8.decode(a) @ fp8.decode(b).T)).astype(np.float32)


def test_library_check_passes_a_right_library_and_fails_a_wrong_one():
    cases = bf.fp8_cases([64, 128], np.random.default_rng(3))
    assert bf.check_library(_fp8_product, cases, 2).ok
    wrong = bf.check_library(lambda c: _fp8_product(c, scaled=False), cases, 2)
    assert not wrong.ok and "WRONG" in wrong.cell


def test_library_check_slack_is_said_and_bounded():
    """An error above the fp32 bound passes only with a fallback (a narrower accumulator), and says
    so; far above it, or a wrong product within it, fails still."""
    cases = bf.fp8_cases([64], np.random.default_rng(4))
    e = cases[0].expected[2]

    def off(k):
        return lambda c: e.ref + k * e.bound

    assert not bf.check_library(off(4.0), cases, 2).ok
    loose = bf.check_library(off(4.0), cases, 2, fallback=bf.FP8_ACCUMULATOR)
    assert loose.ok and "FP8 tensor-core accumulation" in loose.cell and 3.9 < loose.worst < 4.1
    assert not bf.check_library(off(4 * bf.FP8_ACCUMULATOR[0]), cases, 2, fallback=bf.FP8_ACCUMULATOR).ok
    wide = (1e9, "any")  # componentwise anything: the normwise test alone stops a wrong product
    assert not bf.check_library(lambda c: e.ref[::-1], cases, 2, fallback=wide).ok
    assert bf.check_library(off(4.0), cases, 2, fallback=wide).ok


def test_library_check_of_an_fp16_output():
    """cuSPARSELt and cuBLAS write fp16: their rounding is allowed only when the check is told."""
    cases = bf.sparse_cases([64], np.random.default_rng(5))

    def fp16_product(c):
        return (bf.dense_of_sparse_case(c).astype(np.float64) @ c.args[2].astype(np.float64)).astype(np.float16)

    assert not bf.check_library(fp16_product, cases, 3).ok
    assert bf.check_library(fp16_product, cases, 3, fp16_out=True).ok
    assert np.array_equal(bf.dense_of_sparse_case(cases[0]), sparse24.prune(bf.dense_of_sparse_case(cases[0]))[0])


def test_library_not_available_without_pytorch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    for make in (lambda: bf.scaled_mm(None, None, 1.0, 1.0), lambda: bf.cslt_mm(None, None)):
        with pytest.raises(bf.Unavailable, match="PyTorch is not installed"):
            make()
    assert bf._torch_version() == ", no PyTorch"


# ---------------------------------------------------------------- measurement and record, faked
MS = {bf.FP8: 2.0, bf.FP8_WGMMA: 0.4, bf.FP8_WGMMA_FAST: 0.35, bf.SPARSE: 4.0, bf.RUNG: 1.0, bf.CUBLAS: 0.8, bf.LT: 0.5, bf.CSLT: 0.6}


def _fake(missing=(), wrong=()):
    def check(name):
        def run():
            if name in missing:
                raise bf.Unavailable("PyTorch is not installed (No module named 'torch')")
            return bf.Check(name not in wrong, 0.25, "" if name not in wrong else "64x64x64: 3 bad")
        return run

    return [bf.Contender(name, check(name), lambda x, name=name: name, lambda n: 6 * n * n) for name in MS]


def _timer(k, b, ws):
    return MS[k], MS[b], MS[b] / MS[k]  # the fake launches are their names


def _tflops(name, n):
    return 2.0 * n**3 / (MS[name] * 1e-3) / 1e12


def test_measure_times_every_pair_and_the_record_says_so():
    lines = []
    checks, results = bf.measure(_fake(), (1024, 2048), timer=_timer, inputs=lambda n, seed: n, out=lines.append)
    assert all(c.ok for c in checks.values()) and len(results) == 2 * len(bf.PAIRS)
    text = bf.record("NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", "2026-11-27 17:00 UTC", checks, results, (1024, 2048))
    assert text.startswith("## FP8 and 2:4-sparse GEMMs vs the libraries — NVIDIA H100 80GB HBM3")
    assert "2026-11-27 17:00 UTC" in text and "dense-equivalent" in text
    for n in (1024, 2048):
        m = re.search(rf"- {n}\^3: FP8 mma.sync: ([\d.]+) TFLOP/s, ([\d.]+)x the fp16 rung, ([\d.]+)% of cuBLASLt FP8",
                      text)
        assert m, text
        assert float(m.group(1)) == pytest.approx(_tflops(bf.FP8, n), abs=0.05)
        assert float(m.group(2)) == pytest.approx(MS[bf.RUNG] / MS[bf.FP8], abs=0.005)
        assert float(m.group(3)) == pytest.approx(100 * MS[bf.LT] / MS[bf.FP8], abs=0.05)
        m = re.search(rf"- {n}\^3: 2:4 mma.sp: ([\d.]+) dense-equivalent TFLOP/s, ([\d.]+)x the dense fp16 rung, "
                      r"([\d.]+)% of cuSPARSELt", text)
        assert m and float(m.group(3)) == pytest.approx(100 * MS[bf.CSLT] / MS[bf.SPARSE], abs=0.05)
        m = re.search(rf"- {n}\^3: cuBLASLt FP8: ([\d.]+) TFLOP/s, ([\d.]+)x cuBLAS fp16", text)
        assert m and float(m.group(2)) == pytest.approx(MS[bf.CUBLAS] / MS[bf.LT], abs=0.005)
    table = [ln for ln in text.splitlines() if ln.startswith(f"| {bf.FP8} | 1024^3 | {bf.LT} |")]
    assert len(table) == 1 and f"| {_tflops(bf.FP8, 1024):.1f} | {_tflops(bf.LT, 1024):.1f} |" in table[0]
    assert lines[:len(MS)] == [f"check {n}: yes (0.25 of bound)" for n in MS]  # every check before any timing


def test_a_missing_library_and_a_wrong_contender_are_not_timed_and_the_rest_runs():
    timed = []

    def timer(k, b, ws):
        timed.append((k, b))
        return _timer(k, b, ws)

    checks, results = bf.measure(_fake(missing=(bf.LT, bf.CSLT), wrong=(bf.SPARSE,)), (1024,), timer=timer,
                                 inputs=lambda n, seed: n, out=lambda s: None)
    assert timed == [(bf.FP8, bf.RUNG), (bf.FP8, bf.CUBLAS), (bf.FP8_WGMMA, bf.RUNG), (bf.FP8_WGMMA, bf.FP8),
                     (bf.FP8_WGMMA_FAST, bf.FP8_WGMMA), (bf.RUNG, bf.CUBLAS)]
    text = bf.record("GPU", "now", checks, results, (1024,))
    assert f"| {bf.LT} | {bf.DESCRIBE[bf.LT]} | library not available here: PyTorch is not installed" in text
    assert f"| {bf.FP8} | 1024^3 | {bf.LT} | {bf.LT}: library not available here: PyTorch is not installed" in text
    assert f"| {bf.SPARSE} | 1024^3 | {bf.RUNG} | {bf.SPARSE}: WRONG: 64x64x64: 3 bad |" in text
    fp8_line = next(ln for ln in text.splitlines() if "FP8 mma.sync:" in ln)
    assert "x the fp16 rung" in fp8_line and "cuBLASLt FP8: library not available here" in fp8_line
    assert f"- 1024^3: 2:4 mma.sp: not measured, {bf.SPARSE}: WRONG: 64x64x64: 3 bad, {bf.SPARSE}: WRONG" in text
    assert f"- 1024^3: cuSPARSELt: not measured, {bf.CSLT}: library not available here" in text


def test_a_library_that_fails_to_build_at_a_size_is_reported():
    cands = _fake()

    def broken(x):
        raise bf.Unavailable("cuSPARSELt: operation not supported")

    cands = [bf.Contender(c.name, c.check, broken, c.working_set) if c.name == bf.CSLT else c for c in cands]
    _, results = bf.measure(cands, (1024,), timer=_timer, inputs=lambda n, seed: n, out=lambda s: None)
    r = next(r for r in results if (r.kernel, r.baseline) == (bf.SPARSE, bf.CSLT))
    assert r.note == f"{bf.CSLT}: library not available here: cuSPARSELt: operation not supported"


def test_without_a_gpu_it_says_so():
    from grader.runtime.device import device_info

    if device_info() is not None:
        pytest.skip("a GPU is here")
    assert bf.main(["--sizes", "64"]) == 2


def test_device_script_runs_the_bench_under_a_time_limit():
    script = ROOT / ".ci" / "gpu-fp8"
    text = script.read_text()
    assert script.stat().st_mode & 0o111
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert "grader.runtime.proctree --timeout" in text and "python3 -m grader.bench.fp8" in text
    assert re.search(r"^# +run\(.*command=.*\.ci/gpu-fp8", text, re.M), "the header gives the device command"
    assert "RESULTS-fp8.md" in text


# ---------------------------------------------------------------- on a GPU
@pytest.mark.gpu
def test_every_contender_checks_on_the_gpu():
    may_not_run = (bf.LT, bf.CSLT, bf.FP8_WGMMA, bf.FP8_WGMMA_FAST)  # a library missing; wgmma below sm_90
    for c in bf.contenders(check_sizes=(256,)):
        got = c.check() if c.name not in may_not_run else _or_unavailable(c.check)
        assert got.ok or got.note.startswith(("library not available here", "SKIPPED: needs sm_90a")), (c.name,
                                                                                                      got.cell)


def _or_unavailable(check):
    try:
        return check()
    except bf.Unavailable as e:
        return bf.Check(False, note=bf._library_cell(e))


@pytest.mark.gpu
def test_the_bench_writes_a_record_on_the_gpu(tmp_path):
    out = tmp_path / "RESULTS-fp8.md"
    assert bf.main(["--sizes", "1024", "--check-sizes", "256", "--out", str(out)]) == 0
    text = out.read_text()
    assert "WRONG" not in text and "FAILED" not in text
    assert re.search(r"- 1024\^3: FP8 mma.sync: [\d.]+ TFLOP/s, [\d.]+x the fp16 rung, ", text)
