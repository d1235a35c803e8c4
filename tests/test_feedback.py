"""What a student reads when a check fails: hints in the exercise's own terms, one message for
an untouched stub, repeated diagnoses said once, compiler warnings shown, a missing `;` placed
where it is, and a verdict that leaves the notebook's matplotlib backend alone.
Runs on the emulator (CPU)."""
import numpy as np
import pytest

from grader import kernels
from grader.check import check
from grader.compile import nvrtc_compile
from grader.errors import CompileError
from grader.verdict import FAIL, PASS, Item, Verdict


def variant(base: str, old: str, new: str) -> str:
    src = kernels.source(base)
    assert old in src, f"the reference kernel {base} changed; update the test"
    return src.replace(old, new)


def failures(v):
    return [i for i in v.items if i.status == FAIL]


def failing_verdict(n_cases=3) -> Verdict:
    v = Verdict("sgemm-naive", "emu", max_score=1)
    v.items.append(Item("compile", PASS, "compiled"))
    for k in range(n_cases):
        v.items.append(Item(f"correct: M=33 N=17 K=9 #{k}", FAIL, f"{k} elements are wrong", kind="wrong-result",
                            hint="same hint", error_map=np.array([[0.0, 1.0], [0.5, 0.0]]), tile=(16, 16)))
    return v


# ---------------------------------------------------------------------- 1. matplotlib backend
def test_error_map_leaves_the_notebook_backend_alone(monkeypatch):
    import matplotlib

    pytest.importorskip("matplotlib_inline")
    before = matplotlib.get_backend()
    matplotlib.use("module://matplotlib_inline.backend_inline")
    calls = []
    real_use = matplotlib.use
    monkeypatch.setattr(matplotlib, "use", lambda *a, **k: calls.append(a) or real_use(*a, **k))
    try:
        html = failing_verdict()._repr_html_()
        assert "data:image/png;base64" in html
        assert matplotlib.get_backend() == "module://matplotlib_inline.backend_inline"
        assert calls == []  # never switches the backend, not even to the same one
    finally:
        real_use(before)


# ------------------------------------------------------------ 2. fragment without a layout
def test_fragment_without_layout_asks_for_the_layout():
    src = variant("wmma_gemm_naive", "16, 16, 16, half, wmma::row_major> b;", "16, 16, 16, half> b;")
    with pytest.raises(CompileError) as e:
        nvrtc_compile(src, arch=90, resources=False)
    hint = e.value.hint
    assert "6th template argument" in hint and "wmma::row_major" in hint and "wmma::col_major" in hint
    assert "architecture" not in hint and "matrix_b" in hint


# ---------------------------------------------------------- 3. hints in the exercise's terms
def first_fail(exercise, src):
    v = check(exercise, src, backend="emu")
    fails = failures(v)
    assert fails, v.text()
    return v, fails[0]


def test_transpose_nan_hint_speaks_of_the_tile_not_accumulators():
    src = variant("transpose_tiled", "= tile[threadIdx.x][threadIdx.y + j];",
                  "= tile[threadIdx.x][threadIdx.y + j] + __int_as_float(0x7fc00000);")  # a NaN
    v, item = first_fail("transpose", src)
    assert item.kind == "nan", v.text()
    assert "fill_fragment" not in item.hint and "A or B" not in item.hint and "accumulator" not in item.hint
    assert "tile" in item.hint


def test_im2col_read_outside_x_hint_speaks_of_the_window():
    src = variant("im2col", "    if (h >= 0 && h < H && w >= 0 && w < W)\n", "")
    v, item = first_fail("im2col", src)
    assert item.kind == "out-of-bounds", v.text()
    assert "row < M" not in item.hint and "window" in item.hint and "x" in item.hint


EPILOGUE = "acc.x[i] = alpha * acc.x[i] + beta * c.x[i];"


@pytest.mark.parametrize("new, says", [
    ("acc.x[i] = beta * acc.x[i] + alpha * c.x[i];", "alpha and beta are swapped"),
    ("acc.x[i] = alpha * acc.x[i];", "the beta·C term is missing"),
    ("acc.x[i] = alpha * acc.x[i] + c.x[i];", "C is added without beta"),
])
def test_epilogue_names_the_mistake_and_shows_alpha_beta(new, says):
    v, item = first_fail("wmma-gemm-epilogue", variant("wmma_gemm_epilogue", EPILOGUE, new))
    assert "alpha = " in item.message and "beta = " in item.message, v.text()
    assert says in item.message, v.text()
    assert "index arithmetic" not in item.hint


def test_swapped_block_indices_are_suggested_for_unwritten_tiles():
    src = variant("wmma_gemm_naive", "int tile_row = blockIdx.x * 16;", "int tile_row = blockIdx.y * 16;")
    src = src.replace("int tile_col = blockIdx.y * 16;", "int tile_col = blockIdx.x * 16;")
    v, item = first_fail("wmma-gemm", src)
    assert item.kind == "unwritten", v.text()
    assert "blockIdx.x / blockIdx.y swapped" in item.hint and "launch contract" in item.hint


def test_scattered_unwritten_elements_do_not_suggest_swapped_indices():
    src = variant("sgemm_naive", "    C[row * N + col] = acc;", "    if (row % 2 == 0) C[row * N + col] = acc;")
    v, item = first_fail("sgemm-naive", src)
    assert item.kind == "unwritten" and "swapped" not in item.hint, v.text()


def test_wrong_ldm_is_mentioned_for_wmma_wrong_results():
    src = variant("wmma_gemm_naive", "wmma::load_matrix_sync(a, A + tile_row * K + k, K);",
                  "wmma::load_matrix_sync(a, A + tile_row * K + k, 16);")
    v, item = first_fail("wmma-gemm", src)
    assert item.kind == "wrong-result", v.text()
    assert "ldm" in item.hint and "row length of the whole matrix" in item.hint


# ------------------------------------------------------ 4. stub, repeated diagnoses, labels
STUB = '''
extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K)
{
    // YOUR CODE HERE (about 7 lines)
}
'''


def test_untouched_stub_is_said_once():
    v = check("sgemm-naive", STUB, backend="emu")
    fails = failures(v)
    assert len(fails) == 1 and fails[0].kind == "empty-kernel", v.text()
    assert "Your kernel body is still empty" in fails[0].message
    assert not any(i.name.startswith("correct") for i in v.items)
    assert v.score == 0 and "still empty" in v.headline


def test_same_diagnosis_on_several_cases_is_shown_once():
    src = variant("sgemm_naive", "B[k * N + col]", "B[k * N + row % N]")
    v = check("sgemm-naive", src, backend="emu")
    assert len(failures(v)) == 3, v.text()  # every case still judged and kept in the data
    text = v.text()
    assert text.count("[FAIL] correct") == 1 and text.count("also fails on:") == 1, text
    assert text.count("hint:") == 1 and text.count("error map") == 1
    html = v._repr_html_()
    assert html.count("data:image/png") == 1 and "also fails on:" in html


def test_renderer_folds_only_identical_diagnoses():
    v = failing_verdict()
    v.items.append(Item("correct: other", FAIL, "NaN", kind="nan", hint="other hint"))
    text = v.text()
    assert "also fails on: M=33 N=17 K=9 #1; M=33 N=17 K=9 #2" in text
    assert "[FAIL] correct: other: NaN" in text and text.count("[FAIL]") == 2


def test_repeated_size_gets_a_distinct_label():
    v = check("sgemm-naive", kernels.source("sgemm_naive"), backend="emu")
    names = [i.name for i in v.items if i.name.startswith("correct")]
    assert len(names) == len(set(names)), names
    assert any(n.endswith("(2nd random input)") for n in names), names


# ----------------------------------------------------------------------- 5. warnings shown
def test_compiler_warnings_are_listed():
    src = variant("im2col", "    if (idx >= total) return;\n", "")
    v = check("im2col", src, backend="emu")
    compile_item = v.items[0]
    assert compile_item.status == PASS
    assert "1 warning:" in compile_item.message and "1 warnings" not in compile_item.message
    assert 'variable "total" was declared but never referenced' in compile_item.message
    assert "of your kernel source" in compile_item.message
    assert 'variable "total"' in v.text()


def test_many_warnings_are_capped():
    decls = "".join(f"    int unused{i} = {i};\n" for i in range(8))
    src = f'extern "C" __global__ void k(float* x)\n{{\n{decls}    x[0] = 1.0f;\n}}\n'
    from grader.check import _compiled_item

    item = _compiled_item(nvrtc_compile(src, arch=90, resources=False).warnings)
    assert "8 warnings:" in item.message and "and 3 more" in item.message
    assert item.message.count("never referenced") == 5
    assert len(item.where["warnings"]) == 8


# ----------------------------------------------------------------- 6. a missing semicolon
def test_missing_semicolon_points_at_the_line_before():
    src = 'extern "C" __global__ void k(float* x)\n{\n    float y = 1.0f  // no semicolon\n\n    x[0] = y;\n}\n'
    with pytest.raises(CompileError) as e:
        nvrtc_compile(src, arch=90, resources=False)
    err = e.value
    assert err.line == 5 and err.diagnostics[0].likely_line == 3
    assert "line 5 of your kernel source (probably the end of line 3)" in str(err)
    assert "float y = 1.0f" in str(err) and "line 3" in err.hint


def test_semicolon_missing_inside_a_line_keeps_that_line():
    src = 'extern "C" __global__ void k(float* x)\n{\n    float y = 1.0f;\n    x[0] = y float z = 2;\n}\n'
    with pytest.raises(CompileError) as e:
        nvrtc_compile(src, arch=90, resources=False)
    assert e.value.line == 4 and e.value.diagnostics[0].likely_line is None
    assert "probably" not in str(e.value) and "line 4 of your kernel source" in str(e.value)


def test_missing_semicolon_in_check_reports_both_lines():
    src = variant("sgemm_naive", "float acc = 0.0f;", "float acc = 0.0f")
    v = check("sgemm-naive", src, backend="emu")
    item = v.items[0]
    line = next(i for i, l in enumerate(src.splitlines(), 1) if "float acc = 0.0f" in l)
    assert item.kind == "compile-error" and item.where["likely_line"] == line
    assert f"(probably the end of line {line})" in item.message


def test_error_map_tiles_follow_the_launch_tile():
    """sgemm-tiled with TILE=32 maps errors per 32x32 block, not per 16x16."""
    import numpy as np

    from grader import exercises

    ex = exercises.get("sgemm-tiled")
    for t in (16, 32):
        case = ex.problem.make(dict(M=64, N=64, K=8), np.random.default_rng(0), dict(tile=t))
        assert case.expected[2].tile == (t, t)
    dmma = exercises.get("dmma-gemm").problem.make(dict(M=16, N=16, K=4), np.random.default_rng(0), {})
    assert dmma.expected[2].tile == (8, 8)
