"""cp.async on the emulator (<cuda_pipeline.h>): copies land only at the __pipeline_wait_prior
that covers them, as on a GPU, so a pipeline that waits too little (or not at all), or that
refills the buffer being computed on, fails on a laptop too, with a message naming the copy.
"""
from pathlib import Path

import numpy as np
import pytest

from grader.checking.check import check
from grader.emu import compile_module
from grader.runtime.errors import KernelFault

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
RNG = np.random.default_rng(7)
NOT_WAITED = "cp.async that has not been waited for (__pipeline_wait_prior)"


def _line(src: str, needle: str) -> int:
    """1-based line of the only line of `src` containing `needle`."""
    hits = [i + 1 for i, ln in enumerate(src.split("\n")) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


# ---------------------------------------------------------------- the primitives' semantics
ORDER = r"""
#include <cuda_pipeline.h>
extern "C" __global__ void order(float* in, float* out)
{
    extern __shared__ __align__(16) float s[];
    __pipeline_memcpy_async(s, in, 16);          // group 0: s[0..3]
    __pipeline_commit();
    __pipeline_memcpy_async(s + 4, in + 4, 16);  // group 1: s[4..7]
    __pipeline_commit();
    __pipeline_memcpy_async(s + 8, in + 8, 16, 8);  // not committed yet; zero-fills s[10..11]
    in[0] = -1.0f;                               // the source was read when the copy was issued
    out[0] = s[0];                               // in flight: poison (NaN)
    __pipeline_wait_prior(1);                    // lands group 0 only
    out[1] = s[0];
    out[2] = s[4];
    __pipeline_wait_prior(0);                    // lands group 1; the open batch stays in flight
    out[3] = s[4];
    out[4] = s[8];
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[5] = s[8];
    out[6] = s[9];
    out[7] = s[10];
    out[8] = s[11];
}
"""


def test_copies_land_at_the_wait_that_covers_them():
    mod = compile_module(ORDER, name="cp_order")
    x = np.arange(1, 13, dtype=np.float32)
    out = np.zeros(9, np.float32)
    mod.launch("order", 1, 1, [x, out], shared_mem=64)
    assert np.isnan(out[0])
    assert out[1] == 1 and np.isnan(out[2])
    assert out[3] == 5 and np.isnan(out[4])
    assert list(out[5:]) == [9, 10, 0, 0]
    assert x[0] == -1  # the kernel wrote it; the copy had read 1 before


EXIT_IN_FLIGHT = r"""
#include <cuda_pipeline.h>
extern "C" __global__ void leave(const float* in, float* out)
{
    extern __shared__ __align__(16) float s[];
    out[threadIdx.x] = 2.0f * in[threadIdx.x];
    __pipeline_memcpy_async(s + 4 * threadIdx.x, in + 4 * threadIdx.x, 16);
    __pipeline_commit();                         // never waited for: legal, nobody reads it
}
"""


def test_a_thread_may_exit_with_copies_in_flight():
    mod = compile_module(EXIT_IN_FLIGHT, name="cp_exit")
    x = RNG.uniform(-1, 1, 256).astype(np.float32)
    out = np.zeros(64, np.float32)
    mod.launch("leave", 2, 64, [x, out], shared_mem=1024, race_check=True)
    assert (out == 2 * x[:64]).all()


STATIC = r"""
#include <cuda_pipeline.h>
extern "C" __global__ void neighbours(const float* in, float* out, int barrier)
{
    __shared__ __align__(16) float s[64 * 4];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&s[4 * t], in + 4 * t, 16);
    __pipeline_commit();
    __syncthreads();                  // every copy issued
    __pipeline_wait_prior(0);         // mine have landed ...
    if (barrier) __syncthreads();     // ... and everyone's
    out[t] = s[4 * ((t + 32) % 64)];  // READ another warp's copy
}
"""


def test_static_shared_destination_and_a_missing_barrier():
    mod = compile_module(STATIC, name="cp_static")
    x = RNG.uniform(-1, 1, 256).astype(np.float32)
    out = np.zeros(64, np.float32)
    mod.launch("neighbours", 1, 64, [x, out, 1], race_check=True)
    assert (out == x[4 * ((np.arange(64) + 32) % 64)]).all()
    with pytest.raises(KernelFault) as ei:
        mod.launch("neighbours", 1, 64, [x, out, 0])
    e = ei.value
    assert e.kind == "async-copy" and NOT_WAITED in str(e), str(e)
    assert f"__pipeline_memcpy_async at line {_line(STATIC, '__pipeline_memcpy_async')}" in str(e)
    # the last thread at the first barrier runs on first: thread 63 reads thread 31's copy
    assert "__shared__ 's'" in str(e) and "thread (31,0,0) has not called __pipeline_wait_prior yet" in str(e), str(e)
    assert e.where.line == _line(STATIC, "READ another warp"), str(e)


MISUSE = r"""
#include <cuda_pipeline.h>
extern "C" __global__ void misuse(const float* in, float* out, int how)
{
    extern __shared__ __align__(16) float s[];
    float local[4];
    if (how == 0) __pipeline_memcpy_async(s + 1, in, 16);       // destination misaligned
    if (how == 1) __pipeline_memcpy_async(s, in + 2, 16);       // source misaligned
    if (how == 2) __pipeline_memcpy_async(s, in, 12);           // not 4, 8 or 16 bytes
    if (how == 3) __pipeline_memcpy_async(out, in, 16);         // global destination
    if (how == 4) __pipeline_memcpy_async(local, in, 16);       // local destination
    if (how == 5) __pipeline_memcpy_async(s + 64, in, 16);      // past shared_mem
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[0] = s[0] + local[0];
}
"""


@pytest.mark.parametrize("how,kind,words", [
    (0, "misaligned-address", "destination"), (1, "misaligned-address", "byte 8 of 'in'"),
    (2, "async-copy", "4, 8 or 16 bytes"), (3, "async-copy", "argument 'out'"),
    (4, "async-copy", "local variable"), (5, "shared-out-of-bounds", "shared_mem=256")])
def test_misuse_is_named(how, kind, words):
    mod = compile_module(MISUSE, name="cp_misuse")
    x = np.ones(64, np.float32)
    out = np.zeros(4, np.float32)
    with pytest.raises(KernelFault) as ei:
        mod.launch("misuse", 1, 1, [x, out, how], shared_mem=256)
    assert ei.value.kind == kind and words in str(ei.value), str(ei.value)
    assert ei.value.where.line == _line(MISUSE, f"if (how == {how})")


# ---------------------------------------------------------------- the course's pipelines
def _swizzle():
    p = KERNELS / "wmma_gemm_swizzle.cu"
    if not p.exists():
        pytest.skip("kernels/wmma_gemm_swizzle.cu is not there")
    return p.read_text()


def _broken(src: str) -> dict[str, str]:
    out = {
        "no-wait": src.replace("__pipeline_wait_prior(STAGES - 2);", ";").replace("__pipeline_wait_prior(0);", ";"),
        "wait-one-group-short": src.replace("__pipeline_wait_prior(STAGES - 2)", "__pipeline_wait_prior(STAGES - 1)"),
        "refill-the-buffer-in-use": src.replace("load_tile(next % STAGES, next)", "load_tile(kt % STAGES, next)"),
    }
    for k, v in out.items():
        assert v != src, k
    return out


@pytest.mark.parametrize("bug,why", [
    ("no-wait", "has not called __pipeline_wait_prior yet"),
    ("wait-one-group-short", "__pipeline_wait_prior(1) or less"),
    ("refill-the-buffer-in-use", "issued it after its last __pipeline_wait_prior")])
def test_grader_catches_a_broken_pipeline_on_the_emulator(bug, why):
    src = _swizzle()
    bad = _broken(src)[bug]
    v = check("wmma-gemm-fast", bad, backend="emu", speed=False)
    fails = [i for i in v.items if i.status != "pass" and i.kind not in ("", None)]
    assert fails, v.text()
    item = fails[0]
    assert item.kind == "async-copy", v.text()
    assert NOT_WAITED in item.message and why in item.message, item.message
    # the copy's line and the reading line (a wmma::load_matrix_sync of the main loop)
    copy_line = [i + 1 for i, ln in enumerate(bad.split("\n"))
                 if "__pipeline_memcpy_async(" in ln and "#" not in ln]
    assert any(f"__pipeline_memcpy_async at line {n}" in item.message for n in copy_line), item.message
    assert "load_matrix_sync" in item.message, item.message
    assert "__pipeline_wait_prior" in item.hint


def test_the_fast_gemm_exercise_runs_the_pipeline_on_a_cpu():
    """Some CPU size of wmma-gemm-fast runs more K tiles than its default launch has stages + 1
    (so every buffer is refilled while others are read), and it runs with race_check."""
    from grader.checking import exercises

    ex = exercises.get("wmma-gemm-fast")
    d = ex.launch_defaults
    stages = 3  # kernels/wmma_gemm_swizzle.cu's default, which the launch defaults match
    assert ex.race_check
    assert any(s["K"] >= (stages + 1) * d["block_k"] and s["K"] % d["block_k"] == 0
               and s["M"] % d["block_m"] == 0 and s["N"] % d["block_n"] == 0 for s in ex.cpu_sizes)
    conv = exercises.get("conv2d-wmma")
    assert conv.race_check
    assert any(s["R"] * s["S"] * s["C"] >= (4 + 1) * 32 for s in conv.cpu_sizes)  # 4 stages of BLOCK_K 32


def _rung(name):
    try:
        from grader.bench import wmma as bench_wmma
    except Exception:  # noqa: BLE001 - the ladder module is not ours
        pytest.skip("grader.bench.wmma unavailable")
    for r in [*bench_wmma.LADDER, bench_wmma.DMMA_FAST]:
        if r.file == name:
            return r
    pytest.skip(f"{name} is not a rung of the ladder")


@pytest.mark.parametrize("name,stages", [("wmma_gemm_async", 3), ("dmma_gemm_fast", 4), ("wmma_gemm_swizzle", 3)])
def test_pipelined_references_over_many_k_tiles(name, stages):
    """The cp.async references stay correct when every buffer is refilled (K tiles >
    STAGES + 1, a count that is not a multiple of STAGES), in both thread orders."""
    rung = _rung(name)
    if not (KERNELS / f"{name}.cu").exists():
        pytest.skip(f"kernels/{name}.cu is not there")
    spec = rung.spec()
    bm, bn, bk = spec.multiple
    M, N, K = bm, bn, (stages + 3) * bk
    mod = compile_module((KERNELS / f"{name}.cu").read_text(), options=rung.options, name=name)
    dt = np.float64 if rung.kind == "dmma" else np.float16
    A = RNG.uniform(-1, 1, (M, K)).astype(dt)
    B = RNG.uniform(-1, 1, (K, N)).astype(dt)
    C = np.full((M, N), np.nan, np.float64 if rung.kind == "dmma" else np.float32)
    mod.launch(spec.kernel, spec.grid(M, N, K), spec.block, [A, B, C, M, N, K], shared_mem=spec.shared_mem,
               race_check=True)
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    eps = 2.0**-52 if rung.kind == "dmma" else 2.0**-24
    bound = K * eps * (np.abs(a64) @ np.abs(b64)) + 1e-6
    assert (np.abs(C - a64 @ b64) <= bound).all()


@pytest.mark.parametrize("exercise_id", ["wmma-gemm-fast", "conv2d-wmma"])
def test_pipelined_references_pass_the_grader_on_the_emulator(exercise_id):
    from grader.checking import exercises
    from grader.runtime import kernels

    ex = exercises.get(exercise_id)
    v = check(ex.id, kernels.source(ex.reference), backend="emu", speed=False)
    assert all(i.status in ("pass", "skip") for i in v.items), v.text()
