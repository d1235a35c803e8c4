"""grader.bench.crosscheck: the emulator-vs-GPU comparison of issue #4.

On CPU: every case of every item is correct on the emulator (so a GPU run that disagrees
points at a real fidelity gap, not at a broken case), every kernel file is covered, and the
comparison flags what it should. On a GPU: the comparison itself."""
import numpy as np
import pytest

from grader.bench import crosscheck as X
from grader.problems.kinds import Expected
from grader.runtime import kernels


def test_every_kernel_file_is_cross_checked():
    covered = {i.file for i in X.ITEMS}
    assert covered == {p.stem for p in kernels.all_files()}


@pytest.mark.parametrize("item", X.ITEMS, ids=lambda i: i.name)
def test_every_case_is_right_on_the_emulator(item):
    if item.gpu_only:
        pytest.skip(f"GPU only: {item.gpu_only}")
    rows = X.cross_check([item], backends=("emu", "emu"), progress=None)
    assert rows
    for r in rows:
        assert r["agree"] and r["identical"] == 1.0, r  # deterministic: the same bits twice
        if r["first_vs_ref"] is not None and item.file != "fragment_illegal_op":
            assert r["first_vs_ref"] <= 1.0, r


def test_gpu_only_items_are_those_the_emulator_refuses():
    """An item may skip the emulator only when the emulator cannot compile its kernel (wgmma/TMA),
    and the CPU run of the cross-check then has nothing to say about it."""
    from grader.emu import compile_module
    from grader.runtime.errors import Unsupported

    gpu_only = [i for i in X.ITEMS if i.gpu_only]
    assert [i.file for i in gpu_only] == ["hgemm_wgmma", "mma_gemm_tma", "mma_gemm_tma_persistent",
                                          "conv2d_wgmma_tma", "tma_im2col_probe", "fp8_gemm_wgmma"]
    for item in gpu_only:
        with pytest.raises(Unsupported):
            compile_module(kernels.source(item.file), options=item.options)
        assert X.cross_check([item], backends=("emu", "emu"), progress=None) == []


def test_illegal_op_guess_is_wrong_and_portable_is_right():
    item = next(i for i in X.ITEMS if i.file == "fragment_illegal_op")
    rows = {r["case"]: r for r in X.cross_check([item], backends=("emu", "emu"), progress=None)}
    assert rows["add_bias_guess"]["first_vs_ref"] > 1
    assert rows["add_bias_portable"]["first_vs_ref"] <= 1 and rows["add_bias_positional"]["first_vs_ref"] <= 1


def test_compare_flags_differences_beyond_the_bound():
    ref = np.zeros((4, 4))
    e = Expected(ref, np.full((4, 4), 1e-3))
    a = np.zeros((4, 4), np.float32)
    b = a.copy()
    b[1, 2] = 5e-4  # inside the bound: agree, not identical
    r = X.compare(a, b, e)
    assert r.ok and r.identical == 15 / 16 and 0.4 < r.worst_ratio < 0.6
    b[3, 3] = 2e-3  # outside
    r = X.compare(a, b, e)
    assert not r.ok and r.n_bad == 1 and r.worst_ratio > 1
    b[3, 3] = np.nan  # a NaN on one side never agrees
    assert not X.compare(a, b, e).ok


def test_compare_exact_outputs_need_equal_bits():
    e = Expected(np.zeros(8), 0.0, exact=True)
    a = np.arange(8, dtype=np.int32)
    assert X.compare(a, a.copy(), e).ok
    b = a.copy()
    b[5] = -1
    assert not X.compare(a, b, e).ok


@pytest.mark.gpu
@pytest.mark.parametrize("item", X.ITEMS, ids=lambda i: i.name)
def test_emulator_agrees_with_the_gpu(item):
    rows = X.cross_check(items=[item], progress=None)
    bad = [r for r in rows if not r["agree"]]
    assert rows and not bad, X.table(bad)


def _gpu_only_item(error: float, slack):
    """A GPU-only item whose 'GPU' writes the reference plus `error` x the plain bound at one element."""
    from grader.problems.kinds import Case

    ref = np.linspace(1.0, 2.0, 64).reshape(8, 8)
    bound = np.full_like(ref, 1e-6)

    class Module:
        xp = np

        def launch(self, kernel, grid, block, args, shared_mem=0):
            args[0][...] = ref
            args[0][3, 3] += error * 1e-6

    case = Case("8x8", [np.zeros((8, 8))], [0], (1, 1, 1), (1, 1, 1), expected={0: Expected(ref, bound)})
    return X.Item("fake", "fake", "k", (), lambda rng: [case], gpu_only="a stand-in", load=Module, slack=slack)


def test_a_gpu_only_item_within_its_named_slack_agrees_and_says_so():
    """fp8_gemm_wgmma's outputs are judged as the FP8 bench judges them: within the FP8 accumulator's
    slack of the fp32 bound, said in the row; never beyond it, and never without a slack named."""
    from grader.bench.fp8_checks import FP8_ACCUMULATOR

    (row,) = X._gpu_only_rows(_gpu_only_item(19.0, FP8_ACCUMULATOR), 0, None)
    assert row["agree"] and "FP8 tensor-core accumulation" in row["case"] and row["first_vs_ref"] > 18
    assert not X._gpu_only_rows(_gpu_only_item(19.0, None), 0, None)[0]["agree"]
    assert not X._gpu_only_rows(_gpu_only_item(1e9, FP8_ACCUMULATOR), 0, None)[0]["agree"]
    assert X._gpu_only_rows(_gpu_only_item(0.5, None), 0, None)[0]["agree"]
    wgmma = [i for i in X.ITEMS if i.file == "fp8_gemm_wgmma"]
    assert wgmma and wgmma[0].slack == FP8_ACCUMULATOR
