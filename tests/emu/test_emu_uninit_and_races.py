"""Uninitialised locals read NaN on the emulator, unwritten __shared__ reads are named even
where race checking is on, and race reports say where, what and which order."""
import numpy as np
import pytest

from grader.checking import exercises
from grader.checking.check import check
from grader.checking.verdict import FAIL
from grader.emu import compile_module
from grader.runtime import kernels
from grader.runtime.errors import KernelFault

SRC = r"""#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

// a naive SGEMM whose accumulator is never set to 0 (kept in a register)
extern "C" __global__ void acc_register(const float* A, const float* B, float* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
// accumulators in a local array indexed at run time (kept on the stack)
extern "C" __global__ void acc_stack(const float* A, const float* B, float* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc[2];
  for (int k = 0; k < K; ++k) acc[k & 1] += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc[0] + acc[1];
}
extern "C" __global__ void acc_double(const float* A, const float* B, float* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  double acc;
  for (int k = 0; k < K; ++k) acc += (double)A[row * K + k] * B[k * N + col];
  C[row * N + col] = (float)acc;
}
extern "C" __global__ void acc_half(const float* A, const float* B, float* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  half acc[4];
  for (int k = 0; k < K; ++k) acc[k & 3] = acc[k & 3] + __float2half(A[row * K + k] * B[k * N + col]);
  C[row * N + col] = __half2float(acc[row & 3]);
}
// a large local buffer, only one element of it written: the rest must read NaN too
extern "C" __global__ void big_local(const int* idx, float* out) {
  float buf[3000];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  buf[idx[t] % 7] = 1.0f;
  out[t] = buf[idx[t] % 3000];
}
// WMMA without wmma::fill_fragment(acc, 0.0f)
extern "C" __global__ void wmma_no_fill(const half* A, const half* B, float* C, int M, int N, int K) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + blockIdx.x * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + k * N + blockIdx.y * 16, N);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + blockIdx.x * 16 * N + blockIdx.y * 16, acc, N, wmma::mem_row_major);
}
// each warp stages its own 32 values; lanes read their neighbour's without a __syncwarp()
extern "C" __global__ void warp_rotate(const float* x, float* out, int fix) {
  __shared__ float s[4][32];
  int w = threadIdx.x / 32, l = threadIdx.x % 32;
  s[w][l] = x[threadIdx.x];
  if (fix) __syncwarp();
  out[threadIdx.x] = s[w][(l + 1) % 32];
}
// block-wide: a thread reads the element of the thread 32 places on (in another warp)
extern "C" __global__ void block_rotate(const float* x, float* out, int fix) {
  __shared__ float s[128];
  s[threadIdx.x] = x[threadIdx.x];
  if (fix) __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 32) % 128];
}
// a 2-D output, racy the same way
extern "C" __global__ void rotate_2d(const float* x, float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = x[threadIdx.x];
  out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
// correctly synchronised, but reads an element of the tile nobody loaded
extern "C" __global__ void unloaded(const float* x, float* out) {
  __shared__ float s[64];
  if (threadIdx.x < 60) s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
}
"""


@pytest.fixture(scope="module")
def mod():
    return compile_module(SRC, name="uninit_races")


def _fault(fn):
    with pytest.raises(KernelFault) as e:
        fn()
    return e.value


def _gemm_args(M=40, N=24, K=20, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    return A, B, np.zeros((M, N), np.float32), M, N, K


@pytest.mark.parametrize("kernel", ["acc_register", "acc_stack", "acc_double", "acc_half"])
def test_uninitialised_floating_point_locals_read_nan(mod, kernel, monkeypatch):
    # one worker: every block after the first reuses the stacks of the block before it
    for workers in ("1", "2"):
        monkeypatch.setenv("TC_EMU_WORKERS", workers)
        A, B, C, M, N, K = _gemm_args()
        mod.launch(kernel, (2, 3), (16, 16), [A, B, C, M, N, K])
        assert np.isnan(C).all(), f"{kernel}: {int((~np.isnan(C)).sum())} of {C.size} elements are not NaN"


def test_large_uninitialised_local_array_reads_nan(mod, monkeypatch):
    monkeypatch.setenv("TC_EMU_WORKERS", "1")
    n = 8 * 64
    idx = (np.arange(n, dtype=np.int32) * 37 + 100).astype(np.int32)
    out = np.zeros(n, np.float32)
    mod.launch("big_local", 8, 64, [idx, out])
    assert np.isnan(out).all()


def test_wmma_accumulator_without_fill_fragment_is_nan(mod, monkeypatch):
    monkeypatch.setenv("TC_EMU_WORKERS", "1")
    rng = np.random.default_rng(1)
    M = N = 32
    K = 48
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    mod.launch("wmma_no_fill", (2, 2), 32, [A, B, C, M, N, K])
    assert np.isnan(C).all()


def test_grader_gives_the_uninitialised_accumulator_hint():
    src = kernels.source("sgemm_naive").replace("float acc = 0.0f;", "float acc;")
    assert src != kernels.source("sgemm_naive")
    v = check("sgemm-naive", src, backend="emu")
    failed = [i for i in v.items if i.status == FAIL]
    assert failed, v.text()
    assert failed[0].kind == "nan", v.text()
    assert "never initialised" in failed[0].hint, v.text()


def test_uninitialised_shared_read_is_named_with_race_check(mod):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    for race_check in (False, True):
        e = _fault(lambda: mod.launch("unloaded", 1, 64, [x, out, ], race_check=race_check))
        assert e.kind == "uninitialized-shared", str(e)
        assert e.where.argument == "s" and e.where.index == 63


def test_transpose_reading_the_wrong_tile_index_is_an_unwritten_read():
    # the write loop reads tile[threadIdx.y + j][threadIdx.x] (the load's index) instead of
    # tile[threadIdx.x][threadIdx.y + j]: edge tiles read elements no thread loaded
    assert exercises.get("transpose").race_check
    ref = kernels.source("transpose_tiled")
    good = "= tile[threadIdx.x][threadIdx.y + j];"
    assert good in ref
    v = check("transpose", ref.replace(good, "= tile[threadIdx.y + j][threadIdx.x];"), backend="emu")
    kinds = [i.kind for i in v.items if i.status == FAIL]
    assert "uninitialized-shared" in kinds, v.text()
    item = next(i for i in v.items if i.kind == "uninitialized-shared")
    assert "__shared__ tile[" in item.message, v.text()  # named by its declared dimensions


def test_missing_barrier_is_still_a_race_with_the_unwritten_read_as_evidence(mod):
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    e = _fault(lambda: mod.launch("block_rotate", 1, 128, [x, out, 0], race_check=True))
    assert e.kind == "race", str(e)
    assert "before any thread wrote it" in e.message and "__shared__ s[" in e.message
    mod.launch("block_rotate", 1, 128, [x, out, 1], race_check=True)
    assert list(out) == [float((i + 32) % 128) for i in range(128)]


def test_race_message_numbers_index_and_orders(mod):
    x = (np.arange(64, dtype=np.float32) * 0.5 + 0.25).reshape(8, 8)
    out = np.zeros((8, 8), np.float32)
    e = _fault(lambda: mod.launch("rotate_2d", 1, 64, [x, out], race_check=True))
    assert e.kind == "race"
    assert "np.float32" not in e.message and "nan" in e.message.lower()
    # the first differing element, given as a 2-D index of the (8, 8) output
    assert "out[0, 0]" in e.message, e.message
    assert "in order" in e.message and "in reverse order" in e.message
    assert e.where.argument == "out" and e.where.index == 0
    assert e.where.extra["index_nd"] == (0, 0)
    # in reverse order thread 1 ran first: out[0, 0] = x[1] = 0.75
    assert "0.75 in reverse order" in e.message, e.message
    # 1-D output: a flat index
    out1 = np.zeros(64, np.float32)
    e = _fault(lambda: mod.launch("rotate_2d", 1, 64, [x.ravel(), out1], race_check=True))
    assert "out[0]" in e.message, e.message


def test_race_within_a_warp_mentions_syncwarp(mod):
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    e = _fault(lambda: mod.launch("warp_rotate", 1, 128, [x, out, 0], race_check=True))
    assert e.kind == "race"
    assert "__syncwarp()" in str(e) and "__syncthreads()" in str(e), str(e)
    mod.launch("warp_rotate", 1, 128, [x, out, 1], race_check=True)
    assert list(out) == [float(32 * (i // 32) + (i % 32 + 1) % 32) for i in range(128)]
    # a race across warps needs __syncthreads(): no __syncwarp() advice there
    e = _fault(lambda: mod.launch("block_rotate", 1, 128, [x, out, 0], race_check=True))
    assert "__syncthreads()" in str(e) and "__syncwarp" not in str(e), str(e)


def test_wmma_any_size_missing_syncwarp_is_a_race():
    ex = exercises.get("wmma-gemm-any-size")
    assert ex.race_check
    ref = kernels.source(ex.reference)
    lines = ref.split("\n")
    first = next(k for k, ln in enumerate(lines) if ln.strip() == "__syncwarp();")
    lines[first] = ""  # the barrier between staging the A tile and loading the fragment
    v = check(ex.id, "\n".join(lines), backend="emu")
    races = [i for i in v.items if i.status == FAIL and i.kind == "race"]
    assert races, v.text()
    assert "__syncwarp()" in races[0].message + races[0].hint, v.text()
