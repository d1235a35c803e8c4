"""FP8 on the emulator (include/emu_fp8.h, emu_ptx.h; issue #36 item 5), against references
written here on their own from the format definitions, not from the emulator's code:

- the formats (OCP 8-bit floating point specification v1.0, "OFP8"; CUDA's __NV_E4M3 / __NV_E5M2):
  every one of the 256 codes decoded from sign/exponent/mantissa fields; a float encoded by
  searching all finite codes for the nearest value, a tie going to the code with an even
  mantissa, and CUDA's documented overflow rule (cuda_fp8.hpp: above max + 1/2 ulp a value is
  max with __NV_SATFINITE, NaN (e4m3) or inf (e5m2) with __NV_NOSAT; a float NaN is 0x7F);
- the PTX `mma.sync.aligned.m16n8k32` e4m3/e5m2 fragment layouts (PTX ISA 9.1, 9.7.14.5.10
  "Matrix Fragments for mma.m16n8k32") and the sparse `mma.sp` m16n8k16/m16n8k32 f16 layouts and
  metadata (9.7.14.6.1 "Sparse matrix storage", 9.7.14.6.2.1-2), against a float64 product of the
  decoded inputs (the dense A for mma.sp).

Every probe also runs on a GPU (marked `gpu`), where its output must equal the emulator's bit for
bit: that is the cross-check the next GPU session runs (`pytest -m gpu tests/emu/test_emu_fp8.py`).
The NVRTC tests show the same sources compile for sm_89 and sm_90 (the instructions exist there).
"""
import math

import numpy as np
import pytest

from grader.runtime import backend as backends
from grader.runtime.errors import KernelFault

RNG = np.random.default_rng(36)
E4M3, E5M2 = "e4m3", "e5m2"


# ---------------------------------------------------------------- the formats, from their definition
def value(code: int, fmt: str) -> float:
    """The value of an 8-bit code: (-1)^s * 2^(e - bias) * (1 + m / 2^mbits), subnormal when e = 0."""
    ebits, mbits, bias = (4, 3, 7) if fmt == E4M3 else (5, 2, 15)
    s, e, m = code >> 7, (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
    sign = -1.0 if s else 1.0
    if fmt == E4M3 and e == 15 and m == 7:
        return math.nan  # e4m3 has no infinities; only S.1111.111 is NaN
    if fmt == E5M2 and e == 31:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - mbits)
    return sign * (1 + m / 2**mbits) * 2.0 ** (e - bias)


MAX = {E4M3: 448.0, E5M2: 57344.0}
MAXCODE = {E4M3: 0x7E, E5M2: 0x7B}
ULP_AT_MAX = {E4M3: 32.0, E5M2: 8192.0}
POSITIVE = {f: [(c, value(c, f)) for c in range(0x80) if math.isfinite(value(c, f))] for f in (E4M3, E5M2)}


def encode(x: float, fmt: str, saturate: bool) -> int:
    """Round-to-nearest-even code of a float, by search over the finite codes."""
    if math.isnan(x):
        return 0x7F
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    half = MAX[fmt] + ULP_AT_MAX[fmt] / 2  # the midpoint to the next value the format lacks
    # at the tie the max code wins if its mantissa is even (e4m3 0x7E), else the value overflows (e5m2 0x7B)
    if a > half or (a == half and MAXCODE[fmt] & 1):
        return sign | (MAXCODE[fmt] if saturate else (0x7F if fmt == E4M3 else 0x7C))
    best = min(POSITIVE[fmt], key=lambda cv: (abs(cv[1] - a), cv[0] & 1))
    return sign | best[0]


def _edge_floats(fmt: str) -> np.ndarray:
    vals = sorted({v for _, v in POSITIVE[fmt]})
    out = [0.0, -0.0, math.inf, -math.inf, math.nan, MAX[fmt], MAX[fmt] + ULP_AT_MAX[fmt] / 2, 1e30, 1e-30,
           MAX[fmt] + ULP_AT_MAX[fmt] / 2 * (1 + 2**-20), MAX[fmt] + ULP_AT_MAX[fmt] / 2 * (1 - 2**-20)]
    for lo, hi in zip(vals, vals[1:]):
        mid = (lo + hi) / 2  # a tie: exact in float32 (a few bits)
        out += [lo, mid, float(np.nextafter(np.float32(mid), np.float32(0))),
                float(np.nextafter(np.float32(mid), np.float32(np.inf)))]
    out += [vals[1] / 2 * f for f in (0.5, 0.99, 1.0, 1.01)]  # around half the smallest subnormal
    out += [-v for v in out]
    return np.array(out, np.float32)


def _floats() -> np.ndarray:
    """The same floats on every call: the GPU's run and the emulator's must convert one input."""
    rng = np.random.default_rng(8)
    rnd = (rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-20, 18, 3000)).astype(np.float32)
    return np.concatenate([_edge_floats(E4M3), _edge_floats(E5M2), rnd]).astype(np.float32)


def test_the_reference_agrees_with_the_definition_it_rests_on():
    """A reference that must be right before it judges: every code round-trips through it; the
    format constants are the documented ones."""
    for fmt in (E4M3, E5M2):
        for c in range(256):
            v = value(c, fmt)
            if math.isnan(v):
                continue
            assert encode(v, fmt, saturate=not math.isinf(v)) == c, (fmt, hex(c), v)
    assert value(0x7E, E4M3) == 448 and value(0x01, E4M3) == 2.0**-9 and math.isnan(value(0xFF, E4M3))
    assert value(0x7B, E5M2) == 57344 and value(0x7C, E5M2) == math.inf and value(0x01, E5M2) == 2.0**-16
    assert encode(464.0, E4M3, False) == 0x7E and encode(464.01, E4M3, False) == 0x7F   # tie to even, then NaN
    assert encode(61440.0, E5M2, False) == 0x7C and encode(61439.0, E5M2, False) == 0x7B  # tie to even is inf


# ---------------------------------------------------------------- conversion probes
CONVERT = r"""
#include <cuda_fp8.h>
#include <cuda_fp16.h>
// every code: its float (through the types) and its half bits (through the C API)
extern "C" __global__ void decode(float* f4, float* f5, unsigned short* h4, unsigned short* h5, unsigned* x2)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= 256) return;
    __nv_fp8_e4m3 a; a.__x = (__nv_fp8_storage_t)c;
    __nv_fp8_e5m2 b; b.__x = (__nv_fp8_storage_t)c;
    f4[c] = (float)a;
    f5[c] = (float)b;
    h4[c] = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E4M3).x;
    h5[c] = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E5M2).x;
    // the PTX form: a pair of codes (c, 255 - c) to a pair of halves
    const unsigned short pair = (unsigned short)((255 - c) << 8 | c);
    unsigned r4, r5;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r4) : "h"(pair));
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(r5) : "h"(pair));
    x2[2 * c] = r4;
    x2[2 * c + 1] = r5;
}

// x[i] to a code, twelve ways: out[12 * i + k]
extern "C" __global__ void encode(const float* x, unsigned char* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i], w = x[(i + 1) % n];
    unsigned char* o = out + 12 * i;
    o[0] = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
    o[1] = __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E4M3);
    o[2] = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
    o[3] = __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E5M2);
    o[4] = __nv_fp8_e4m3(v).__x;
    o[5] = __nv_fp8_e5m2(v).__x;
    unsigned short p4, p5, r4;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(p4) : "f"(w), "f"(v));  // v to the low byte
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(p5) : "f"(w), "f"(v));
    asm("cvt.rn.satfinite.relu.e4m3x2.f32 %0, %1, %2;" : "=h"(r4) : "f"(w), "f"(v));
    o[6] = (unsigned char)(p4 & 0xFF);
    o[7] = (unsigned char)(p5 & 0xFF);
    o[8] = (unsigned char)(r4 & 0xFF);
    // the high byte is w's: checked against o[6] of element i + 1 by the test
    o[9] = (unsigned char)(p4 >> 8);
    // a double NaN: cuda_fp8.hpp's software path keeps its sign (e4m3) and top mantissa bits (e5m2);
    // an H100 gave 0x7F for both (2026-11-27)
    o[10] = __nv_cvt_double_to_fp8((double)v, __NV_NOSAT, __NV_E4M3);
    o[11] = __nv_cvt_double_to_fp8((double)v, __NV_SATFINITE, __NV_E5M2);
}

// the vector types: float4 -> x4 -> float4, float2 -> x2 (storage bits)
extern "C" __global__ void vectors(const float* x, float* back4, unsigned* bits4, unsigned short* bits2, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 3 >= n) return;
    const float4 v = make_float4(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]);
    const __nv_fp8x4_e4m3 q(v);
    const float4 r = (float4)q;
    back4[4 * i] = r.x; back4[4 * i + 1] = r.y; back4[4 * i + 2] = r.z; back4[4 * i + 3] = r.w;
    bits4[i] = q.__x;
    bits2[i] = __nv_fp8x2_e5m2(make_float2(v.x, v.y)).__x;
}
"""


def _run(mod, name, grid, block, args):
    xp = mod.xp
    dev = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    mod.launch(name, grid, block, dev)
    return [d.get() if hasattr(d, "get") else d for d in dev]


def convert_outputs(which: str) -> dict:
    mod = backends.load(CONVERT, which)
    f4, f5 = np.zeros(256, np.float32), np.zeros(256, np.float32)
    h4, h5, x2 = np.zeros(256, np.uint16), np.zeros(256, np.uint16), np.zeros(512, np.uint32)
    f4, f5, h4, h5, x2 = _run(mod, "decode", (8, 1, 1), (32, 1, 1), [f4, f5, h4, h5, x2])
    x = _floats()
    n = x.size
    enc = _run(mod, "encode", ((n + 127) // 128, 1, 1), (128, 1, 1), [x, np.zeros(12 * n, np.uint8), n])[1]
    v = x[: (n // 4) * 4]
    _, back4, bits4, bits2, _ = _run(mod, "vectors", ((v.size // 4 + 127) // 128, 1, 1), (128, 1, 1),
                                     [v, np.zeros(v.size, np.float32), np.zeros(v.size // 4, np.uint32),
                                      np.zeros(v.size // 4, np.uint16), v.size])
    return dict(f4=f4, f5=f5, h4=h4, h5=h5, x2=x2, x=x, enc=enc.reshape(n, 12), back4=back4, bits4=bits4,
                bits2=bits2)


@pytest.fixture(scope="module")
def emu_convert():
    return convert_outputs("emu")


def _half_bits(v: float) -> int:
    return 0x7FFF if math.isnan(v) else int(np.array([v], np.float16).view(np.uint16)[0])


def test_every_code_decodes_to_its_value(emu_convert):
    o = emu_convert
    for fmt, f, h in ((E4M3, o["f4"], o["h4"]), (E5M2, o["f5"], o["h5"])):
        for c in range(256):
            v = value(c, fmt)
            assert (math.isnan(v) and math.isnan(f[c])) or f[c] == v, (fmt, hex(c), f[c], v)
            if math.isnan(v):  # as an H100 gave it for every NaN code of both formats (2026-11-27)
                assert int(f[c:c + 1].view(np.uint32)[0]) == 0x7FFFFFFF, (fmt, hex(c))
            # a NaN is the canonical half NaN 0x7FFF, sign dropped (cuda_fp8.hpp, __nv_cvt_fp8_to_halfraw)
            assert h[c] == _half_bits(v), (fmt, hex(c), hex(h[c]))
            if math.isfinite(v):
                assert math.copysign(1, f[c]) == math.copysign(1, v)  # -0 stays -0
    for c in range(256):  # the PTX pair form: low byte to the low half
        for k, fmt in enumerate((E4M3, E5M2)):
            word = int(o["x2"][2 * c + k])
            assert word & 0xFFFF == _half_bits(value(c, fmt)) and word >> 16 == _half_bits(value(255 - c, fmt))


def test_every_code_round_trips(emu_convert):
    """A code's value converts back to the same code (NaN to the canonical 0x7F)."""
    o = emu_convert
    x = o["x"]
    for fmt, col in ((E4M3, 0), (E5M2, 2)):
        decoded = o["f4"] if fmt == E4M3 else o["f5"]
        for c in range(256):
            same = np.isnan(x) if math.isnan(decoded[c]) else x.view(np.uint32) == np.float32(decoded[c]).view(np.uint32)
            idx = np.nonzero(same)[0]
            assert idx.size, (fmt, hex(c))  # every code's value is among the edge floats
            got = int(o["enc"][idx[0], col])
            want = 0x7F if math.isnan(decoded[c]) else c
            if fmt == E5M2 and math.isinf(decoded[c]):
                want = c & 0x80 | 0x7B  # satfinite: inf -> max
            assert got == want, (fmt, hex(c), hex(got))


@pytest.mark.parametrize("k,fmt,sat,what", [
    (0, E4M3, True, "__nv_cvt_float_to_fp8 SATFINITE e4m3"), (1, E4M3, False, "__nv_cvt_float_to_fp8 NOSAT e4m3"),
    (2, E5M2, True, "__nv_cvt_float_to_fp8 SATFINITE e5m2"), (3, E5M2, False, "__nv_cvt_float_to_fp8 NOSAT e5m2"),
    (4, E4M3, True, "__nv_fp8_e4m3(float)"), (5, E5M2, True, "__nv_fp8_e5m2(float)"),
    (6, E4M3, True, "cvt.rn.satfinite.e4m3x2.f32"), (7, E5M2, True, "cvt.rn.satfinite.e5m2x2.f32")])
def test_encoding_rounds_to_nearest_even_and_saturates_as_documented(emu_convert, k, fmt, sat, what):
    o = emu_convert
    got = o["enc"][:, k]
    want = np.array([encode(float(v), fmt, sat) for v in o["x"]], np.uint8)
    bad = np.nonzero(got != want)[0]
    assert not bad.size, [(float(o["x"][i]), hex(got[i]), hex(want[i])) for i in bad[:8]]


def test_double_conversion_makes_every_nan_0x7f(emu_convert):
    """As an H100 did (2026-11-27) for +NaN and -NaN in both formats: sign and payload dropped."""
    o = emu_convert
    x = o["x"]
    bits = x.view(np.uint32)
    nan = np.isnan(x)
    sign = np.where(bits >> 31, 0x80, 0)
    want4 = np.where(nan, 0x7F, [encode(float(v), E4M3, False) for v in x])
    want5 = np.where(nan, 0x7F, [encode(float(v), E5M2, True) for v in x])
    assert nan.sum() >= 2 and (sign[nan] == 0x80).any()  # both signs of NaN are among the inputs
    assert (o["enc"][:, 10] == want4).all() and (o["enc"][:, 11] == want5).all()


def test_ptx_pair_order_and_relu(emu_convert):
    o = emu_convert
    n = o["x"].size
    assert (o["enc"][:, 9] == np.roll(o["enc"][:, 6], -1)).all()  # the first source lands in the high byte
    want = np.array([0x7F if math.isnan(v) else encode(float(v) if v > 0 else 0.0, E4M3, True) for v in o["x"]], np.uint8)
    assert (o["enc"][:, 8] == want).all(), n  # .relu: negatives (and -0) to +0, NaN stays NaN


def test_vector_types_pack_low_first(emu_convert):
    o = emu_convert
    v = o["x"][: o["back4"].size]
    codes = np.array([encode(float(t), E4M3, True) for t in v], np.uint32).reshape(-1, 4)
    assert (o["bits4"] == codes[:, 0] | codes[:, 1] << 8 | codes[:, 2] << 16 | codes[:, 3] << 24).all()
    back = np.array([value(int(c), E4M3) for c in codes.ravel()], np.float32)
    assert np.array_equal(o["back4"], back, equal_nan=True)
    nan = np.isnan(back)  # a NaN code's float: 0x7FFFFFFF, as the scalar types' (an H100, 2026-11-27)
    assert nan.any() and (o["back4"].view(np.uint32)[nan] == 0x7FFFFFFF).all()
    c5 = np.array([encode(float(t), E5M2, True) for t in v], np.uint32).reshape(-1, 4)
    assert (o["bits2"] == (c5[:, 0] | c5[:, 1] << 8)).all()


# ---------------------------------------------------------------- mma m16n8k32 e4m3 / e5m2
# Documented layouts (PTX ISA 9.7.14.5.10), g = lane >> 2, t = lane % 4, element i of the lane:
#   A (16 x 32, 4 .b32 registers of 4 elements, a0 in the lowest byte): row g for a0-a3, a8-a11,
#     else g + 8; col 4t + (i % 4), + 16 for i >= 8
#   B (32 x 8, 2 registers): row 4t + (i % 4), + 16 for i >= 4; col g
#   C/D (16 x 8): f32, 4 registers: row g (c0, c1) / g + 8 (c2, c3), col 2t + (i % 2); f16: 2 f16x2 registers, same
def fp8_a_rc(lane, i):
    g, t = lane >> 2, lane & 3
    return g + (8 if i in (4, 5, 6, 7, 12, 13, 14, 15) else 0), 4 * t + (i % 4) + (16 if i >= 8 else 0)


def fp8_b_rc(lane, i):
    g, t = lane >> 2, lane & 3
    return 4 * t + (i % 4) + (16 if i >= 4 else 0), g


def c_rc(lane, i):
    g, t = lane >> 2, lane & 3
    return g + (8 if i >= 2 else 0), 2 * t + (i % 2)


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """[32, n] element codes -> [32, n * bits / 32] uint32 registers, element 0 in the low bits."""
    per = 32 // bits
    c = codes.astype(np.uint64).reshape(32, -1, per)
    return (c << (bits * np.arange(per, dtype=np.uint64))).sum(axis=2).astype(np.uint32)


def fragment(mat, coords, n):
    return np.array([[mat[coords(lane, i)] for i in range(n)] for lane in range(32)])


def _mma_fp8_source(at, bt, acc):
    c = "f" if acc == "f32" else "r"
    nreg = 4 if acc == "f32" else 2
    ct = "float" if acc == "f32" else "unsigned"
    d = ", ".join(f"%{i}" for i in range(nreg))
    cc = ", ".join(f"%{i + nreg + 6}" for i in range(nreg))
    return f"""
extern "C" __global__ void mma_fp8(const unsigned* RA, const unsigned* RB, const {ct}* RC, {ct}* RD)
{{
    const int l = threadIdx.x;
    unsigned a[4], b[2];
    {ct} c[{nreg}], d[{nreg}];
    for (int i = 0; i < 4; ++i) a[i] = RA[4 * l + i];
    for (int i = 0; i < 2; ++i) b[i] = RB[2 * l + i];
    for (int i = 0; i < {nreg}; ++i) c[i] = RC[{nreg} * l + i];
    asm volatile("mma.sync.aligned.m16n8k32.row.col.{acc}.{at}.{bt}.{acc} "
                 "{{{d}}}, {{%{nreg}, %{nreg + 1}, %{nreg + 2}, %{nreg + 3}}}, {{%{nreg + 4}, %{nreg + 5}}}, {{{cc}}};\\n"
                 : {", ".join(f'"={c}"(d[{i}])' for i in range(nreg))}
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   {", ".join(f'"{c}"(c[{i}])' for i in range(nreg))});
    for (int i = 0; i < {nreg}; ++i) RD[{nreg} * l + i] = d[i];
}}
"""


FP8_FORMS = [(a, b, acc) for a in (E4M3, E5M2) for b in (E4M3, E5M2) for acc in ("f32", "f16")]


def _codes_of(vals, fmt):
    return np.array([encode(float(v), fmt, True) for v in np.ravel(vals)], np.uint8).reshape(np.shape(vals))


def mma_fp8_case(at, bt, acc, data, rng):
    """(registers RA, RB, RC; float64 A, B, C) for one probe. data "exact": small integers, whose every
    partial sum is an integer below 2^11 (exact in fp16 and fp32, in any order and any truncation of
    the hardware's); "random": any finite codes (e4m3 below 16 in magnitude for an f16 accumulator)."""
    def codes(shape, fmt):
        if data == "exact":
            return _codes_of(rng.integers(-4, 5, shape), fmt)
        c = rng.integers(0, 256, shape).astype(np.uint8)
        vals = np.vectorize(lambda x: value(int(x), fmt))(c)
        lim = 16 if acc == "f16" else math.inf
        bad = ~np.isfinite(vals) | (np.abs(vals) > lim)
        c[bad] = _codes_of(rng.uniform(-1, 1, bad.sum()), fmt)
        return c
    Ac, Bc = codes((16, 32), at), codes((32, 8), bt)
    A = np.vectorize(lambda x: value(int(x), at))(Ac)
    B = np.vectorize(lambda x: value(int(x), bt))(Bc)
    C = rng.integers(-64, 65, (16, 8)).astype(np.float64) if data == "exact" else rng.uniform(-1, 1, (16, 8))
    if acc == "f16":
        C = C.astype(np.float16).astype(np.float64)
        RC = pack(fragment(C.astype(np.float16).view(np.uint16), c_rc, 4), 16)
    else:
        C = C.astype(np.float32).astype(np.float64)
        RC = fragment(C.astype(np.float32), c_rc, 4)
    return pack(fragment(Ac, fp8_a_rc, 16), 8), pack(fragment(Bc, fp8_b_rc, 8), 8), RC, (A, B, C)


def run_mma_fp8(which, at, bt, acc, RA, RB, RC):
    mod = backends.load(_mma_fp8_source(at, bt, acc), which)
    RD = np.zeros_like(RC)
    out = _run(mod, "mma_fp8", (1, 1, 1), (32, 1, 1), [RA.ravel(), RB.ravel(), RC.ravel(), RD.ravel()])[3]
    out = out.reshape(RC.shape)
    D = np.full((16, 8), np.nan)
    for lane in range(32):
        if acc == "f16":
            halves = np.stack([out[lane] & 0xFFFF, out[lane] >> 16], axis=1).ravel().astype(np.uint16)
            elems = halves.view(np.float16).astype(np.float64)
        else:
            elems = out[lane].astype(np.float64)
        for i, v in enumerate(elems):
            D[c_rc(lane, i)] = v
    return D, out


@pytest.mark.parametrize("form", FP8_FORMS, ids=lambda f: f"{f[2]}.{f[0]}.{f[1]}.{f[2]}")
def test_mma_fp8_is_exact_where_the_sum_is_exact(form):
    """Integer inputs: every product and partial sum is an integer below 2^11, so fp32 (and fp16)
    accumulation is exact and D must equal the float64 product bit for bit."""
    at, bt, acc = form
    RA, RB, RC, (A, B, C) = mma_fp8_case(at, bt, acc, "exact", np.random.default_rng(1))
    D, _ = run_mma_fp8("emu", at, bt, acc, RA, RB, RC)
    assert np.isfinite(D).all(), "some element of D was never written by any lane"
    assert np.array_equal(D, A @ B + C), np.abs(D - (A @ B + C)).max()


@pytest.mark.parametrize("form", FP8_FORMS, ids=lambda f: f"{f[2]}.{f[0]}.{f[1]}.{f[2]}")
def test_mma_fp8_matches_float64_on_any_codes(form):
    """Any finite codes: products of two 8-bit floats are exact in fp32 (at most 8 significant
    bits), so the only error is the accumulation's: within K * 2^-24 * (|A||B| + |C|) for f32, and
    the f16 result's rounding on top for f16."""
    at, bt, acc = form
    RA, RB, RC, (A, B, C) = mma_fp8_case(at, bt, acc, "random", np.random.default_rng(2))
    D, _ = run_mma_fp8("emu", at, bt, acc, RA, RB, RC)
    ref = A @ B + C
    mag = np.abs(A) @ np.abs(B) + np.abs(C)
    unit = 2.0**-24 if acc == "f32" else 2.0**-11
    assert (np.abs(D - ref) <= 33 * unit * mag + 1e-30).all(), np.max(np.abs(D - ref) / (mag + 1e-30))


# ---------------------------------------------------------------- mma.sp m16n8k16 / m16n8k32 f16
def sparse_case(K, sel, rng, ordered=True, ints=False, typ="f16"):
    """A 16 x K 2:4-sparse A (two non-zeros in each 4 columns of a row), its fragments, metadata, B, C.
    Layouts written from the PTX ISA: the non-zeros form a dense 16 x K/2 A in the layout of the dense
    f16 shape with K/2 columns (m16n8k8 for k16, m16n8k16 for k32); each 4-bit metadata field holds the
    two column indices (low index in bits 0-1) of a chunk's non-zeros; in each quad of lanes, T = K/16
    lanes (4g + T*sel + h, h < T) hold the metadata: bits 4j..4j+3 for row g, columns 16h + 4j .. + 3,
    bits 16 + 4j .. for row g + 8. `ints`: small integers (every sum exact, in any order)."""
    draw = (lambda n: rng.integers(-4, 5, n).astype(np.float64)) if ints else (lambda n: rng.uniform(-1, 1, n))
    if typ == "bf16":  # values bf16 holds exactly (8 significant bits)
        draw0 = draw
        draw = lambda n: np.round(np.asarray(draw0(n)) * 128) / 128
    T = K // 16
    A = np.zeros((16, K))
    comp = np.zeros((16, K // 2))
    idx = np.zeros((16, K // 4, 2), int)
    for r in range(16):
        for j in range(K // 4):
            pair = sorted(rng.choice(4, 2, replace=False)) if ordered else list(rng.choice(4, 2, replace=False))
            vals = draw(2).astype(np.float16).astype(np.float64)
            A[r, 4 * j + pair[0]], A[r, 4 * j + pair[1]] = vals
            comp[r, 2 * j:2 * j + 2] = vals
            idx[r, j] = pair
    meta = rng.integers(0, 2**32, 32, dtype=np.uint64)  # lanes not selected hold anything
    for lane in range(32):
        g, q = lane >> 2, lane & 3
        if q // T != sel:
            continue
        h, m = q % T, 0
        for half in (0, 1):
            for j in range(4):
                i0, i1 = idx[g + 8 * half, 4 * h + j]
                m |= (int(i0) | int(i1) << 2) << (16 * half + 4 * j)
        meta[lane] = m
    if K == 32:  # the dense m16n8k16 A layout (over the 16 compressed columns)
        a_rc = lambda lane, i: ((lane >> 2) + (8 if i in (2, 3, 6, 7) else 0), 2 * (lane & 3) + (i & 1) + (8 if i >= 4 else 0))
    else:  # m16n8k8's (8 compressed columns)
        a_rc = lambda lane, i: ((lane >> 2) + (8 if i >= 2 else 0), 2 * (lane & 3) + (i & 1))
    b_rc = lambda lane, i: (2 * (lane & 3) + (i & 1) + 8 * (i >> 1), lane >> 2)
    B = draw(K * 8).reshape(K, 8).astype(np.float16).astype(np.float64)
    C = draw(16 * 8).reshape(16, 8).astype(np.float32).astype(np.float64)
    bits16 = (lambda m: m.astype(np.float16).view(np.uint16)) if typ == "f16" else \
        (lambda m: (m.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16))
    RA = pack(fragment(bits16(comp), a_rc, K // 4), 16)
    RB = pack(fragment(bits16(B), b_rc, K // 4), 16)
    RC = fragment(C.astype(np.float32), c_rc, 4)
    return RA, RB, RC, meta.astype(np.uint32), (A, B, C)


def _mma_sp_source(K, sel, ordered=True, typ="f16"):
    ra = rb = K // 8
    sp = "sp::ordered_metadata" if ordered else "sp"
    regs = lambda start, n: "{" + ", ".join(f"%{start + i}" for i in range(n)) + "}"
    return f"""
extern "C" __global__ void mma_sp(const unsigned* RA, const unsigned* RB, const float* RC, const unsigned* E, float* RD)
{{
    const int l = threadIdx.x;
    unsigned a[{ra}], b[{rb}];
    float d[4];
    for (int i = 0; i < {ra}; ++i) a[i] = RA[{ra} * l + i];
    for (int i = 0; i < {rb}; ++i) b[i] = RB[{rb} * l + i];
    for (int i = 0; i < 4; ++i) d[i] = RC[4 * l + i];
    const unsigned e = E[l];
    asm volatile("mma.{sp}.sync.aligned.m16n8k{K}.row.col.f32.{typ}.{typ}.f32 "
                 "{regs(0, 4)}, {regs(4, ra)}, {regs(4 + ra, rb)}, {regs(0, 4)}, %{4 + ra + rb}, {sel};\\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : {", ".join([f'"r"(a[{i}])' for i in range(ra)] + [f'"r"(b[{i}])' for i in range(rb)])}, "r"(e));
    for (int i = 0; i < 4; ++i) RD[4 * l + i] = d[i];
}}
"""


SPARSE_FORMS = [(32, 0), (32, 1), (16, 0), (16, 3)]


def run_mma_sp(which, K, sel, RA, RB, RC, E, ordered=True, typ="f16"):
    mod = backends.load(_mma_sp_source(K, sel, ordered, typ), which)
    out = _run(mod, "mma_sp", (1, 1, 1), (32, 1, 1),
               [RA.ravel(), RB.ravel(), RC.ravel(), E, np.zeros(128, np.float32)])[4].reshape(32, 4)
    D = np.full((16, 8), np.nan)
    for lane in range(32):
        for i in range(4):
            D[c_rc(lane, i)] = out[lane, i]
    return D, out


@pytest.mark.parametrize("K,sel", SPARSE_FORMS, ids=lambda v: str(v))
def test_mma_sp_equals_the_dense_product_of_the_decompressed_a(K, sel):
    RA, RB, RC, E, (A, B, C) = sparse_case(K, sel, np.random.default_rng(K + sel))
    D, _ = run_mma_sp("emu", K, sel, RA, RB, RC, E)
    ref = A @ B + C
    assert np.isfinite(D).all()
    assert (np.abs(D - ref) <= K * 2.0**-24 * (np.abs(A) @ np.abs(B) + np.abs(C))).all(), np.abs(D - ref).max()
    # and not the product of some other placement: the same values at the wrong columns differ
    assert np.abs(D - (np.roll(A, 1, axis=1) @ B + C)).max() > 1e-3


def test_mma_sp_bf16():
    RA, RB, RC, E, (A, B, C) = sparse_case(32, 1, np.random.default_rng(11), typ="bf16")
    D, _ = run_mma_sp("emu", 32, 1, RA, RB, RC, E, typ="bf16")
    assert (np.abs(D - (A @ B + C)) <= 32 * 2.0**-24 * (np.abs(A) @ np.abs(B) + np.abs(C))).all()


def test_mma_sp_unordered_form_takes_indices_in_any_order():
    RA, RB, RC, E, (A, B, C) = sparse_case(32, 0, np.random.default_rng(7), ordered=False)
    D, _ = run_mma_sp("emu", 32, 0, RA, RB, RC, E, ordered=False)
    assert np.abs(D - (A @ B + C)).max() < 1e-5


def test_mma_sp_invalid_metadata_is_reported():
    RA, RB, RC, E, _ = sparse_case(32, 1, np.random.default_rng(8))
    E = E.copy()
    E[4 * 3 + 2] = (E[4 * 3 + 2] & ~np.uint32(0xF0)) | np.uint32(0x50)  # lane 14 (sel 1, h 0): 0b0101 at j = 1
    with pytest.raises(KernelFault) as e:
        run_mma_sp("emu", 32, 1, RA, RB, RC, E)
    assert "lane 14's metadata" in str(e.value) and "row 3, columns 4-7" in str(e.value)


# ---------------------------------------------------------------- NVRTC: the instructions exist on sm_89 / sm_90
@pytest.mark.parametrize("arch", [89, 90])
def test_fp8_and_sparse_probes_compile_with_nvrtc(arch, nvrtc_of):
    from grader.runtime.compile import nvrtc_compile

    nvrtc_of("cuda13")
    for src, instr in [(CONVERT, "cvt.rn.satfinite.e4m3x2.f32"),
                       (_mma_fp8_source(E4M3, E5M2, "f32"), "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"),
                       (_mma_fp8_source(E5M2, E4M3, "f16"), "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16"),
                       (_mma_sp_source(32, 1), "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"),
                       (_mma_sp_source(16, 3, ordered=False), "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")]:
        out = nvrtc_compile(src, arch=arch, stack="cuda13")  # to a cubin: ptxas accepts the instruction
        assert out.kernels and instr in out.ptx, instr


def test_fp8_mma_is_refused_below_sm_89(nvrtc_of):
    from grader.runtime.compile import nvrtc_compile
    from grader.runtime.errors import CompileError

    nvrtc_of("cuda13")
    with pytest.raises(CompileError):
        nvrtc_compile(_mma_fp8_source(E4M3, E4M3, "f32"), arch=80, stack="cuda13")


@pytest.mark.parametrize("src,arch,need", [
    (lambda: _mma_fp8_source(E4M3, E5M2, "f32"), 86, "sm_89"), (lambda: _mma_sp_source(32, 0), 75, "sm_80"),
    (lambda: CONVERT, 80, "sm_89")], ids=["fp8-mma", "mma.sp", "fp8-cvt"])
def test_emulator_built_for_an_older_arch_refuses_them_as_ptxas_does(src, arch, need):
    from grader.runtime.errors import CompileError

    text = src()
    with pytest.raises(CompileError) as e:
        backends.load(text, "emu", arch=arch)
    assert need in str(e.value)
    assert "asm" in text.splitlines()[e.value.line - 1]  # at the instruction's own line


# ---------------------------------------------------------------- the same probes on a GPU: bit for bit
@pytest.mark.gpu
def test_gpu_conversions_equal_the_emulator_bit_for_bit(emu_convert):
    gpu = convert_outputs("gpu")
    differ = {}  # every output at once: one GPU run must show them all (the first stopped at f4)
    for key, e in emu_convert.items():
        g = gpu[key]
        ubits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.asarray(g).itemsize]
        g, e = np.asarray(g).reshape(-1).view(ubits), np.asarray(e).reshape(-1).view(ubits)  # enc is n x 12
        bad = np.nonzero(g != e)[0]
        if bad.size:  # the index, the input where there is one, and both results
            inp = emu_convert["x"] if key == "enc" else None
            differ[key] = [f"{bad.size} differ"] + [
                f"[{i}]" + (f" x={float(inp[i // 12])!r} way {i % 12}" if inp is not None else "")
                + f" gpu {int(g[i]):#x} emu {int(e[i]):#x}" for i in bad[:12]]
    assert not differ, differ


@pytest.mark.gpu
@pytest.mark.parametrize("data", ["exact", "random"])
@pytest.mark.parametrize("form", FP8_FORMS, ids=lambda f: f"{f[2]}.{f[0]}.{f[1]}.{f[2]}")
def test_gpu_mma_fp8_equals_the_emulator(form, data):
    """Exact data: equal bits. Random codes: the GPU's accumulation order and truncation may differ in
    the last bits (FACTS.md, numerics); both must lie within the float64 bound, and the share of equal
    bits is printed for the record. Not yet measured: Hopper's FP8 accumulation is reported to keep
    about 14 bits (DeepSeek-V3 technical report, on H800, for FP8 GEMM); if the random case fails
    here, that is the finding: record it in FACTS.md and model it in emu_ptx.h's mma_combine."""
    at, bt, acc = form
    RA, RB, RC, (A, B, C) = mma_fp8_case(at, bt, acc, data, np.random.default_rng(3))
    De, oe = run_mma_fp8("emu", at, bt, acc, RA, RB, RC)
    Dg, og = run_mma_fp8("gpu", at, bt, acc, RA, RB, RC)
    if data == "exact":
        assert np.array_equal(oe, og), np.abs(De - Dg).max()
    else:
        ref, mag = A @ B + C, np.abs(A) @ np.abs(B) + np.abs(C)
        unit = 2.0**-24 if acc == "f32" else 2.0**-11
        assert (np.abs(Dg - ref) <= 33 * unit * mag + 1e-30).all(), np.max(np.abs(Dg - ref) / (mag + 1e-30))
        print(f"{form} random: {100 * np.mean(oe == og):.1f}% of result registers bit-identical")


@pytest.mark.gpu
@pytest.mark.parametrize("K,sel", SPARSE_FORMS, ids=lambda v: str(v))
def test_gpu_mma_sp_equals_the_emulator(K, sel):
    """Small integers (exact in any order): the sparse product must be equal bit for bit; this is
    what confirms the metadata layout above on hardware."""
    RA, RB, RC, E, (A, B, C) = sparse_case(K, sel, np.random.default_rng(40 + K + sel), ints=True)
    De, oe = run_mma_sp("emu", K, sel, RA, RB, RC, E)
    Dg, og = run_mma_sp("gpu", K, sel, RA, RB, RC, E)
    assert np.array_equal(De, A @ B + C)
    assert np.array_equal(oe, og), np.abs(De - Dg).max()
