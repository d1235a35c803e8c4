"""Notebooks 04 (WMMA basics) and 05 (fragment probes): the lesson plumbing, the demo
kernels, and the student copies' "not yet" behaviour. CPU tests run on the emulator; tests
marked gpu measure on the device."""

import matplotlib
import nbformat
import numpy as np
import pytest

from grader.checking.check import check
from grader.classroom import graded_cells, notebooks
from grader.lessons import fragment_maps as fm
from grader.lessons import wmma_basics as wb
from grader.problems import fragments

matplotlib.use("Agg")

NB04 = "04-wmma-basics/04-wmma-basics.ipynb"
NB05 = "05-fragment-probes/05-fragment-probes.ipynb"


def _kernel_sources(path):
    """variable -> CUDA source of each `# kernel:` cell."""
    return {var: graded_cells.kernel_text(c) for _, var, c in graded_cells.kernel_cells(nbformat.read(path, as_version=4))}


# ------------------------------------------------------------------ 04 plumbing (emulator)
def test_one_tile_matches_float64():
    r = wb.one_tile(backend="emu", seed=1)
    assert r["max_err"] < 1e-5


def test_leading_dimension_picks_the_right_elements():
    right = np.arange(16)[:, None] * 32 + np.arange(16)
    assert np.array_equal(wb.loaded_tile(32, backend="emu"), right)
    wrong = wb.loaded_tile(16, backend="emu")
    assert np.array_equal(wrong, np.arange(256).reshape(16, 16))  # rows run on into the next


def test_colmajor_kernel_of_the_cuda9_post():
    r = wb.colmajor(80, 48, 32, alpha=2.0, beta=0.5, backend="emu", seed=3)
    assert r["ok"], r["max_err"]


def test_padding_math():
    assert wb.padded_shape(33, 40, 20) == (48, 48, 32)
    assert wb.plot_padding(16, 32, 48) == 0.0


def test_plots_draw():
    wb.plot_ldm(24, backend="emu")
    wb.plot_sweep({"sizes": [256, 512], "tflops": {"cuBLAS fp32": [1.0, 2.0], "tensor cores: naive WMMA (04)":
                                                  [3.0, 4.0]}}, "test")


# ------------------------------------------------------------------ 05 plumbing
def test_recorded_maps_agree_with_formulas_and_ptx():
    rec = fm.recorded()
    assert "H200" in rec.where
    assert all(r["ok"] for r in fm.agreement(rec))
    assert set(fm.ptx_agreement(rec).values()) == {0}


def test_ptx_layout_is_the_facts_formula():
    for lane in range(32):
        for i in range(8):
            assert fm.wmma_as_ptx("a_f16_row", lane, i) == fragments.expected_element("a_f16_row", lane, i)
            assert fm.wmma_as_ptx("b_f16_row", lane, i) == fragments.expected_element("b_f16_row", lane, i)
            assert fm.wmma_as_ptx("acc_f32", lane, i) == fragments.expected_element("acc_f32", lane, i)


def test_emulator_probes_agree_on_the_m16n16k16_kinds():
    ms = fm.measure_all("emu")
    assert ms.backend == "emu"
    for kind in ("a_f16_row", "a_f16_col", "b_f16_row", "b_f16_col", "acc_f32", "acc_f32_mma", "a_tf32",
                 "a_f64", "acc_f64"):
        assert np.array_equal(ms.maps[kind], fragments.expected_map(kind)), kind


def test_map_plot_and_widget():
    rec = fm.recorded()
    ax = fm.plot_map("a_f16_row", rec.maps["a_f16_row"], lane=5)
    assert "lane 5" in ax.get_title()
    fm.plot_map("b_m8n32k16", rec.maps["b_m8n32k16"])
    owner, slots = fm.owners("acc_f32", rec.maps["acc_f32"])
    assert owner[0, 0] == 0 and slots[0][0] == [0] and owner[8, 9] == 0 and slots[8][9] == [7] and owner[1, 2] == 5
    fm.widget(rec)
    fm.lane_legend()


def test_bias_demo_separates_illegal_from_portable():
    wrong = fm.bias_demo(backend="emu", plot=False)
    assert wrong["add_bias_guess"] > 100
    assert wrong["add_bias_positional"] == 0  # right on the sm_80 layout: "works here"
    assert wrong["add_bias_portable"] == 0 and wrong["scale_relu"] == 0


# ------------------------------------------------------------------ notebooks' exercises
@pytest.mark.parametrize("nb", [NB04, NB05])
def test_solution_kernels_pass_and_student_stubs_say_not_yet(nb):
    sol = _kernel_sources(notebooks.SOLUTIONS / nb)
    stu = _kernel_sources(notebooks.STUDENT / nb)
    assert set(sol) == set(stu) and sol
    graded = graded_cells.graded_kernels(nbformat.read(notebooks.SOLUTIONS / nb, as_version=4))  # the grade() cells
    assert graded and set(graded) <= set(sol), graded
    for var, exercise in graded.items():
        assert "YOUR CODE HERE" in stu[var] and "BEGIN SOLUTION" not in stu[var]
        assert check(exercise, sol[var], backend="emu").passed, var
        v = check(exercise, stu[var], backend="emu")
        assert not v.passed and v.points(1) == 0.0, var
        assert "NOT YET" in v.headline


def _cells(nb_path, pred):
    return [c for c in nbformat.read(nb_path, as_version=4).cells if pred(c)]


def test_owner_exercise_solution_is_right_and_stub_says_not_yet():
    def grade_id(c):
        return c.metadata.get("nbgrader", {}).get("grade_id", "")

    sol_src = _cells(notebooks.SOLUTIONS / NB05, lambda c: grade_id(c) == "owner-src")[0].source
    ns = {}
    exec(sol_src, ns)
    for kind, fn in (("a_f16_row", ns["owner_a"]), ("b_f16_row", ns["owner_b"])):
        for r in range(16):
            for c in range(16):
                assert tuple(fn(r, c)) in fragments.expected_owner(kind, r, c)
    stu_src = _cells(notebooks.STUDENT / NB05, lambda c: grade_id(c) == "owner-src")[0].source
    ns = {}
    exec(stu_src, ns)
    with pytest.raises(NotImplementedError):
        ns["owner_a"](0, 0)
    # the graded cells catch the stub's NotImplementedError and say "not yet", and their last line
    # is the points nbgrader reads (as in notebook 02): nothing is tagged raises-exception
    tagged = _cells(notebooks.SOLUTIONS / NB05, lambda c: "raises-exception" in c.metadata.get("tags", []))
    assert not tagged
    import contextlib
    import io

    for label, gid in (("owner_a", "owner-a-test"), ("owner_b", "owner-b-test")):
        sol_test = _cells(notebooks.SOLUTIONS / NB05, lambda c: grade_id(c) == gid)[0]
        stu_test = _cells(notebooks.STUDENT / NB05, lambda c: grade_id(c) == gid)[0]
        assert sol_test.source.strip().splitlines()[-1] == "float(score)"
        assert "BEGIN HIDDEN TESTS" not in stu_test.source
        for test_src, solved, want_score, want_text in (
                (stu_test.source, False, 0.0, f"not yet: implement {label}"),
                (sol_test.source, True, 1.0, f"{label}: right")):
            ns = {}
            exec(sol_src if solved else stu_src, ns)
            if gid == "owner-b-test":  # its helper _check_owner is defined in the owner_a test cell
                exec(_cells(notebooks.SOLUTIONS / NB05, lambda c: grade_id(c) == "owner-a-test")[0]
                     .source.split("score, notes", 1)[0], ns)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(test_src, ns)
            assert ns["score"] == want_score and want_text in out.getvalue(), (gid, out.getvalue())
        ns = {}
        exec("def owner_a(r, c):\n    return None\ndef owner_b(k, n):\n    return 0, 0", ns)
        exec(_cells(notebooks.SOLUTIONS / NB05, lambda c: grade_id(c) == "owner-a-test")[0]
             .source.split("score, notes", 1)[0], ns)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(sol_test.source, ns)
        assert ns["score"] == 0.0 and out.getvalue().startswith("not yet: "), out.getvalue()


def test_graded_cells_points_match_grade_calls():
    for nb in (NB04, NB05):
        for c in nbformat.read(notebooks.SOLUTIONS / nb, as_version=4).cells:
            meta = c.metadata.get("nbgrader", {})
            if meta.get("grade") and "grade(" in c.source:
                last = c.source.strip().splitlines()[-1]
                assert last.startswith("grade(") and f"points={meta['points']:g})" in last, last


# ------------------------------------------------------------------ GPU
@pytest.mark.gpu
def test_gpu_maps_agree_with_facts_and_recorded():
    ms = fm.measure_all("gpu")
    assert all(r["ok"] and r["mismatches vs recorded H200"] == 0 for r in fm.agreement(ms))
    assert set(fm.ptx_agreement(ms).values()) == {0}
    wrong = fm.bias_demo(backend="gpu", plot=False)
    assert wrong["add_bias_guess"] > 100 and wrong["add_bias_portable"] == 0


@pytest.mark.gpu
def test_gpu_demo_kernels_and_sweep():
    assert wb.one_tile(backend="gpu")["max_err"] < 1e-5
    assert wb.colmajor(256, 192, 128, 2.0, 0.5, backend="gpu")["ok"]
    r = wb.sweep((256, 512), max_seconds=0.1)
    assert all(len(v) == 2 and min(v) > 0 for v in r["tflops"].values())


def test_recorded_4096_comes_from_the_saved_gpu_run():
    from grader.lessons import capstone
    from grader.lessons import wmma_basics as wb

    t, source = wb.recorded_4096()
    assert bool(t) == bool(capstone.saved())
    if t:
        assert set(t) == set(wb.STYLE) - {"your WMMA kernel"}
        assert t["cuBLAS fp16 (tensor cores)"] > t["tensor cores: naive WMMA (04)"] > t["CUDA cores: tiled fp32 (03)"]
        assert "recorded on" in source
