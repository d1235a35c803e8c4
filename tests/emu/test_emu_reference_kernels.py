"""The course's reference kernels (kernels/*.cu) run on the emulator and match a float64
reference within the accumulation bound of FACTS.md."""
from pathlib import Path

import numpy as np
import pytest

from grader.emu import compile_module
from grader.runtime.errors import Unsupported

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
ALL = sorted(KERNELS.glob("*.cu"))


def _need(name):
    p = KERNELS / name
    if not p.exists():
        pytest.skip(f"kernels/{name} is not there yet")
    return p.read_text()


def _check(C, A, B, K, eps):
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    ref = a64 @ b64
    bound = K * eps * (np.abs(a64) @ np.abs(b64)) + 1e-6
    assert np.isfinite(C).all()
    err = np.abs(C.astype(np.float64) - ref)
    assert (err <= bound).all(), f"max error {err.max()} (bound {bound[err > bound].min()})"


RNG = np.random.default_rng(2024)


@pytest.mark.skipif(not ALL, reason="no kernels/*.cu yet")
@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_every_reference_kernel_compiles(path):
    try:
        mod = compile_module(path.read_text(), name=path.stem)
    except Unsupported as e:  # e.g. inline PTX: acceptable, but it must say so
        assert "not supported by the CPU emulator" in str(e)
        return
    assert mod.kernels, f"no __global__ kernel found in {path.name}"


@pytest.mark.parametrize("M,N,K", [(32, 48, 40), (17, 33, 5), (1, 1, 1)])
def test_sgemm_naive(M, N, K):
    mod = compile_module(_need("sgemm_naive.cu"), name="sgemm_naive")
    A = RNG.uniform(-1, 1, (M, K)).astype(np.float32)
    B = RNG.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.full((M, N), np.nan, np.float32)
    mod.launch("sgemm", ((N + 15) // 16, (M + 15) // 16), (16, 16), [A, B, C, M, N, K])
    _check(C, A, B, K, 2.0**-24)


@pytest.mark.parametrize("tile", [16, 32])
@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (17, 33, 45)])
def test_sgemm_tiled(tile, M, N, K):
    mod = compile_module(_need("sgemm_tiled.cu"), options=(f"-DTILE={tile}",), name="sgemm_tiled")
    A = RNG.uniform(-1, 1, (M, K)).astype(np.float32)
    B = RNG.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.full((M, N), np.nan, np.float32)
    mod.launch("sgemm", ((N + tile - 1) // tile, (M + tile - 1) // tile), (tile, tile), [A, B, C, M, N, K],
               race_check=(M == 17))
    _check(C, A, B, K, 2.0**-24)


@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (48, 32, 64)])
def test_wmma_gemm_naive(M, N, K):
    mod = compile_module(_need("wmma_gemm_naive.cu"), name="wmma_gemm_naive")
    A = RNG.uniform(-1, 1, (M, K)).astype(np.float16)
    B = RNG.uniform(-1, 1, (K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float32)
    mod.launch("wmma_gemm", (M // 16, N // 16), (32,), [A, B, C, M, N, K])
    _check(C, A, B, K, 2.0**-24)


@pytest.mark.parametrize("M,N,K", [(17, 33, 5), (32, 16, 48), (1, 40, 23)])
def test_wmma_gemm_any_size(M, N, K):
    mod = compile_module(_need("wmma_gemm_any_size.cu"), name="wmma_gemm_any_size")
    A = RNG.uniform(-1, 1, (M, K)).astype(np.float16)
    B = RNG.uniform(-1, 1, (K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float32)
    mod.launch("wmma_gemm", ((M + 15) // 16, (N + 15) // 16), (32,), [A, B, C, M, N, K])
    _check(C, A, B, K, 2.0**-24)


def test_wmma_gemm_epilogue():
    mod = compile_module(_need("wmma_gemm_epilogue.cu"), name="wmma_gemm_epilogue")
    M, N, K = 32, 48, 32
    A = RNG.uniform(-1, 1, (M, K)).astype(np.float16)
    B = RNG.uniform(-1, 1, (K, N)).astype(np.float16)
    C = RNG.uniform(-1, 1, (M, N)).astype(np.float32)
    D = np.full((M, N), np.nan, np.float32)
    alpha, beta = 1.5, -0.5
    mod.launch("wmma_gemm_epilogue", (M // 16, N // 16), (32,), [A, B, C, D, M, N, K, alpha, beta])
    ref = alpha * (A.astype(np.float64) @ B.astype(np.float64)) + beta * C
    bound = K * 2.0**-24 * alpha * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))) + 1e-6
    assert (np.abs(D - ref) <= bound + 2.0**-23 * np.abs(ref)).all()


@pytest.mark.parametrize("M,N,K", [(8, 8, 4), (24, 16, 20)])
def test_dmma_gemm_naive(M, N, K):
    mod = compile_module(_need("dmma_gemm_naive.cu"), name="dmma_gemm_naive")
    A = RNG.uniform(-1, 1, (M, K))
    B = RNG.uniform(-1, 1, (K, N))
    C = np.full((M, N), np.nan)
    mod.launch("dmma_gemm", ((M + 7) // 8, (N + 7) // 8), (32,), [A, B, C, M, N, K])
    _check(C, A, B, K, 2.0**-52)


def test_fragment_probe_kernel_matches_facts():
    """kernels/fragment_probe.cu on the emulator shows the FACTS.md maps (the kinds whose
    formula FACTS.md gives; the others are compared on a GPU)."""
    src = _need("fragment_probe.cu")
    fragments = pytest.importorskip("grader.problems.fragments")
    mod = compile_module(src, name="fragment_probe")
    checked = 0
    for kind, k in fragments.KINDS.items():
        if k.source != "facts" or k.kernel not in mod.kernels:
            continue
        held = np.full(32 * 16, -1, np.int32)
        mod.launch(k.kernel, 1, 32, [fragments.probe_input(kind), held])
        n = fragments.num_elements(kind)
        assert (held[32 * n:] == -1).all(), kind
        assert np.array_equal(held[: 32 * n].reshape(32, n), fragments.expected_map(kind)), kind
        checked += 1
    assert checked >= 6


def _ladder():
    try:
        from grader.bench import wmma as bench_wmma
        return [*bench_wmma.LADDER, bench_wmma.DMMA_FAST]
    except Exception:  # noqa: BLE001 - the ladder module is not ours; skip if it changes
        return []


@pytest.mark.parametrize("rung", _ladder(), ids=lambda r: r.name)
def test_fast_gemm_ladder_on_emulator(rung):
    """The fast WMMA/DMMA GEMM rungs (dynamic shared memory, cp.async pipelines, warp tiles)
    give correct results on the emulator, at one block-tile multiple (K: two K tiles)."""
    src = _need(rung.file + ".cu")
    spec = rung.spec()
    bm, bn, bk = spec.multiple
    M, N, K = bm, 2 * bn, 2 * bk
    mod = compile_module(src, options=rung.options, name=rung.file)
    dt = np.float64 if rung.kind == "dmma" else np.float16
    A = RNG.uniform(-1, 1, (M, K)).astype(dt)
    B = RNG.uniform(-1, 1, (K, N)).astype(dt)
    C = np.full((M, N), np.nan, np.float64 if rung.kind == "dmma" else np.float32)
    mod.launch(spec.kernel, spec.grid(M, N, K), spec.block, [A, B, C, M, N, K], shared_mem=spec.shared_mem)
    _check(C, A, B, K, 2.0**-52 if rung.kind == "dmma" else 2.0**-24)


# ---------------------------------------------------------------- swizzle and fragdb rungs, their sweep
def _swizzle_variants():
    try:
        from grader.bench import wmma as bench_wmma
        return [r for r in [*bench_wmma.LADDER, *bench_wmma.SWEEP]
                if r.file in ("wmma_gemm_swizzle", "wmma_gemm_fragdb", "wmma_gemm_persistent")]
    except Exception:  # noqa: BLE001 - the ladder module is not ours; skip if it changes
        return []


def _run_swizzle(rung, src, M, N, K, race_check=False):
    spec = rung.spec()
    mod = compile_module(src, options=rung.options, name=rung.file)
    A = RNG.uniform(-1, 1, (M, K)).astype(np.float16)
    B = RNG.uniform(-1, 1, (K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float32)
    mod.launch(spec.kernel, spec.grid(M, N, K), spec.block, [A, B, C, M, N, K],
               shared_mem=spec.shared_mem, race_check=race_check)
    return C, A, B


@pytest.mark.parametrize("rung", _swizzle_variants(), ids=lambda r: r.name)
def test_swizzle_variants_on_emulator(rung):
    """wmma_gemm_swizzle and wmma_gemm_fragdb at their defaults and every variant the GPU sweep times
    (bench_wmma.SWEEP) is correct on the emulator: two block columns and two K tiles, and 7 K
    tiles (every pipeline buffer reused, KT not a multiple of STAGES). The emulator's cp.async
    copies land only at the __pipeline_wait_prior that covers them (reading one in flight is a
    fault), and both thread orders must agree (race_check)."""
    src = _need(rung.file + ".cu")
    bm, bn, bk = rung.spec().multiple
    for M, N, K in [(bm, 2 * bn, 2 * bk), (bm, bn, 7 * bk)]:
        C, A, B = _run_swizzle(rung, src, M, N, K, race_check=True)
        _check(C, A, B, K, 2.0**-24)


@pytest.mark.parametrize("file", ["wmma_gemm_swizzle", "wmma_gemm_fragdb"])
def test_a_wait_that_is_too_loose_is_caught(file):
    """Calibration: waiting for one tile too few (__pipeline_wait_prior(STAGES - 1)) reads a
    tile whose copies have not landed; the emulator names the read, the copy and the wait."""
    from grader.bench import wmma as bench_wmma
    from grader.runtime.errors import KernelFault

    src = _need(file + ".cu")
    bad = src.replace("__pipeline_wait_prior(STAGES - 2)", "__pipeline_wait_prior(STAGES - 1)")
    assert bad != src
    rung = bench_wmma._v(file)
    bm, bn, bk = rung.spec().multiple
    with pytest.raises(KernelFault) as ei:
        _run_swizzle(rung, bad, bm, bn, 7 * bk)
    e = ei.value
    assert e.kind == "async-copy", str(e)
    assert "cp.async that has not been waited for (__pipeline_wait_prior)" in str(e)
    assert "__pipeline_wait_prior(2)" in str(e) and "__pipeline_wait_prior(1) or less" in str(e), str(e)
    assert "load_matrix_sync" in e.where.extra.get("source_line", ""), str(e)
