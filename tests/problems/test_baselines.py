"""The library work a kernel is timed against (grader.problems.baselines), built on the CPU with
stand-ins for CuPy, the GPU module and the device: fp8-gemm's "fp16-rung" is notebook 10's
kernels/mma_gemm_tuned.cu, built as its header says for the GPU's shared memory, run on the FP8
GEMM's own inputs decoded to fp16 (exactly), B laid out K x N; the launch checked at the GPU."""
from __future__ import annotations

import types

import numpy as np
import pytest

from grader.checking import exercises
from grader.problems import baselines, fp8, gemm_launch
from grader.runtime import device, gpu, kernels


def _stand_ins(monkeypatch, max_shared: int) -> list:
    """CuPy as NumPy, a GPU of `max_shared` bytes of shared memory per block, and a GpuModule that
    records what it is built from and what it binds."""
    cupy = types.SimpleNamespace(asarray=np.asarray, ascontiguousarray=np.ascontiguousarray, empty=np.empty,
                                 float32=np.float32)
    monkeypatch.setitem(__import__("sys").modules, "cupy", cupy)
    monkeypatch.setattr(device, "device_info", lambda: types.SimpleNamespace(max_shared_optin=max_shared))
    built = []

    class Module:
        def __init__(self, source, options=()):
            built.append(dict(source=source, options=tuple(options)))

        def bind(self, kernel, grid, block, args, shared_mem=0):
            built[-1].update(kernel=kernel, grid=grid, block=block, args=args, shared_mem=shared_mem)
            return lambda: None
    monkeypatch.setattr(gpu, "GpuModule", Module)
    return built


def test_fp8_gemm_is_timed_against_the_fp16_rung():
    ex = next(e for e in exercises.EXERCISES.values() if isinstance(e.problem, fp8.Fp8Gemm))
    assert ex.problem.baseline == "fp16-rung" and "fp16-rung" in baselines.NAMES
    assert "mma_gemm_tuned" in baselines.name("fp16-rung")


@pytest.mark.parametrize("max_shared,options,shared", [(227 * 1024, (), 147456),
                                                      (99 * 1024, ("-DBLOCK_K=32", "-DSTAGES=4"), 98304)])
def test_the_fp16_rung_runs_on_the_decoded_codes_as_its_header_builds_it(monkeypatch, max_shared, options, shared):
    built = _stand_ins(monkeypatch, max_shared)
    M, N, K = 256, 512, 128
    case = fp8.gemm_case(M, N, K, np.random.default_rng(3), reference=False)
    run = baselines.make("fp16-rung", case.args, dict(M=M, N=N, K=K))
    assert callable(run) and len(built) == 1
    b = built[0]
    assert b["source"] == kernels.source("mma_gemm_tuned") and b["options"] == options
    assert (b["kernel"], b["block"], b["shared_mem"]) == ("mma_gemm", (256, 1, 1), shared)
    assert b["grid"] == (N // 256, M // 128, 1)
    A, B, C = b["args"][:3]
    assert b["args"][3:] == [M, N, K]
    assert A.dtype == B.dtype == np.float16 and C.shape == (M, N) and C.dtype == np.float32
    # the same GEMM in fp16: every e4m3 value is an fp16 value, so nothing is rounded
    assert np.array_equal(A.astype(np.float64), fp8.decode(case.args[0]))
    assert np.array_equal(B.astype(np.float64), fp8.decode(case.args[1]).T) and B.flags.c_contiguous


def test_the_fp16_rung_refuses_a_size_its_tile_does_not_divide(monkeypatch):
    _stand_ins(monkeypatch, 227 * 1024)
    case = fp8.gemm_case(100, 256, 64, np.random.default_rng(0), reference=False)
    with pytest.raises(ValueError, match="multiples"):
        baselines.make("fp16-rung", case.args, {})


def test_the_timed_size_suits_the_rung_on_every_gpu_the_exercise_runs_on():
    ex = next(e for e in exercises.EXERCISES.values() if isinstance(e.problem, fp8.Fp8Gemm))
    for max_shared in (99 * 1024, 227 * 1024):  # sm_89's per-block limit, sm_90's
        spec = gemm_launch.mma_tuned(max_shared)
        assert spec.shared_mem <= max_shared
        assert all(ex.perf_size[d] % m == 0 for d, m in zip("MNK", spec.multiple)), spec
