"""Small kernels exercising each CUDA feature the emulator supports, checked against numpy."""
import numpy as np
import pytest

from grader.emu import compile_module
from grader.runtime.errors import LaunchArgumentError

SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>
#include <cassert>
#include <stdio.h>

__constant__ float kScale[4] = {1.0f, 2.0f, 3.0f, 4.0f};

__device__ __forceinline__ float twice(float x) { return 2.0f * x; }
__host__ __device__ int sq(int x) { return x * x; }
__device__ __noinline__ float addone(float x) { return x + 1.0f; }

extern "C" __global__ void __launch_bounds__(256) ids(int* out) {
  int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int nt = blockDim.x * blockDim.y * blockDim.z;
  int* o = out + 12 * (b * nt + t);
  o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
  o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
  o[6] = blockDim.x; o[7] = blockDim.y; o[8] = blockDim.z;
  o[9] = gridDim.x; o[10] = gridDim.y; o[11] = gridDim.z;
}

extern "C" __global__ void devfuncs(const float* __restrict__ x, float* __restrict__ y, int* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = addone(twice(__ldg(&x[i]))) * kScale[i % 4];
    z[i] = sq(i);
  }
}

// static 2-D shared tile: transpose a 32x32 tile per block
extern "C" __global__ void transpose(const float* in, float* out, int n) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  int tx = blockIdx.y * 32 + threadIdx.x, ty = blockIdx.x * 32 + threadIdx.y;
  if (tx < n && ty < n) out[ty * n + tx] = tile[threadIdx.x][threadIdx.y];
}

// dynamic shared memory tree reduction (blockDim.x a power of two)
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
  extern __shared__ float buf[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  buf[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}

extern "C" __global__ void warp_ops(const int* in, int* out) {
  int lane = threadIdx.x & 31, i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int s = v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
  int x = v;
  for (int o = 1; o < 32; o <<= 1) x = max(x, __shfl_xor_sync(0xffffffff, x, o));
  int b = __shfl_sync(0xffffffff, v, 5);
  int scan = v;
  for (int o = 1; o < 32; o <<= 1) { int u = __shfl_up_sync(0xffffffff, scan, o); if (lane >= o) scan += u; }
  unsigned ballot = __ballot_sync(0xffffffff, v > 50);
  int any = __any_sync(0xffffffff, v > 90);
  int all = __all_sync(0xffffffff, v >= 0);
  int* o = out + 7 * i;
  o[0] = __shfl_sync(0xffffffff, s, 0); o[1] = x; o[2] = b; o[3] = scan; o[4] = (int)ballot; o[5] = any; o[6] = all;
  __syncwarp();
}

extern "C" __global__ void atomics(const int* bins_in, int* hist, float* fsum, int* imax, unsigned* cas_sum,
                                   int* exch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&hist[bins_in[i]], 1);
  atomicAdd(fsum, 0.5f);
  atomicMax(imax, bins_in[i] * 7 % 13);
  unsigned old = *cas_sum, assumed;
  do { assumed = old; old = atomicCAS(cas_sum, assumed, assumed + 2u); } while (old != assumed);
  atomicExch(exch, 42);
}

extern "C" __global__ void shared_atomics(const int* bins_in, int* hist, int n) {
  __shared__ int local[8];
  if (threadIdx.x < 8) local[threadIdx.x] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&local[bins_in[i]], 1);
  __syncthreads();
  if (threadIdx.x < 8) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}

extern "C" __global__ void hello(int tag) {
  if (threadIdx.x < 3) printf("block %d thread %d tag %d %.2f\n", blockIdx.x, threadIdx.x, tag, 0.25f);
}

extern "C" __global__ void vectors(const float* in, float* out, const half* h, float* hout, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = reinterpret_cast<const float4*>(in)[i];
    float4 w = make_float4(v.w, v.z, v.y, v.x);
    reinterpret_cast<float4*>(out)[i] = w;
    half2 p = reinterpret_cast<const half2*>(h)[i];
    half2 q = __hmul2(p, __floats2half2_rn(2.0f, 3.0f));
    float2 f = __half22float2(q);
    int2 k = make_int2(1, 2);
    hout[2 * i] = f.x + k.x - 1;
    hout[2 * i + 1] = __high2float(q) + (k.y - 2);
  }
}

extern "C" __global__ void mathfn(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float* o = out + 8 * i;
  o[0] = sqrtf(v); o[1] = expf(-v); o[2] = fmaxf(v, 1.0f); o[3] = fminf(v, 1.0f);
  o[4] = __fmaf_rn(v, v, 1.0f); o[5] = rsqrtf(v); o[6] = logf(v); o[7] = tanhf(v);
}

extern "C" __global__ void bf16ops(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, float* f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  c[i] = a[i] * b[i] + a[i];
  f[i] = __bfloat162float(a[i]) + __bfloat162float(b[i]);
}

extern "C" __global__ void pipeline_copy(const float* in, float* out, int n) {
  __shared__ float tile[128];
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) __pipeline_memcpy_async(&tile[threadIdx.x], &in[i], sizeof(float));
  else tile[threadIdx.x] = 0.0f;
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (i < n) out[i] = tile[127 - threadIdx.x] + 1.0f;
}

extern "C" __global__ void scalars(float f, double d, unsigned u, long long ll, half h, float* out) {
  out[0] = f; out[1] = (float)d; out[2] = (float)u; out[3] = (float)ll; out[4] = __half2float(h);
  assert(f > 0.0f);
}

extern "C" __global__ void count_barrier(const int* in, int* out) {
  int c = __syncthreads_count(in[threadIdx.x] > 0);
  int a = __syncthreads_and(in[threadIdx.x] > -5);
  int o = __syncthreads_or(in[threadIdx.x] > 100);
  if (threadIdx.x == 0) { out[0] = c; out[1] = a; out[2] = o; }
}
"""

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def mod():
    return compile_module(SRC, name="features")


def test_kernels_found(mod):
    assert {"ids", "transpose", "block_sum", "warp_ops", "atomics", "vectors"} <= set(mod.kernels)
    p = mod.kernels["devfuncs"]
    assert [x.name for x in p] == ["x", "y", "z", "n"]
    assert p[0].ctype == "const float*" and p[0].is_pointer and p[0].elem_ctype == "float"
    assert not p[3].is_pointer and p[3].ctype == "int"


def test_builtin_indices_3d(mod):
    grid, block = (3, 2, 2), (4, 2, 3)
    nb, nt = 12, 24
    out = np.full(nb * nt * 12, -1, np.int32)
    mod.launch("ids", grid, block, [out])
    o = out.reshape(grid[2], grid[1], grid[0], block[2], block[1], block[0], 12)
    bz, by, bx, tz, ty, tx = np.meshgrid(*(np.arange(s) for s in (2, 2, 3, 3, 2, 4)), indexing="ij")
    for k, ref in enumerate([tx, ty, tz, bx, by, bz]):
        assert np.array_equal(o[..., k], ref)
    assert (o[..., 6:9] == block).all() and (o[..., 9:12] == grid).all()


def test_device_functions_constant_ldg(mod):
    n = 1000
    x = RNG.standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    z = np.zeros(n, np.int32)
    mod.launch("devfuncs", (4,), (256,), [x, y, z, n])
    scale = np.array([1, 2, 3, 4], np.float32)[np.arange(n) % 4]
    np.testing.assert_array_equal(y, (2 * x + 1) * scale)
    np.testing.assert_array_equal(z, np.arange(n) ** 2)


@pytest.mark.parametrize("n", [64, 45])
def test_shared_tile_transpose(mod, n):
    a = RNG.standard_normal((n, n)).astype(np.float32)
    out = np.zeros_like(a)
    g = (n + 31) // 32
    mod.launch("transpose", (g, g), (32, 32), [a, out, n])
    np.testing.assert_array_equal(out, a.T)


def test_extern_shared_reduction(mod):
    n, bs = 1000, 128
    x = RNG.random(n).astype(np.float32)
    nb = (n + bs - 1) // bs
    out = np.zeros(nb, np.float32)
    mod.launch("block_sum", (nb,), (bs,), [x, out, n], shared_mem=bs * 4)
    ref = np.add.reduceat(np.concatenate([x, np.zeros(nb * bs - n, np.float32)]), np.arange(0, nb * bs, bs))
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_warp_collectives(mod):
    v = RNG.integers(0, 100, 64).astype(np.int32)
    out = np.zeros(64 * 7, np.int32)
    mod.launch("warp_ops", (1,), (64,), [v, out])
    o = out.reshape(2, 32, 7)
    w = v.reshape(2, 32)
    assert (o[..., 0] == w.sum(1, keepdims=True)).all()
    assert (o[..., 1] == w.max(1, keepdims=True)).all()
    assert (o[..., 2] == w[:, 5:6]).all()
    assert (o[..., 3] == np.cumsum(w, 1)).all()
    ballots = [(sum(1 << i for i in range(32) if row[i] > 50)) for row in w]
    assert (o[..., 4].astype(np.uint32) == np.array(ballots, np.uint32)[:, None]).all()
    assert (o[..., 5] == (w > 90).any(1, keepdims=True)).all()
    assert (o[..., 6] == 1).all()


def test_atomics_across_blocks(mod):
    n = 5000
    bins = RNG.integers(0, 8, n).astype(np.int32)
    hist = np.zeros(8, np.int32)
    fsum = np.zeros(1, np.float32)
    imax = np.zeros(1, np.int32)
    cas = np.zeros(1, np.uint32)
    exch = np.zeros(1, np.int32)
    mod.launch("atomics", (20,), (256,), [bins, hist, fsum, imax, cas, exch, n])
    np.testing.assert_array_equal(hist, np.bincount(bins, minlength=8))
    assert fsum[0] == 0.5 * n and cas[0] == 2 * n and exch[0] == 42
    assert imax[0] == (bins * 7 % 13).max()
    hist2 = np.zeros(8, np.int32)
    mod.launch("shared_atomics", (20,), (256,), [bins, hist2, n])
    np.testing.assert_array_equal(hist2, hist)


def test_printf_captured(mod):
    r = mod.launch("hello", (2,), (32,), [7])
    lines = sorted(r.stdout.splitlines())
    assert lines == sorted(f"block {b} thread {t} tag 7 0.25" for b in range(2) for t in range(3))
    assert r.seconds > 0


def test_vector_types(mod):
    n4 = 40
    x = RNG.standard_normal(4 * n4).astype(np.float32)
    out = np.zeros_like(x)
    h = RNG.standard_normal(2 * n4).astype(np.float16)
    hout = np.zeros(2 * n4, np.float32)
    mod.launch("vectors", (1,), (64,), [x, out, h, hout, n4])
    np.testing.assert_array_equal(out.reshape(-1, 4), x.reshape(-1, 4)[:, ::-1])
    ref = (h.reshape(-1, 2).astype(np.float64) * [2.0, 3.0]).astype(np.float16).astype(np.float32).ravel()
    np.testing.assert_array_equal(hout, ref)


def test_math_functions(mod):
    n = 300
    x = (RNG.random(n) * 10 + 0.01).astype(np.float32)
    out = np.zeros(8 * n, np.float32)
    mod.launch("mathfn", (2,), (256,), [x, out, n])
    o = out.reshape(n, 8).T
    xd = x.astype(np.float64)
    refs = [np.sqrt(xd), np.exp(-xd), np.maximum(xd, 1), np.minimum(xd, 1), xd * xd + 1, 1 / np.sqrt(xd),
            np.log(xd), np.tanh(xd)]
    for got, ref in zip(o, refs):
        np.testing.assert_allclose(got, ref, rtol=3e-7, atol=1e-30)


def test_bf16_arithmetic(mod):
    n = 500
    def bf(x):  # float32 -> bf16 bits, round to nearest even
        u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    def f(b):
        return (b.astype(np.uint32) << 16).view(np.float32)
    a, b = bf(RNG.standard_normal(n)), bf(RNG.standard_normal(n))
    c = np.zeros(n, np.uint16)
    s = np.zeros(n, np.float32)
    mod.launch("bf16ops", (2,), (256,), [a, b, c, s, n])
    np.testing.assert_array_equal(f(c), f(bf(f(bf(f(a) * f(b))) + f(a))))
    np.testing.assert_array_equal(s, f(a) + f(b))


def test_pipeline_primitives(mod):
    n = 300
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    mod.launch("pipeline_copy", (3,), (128,), [x, out, n])
    xp = np.concatenate([x, np.zeros(84, np.float32)]).reshape(3, 128)[:, ::-1].ravel()[:n]
    np.testing.assert_array_equal(out, xp + 1)


def test_scalar_argument_types(mod):
    out = np.zeros(5, np.float32)
    mod.launch("scalars", 1, 1, [1.5, 2.25, 3, -4, np.float16(0.5), out])
    np.testing.assert_array_equal(out, [1.5, 2.25, 3, -4, 0.5])


def test_syncthreads_count_and_or(mod):
    v = RNG.integers(-3, 3, 96).astype(np.int32)
    out = np.zeros(3, np.int32)
    mod.launch("count_barrier", 1, 96, [v, out])
    assert list(out) == [int((v > 0).sum()), 1, 0]


def test_argument_errors(mod):
    x = np.zeros(10, np.float32)
    with pytest.raises(LaunchArgumentError) as e:
        mod.launch("devfuncs", 1, 32, [x, x, x, 10])
    assert e.value.argument == "z"
    with pytest.raises(LaunchArgumentError):
        mod.launch("devfuncs", 1, 32, [x, x])
    with pytest.raises(LaunchArgumentError) as e:
        mod.launch("devfuncs", 1, 32, [x.astype(np.float64), x, np.zeros(10, np.int32), 10])
    assert e.value.argument == "x"
    with pytest.raises(LaunchArgumentError):
        mod.launch("nosuchkernel", 1, 32, [])


BITS_SRC = r"""
extern "C" __global__ void bits(const unsigned* x, const unsigned* y, const unsigned* s, unsigned* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[5 * i + 0] = __byte_perm(x[i], y[i], s[i]);
  out[5 * i + 1] = __funnelshift_l(x[i], y[i], s[i]);
  out[5 * i + 2] = __funnelshift_lc(x[i], y[i], s[i]);
  out[5 * i + 3] = __funnelshift_r(x[i], y[i], s[i]);
  out[5 * i + 4] = __funnelshift_rc(x[i], y[i], s[i]);
}
"""


def test_byte_perm_and_funnel_shifts():
    """__byte_perm and __funnelshift_{l,lc,r,rc} (byte packing in FP8 kernels; NVRTC has them, the emulator
    refused them with a g++ error) against the CUDA Math API's words, byte by byte and bit by bit."""
    n = 2000
    x, y = (RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    s = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    s[:64] = np.arange(64)  # shifts 0..63: the clamp at 32 and the & 31
    out = np.zeros(5 * n, np.uint32)
    compile_module(BITS_SRC).launch("bits", ((n + 127) // 128,), (128,), [x, y, s, out, n])
    got = out.reshape(n, 5)
    for i in range(n):
        xi, yi, si = int(x[i]), int(y[i]), int(s[i])
        eight = [(xi >> (8 * k)) & 0xFF for k in range(4)] + [(yi >> (8 * k)) & 0xFF for k in range(4)]
        perm = sum(eight[(si >> (4 * b)) & 7] << (8 * b) for b in range(4))  # selector bits 4b..4b+2
        wide = yi << 32 | xi
        want = [perm, (wide << (si & 31)) >> 32 & 0xFFFFFFFF, (wide << min(si, 32)) >> 32 & 0xFFFFFFFF,
                (wide >> (si & 31)) & 0xFFFFFFFF, (wide >> min(si, 32)) & 0xFFFFFFFF]
        assert [int(v) for v in got[i]] == want, (hex(xi), hex(yi), hex(si))


PRMT_SRC = r"""
extern "C" __global__ void prmt(const unsigned* x, const unsigned* y, const unsigned* s, unsigned* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(x[i]), "r"(y[i]), "r"(s[i]));
  out[i] = d;
}
"""


def test_inline_prmt():
    """prmt.b32 in inline PTX (what __byte_perm compiles to; students packing four fp8 codes write it too; the
    emulator refused it) against the PTX ISA's words: byte n of d is byte c[4n+2:4n] of {b, a}, or that
    byte's sign bit copied into all 8 bits where the selector nibble's top bit is set."""
    n = 2000
    x, y, s = (RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    out = np.zeros(n, np.uint32)
    compile_module(PRMT_SRC).launch("prmt", ((n + 127) // 128,), (128,), [x, y, s, out, n])
    for i in range(n):
        xi, yi, si = int(x[i]), int(y[i]), int(s[i])
        eight = [(xi >> (8 * k)) & 0xFF for k in range(4)] + [(yi >> (8 * k)) & 0xFF for k in range(4)]
        sel = [(si >> (4 * b)) & 15 for b in range(4)]
        byte = [eight[c & 7] if c < 8 else 0xFF * (eight[c & 7] >> 7) for c in sel]
        assert int(out[i]) == sum(v << (8 * b) for b, v in enumerate(byte)), (hex(xi), hex(yi), hex(si))
