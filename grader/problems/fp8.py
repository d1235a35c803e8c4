"""FP8 (e4m3, e5m2) in NumPy, and the scaled FP8 GEMM of kernels/fp8_gemm_mma.cu (notebook 11).

The codes are uint8 arrays (NumPy and CuPy have no fp8 type). `decode` gives every code's value;
`encode` rounds to the nearest code, ties to the even one, saturating at +-max (what CUDA's
__NV_SATFINITE conversions and `cvt.rn.satfinite` do; OCP OFP8 v1.0 formats). The emulator's
own codec (grader/emu/include/emu_fp8.h) is checked against an independent reference in
tests/emu/test_emu_fp8.py; this one against that same reference in tests/emu/test_fp8_kernels.py.
"""
from __future__ import annotations

import numpy as np

from grader.problems import numerics
from grader.problems.kinds import Case, Expected, Problem, poisoned

FORMATS = {"e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}  # exponent bits, mantissa bits, bias
MAX = {"e4m3": 448.0, "e5m2": 57344.0}


def _table(fmt: str) -> np.ndarray:
    ebits, mbits, bias = FORMATS[fmt]
    c = np.arange(256)
    e, m = (c >> mbits) & ((1 << ebits) - 1), c & ((1 << mbits) - 1)
    mag = np.where(e == 0, m * 2.0 ** (1 - bias - mbits), (1 + m / 2**mbits) * 2.0 ** (e - bias))
    if fmt == "e4m3":
        mag = np.where((e == 15) & (m == 7), np.nan, mag)
    else:
        mag = np.where(e == 31, np.where(m == 0, np.inf, np.nan), mag)
    return np.where(c & 0x80, -mag, mag)


_TABLES = {f: _table(f) for f in FORMATS}


def decode(codes: np.ndarray, fmt: str = "e4m3") -> np.ndarray:
    """float64 values of uint8 codes."""
    return _TABLES[fmt][np.asarray(codes, np.uint8)]


def encode(x: np.ndarray, fmt: str = "e4m3") -> np.ndarray:
    """uint8 codes of x: nearest value, ties to the even code, +-max beyond the range, NaN -> 0x7F.

    By binade: |x| (saturated) over the spacing of the codes in its binade (a power of two, so
    exact), rounded half to even by rint, is the code's offset from the binade's first code, and a
    tie goes to the even offset, i.e. the even code. Subnormals share the smallest normal binade's
    spacing, so one formula covers them, and an offset that rounds up to the next binade's first
    code lands there. (Arithmetic, not a search: the timed size of fp8-gemm is 2 x 16.8M codes.)"""
    _, mbits, bias = FORMATS[fmt]
    x = np.asarray(x, np.float64)
    emin = 1 - bias
    nan = np.isnan(x)
    a = np.minimum(np.abs(np.where(nan, 0.0, x)), MAX[fmt])
    e = np.frexp(np.maximum(a, 2.0 ** emin))[1] - 1  # the binade: 2^e <= |x| < 2^(e+1)
    n = np.rint(np.ldexp(a, mbits - e)).astype(np.int64)
    codes = (n + ((e - emin).astype(np.int64) << mbits)).astype(np.uint8)
    codes |= np.signbit(x).astype(np.uint8) << np.uint8(7)
    return np.where(nan, np.uint8(0x7F), codes).astype(np.uint8)


def quantize(x: np.ndarray, fmt: str = "e4m3") -> tuple[np.ndarray, float]:
    """Per-tensor scaling: (codes of x / scale, scale) with scale = amax(|x|) / max, so the largest
    magnitude lands on the format's largest value."""
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    scale = amax / MAX[fmt] if amax > 0 else 1.0
    return encode(x / scale, fmt), float(np.float32(scale))


def gemm_inputs(M: int, N: int, K: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The float64 data gemm_case quantizes: A (M x K) and B (N x K), of other sizes."""
    return rng.uniform(-3, 3, (M, K)), rng.uniform(-0.5, 0.5, (N, K))


def gemm_case(M: int, N: int, K: int, rng: np.random.Generator, reference: bool = True) -> Case:
    """A case of kernels/fp8_gemm_mma.cu: C = scale_a * scale_b * A * B^T, A (M x K) and B (N x K)
    e4m3 codes; reference: the float64 product of the decoded codes, times the scales."""
    A64, B64 = gemm_inputs(M, N, K, rng)
    a, sa = quantize(A64)
    b, sb = quantize(B64)
    grid = (-(-N // 16), -(-M // 32), 1)
    expected = {}
    if reference:
        da, db = decode(a) * sa, decode(b) * sb
        # fp32 sum (exact products), then the scale product and the final multiply: two more roundings
        expected = {2: Expected(da @ db.T, numerics.gemm_bound(np.abs(da) @ np.abs(db).T, K + 2))}
    return Case(f"{M}x{N}x{K} e4m3", [a, b, poisoned((M, N), np.float32), M, N, K, sa, sb], [2], grid,
                (64, 1, 1), 0, expected)


class Fp8Gemm(Problem):
    """The scaled e4m3 GEMM of kernels/fp8_gemm_mma.cu: C = scale_a scale_b A B^T, A (M x K) and
    B (N x K) e4m3 codes (K-major, "TN"), C fp32; one 64-thread block per 32 x 16 tile of C."""

    params = (("A", "const __nv_fp8_storage_t*"), ("B", "const __nv_fp8_storage_t*"), ("C", "float*"),
              ("M", "int"), ("N", "int"), ("K", "int"), ("scale_a", "float"), ("scale_b", "float"))
    passed = "matches the float64 product of the decoded e4m3 codes times the scales"
    # speed: against notebook 10's fp16 rung on the same GEMM in fp16 (grader.problems.baselines)
    baseline = "fp16-rung"
    in_dtype = "uint8"  # one byte an input element (the coach's traffic model)
    sums_over_k = True

    def make(self, dims, rng, launch, reference=True):
        return gemm_case(dims["M"], dims["N"], dims["K"], rng, reference)

    def flops(self, dims):
        return 2.0 * dims["M"] * dims["N"] * dims["K"]

    def sample(self, case, flat):
        a, b, sa, sb = case.args[0], case.args[1], case.args[6], case.args[7]
        K, N = a.shape[1], b.shape[0]
        i, j = np.divmod(np.asarray(flat), N)
        da, db = decode(a[i]) * sa, decode(b[j]) * sb  # one row of A and one of B (N x K) per element
        ref, abs_ab = np.einsum("sk,sk->s", da, db), np.einsum("sk,sk->s", np.abs(da), np.abs(db))
        return ref, numerics.gemm_bound(abs_ab, K + 2)

    def probe_reference(self, case, key):
        from grader.problems.signed_products import signed_sum

        a, b, sa, sb = case.args[0], case.args[1], case.args[6], case.args[7]
        da, db = decode(a) * sa, decode(b).T * sb  # the codes' bits decide each flip, their values multiply
        bt = np.ascontiguousarray(b.T)
        ref = signed_sum(key, a, da, bt, db)
        return {2: (ref, numerics.gemm_bound(np.abs(da) @ np.abs(db), a.shape[1] + 2))}
