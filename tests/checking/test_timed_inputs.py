"""How a timed launch's first input is perturbed (grader.checking.isolate.rescale), so that a kernel
that keeps an earlier launch's answer has the wrong one: floats by a power of two or its negative,
fp8 codes (uint8) by a flip of every byte's sign bit or none, which keeps every code valid and makes
no NaN; and fp8-gemm's speed step, run on the CPU with the NumPy stand-in for CuPy of
tests/checking/test_timed_lock.py, judged by the parent as on a GPU.
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from grader.checking import exercises, isolate
from grader.checking.steps import timed as timed_step
from grader.problems import baselines, fp8
from grader.runtime import timing
from test_timed_lock import _fake_cupy

ALL_CODES = np.arange(256, dtype=np.uint8)


def test_fp8_codes_are_negated_by_a_sign_flip_of_every_byte():
    assert isolate.launch_scales(np.uint8) == (-1.0, 1.0)
    flipped = isolate.rescale(np, ALL_CODES, -1.0)
    assert flipped.dtype == np.uint8
    assert np.all((flipped ^ ALL_CODES) == 0x80)  # every byte: its sign bit and nothing else
    for fmt in fp8.FORMATS:
        before, after = fp8.decode(ALL_CODES, fmt), fp8.decode(flipped, fmt)
        finite = np.isfinite(before)
        assert np.array_equal(after[finite], -before[finite])  # exact negation, +0 <-> -0 included
        assert np.array_equal(np.signbit(after[finite]), ~np.signbit(before[finite]))
        assert np.array_equal(np.isnan(after), np.isnan(before))  # no NaN made, none lost
    assert np.array_equal(isolate.rescale(np, ALL_CODES, 1.0), ALL_CODES)
    # never a NaN from a valid e4m3 code (0x7F and 0xFF are e4m3's only NaNs)
    valid = ALL_CODES[~np.isnan(fp8.decode(ALL_CODES))]
    assert set(valid ^ 0x80).isdisjoint({0x7F, 0xFF}) and len(valid) == 254


def test_floats_keep_their_powers_of_two_and_other_inputs_are_refused():
    x = np.linspace(-3, 3, 7, dtype=np.float16)
    for s in isolate.launch_scales(x.dtype):
        assert np.array_equal(isolate.rescale(np, x, s), x * np.float16(s))
    out = np.empty_like(x)
    assert isolate.rescale(np, x, -4.0, out=out) is out
    with pytest.raises(ValueError):
        isolate.rescale(np, ALL_CODES, 2.0)  # a multiply would read the codes as integers
    with pytest.raises(TypeError):
        isolate.launch_scales(np.int32)


class _Fp8Module:
    """fp8-gemm's kernel in NumPy: C = scale_a scale_b decode(A) decode(B)^T, rounded to fp32. It
    records every A it was launched on; with `memo`, it keeps its first answer (state across launches)."""

    def __init__(self, memo=False):
        self.seen, self.memo, self.first = [], memo, None

    def bind(self, kernel, grid, block, args, shared_mem):
        a, b, C, sa, sb = args[0], args[1], args[2], args[6], args[7]

        def launch():
            self.seen.append(np.array(a))
            got = (sa * sb * (fp8.decode(np.asarray(a)) @ fp8.decode(np.asarray(b)).T)).astype(np.float32)
            if self.memo and self.first is not None:
                got = self.first
            self.first = got if self.first is None else self.first
            C[...] = got
        return launch


def _fp8_speed_step(monkeypatch, module):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy([], dict(alone=False)))
    ex = exercises.get("fp8-gemm")
    small = dataclasses.replace(ex, perf_size=dict(M=64, N=48, K=96))  # a CPU-sized timed case
    monkeypatch.setattr(exercises, "get", lambda i: small if i == ex.id else ex)
    monkeypatch.setattr(timing, "flush_l2", lambda: None)
    built = []

    def make_baseline(kind, args, dims):
        built.append((kind, np.array(args[0]), np.array(args[1])))
        return lambda: None
    monkeypatch.setattr(baselines, "make", make_baseline)
    job = dict(exercise=ex.id, launch={}, perf_seed=2024,
               perf_samples=timed_step.perf_samples(small, {}, 2024))
    res = isolate._perf(module, job, conn=None)
    item = timed_step.timed_output_item(small, {}, job["perf_seed"], job["perf_samples"], res)
    return res, item, small, job, built


def test_fp8_gemm_timed_launches_see_sign_flipped_codes_and_are_judged(monkeypatch):
    module = _Fp8Module()
    res, item, ex, job, built = _fp8_speed_step(monkeypatch, module)
    pristine = ex.problem.make(ex.perf_size, np.random.default_rng(job["perf_seed"]), {}, reference=False).args[0]
    assert res["launches"] == len(module.seen) > 8
    for a, s in zip(module.seen, res["launch_scales"]):  # each launch's A: the codes, or every sign flipped
        assert np.array_equal(a, pristine ^ np.uint8(0x80) if s < 0 else pristine), s
        assert not np.isnan(fp8.decode(a)).any()
    assert set(res["launch_scales"]) == {-1.0, 1.0}
    assert res["changed_inputs"] == [] and not any(res["launch_nonfinite"])
    assert item.status == "pass", item
    # the library's side is built once, from the codes as made (never a perturbed copy)
    assert [k for k, *_ in built] == ["fp16-rung"] and np.array_equal(built[0][1], pristine)


def test_fp8_gemm_kernel_that_keeps_its_first_answer_fails_the_timed_check(monkeypatch):
    res, item, *_ = _fp8_speed_step(monkeypatch, _Fp8Module(memo=True))
    assert -1.0 in res["launch_scales"][1:] and 1.0 in res["launch_scales"][1:]
    assert item.status == "fail" and item.kind == "wrong-when-timed", item


def test_fp8_gemm_sampled_reference_is_the_full_ones():
    """The parent judges each timed launch by Fp8Gemm.sample: the full reference's elements and bounds."""
    p = fp8.Fp8Gemm()
    full = p.make(dict(M=40, N=24, K=72), np.random.default_rng(5), {})
    again = p.make(dict(M=40, N=24, K=72), np.random.default_rng(5), {}, reference=False)
    flat = np.random.default_rng(6).choice(40 * 24, size=100, replace=False)
    ref, bound = p.sample(again, flat)
    exp = full.expected[2]
    assert np.allclose(ref, exp.ref.ravel()[flat], rtol=1e-12, atol=1e-12)
    assert np.allclose(bound, np.broadcast_to(exp.bound, exp.ref.shape).ravel()[flat], rtol=1e-12)
