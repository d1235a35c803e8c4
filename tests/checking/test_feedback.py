"""What a student reads when a check fails: hints in the exercise's own terms, one message for
an untouched stub, repeated diagnoses said once, compiler warnings shown, a missing `;` placed
where it is, and a verdict that leaves the notebook's matplotlib backend alone.
Runs on the emulator (CPU)."""
import json

import numpy as np
import pytest

from grader.checking.check import check
from grader.checking.verdict import FAIL, PASS, Item, Verdict
from grader.runtime import kernels
from grader.runtime.compile import nvrtc_compile
from grader.runtime.errors import CompileError


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
    assert "blockIdx.x and blockIdx.y swapped" in item.hint and "blockIdx.x along the rows" in item.hint


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
    from grader.checking.steps.compile import compiled_item

    item = compiled_item(nvrtc_compile(src, arch=90, resources=False).warnings)
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

    from grader.checking import exercises

    ex = exercises.get("sgemm-tiled")
    for t in (16, 32):
        case = ex.problem.make(dict(M=64, N=64, K=8), np.random.default_rng(0), dict(tile=t))
        assert case.expected[2].tile == (t, t)
    dmma = exercises.get("dmma-gemm").problem.make(dict(M=16, N=16, K=4), np.random.default_rng(0), {})
    assert dmma.expected[2].tile == (8, 8)


# ------------------------------------------------------- 7. stubs with scaffolding (06, 08)
def notebook_stub(notebook: str, var: str) -> str:
    """The kernel source of a student copy's graded cell, as a student who has not started runs it."""
    import nbformat

    from grader.classroom.notebooks import STUDENT

    (path,) = STUDENT.glob(f"{notebook}*/*.ipynb")
    for c in nbformat.read(path, as_version=4).cells:
        if c.cell_type == "code" and f"{var} = r" in c.source:
            ns = {}
            exec(c.source, ns)
            return ns[var]
    raise AssertionError(f"no {var} cell in {path}")


@pytest.mark.parametrize("notebook, var, exercise, parts", [
    ("06", "SRC_FAST", "wmma-gemm-fast", ("load_tile", "the main loop")),
    ("08", "SRC_CONV", "conv2d-wmma", ("load_tile", "the main loop")),
])
def test_untouched_scaffolded_stub_is_said_once(notebook, var, exercise, parts):
    src = notebook_stub(notebook, var)
    v = check(exercise, src, backend="emu")
    (item,) = failures(v)
    assert item.kind == "unfilled-stub", v.text()
    assert item.message.startswith("the parts marked YOUR CODE HERE (") and item.message.endswith("are still empty")
    for part in parts:
        assert part in item.message, item.message
    text = v.text()
    assert "never referenced" not in text and "compiled with" not in text  # warnings held back
    assert "tensor-core instruction" not in text and "mma_sync on fragments" not in text
    assert "index arithmetic" not in text and "implicit-GEMM" not in text
    assert text.count("hint:") == 1 and v.score == 0


def test_half_written_stub_names_the_empty_part():
    """The main loop written, load_tile still the stub: the kernel runs (and fails), and the
    verdict names load_tile instead of the NaN / race it causes."""
    src = kernels.source("wmma_gemm_swizzle")
    head = "    auto load_tile = [&](int stage, int kt) {\n"
    start = src.index(head) + len(head)
    end = src.index("\n    };\n", start) + 1
    src = src[:start] + "        // YOUR CODE HERE (about 15 lines)\n" + src[end:]
    v = check("wmma-gemm-fast", src, backend="emu")
    (item,) = failures(v)
    assert item.kind == "unfilled-stub", v.text()
    assert "(load_tile at line " in item.message and "main loop" not in item.message
    assert "the part marked YOUR CODE HERE" in item.message and "is still empty" in item.message


def test_a_leftover_marker_never_fails_a_correct_kernel():
    src = kernels.source("sgemm_naive") + "\n__device__ void helper()\n{\n    // YOUR CODE HERE\n}\n"
    from grader.checking.stubs import unfilled

    assert [s.part for s in unfilled(src)] == ["helper"]
    v = check("sgemm-naive", src, backend="emu")
    assert v.passed, v.text()


def test_a_marker_kept_above_written_code_is_not_empty():
    from grader.checking.stubs import unfilled

    src = kernels.source("sgemm_naive").replace("    float acc = 0.0f;\n",
                                                "    // YOUR CODE HERE (about 7 lines)\n    float acc = 0.0f;\n")
    assert "YOUR CODE HERE" in src and unfilled(src) == []
    fast = kernels.source("wmma_gemm_swizzle").replace("    auto load_tile = [&](int stage, int kt) {\n",
                                                      "    auto load_tile = [&](int stage, int kt) {\n"
                                                      "        // YOUR CODE HERE (about 15 lines)\n")
    assert unfilled(fast) == []  # load_tile has code besides the marker


# ------------------------------------------------------ 8. line numbers of the notebook cell
def fake_notebook(monkeypatch, *cells):
    """IPython's input history (`In`): In[0] is empty, the last cell is the one running check."""
    from grader.checking import cells as cells_mod

    monkeypatch.setattr(cells_mod, "_history", lambda: ["", *cells])


def kernel_cell(src, name="SRC"):
    return f'# kernel: k\n{name} = r"""{src}"""'


SEMI = 'extern "C" __global__ void k(float* x)\n{\n    float y = 1.0f  // no semicolon\n\n    x[0] = y;\n}\n'


def test_compile_error_names_the_line_of_the_cell(monkeypatch):
    src = kernels.source("sgemm_naive").replace("float acc = 0.0f;", "float acc = 0.0f")
    fake_notebook(monkeypatch, kernel_cell(src), 'check("sgemm-naive", SRC)')
    v = check("sgemm-naive", src, backend="emu")
    item = v.items[0]
    k = next(i for i, l in enumerate(src.splitlines(), 1) if "float acc = 0.0f" in l)  # kernel line
    err = item.where["line"]
    assert err == k + 1 and item.where["cell_line"] == err + 1 and item.where["cell"] == "the cell above"
    assert item.message.startswith(f"line {err + 1} of the cell above (line {err} of the kernel), "
                                   f"probably the end of line {k + 1} of the cell"), item.message
    assert f"\n    {k + 1}: float acc = 0.0f" in item.message
    assert f"end of line {k + 1} is the usual cause" in item.hint
    data = json.loads(v.to_json())  # the verdict still round-trips through JSON
    assert data["items"][0]["where"]["cell_line"] == err + 1
    assert data["items"][0]["message"] == item.message


def test_warnings_and_runtime_faults_use_cell_lines(monkeypatch):
    src = kernels.source("fragment_probe").replace("wmma::load_matrix_sync(f, M, 16);",
                                                  "int unused = 1;\n    wmma::load_matrix_sync(f, M, 32);")
    fake_notebook(monkeypatch, kernel_cell(src, "SRC_PROBE"), "LAUNCH = {}", 'check("fragment-probe", SRC_PROBE)')
    v = check("fragment-probe", src, backend="emu")
    k = next(i for i, l in enumerate(src.splitlines(), 1) if "load_matrix_sync(f, M, 32)" in l)
    assert f"line {k} of the cell that defines SRC_PROBE (line {k - 1} of the kernel)" in v.items[0].message
    fault = failures(v)[0]
    assert fault.kind == "out-of-bounds", v.text()
    assert f"line {k + 1} of the cell that defines SRC_PROBE (line {k} of the kernel): " \
           "wmma::load_matrix_sync(f, M, 32)" in fault.message, fault.message
    assert fault.where["cell_line"] == k + 1
    json.loads(v.to_json())


def test_outside_ipython_lines_stay_kernel_lines(monkeypatch):
    from grader.checking import cells as cells_mod

    assert cells_mod.find_cell(SEMI) is None  # pytest is no IPython
    fake_notebook(monkeypatch, "x = 1", 'check("sgemm-naive", open("k.cu").read())')
    assert cells_mod.find_cell(SEMI) is None  # no cell holds the text: a source read from a file


IPYTHON_SESSION = r'''
from IPython.core.interactiveshell import InteractiveShell
sh = InteractiveShell.instance()
cell = '# kernel: k\nSRC = r"""\nextern "C" __global__ void k(float* x)\n{\n    x[0] = 1.0f\n}\n"""'
sh.run_cell(cell, store_history=True)
sh.run_cell('from grader import check\nv = check("sgemm-naive", SRC, backend="emu")', store_history=True)
print(sh.user_ns["v"].items[0].message)
'''


def test_lines_of_a_real_ipython_cell():
    """The lookup reads IPython's own history: kernel line 5 is line 6 of the cell."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", IPYTHON_SESSION], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("line 6 of the cell above (line 5 of the kernel), probably the end of line 5 "
                               "of the cell"), r.stdout


# --------------------------------------------------- 9. fragment shapes that do not exist
def compile_hint(src, arch=90):
    with pytest.raises(CompileError) as e:
        nvrtc_compile(src, arch=arch, resources=False)
    return e.value.hint


@pytest.mark.parametrize("old, new", [
    ("8, 8, 4, double", "16, 16, 16, double"),  # every fragment 16x16x16
    ("8, 8, 4, double> acc", "8, 8, 4, float> acc"),  # a float accumulator
])
def test_double_fragment_shape_is_explained_not_the_architecture(old, new):
    hint = compile_hint(variant("dmma_gemm_naive", old, new))
    assert "double fragments exist only as m8n8k4 (wmma::fragment<..., 8, 8, 4, double, ...>)" in hint
    assert "accumulator must be double too" in hint
    assert "architecture" not in hint and "sm_80" not in hint


def test_tf32_and_bf16_shapes_are_named():
    tf32 = compile_hint(variant("tf32_gemm_naive", "16, 16, 8, wmma::precision::tf32",
                                "16, 16, 16, wmma::precision::tf32"))
    assert "tf32 fragments exist only as m16n16k8" in tf32 and "float accumulator" in tf32
    bf16 = compile_hint(variant("bf16_gemm_naive", "16, 16, 16, __nv_bfloat16", "16, 16, 8, __nv_bfloat16"))
    assert "bf16 fragments exist as m16n16k16, m32n8k16 or m8n32k16" in bf16 and "float accumulator" in bf16
    assert "sm_80" not in tf32 + bf16


def test_the_architecture_is_named_only_below_sm80():
    hint = compile_hint(kernels.source("dmma_gemm_naive"), arch=75)
    assert "sm_80 or newer" in hint and "sm_75" in hint


# ------------------------------------------------------------- 10. hints per exercise
def test_probe_ldm_32_is_told_ldm_16():
    src = variant("fragment_probe", "wmma::load_matrix_sync(f, M, 16);", "wmma::load_matrix_sync(f, M, 32);")
    v, item = first_fail("fragment-probe", src)
    assert item.kind == "out-of-bounds", v.text()
    assert "M is 16x16, so ldm is 16" in item.hint and "A or B" not in item.hint


def test_nan_with_shared_memory_suspects_the_barrier_first():
    src = variant("sgemm_tiled", "float acc = 0.0f;", "float acc = __int_as_float(0x7fc00000);")
    v, item = first_fail("sgemm-tiled", src)
    assert item.kind == "nan", v.text()
    assert "__syncthreads()" in item.hint and "accumulator" in item.hint
    assert item.hint.index("__syncthreads()") < item.hint.index("accumulator")


def test_nan_without_shared_memory_does_not_mention_barriers():
    src = variant("sgemm_naive", "float acc = 0.0f;", "float acc = __int_as_float(0x7fc00000);")
    v, item = first_fail("sgemm-naive", src)
    assert item.kind == "nan" and "__syncthreads" not in item.hint, v.text()


def test_shared_nan_hint_names_the_pipeline_wait_for_cp_async():
    from grader.checking.hints import shared_nan

    hint = shared_nan(kernels.source("wmma_gemm_swizzle"))
    assert "__pipeline_wait_prior" in hint and "__syncthreads()" in hint
    assert shared_nan(kernels.source("sgemm_naive")) == ""


def test_accumulator_store_without_layout_asks_for_mem_row_major():
    src = variant("dmma_gemm_naive", ", N, wmma::mem_row_major);", ", N);")
    v, item = first_fail("dmma-gemm", src)
    assert item.kind == "compile-error", v.text()
    assert "wmma::mem_row_major" in item.hint and "4th argument" in item.hint
    assert "matrix_a/matrix_b need a layout" not in item.hint


@pytest.mark.parametrize("launch, param, flag, said", [
    (dict(block_m=96), "block_m=96", "-DBLOCK_M=96", '"warp tiles fill the block"'),
    (dict(threads=256), "threads=256", "-DTHREADS=256", '"THREADS = 32 * warps per block"'),
])
def test_static_assert_from_a_launch_parameter_names_it(launch, param, flag, said):
    src = kernels.source("wmma_gemm_swizzle")
    v = check("wmma-gemm-fast", src, backend="emu", **launch)
    item = v.items[0]
    assert item.kind == "compile-error", v.text()
    line = item.where["line"]
    assert f"Your launch parameter {param} reaches the kernel as {flag}; the static_assert on line {line} " \
           f"says what it must satisfy: {said}" in item.hint, item.hint


def test_ascii_error_map_legend_explains_every_character():
    from grader.checking.verdict import _ascii_map

    rows = _ascii_map(np.array([[0.0, 0.1, 0.3, 0.5], [0.7, 0.9, 1.0, 0.0]]), (16, 16))
    assert rows[1:] == [".:-=", "+*#."]
    for ch in ".:-=+*#":
        assert f"'{ch}'" in rows[0], rows[0]


# --------------------------------------------------------- 11. fragment-probe in its terms
def test_probe_runs_once_and_speaks_of_lanes():
    v = check("fragment-probe", kernels.source("fragment_probe"), backend="emu")
    correct = [i for i in v.items if i.name.startswith("correct")]
    assert len(correct) == 1 and "random input" not in correct[0].name, v.text()
    assert v.passed and "float64" not in v.text() and "lane" in correct[0].message


def test_probe_failure_says_lane_slot_and_element():
    src = variant("fragment_probe", "held[threadIdx.x * f.num_elements + i]", "held[i * 32 + threadIdx.x]")
    v, item = first_fail("fragment-probe", src)
    assert "lane 0, x[1] should hold element (0, 1) (value 1); you wrote 2 = element (0, 2)" in item.message, \
        v.text()
    text = v.text()
    for gemm_word in ("tile", "random input", "float64", "error map"):
        assert gemm_word not in text, text
    assert item.error_map is None


# -------------------------------------------------------------- 12. unknown launch keys
def test_unknown_launch_key_is_a_verdict_listing_the_accepted_ones():
    v = check("wmma-gemm-fast", kernels.source("wmma_gemm_swizzle"), backend="emu", stages=4)
    (item,) = failures(v)
    assert item.kind == "launch-parameter" and "stages" in item.message
    for key in ("block_m", "block_n", "block_k", "threads", "shared_mem"):
        assert key in item.message
    assert "#define STAGES 4" in item.hint
    assert v.score == 0 and not v.passed
    json.loads(v.to_json())


def test_unfilled_parts_are_named_by_cell_line(monkeypatch):
    src = notebook_stub("06", "SRC_FAST")
    fake_notebook(monkeypatch, kernel_cell(src, "SRC_FAST"), "LAUNCH = {}", 'check("wmma-gemm-fast", SRC_FAST)')
    v = check("wmma-gemm-fast", src, backend="emu")
    (item,) = failures(v)
    lines = [i for i, l in enumerate(src.splitlines(), 1) if "// YOUR CODE HERE" in l]
    assert item.message == (f"the parts marked YOUR CODE HERE (load_tile at line {lines[0] + 1}, the main loop "
                            f"at line {lines[1] + 1} of the cell that defines SRC_FAST) are still empty")
    assert [s["line"] for s in item.where["stubs"]] == lines


def test_a_read_past_the_filters_is_told_about_w_and_the_grid_axes():
    """conv2d-wmma with its grid axes swapped reads w past its last output channel (n0 = blockIdx.y * BLOCK_N
    runs past K): the hint named only x and its padding."""
    from grader.checking import exercises

    ex = exercises.get("conv2d-wmma")
    m = next(m for m in ex.mistakes if m.name == "conv_grid_axes_swapped")
    v, item = first_fail(ex.id, variant(ex.reference, m.old, m.new))
    assert item.kind == "out-of-bounds" and "'w'" in item.message, v.text()
    assert "w is read only for output channels below K" in item.hint and "blockIdx.x" in item.hint, item.hint


def test_on_a_gpu_elements_never_written_are_named_before_a_change_between_runs():
    """The GPU's evidence for conv-grid-axes-swapped (acceptance at 9d53201): whole tiles never written,
    and the written ones changed between two runs (the missed grid reads past its inputs). That is a
    launch bug, not a missing __syncthreads(): the verdict says which elements were never written."""
    from grader.checking import exercises
    from grader.checking.judge import judge_case
    from grader.problems.kinds import poisoned

    ex = exercises.get("sgemm-tiled")
    case = ex.problem.make(dict(M=64, N=96, K=8), np.random.default_rng(0), dict(ex.launch_defaults))
    out = poisoned(case.expected[2].ref.shape, np.float32)
    out[:32, :64] = case.expected[2].ref[:32, :64] + 1.0  # a top-left block of tiles, written wrong
    res = dict(bands={}, changed_inputs=[], nondeterministic=[2], outputs={2: out})
    item = judge_case(ex, case, res)
    assert item.kind == "unwritten" and "never written" in item.message, item
    written = dict(res, outputs={2: case.expected[2].ref.astype(np.float32) + 1.0})
    assert judge_case(ex, case, written).kind == "race"  # every element written: a race it is
