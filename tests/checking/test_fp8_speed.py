"""fp8-gemm's speed point (issue #36 item 4): against the course's fp16 rung on the same GEMM in fp16.

On the CPU (or a GPU without FP8 tensor cores, sm < 89) its speed is not graded and the verdict says
why in one line, as for every speed point without a GPU. On an sm_89+ GPU (tests marked gpu): the
baseline computes the product it stands for, and the reference earns the speed point with the
course's 1.3x margin over the target; the run prints the ratio it measured through `check` and the
floor and target that would give (the number for FP8_GEMM_SPEED)."""
from __future__ import annotations

import types

import numpy as np
import pytest

from grader.checking import calibration, exercises
from grader.checking.steps.speed import speed
from grader.checking.verdict import PASS, SKIP
from grader.problems import fp8
from grader.runtime import device, kernels

EX = next(e for e in exercises.EXERCISES.values() if isinstance(e.problem, fp8.Fp8Gemm))


def _speed_skip(monkeypatch, gpu_cc: int | None) -> str:
    """The speed item of a correct fp8-gemm kernel checked on the emulator, with no GPU or one of `gpu_cc`."""
    info = None if gpu_cc is None else types.SimpleNamespace(cc=gpu_cc, arch=f"sm_{gpu_cc}")
    monkeypatch.setattr(device, "device_info", lambda: info)
    monkeypatch.setattr(device, "has_gpu", lambda: info is not None)
    monkeypatch.setenv("TC_CPU_ONLY", "0")
    items = speed(types.SimpleNamespace(ex=EX, chosen="emu", lesson=None))
    assert [i.status for i in items] == [SKIP]
    return items[0].message


def test_without_an_fp8_gpu_speed_is_not_graded_and_says_why_in_one_line(monkeypatch):
    assert EX.target is not None and EX.points_speed > 0 and EX.min_arch == 89
    assert _speed_skip(monkeypatch, None) == "needs a GPU of sm_89 or newer (none here)"
    assert _speed_skip(monkeypatch, 80) == "needs a GPU of sm_89 or newer (this GPU: sm_80)"
    assert _speed_skip(monkeypatch, 90) == "needs a GPU of sm_89 or newer"  # backend="emu" asked for
    assert "\n" not in _speed_skip(monkeypatch, 80)


def _fp8_gpu():
    if device.needs(EX.min_arch):
        pytest.skip(f"fp8-gemm {device.needs(EX.min_arch)}")


@pytest.mark.gpu
def test_the_fp16_rung_baseline_computes_the_product_on_the_gpu(monkeypatch):
    import cupy

    from grader.problems import baselines, numerics

    _fp8_gpu()
    M, N, K = 256, 512, 256
    case = fp8.gemm_case(M, N, K, np.random.default_rng(11), reference=False)
    args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]
    made, empty = [], cupy.empty
    monkeypatch.setattr(cupy, "empty", lambda *a, **k: made.append(empty(*a, **k)) or made[-1])
    run = baselines.make(EX.problem.baseline, args, dict(M=M, N=N, K=K))
    C = made[-1]  # the rung's output
    C.fill(np.nan)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    da, db = fp8.decode(case.args[0]), fp8.decode(case.args[1])  # the scales change no time: left out
    ref, bound = da @ db.T, numerics.gemm_bound(np.abs(da) @ np.abs(db).T, K)
    assert C.shape == (M, N) and np.all(np.abs(C.get() - ref) <= bound)


@pytest.mark.gpu
def test_the_reference_earns_the_speed_point_on_an_fp8_gpu():
    from grader.bench.calibrate import derived
    from grader.checking.check import check

    _fp8_gpu()
    v = check(EX.id, kernels.source(EX.reference), backend="gpu")
    print(v.text())
    print("\n".join(derived([dict(id=EX.id, speed=v.speed)])))  # the ratio through check, for FP8_GEMM_SPEED
    item = next(i for i in v.items if i.name == "speed")
    assert item.status == PASS and v.score == EX.points, v.text()
    assert v.speed["ratio"] >= calibration.MARGIN * EX.target, f"margin below {calibration.MARGIN}x: {v.speed}"


def test_the_speed_verdict_says_while_its_thresholds_are_provisional():
    import dataclasses

    from grader.checking.steps.speed import speed_item

    perf = dict(kernel_ms=20.0, baseline_ms=0.4, ratio=0.02)
    m = EX.calibration
    for where, said in (("PROVISIONAL: not measured", True), ("2026-11-28, NVIDIA H100 80GB HBM3, .ci/gpu-fp8", False)):
        ex = dataclasses.replace(EX, calibration=calibration.Measured(m.ratio, where, by=m.by))
        item = speed_item(ex, perf, types.SimpleNamespace())
        assert ("provisional" in item.message) == said, item.message
        assert f"target {100 * ex.target:.3g}%" in item.message and "of the speed of the course's fp16 rung" in item.message
