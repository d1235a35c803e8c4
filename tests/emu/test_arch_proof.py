"""grader.bench.arch_proof on the CPU: every reference kernel, compiled by NVRTC 12 for the lowest
arch it allows (compute_70 for most), runs right on the emulator at that arch (Volta's fragment
layout for sm_70); .ci/gpu-cuda12 runs the same through CuPy on a GPU."""
import pytest

from grader.bench import arch_proof
from grader.bench import crosscheck as X
from grader.runtime import kernels


def test_lowest_arch_follows_the_kernels_needs(nvrtc_of):
    nvrtc_of("cuda12")
    assert arch_proof.lowest_arch(kernels.source("wmma_gemm_naive"))[0] == 70
    arch, why = arch_proof.lowest_arch(kernels.source("dmma_gemm_naive"))
    assert arch == 80 and why.startswith("sm_70: the file requires sm_80")
    # without its "Requires: sm_80" line, the compiler says it
    undeclared = kernels.source("dmma_gemm_naive").replace("Requires: sm_80", "")
    arch, why = arch_proof.lowest_arch(undeclared)
    assert arch == 80 and "sm_70: incomplete type" in why and "need sm_80" in why
    assert arch_proof.lowest_arch(kernels.source("wmma_gemm_fragdb"))[0] == 80


@pytest.mark.slow
def test_every_kernel_at_its_lowest_arch_on_the_emulator(nvrtc_of):
    nvrtc_of("cuda12")
    rows = arch_proof.prove(backend="emu", progress=None)
    assert {r["file"] for r in rows} == {p.stem for p in kernels.all_files()}
    bad = [r for r in rows if not r["ok"]]
    assert not bad, bad
    at = {r["file"]: r["arch"] for r in rows}
    for file in ("dmma_gemm_naive", "dmma_gemm_fast", "dmma_gemm_peak_niter", "bf16_gemm_naive",
                 "tf32_gemm_naive", "wmma_gemm_fragdb"):  # bf16/tf32/fp64 fragments, Ampere's shared memory
        assert at[file] == 80, file
    for file in ("sgemm_tiled", "transpose_tiled", "wmma_gemm_naive", "wmma_gemm_colmajor", "wmma_gemm_swizzle",
                 "conv2d_implicit_wmma", "im2col", "fragment_probe", "wmma_peak_niter"):
        assert at[file] == 70, file
    for r in rows:  # a file that declares what it requires is never proven below it
        needs = arch_proof.declared_arch(kernels.source(r["file"]))
        assert r["arch"] is None or needs is None or r["arch"] >= min(needs, 80) or r["file"] == "fragment_probe", r
    illegal = next(r for r in rows if r["file"] == "fragment_illegal_op")
    assert any("add_bias_positional" in n for n in illegal["notes"])  # wrong on Volta, as notebook 05 says
    assert len(X.ITEMS) == len(rows)


def test_prove_leaves_the_environment_as_it_was(monkeypatch, nvrtc_of):
    import os

    nvrtc_of("cuda12")
    monkeypatch.delenv("TC_NVRTC", raising=False)
    item = next(i for i in X.ITEMS if i.file == "wmma_gemm_naive")
    assert arch_proof.prove([item], backend="emu", progress=None)[0]["ok"]
    assert "TC_NVRTC" not in os.environ
