"""On a real GPU: reference kernels correct on fresh inputs, timing stable, errors mapped."""
import secrets

import pytest

from grader.problems import gemm
from grader.runtime import kernels
from grader.runtime.errors import CompileError, LaunchArgumentError

pytestmark = pytest.mark.gpu

LADDER = {
    "sgemm_naive": gemm.sgemm_naive(),
    "sgemm_tiled": gemm.sgemm_tiled(32),
    "wmma_gemm_naive": gemm.wmma_naive(),
}


def module_for(name):
    from grader.runtime.gpu import GpuModule

    return GpuModule(kernels.source(name), LADDER[name].options)


@pytest.mark.parametrize("n", [1024, 4096])
@pytest.mark.parametrize("name", list(LADDER))
def test_reference_kernel_correct(name, n):
    import cupy

    run = gemm.run_once(module_for(name), LADDER[name], n, n, n, secrets.randbits(32), xp=cupy)
    assert run.comparison.ok, str(run.comparison)


@pytest.mark.parametrize("shape", [(17, 33, 5), (100, 1, 257)])
def test_tiled_sgemm_odd_sizes(shape):
    import cupy

    run = gemm.run_once(module_for("sgemm_tiled"), LADDER["sgemm_tiled"], *shape,
                        secrets.randbits(32), xp=cupy)
    assert run.comparison.ok, str(run.comparison)


def test_a_wrong_kernel_fails_the_check():
    """The check can fail: a kernel that skips the last k step is caught."""
    import cupy

    from grader.runtime.gpu import GpuModule

    src = kernels.source("sgemm_naive").replace("k < K;", "k < K - 1;")
    run = gemm.run_once(GpuModule(src), LADDER["sgemm_naive"], 256, 256, 256, 7, xp=cupy)
    assert not run.comparison.ok


@pytest.mark.parametrize("name", ["sgemm_tiled", "wmma_gemm_naive"])
def test_timing_is_stable(name):
    spec = LADDER[name]
    mod = module_for(name)
    first = gemm.time_gemm(mod, spec, 4096, 4096, 4096)["kernel"].median_ms
    second = gemm.time_gemm(mod, spec, 4096, 4096, 4096)["kernel"].median_ms
    assert abs(first - second) / min(first, second) < 0.05, (first, second)


def test_gpu_compile_error_maps_line():
    from grader.runtime.gpu import GpuModule

    src = kernels.source("wmma_gemm_naive").replace("wmma::mma_sync(acc, a, b, acc);",
                                                    "wmma::mma_sync(acc, a, b, acc)")
    line = next(i for i, l in enumerate(src.splitlines(), 1) if "wmma::mma_sync(acc" in l)
    with pytest.raises(CompileError) as e:
        GpuModule(src)
    assert e.value.line in (line, line + 1), str(e.value)


def test_gpu_resources_and_arg_checks():
    import numpy as np

    mod = module_for("sgemm_tiled")
    r = mod.resources("sgemm")
    assert r.registers > 0 and r.shared_bytes == 2 * 32 * 32 * 4
    with pytest.raises(LaunchArgumentError) as e:
        mod.launch("sgemm", (1, 1), (32, 32), [np.zeros(4, np.float32)] * 3 + [2, 2, 1])
    assert e.value.argument == "A"
