"""Each emulator diagnostic fires on a kernel with the bug, and not on the corrected kernel."""
import time

import numpy as np
import pytest

from grader.emu import compile_module
from grader.runtime.errors import CompileError, KernelFault, KernelTimeout, Unsupported

SRC = r"""#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void fill_bad(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 1.0f;
}
extern "C" __global__ void fill_good(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}
extern "C" __global__ void write_before(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i - 1] = in[i];
}
extern "C" __global__ void shift_shared(float* out, int fix) {
  __shared__ float s[32];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[fix ? (threadIdx.x + 1) % 32 : threadIdx.x + 1];
}
extern "C" __global__ void dyn_shared(float* out, int n) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = buf[(threadIdx.x * n) % 64];
}
extern "C" __global__ void branch_barrier(float* out, int fix) {
  if (fix || threadIdx.x < 16) {
    __syncthreads();
    out[threadIdx.x] = 1;
  } else {
    __syncthreads();
    out[threadIdx.x] = 2;
  }
}
extern "C" __global__ void early_return(float* out, int n) {
  __shared__ float s[64];
  int i = threadIdx.x;
  if (i >= n) return;
  s[i] = i;
  __syncthreads();
  out[i] = s[(i + 1) % n];
}
extern "C" __global__ void early_return_fixed(float* out, int n) {
  __shared__ float s[64];
  int i = threadIdx.x;
  if (i < n) s[i] = i;
  __syncthreads();
  if (i < n) out[i] = s[(i + 1) % n];
}
extern "C" __global__ void warp_sum(float* out, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  float v = out[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if (i == 0) out[0] = v;
}
extern "C" __global__ void warp_sum_fixed(float* out, int n) {
  int i = threadIdx.x;
  float v = i < n ? out[i] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if (i == 0) out[0] = v;
}
extern "C" __global__ void wmma_tile(const half* A, const half* B, float* C) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  if (threadIdx.x >= 32) return;
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}
extern "C" __global__ void wmma_lane_exit(const half* A, const half* B, float* C, int lanes) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  if (threadIdx.x >= lanes) return;
  wmma::load_matrix_sync(a, A, 16);
}
extern "C" __global__ void neighbours(const float* in, float* out, int fix) {
  __shared__ float s[64];
  s[threadIdx.x] = in[threadIdx.x];
  if (fix) __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
extern "C" __global__ void partial_tile(float* out, int loaded) {
  __shared__ float s[64];
  if (threadIdx.x < loaded) s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[63 - threadIdx.x];
}
extern "C" __global__ void checked(float* out, int limit) {
  assert(threadIdx.x < limit);
  out[threadIdx.x] = 1.0f;
}
extern "C" __global__ void spin(float* out, int step) {
  for (int i = 0; i < 10; i += step) out[0] += 1.0f;
}
extern "C" __global__ void null_deref(float* out, int fix) {
  float* p = fix ? out : (float*)0;
  p[threadIdx.x] = 2.0f;
}
"""


@pytest.fixture(scope="module")
def mod():
    return compile_module(SRC, name="diag")


def _line(text):
    for k, ln in enumerate(SRC.split("\n"), 1):
        if text in ln:
            return k
    raise AssertionError(text)


def _fault(fn):
    with pytest.raises(KernelFault) as e:
        fn()
    return e.value


def test_global_out_of_bounds_write(mod):
    out = np.zeros(100, np.float32)
    e = _fault(lambda: mod.launch("fill_bad", (2,), (64,), [out, 100]))
    assert e.kind == "out-of-bounds"
    w = e.where
    assert (w.argument, w.index, w.size) == ("out", 100, 100)
    assert w.block == (1, 0, 0) and w.thread == (36, 0, 0)
    assert w.line == _line("out[i] = 1.0f;")
    assert "'out'" in str(e) and "100" in str(e)
    mod.launch("fill_good", (2,), (64,), [out, 100])
    assert (out == 1).all()


def test_global_out_of_bounds_write_below_zero(mod):
    # caught after the launch (a canary before the buffer), so without the thread
    x = np.ones(64, np.float32)
    e = _fault(lambda: mod.launch("write_before", (1,), (64,), [x, np.zeros(64, np.float32), 64]))
    assert e.kind == "out-of-bounds" and e.where.argument == "out" and e.where.index == -1


def test_shared_out_of_bounds(mod):
    out = np.zeros(32, np.float32)
    e = _fault(lambda: mod.launch("shift_shared", 1, 32, [out, 0]))
    assert e.kind == "shared-out-of-bounds"
    assert e.where.argument == "s" and e.where.index == 32 and e.where.size == 32
    assert e.where.line == _line("out[threadIdx.x] = s[fix ?")
    assert e.where.thread == (31, 0, 0)
    mod.launch("shift_shared", 1, 32, [out, 1])
    assert list(out) == [(i + 1) % 32 for i in range(32)]


def test_dynamic_shared_out_of_bounds(mod):
    out = np.zeros(64, np.float32)
    e = _fault(lambda: mod.launch("dyn_shared", 1, 64, [out, 1], shared_mem=32 * 4))
    assert e.kind == "shared-out-of-bounds"
    mod.launch("dyn_shared", 1, 64, [out, 1], shared_mem=64 * 4)
    assert (out == 1).all()


def test_divergent_barrier_sites(mod):
    out = np.zeros(32, np.float32)
    e = _fault(lambda: mod.launch("branch_barrier", 1, 32, [out, 0]))
    assert e.kind == "divergent-barrier"
    mod.launch("branch_barrier", 1, 32, [out, 1])


def test_divergent_barrier_early_return(mod):
    out = np.zeros(64, np.float32)
    e = _fault(lambda: mod.launch("early_return", 1, 64, [out, 40]))
    assert e.kind == "divergent-barrier"
    assert e.where.line == _line("  __syncthreads();\n  out[i] = s[(i + 1) % n];".split("\n")[0]) or e.where.line
    assert "finished the kernel without reaching it" in str(e)
    mod.launch("early_return_fixed", 1, 64, [out, 40])
    assert list(out[:40]) == [(i + 1) % 40 for i in range(40)]


def test_partial_warp_shuffle(mod):
    out = np.ones(32, np.float32)
    e = _fault(lambda: mod.launch("warp_sum", 1, 32, [out, 20]))
    assert e.kind == "partial-warp-collective"
    assert e.where.line == _line("v += __shfl_down_sync")
    out = np.ones(32, np.float32)
    mod.launch("warp_sum_fixed", 1, 32, [out, 20])
    assert out[0] == 20


def test_partial_warp_wmma(mod):
    A = np.ones((16, 16), np.float16)
    B = np.ones((16, 16), np.float16)
    C = np.zeros((16, 16), np.float32)
    e = _fault(lambda: mod.launch("wmma_tile", 1, 16, [A, B, C]))  # half a warp
    assert e.kind == "partial-warp-collective"
    e = _fault(lambda: mod.launch("wmma_lane_exit", 1, 32, [A, B, C, 31]))
    assert e.kind == "partial-warp-collective"
    mod.launch("wmma_lane_exit", 1, 32, [A, B, C, 32])
    mod.launch("wmma_tile", 1, 64, [A, B, C])
    assert (C == 16).all()


def test_race_check(mod):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    e = _fault(lambda: mod.launch("neighbours", 1, 64, [x, out, 0], race_check=True))
    assert e.kind == "race"
    assert "__syncthreads" in str(e)
    mod.launch("neighbours", 1, 64, [x, out, 1], race_check=True)
    assert list(out) == [(i + 1) % 64 for i in range(64)]


def test_uninitialized_shared(mod):
    out = np.zeros(64, np.float32)
    e = _fault(lambda: mod.launch("partial_tile", 1, 64, [out, 48]))
    assert e.kind == "uninitialized-shared"
    assert e.where.argument == "s" and e.where.index == 63
    assert e.where.line == _line("out[threadIdx.x] = s[63 - threadIdx.x];")
    mod.launch("partial_tile", 1, 64, [out, 64])
    assert list(out) == list(range(63, -1, -1))
    # the missing-barrier kernel is also caught without race_check (a read before the write)
    e = _fault(lambda: mod.launch("neighbours", 1, 64, [np.zeros(64, np.float32), out, 0]))
    assert e.kind == "uninitialized-shared"


def test_assert(mod):
    out = np.zeros(32, np.float32)
    e = _fault(lambda: mod.launch("checked", 1, 32, [out, 10]))
    assert e.kind == "assert"
    assert e.where.thread == (10, 0, 0) and e.where.line == _line("assert(threadIdx.x < limit)")
    assert "threadIdx.x < limit" in str(e)
    mod.launch("checked", 1, 32, [out, 32])


def test_crash_null_pointer(mod):
    out = np.zeros(32, np.float32)
    e = _fault(lambda: mod.launch("null_deref", 1, 32, [out, 0]))
    assert e.kind == "crash" and e.where.thread == (0, 0, 0)
    mod.launch("null_deref", 1, 32, [out, 1])


def test_infinite_loop_times_out(mod):
    out = np.zeros(1, np.float32)
    t0 = time.perf_counter()
    with pytest.raises(KernelTimeout) as e:
        mod.launch("spin", 1, 1, [out, 0], timeout=2)
    assert e.value.seconds == 2
    assert time.perf_counter() - t0 < 6
    mod.launch("spin", 1, 1, [out, 1], timeout=2)
    assert out[0] == 10


def test_compile_error_user_line():
    src = ("#include <cuda_fp16.h>\n"
           "// a comment\n"
           "extern \"C\" __global__ void k(float* x) {\n"
           "  int i = threadIdx.x;\n"
           "  x[i] = undefined_name * 2;\n"
           "}\n")
    with pytest.raises(CompileError) as e:
        compile_module(src)
    assert e.value.line == 5
    assert e.value.diagnostics[0].source_line.strip() == "x[i] = undefined_name * 2;"
    assert "undefined_name" in str(e.value)


def test_compile_error_after_shared_rewrite():
    src = ("extern \"C\" __global__ void k(float* x) {\n"
           "  __shared__ float tile[32][32];\n"
           "  extern __shared__ float dyn[];\n"
           "  tile[threadIdx.x][0] = dyn[0];\n"
           "  x[0] = tile[0][0] +;\n"
           "}\n")
    with pytest.raises(CompileError) as e:
        compile_module(src)
    assert e.value.line == 5


def test_inline_asm_unsupported():
    """Inline PTX outside the forms the emulator runs (grader/emu/inline_ptx.py) is refused at
    compile time, naming the instruction and its line."""
    src = 'extern "C" __global__ void k(unsigned* x) {\n  unsigned v;\n  asm volatile("mov.u32 %0, %%smid;" : "=r"(v));\n  x[0] = v;\n}\n'
    with pytest.raises(Unsupported) as e:
        compile_module(src)
    assert "'%%smid' (line 3) is not supported by the CPU emulator" in str(e.value)
    src = src.replace("mov.u32 %0, %%smid;", "bar.sync 0;").replace(': "=r"(v)', "")
    with pytest.raises(Unsupported) as e:
        compile_module(src)
    assert "instruction 'bar.sync' (line 3) is not supported by the CPU emulator" in str(e.value)


def test_compile_cache_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_CACHE_DIR", str(tmp_path))
    src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 3.0f; }\n'
    t0 = time.perf_counter()
    m1 = compile_module(src)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    m2 = compile_module(src)
    second = time.perf_counter() - t0
    assert m1._built.dir == m2._built.dir and str(tmp_path) in str(m1._built.dir)
    assert second < first
    x = np.zeros(4, np.float32)
    m2.launch("k", 1, 4, [x])
    assert (x == 3).all()
