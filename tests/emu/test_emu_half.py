"""half / bfloat16 / tf32 conversions of the emulator are bit-exact against independent references."""
import numpy as np
import pytest

from grader.emu import compile_module

SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
extern "C" __global__ void f2h(const float* x, unsigned short* bits, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) bits[i] = __half_as_ushort(__float2half_rn(x[i]));
}
extern "C" __global__ void h2f(const unsigned short* bits, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(__ushort_as_half(bits[i]));
}
extern "C" __global__ void f2bf(const float* x, unsigned short* bits, float* back, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __nv_bfloat16 b = __float2bfloat16(x[i]);
    bits[i] = __bfloat16_as_ushort(b);
    back[i] = __bfloat162float(b);
  }
}
extern "C" __global__ void tf32(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = nvcuda::wmma::__float_to_tf32(x[i]);
}
extern "C" __global__ void hops(const half* a, const half* b, const half* c, half* sum, half* dif, half* prod,
                                half* quo, half* fma, int* cmp, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  half x = a[i], y = b[i];
  sum[i] = x + y;
  dif[i] = __hsub(x, y);
  prod[i] = x * y;
  quo[i] = x / y;
  fma[i] = __hfma(x, y, c[i]);
  cmp[i] = (x < y) | ((x == y) << 1) | (__hgt(x, y) << 2);
}
"""

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered")

RNG = np.random.default_rng(1234)


@pytest.fixture(scope="module")
def mod():
    return compile_module(SRC, name="halfconv")


def _sample_floats(n):
    parts = [
        RNG.standard_normal(n // 4).astype(np.float32) * np.float32(100),
        (RNG.random(n // 4) * 2 - 1).astype(np.float32) * np.float32(7e4),  # around overflow
        (RNG.random(n // 4) * 2 - 1).astype(np.float32) * np.float32(1e-4),  # subnormal halves
        RNG.integers(0, 2**32, n // 4, dtype=np.uint64).astype(np.uint32).view(np.float32),  # any bits
    ]
    x = np.concatenate(parts)
    # exact ties between two halves, to exercise round-half-even
    h = RNG.integers(0, 0x7BFF, 4096, dtype=np.uint16).view(np.float16).astype(np.float32)
    h2 = (h.view(np.uint32) + np.uint32(1 << 12)).view(np.float32)
    return np.concatenate([x, h2, np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65520, 65519.996], np.float32)])


def _launch(mod, name, n, args):
    mod.launch(name, ((n + 255) // 256,), (256,), args)


def test_float_to_half_bit_exact(mod):
    x = _sample_floats(1 << 18)
    bits = np.zeros(x.size, np.uint16)
    _launch(mod, "f2h", x.size, [x, bits, x.size])
    ref = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(bits[~nan], ref[~nan])
    assert np.isnan(bits[nan].view(np.float16)).all()


def test_every_half_back_to_float(mod):
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    y = np.zeros(bits.size, np.float32)
    _launch(mod, "h2f", bits.size, [bits, y, bits.size])
    ref = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(y.view(np.uint32)[~nan], ref.view(np.uint32)[~nan])
    assert np.isnan(y[nan]).all()


def _round_to_bits(x, drop):
    """Independent round-to-nearest-even of float32 to (23 - drop) mantissa bits, via float64."""
    u = x.view(np.uint32)
    lo = (u & ~np.uint32((1 << drop) - 1)).view(np.float32).astype(np.float64)
    hi = (((u >> drop) + 1) << drop).astype(np.uint32).view(np.float32).astype(np.float64)
    xd = x.astype(np.float64)
    dlo, dhi = np.abs(xd - lo), np.abs(hi - xd)
    even_lo = ((u >> drop) & 1) == 0
    pick_lo = (dlo < dhi) | ((dlo == dhi) & even_lo)
    return np.where(pick_lo, lo, hi).astype(np.float32)


def test_float_to_bf16_rne(mod):
    x = _sample_floats(1 << 16)
    x = x[np.isfinite(x) & (np.abs(x) < 3e38)]
    bits = np.zeros(x.size, np.uint16)
    back = np.zeros(x.size, np.float32)
    _launch(mod, "f2bf", x.size, [x, bits, back, x.size])
    ref = _round_to_bits(x, 16)
    assert np.array_equal(back.view(np.uint32), ref.view(np.uint32))
    assert np.array_equal(bits.astype(np.uint32) << 16, back.view(np.uint32))


def test_float_to_tf32_rounds_ties_away(mod):
    """wmma::__float_to_tf32 is cvt.rna.tf32.f32 (crt/mma.h): nearest, ties away from zero."""
    x = _sample_floats(1 << 16)
    x = x[np.isfinite(x) & (np.abs(x) < 3e38)]
    x[:4] = np.array([1 + 2.0**-11, -(1 + 2.0**-11), 1 + 3 * 2.0**-11, 1 + 2.0**-12], np.float32)
    y = np.zeros_like(x)
    _launch(mod, "tf32", x.size, [x, y, x.size])
    u = x.view(np.uint32).astype(np.uint64)
    ref = ((u + 0x1000) & ~np.uint64(0x1FFF)).astype(np.uint32)
    assert np.array_equal(y.view(np.uint32), ref)
    assert y[0] == 1 + 2.0**-10 and y[1] == -(1 + 2.0**-10) and y[3] == 1.0  # ties go away from 0


def test_half_arithmetic_matches_rounded_float64(mod):
    n = 1 << 16
    a = (RNG.standard_normal(n) * 30).astype(np.float16)
    b = (RNG.standard_normal(n) * 30).astype(np.float16)
    b[b == 0] = np.float16(1)
    c = (RNG.standard_normal(n) * 30).astype(np.float16)
    outs = [np.zeros(n, np.float16) for _ in range(5)]
    cmp = np.zeros(n, np.int32)
    _launch(mod, "hops", n, [a, b, c, *outs, cmp, n])
    A, B, C = (v.astype(np.float64) for v in (a, b, c))
    for got, ref in zip(outs, [A + B, A - B, A * B, A / B, A * B + C]):
        assert np.array_equal(got.view(np.uint16), ref.astype(np.float16).view(np.uint16))
    assert np.array_equal(cmp, (a < b) * 1 + (a == b) * 2 + (a > b) * 4)
