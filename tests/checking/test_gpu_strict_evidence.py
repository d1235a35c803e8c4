"""On a GPU: the kernels the emulator now faults on really are wrong there (issue 25). Skipped
without a GPU; the lead runs it on an H100:  ./course.sh test tests/checking/test_gpu_strict_evidence.py -s"""
import numpy as np
import pytest

from tests.emu.test_emu_strict import ANY_SIZE_DIRECT, ONE_TILE  # the emulator's own cases

pytestmark = pytest.mark.gpu


def _gpu_wrong(src, kernel, grid, block, args, out_pos, ref):
    """Elements the GPU got wrong (or -1 when the launch itself faulted, e.g. misaligned address),
    in a child process: a CUDA fault poisons its process's context (every later GPU test of this
    run failed with 'misaligned address' when it ran here)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_gpu_wrong_here, src, kernel, grid, block, args, out_pos, ref).result(timeout=300)


def _gpu_wrong_here(src, kernel, grid, block, args, out_pos, ref):
    import cupy

    from grader.runtime.backend import load

    mod = load(src, "gpu")
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    try:
        mod.launch(kernel, grid, block, dev)
        cupy.cuda.runtime.deviceSynchronize()
    except Exception as e:  # a CUDA fault: the GPU refuses it outright
        print(f"{kernel}: the GPU faulted: {type(e).__name__}: {str(e).splitlines()[0]}")
        return -1
    got = dev[out_pos].get().astype(np.float64).reshape(ref.shape)
    bad = int((~(np.abs(got - ref) <= 1e-2 * (1 + np.abs(ref)))).sum())
    print(f"{kernel}: {bad} of {ref.size} elements wrong on the GPU")
    return bad


def test_ldm_31_kernel_is_wrong_on_the_gpu():
    M, N, K = 1000, 777, 333
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    bad = _gpu_wrong(ANY_SIZE_DIRECT, "wmma_gemm", ((M + 15) // 16, (N + 15) // 16), (32,), [A, B, C, M, N, K], 2, ref)
    assert bad != 0  # the emulator's fault (ldm = 333) matches a GPU that computes garbage or faults


@pytest.mark.parametrize("off,lda", [(1, 16), (8, 16), (0, 17), (0, 20)])
def test_misaligned_pointer_or_ldm_is_wrong_on_the_gpu(off, lda):
    A = np.random.default_rng(2).uniform(-1, 1, 64 * 64).astype(np.float16)
    B = np.eye(16, dtype=np.float16).ravel()
    C = np.zeros(256, np.float32)
    ref = np.array([[A[off + r * lda + c] for c in range(16)] for r in range(16)], np.float64)
    bad = _gpu_wrong(ONE_TILE, "one", (1,), (32,), [A, B, C, off, lda], 2, ref)
    print(f"off={off} lda={lda}: {bad}")  # recorded: which rule breaks and how, on this GPU


def test_gpu_grade_fails_what_the_emulator_fails():
    from grader.checking.check import check

    v = check("wmma-gemm-any-size", ANY_SIZE_DIRECT, backend="gpu", speed=False)
    print(v.text())
    assert v.score == 0
