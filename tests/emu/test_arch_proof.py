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
    assert arch == 80 and "sm_70" in why and "need sm_80" in why
    assert arch_proof.lowest_arch(kernels.source("wmma_gemm_fragdb"))[0] == 80


@pytest.mark.slow
def test_every_kernel_at_its_lowest_arch_on_the_emulator(nvrtc_of):
    nvrtc_of("cuda12")
    rows = arch_proof.prove(backend="emu", progress=None)
    assert {r["file"] for r in rows} == {p.stem for p in kernels.all_files()}
    bad = [r for r in rows if not r["ok"]]
    assert not bad, bad
    needs80 = {r["file"] for r in rows if r["arch"] == 80}
    assert needs80 == {"dmma_gemm_naive", "dmma_gemm_fast", "dmma_gemm_peak_niter", "bf16_gemm_naive",
                       "tf32_gemm_naive", "wmma_gemm_fragdb"}
    assert all(r["arch"] == 70 for r in rows if r["file"] not in needs80)
    illegal = next(r for r in rows if r["file"] == "fragment_illegal_op")
    assert any("add_bias_positional" in n for n in illegal["notes"])  # wrong on Volta, as notebook 05 says
    assert len(X.ITEMS) == len(rows)
