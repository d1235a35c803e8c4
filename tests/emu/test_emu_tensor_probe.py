"""The keyed tensor-core probe (grader.problems.signed_products): the emulator flips the sign of
each matrix instruction's product where the grader's own hash says, so the grader's reference of a
probe run is what an honest kernel gives. On small integers every partial sum is exact in fp32,
so the two must agree bit for bit whatever order a kernel sums in: a hash that differed between
the emulator (emu_abi.h) and NumPy for any operand type would show here."""
from __future__ import annotations

import numpy as np
import pytest

from grader.checking import exercises
from grader.problems import fp8
from grader.runtime import backend, kernels

TENSOR = [e.id for e in exercises.EXERCISES.values() if e.tensor_cores]


def _integer_case(ex, rng):
    """A case of the exercise's first CPU size with small integers for inputs (e4m3 codes of them),
    unit scales and an epilogue whose roundings are exact."""
    case = ex.problem.make(ex.cpu_sizes[0], rng, ex.launch_defaults)
    for i in (0, 1):
        a = case.args[i]
        v = rng.integers(-3, 4, a.shape)
        case.args[i] = fp8.encode(v) if a.dtype == np.uint8 else v.astype(a.dtype)
    if isinstance(ex.problem, fp8.Fp8Gemm):
        case.args[6] = case.args[7] = 1.0
    if getattr(ex.problem, "epilogue", False):
        case.args[2] = rng.integers(-3, 4, case.args[2].shape).astype(case.args[2].dtype)
        case.args[7], case.args[8] = 2.0, -1.0
    return case


@pytest.mark.parametrize("exercise", TENSOR)
def test_the_keyed_run_is_the_graders_signed_sum_exactly(exercise):
    ex = exercises.get(exercise)
    rng = np.random.default_rng(7)
    case = _integer_case(ex, rng)
    module = backend.load(kernels.source(ex.reference), "emu", ex.problem.options(ex.launch_defaults))
    outs = {}
    for key in (0, 0x9E3779B97F4A7C15, 0x1234567890ABCDEF):
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
        module.launch(ex.kernel, case.grid, case.block, args, case.shared_mem, tc_key=key)
        out = args[case.outputs[0]]
        outs[key] = out
        if key:
            (pos, (ref, bound)), = ex.problem.probe_reference(case, key).items()
            assert pos == case.outputs[0]
            got = out.astype(np.float64).reshape(ref.shape)
            assert np.array_equal(got, ref), (exercise, key, np.argwhere(got != ref)[:5])
    plain, k1, k2 = outs.values()
    # the flips happen, and another key flips other products
    assert not np.array_equal(plain, k1) and not np.array_equal(k1, k2)
