"""Notebook 11's formats and scaling lesson (grader.lessons.fp8_formats) against NumPy and the
formats' definitions (OCP OFP8 v1.0; IEEE 754 binary16; bf16 = the top half of binary32)."""
import math

import numpy as np
import pytest

from grader.lessons import fp8_formats as F
from grader.lessons import precision
from grader.problems import fp8, numerics


def test_facts_are_the_definitions_of_each_format():
    e4, e5 = F.facts("e4m3"), F.facts("e5m2")
    # e4m3 keeps exponent 15 for numbers (only S.1111.111 is NaN): max 1.75 * 2^8; e5m2 is IEEE-like
    assert (e4["max"], e4["min_normal"], e4["min_subnormal"]) == (1.75 * 2**8, 2.0**-6, 2.0**-9)
    assert (e5["max"], e5["min_normal"], e5["min_subnormal"]) == (1.75 * 2**15, 2.0**-14, 2.0**-16)
    assert (e4["nan_codes"], e4["has_inf"], e5["nan_codes"], e5["has_inf"]) == (2, False, 6, True)
    assert e4["one_million_becomes"] == 448 and e5["one_million_becomes"] == 57344  # satfinite
    f16 = F.facts("fp16")
    fi = np.finfo(np.float16)
    assert (f16["max"], f16["min_normal"], f16["min_subnormal"]) == (float(fi.max), float(fi.tiny),
                                                                      float(fi.smallest_subnormal))
    assert f16["one_million_becomes"] == math.inf
    bf = F.facts("bf16")
    assert bf["max"] == precision.FORMATS["bf16"].max and bf["min_subnormal"] == precision.FORMATS["bf16"].min_subnormal
    for f in ("e4m3", "e5m2", "fp16", "bf16"):
        r = F.facts(f)
        assert r["finite_values"] + r["nan_codes"] + 2 * r["has_inf"] == 2 ** r["bits"]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_bits_are_the_code_and_neighbours_are_the_adjacent_values(fmt):
    vals = F.all_values(fmt)
    finite = np.unique(vals[np.isfinite(vals)])
    for x in np.random.default_rng(1).uniform(-1, 1, 200) * 2.0 ** np.random.default_rng(2).integers(-12, 12, 200):
        b = F.bits(float(x), fmt)
        code = int(b["sign"] + b["exponent"] + b["fraction"], 2)
        assert code == int(fp8.encode(np.array([x]), fmt)[0]) and vals[code] == b["value"] or b["value"] == 0
        assert b["error"] == b["value"] - x
        between = finite[(finite > b["down"]) & (finite < b["up"])]
        assert list(between) == [b["value"]] or (b["value"] == 0 and list(between) == [0.0])
        # nearest: no finite value is closer to x than the stored one
        assert abs(b["value"] - x) <= np.min(np.abs(finite - x)) + 0.0


def test_saturation_and_flush_are_named():
    assert F.bits(1000.0, "e4m3")["kind"] == "saturated" and F.bits(1000.0, "e4m3")["value"] == 448
    assert F.bits(1e-4, "e4m3")["kind"] == "zero"
    assert F.bits(2.0**-8, "e4m3")["kind"] == "subnormal"
    assert F.bits(0.1, "fp16")["value"] == float(np.float16(0.1))
    text = repr(F.explore(0.1))
    assert all(f in text for f in ("e4m3", "e5m2", "fp16", "bf16"))


def test_per_tensor_quantization_is_the_kernels():
    A = np.random.default_rng(3).normal(0, 1e-3, (8, 70))
    codes, s = F.quantize(A, "per-tensor")
    want, scale = fp8.quantize(A)
    assert np.array_equal(codes, want) and np.all(s == scale)


def test_per_block_scales_map_each_block_max_onto_448():
    A = np.random.default_rng(4).normal(0, 1, (4, 96)) * 2.0 ** np.repeat(np.arange(-6, 6).reshape(4, 3), 32, axis=1)
    codes, s = F.quantize(A, "per-block")
    assert s.shape == (4, 3)
    d = fp8.decode(codes).reshape(4, 3, 32)
    assert np.all(np.abs(d).max(axis=2) == 448)


@pytest.mark.parametrize("scaling", F.SCALINGS)
def test_fp8_gemm_is_the_float64_product_of_the_dequantized_inputs(scaling):
    rng = np.random.default_rng(5)
    A, B = F.sample_inputs(12, 9, 100, rng)
    qa, sa = F.quantize(A, scaling)
    qb, sb = F.quantize(B, scaling)
    da = fp8.decode(qa) * np.repeat(sa, 32, axis=1)[:, :100]
    db = fp8.decode(qb) * np.repeat(sb, 32, axis=1)[:, :100]
    bound = numerics.gemm_bound(np.abs(da) @ np.abs(db).T, 100 + 2)
    assert np.all(np.abs(F.fp8_gemm(A, B, scaling) - da @ db.T) <= bound)


def test_scaling_lesson_per_block_beats_per_tensor_beats_none():
    res = F.scaling_error([32, 256, 2048], seed=0)
    e = {k: np.array(v) for k, v in res["errors"].items()}
    assert np.all(e["per-block"] < e["none"]) and np.all(e["per-tensor"] < e["none"])
    assert np.mean(np.log(e["per-block"])) < np.mean(np.log(e["per-tensor"]))
    assert np.all(e["fp16 inputs"] < e["per-block"])
    assert np.all(e["per-block"] < 2 * F.facts("e4m3")["unit_roundoff"])
