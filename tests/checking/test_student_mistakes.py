"""Realistic student mistakes across notebooks 01-05, each checked on the CPU emulator: the FIRST
failed item's message and hint must name the actual mistake (issue 25, "hints that name the real
cause"), and never an identifier the student has not seen (the reference's own names). Every
correct variant passes.

Each mistake is one edit of a reference kernel (kernels/*.cu) or of a student-style kernel, the
way a student would make it; `names` is a regex the first failure must match."""
import re
import shutil
from pathlib import Path

import pytest

from grader.checking.check import check
from grader.checking.verdict import FAIL

if shutil.which("g++") is None:  # pragma: no cover
    pytest.skip("the CPU emulator needs g++", allow_module_level=True)

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
# names of the reference kernels a student never sees in the notebooks' templates or text
UNSEEN = ("orow", "oc <", "a_direct_ok", "rows_full", "c_tile", "k0 + tx")


def ref(name: str) -> str:
    return (KERNELS / f"{name}.cu").read_text()


def edit(src: str, *pairs: str) -> str:
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert old in src, old
        src = src.replace(old, new)
    return src


TRANSPOSE = ref("transpose_tiled")
NAIVE = ref("sgemm_naive")
TILED = ref("sgemm_tiled")
WMMA = ref("wmma_gemm_naive")
ANY = ref("wmma_gemm_any_size")
EPI = ref("wmma_gemm_epilogue")
PROBE = ref("fragment_probe")

# (id, exercise, source, launch, names: a regex the first failure's message + hint must match)
MISTAKES = [
    # --- 04: padding never zero-filled (the GPU's shared memory happened to hold zeros)
    ("pad-a-not-zeroed", "wmma-gemm-any-size",
     edit(ANY, "a_tile[e] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : __float2half(0.0f);",
          "if (gr < M && gc < K) a_tile[e] = A[(size_t)gr * K + gc];"), {}, r"write 0 where .*padding"),
    ("pad-b-not-zeroed", "wmma-gemm-any-size",
     edit(ANY, "b_tile[e] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : __float2half(0.0f);",
          "if (gr < K && gc < N) b_tile[e] = B[(size_t)gr * N + gc];"), {}, r"write 0 where .*padding"),
    ("pad-k-edge-not-zeroed", "wmma-gemm-any-size",
     edit(ANY, "a_tile[e] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : __float2half(0.0f);",
          "if (gr < M) { if (gc < K) a_tile[e] = A[(size_t)gr * K + gc]; } else a_tile[e] = __float2half(0.0f);"),
     {}, r"write 0 where .*padding"),
    # --- 04: full tiles loaded straight from global memory whatever K and N are (ldm = 31)
    ("ldm-31-direct", "wmma-gemm-any-size",
     edit(ANY, "const bool a_direct_ok = rows_full && (K % 8 == 0);", "const bool a_direct_ok = rows_full;"), {},
     r"ldm = 31.*multiple of 8"),
    ("ldn-unaligned-direct", "wmma-gemm-any-size",
     edit(ANY, "const bool b_direct_ok = cols_full && (N % 8 == 0);", "const bool b_direct_ok = cols_full;"), {},
     r"ldm = 33.*multiple of 8"),
    # --- 01: wrong leading dimension in an already guarded transpose
    ("transpose-store-ld-cols", "transpose",
     edit(TRANSPOSE, "out[(size_t)(orow + j) * rows + oc]", "out[(size_t)(orow + j) * cols + oc]"), {},
     r"leading dimension\) is rows"),
    ("transpose-load-ld-rows", "transpose",
     edit(TRANSPOSE, "in[(size_t)(r + j) * cols + c]", "in[(size_t)(r + j) * rows + c]"), {},
     r"leading dimension\) is cols"),
    ("transpose-store-unguarded", "transpose",
     edit(TRANSPOSE, "if (oc < rows && orow + j < cols)\n", "\n"), {}, r"guard of out's own shape"),
    # --- 01: a transpose that does not transpose inside the shared tile
    ("transpose-tile-read-untransposed", "transpose",
     edit(TRANSPOSE, "= tile[threadIdx.x][threadIdx.y + j];", "= tile[threadIdx.y + j][threadIdx.x];"), {},
     r"elements are not transposed.*two indices swapped|two indices swapped"),
    ("transpose-tile-written-transposed", "transpose",
     edit(TRANSPOSE, "tile[threadIdx.y + j][threadIdx.x] = in", "tile[threadIdx.x][threadIdx.y + j] = in"), {},
     r"elements are not transposed|two indices swapped"),
    # --- 03: no guard for the threads past the edge of C
    ("naive-no-guard", "sgemm-naive", edit(NAIVE, "if (row >= M || col >= N) return;", ""), {}, r"below M"),
    ("tiled-store-unguarded", "sgemm-tiled", edit(TILED, "if (row < M && col < N)\n        C[", "C["), {},
     r"below M"),
    # --- 03: an int accumulator
    ("naive-int-acc", "sgemm-naive", edit(NAIVE, "float acc = 0.0f;", "int acc = 0;"), {}, r"whole number.*int"),
    ("tiled-int-acc", "sgemm-tiled", edit(TILED, "float acc = 0.0f;", "int acc = 0;"), {}, r"whole number.*int"),
    ("naive-int-cast", "sgemm-naive", edit(NAIVE, "acc += A[row * K + k] * B[k * N + col];",
                                           "acc += (int)(A[row * K + k] * B[k * N + col]);"), {},
     r"whole number.*int"),
    # --- 04: `cond ? A[i] : 0` with half
    ("half-ternary-int-zero-a", "wmma-gemm-any-size",
     edit(ANY, "? A[(size_t)gr * K + gc] : __float2half(0.0f);", "? A[(size_t)gr * K + gc] : 0;"), {},
     r"__float2half\(0\.0f\)"),
    ("half-ternary-int-zero-b", "wmma-gemm-any-size",
     edit(ANY, "? B[(size_t)gr * N + gc] : __float2half(0.0f);", "? B[(size_t)gr * N + gc] : 0;"), {},
     r"__float2half\(0\.0f\)"),
    # --- 04 / 03: writing into a const input
    ("epilogue-store-into-C", "wmma-gemm-epilogue",
     edit(EPI, "wmma::store_matrix_sync(D +", "wmma::store_matrix_sync(C +"), {}, r"`const`.*output parameter"),
    ("naive-write-into-A", "sgemm-naive", edit(NAIVE, "C[row * N + col] = acc;", "C[row * N + col] = acc; A[0] = 0;"),
     {}, r"`A`.*`const`"),
    # --- 03: a #define of TILE that the launch parameter already sets
    ("tile-redefined-16", "sgemm-tiled", edit(TILED, "#ifndef TILE\n#define TILE 32\n#endif", "#define TILE 16"),
     dict(tile=32), r"#define TILE 16.*tile=32"),
    ("tile-undef-redefined", "sgemm-tiled", edit(TILED, "#ifndef TILE\n#define TILE 32\n#endif",
                                                 "#undef TILE\n#define TILE 8"), dict(tile=32), r"#define TILE 8"),
    ("tile-redefined-default", "sgemm-tiled", TILED.replace("#ifndef TILE\n#define TILE 32\n#endif", "#define TILE 32"),
     dict(tile=16), r"#define TILE 32.*tile=16"),
    # --- 04: notebook 03's grid convention (blockIdx.x along the columns) in notebook 04
    ("wmma-grid-03-style", "wmma-gemm",
     edit(WMMA, "int tile_row = blockIdx.x * 16;", "int tile_row = blockIdx.y * 16;",
          "int tile_col = blockIdx.y * 16;", "int tile_col = blockIdx.x * 16;",
          "if (tile_row >= M || tile_col >= N) return;", ""), {}, r"blockIdx.x runs along the rows"),
    ("wmma-grid-03-style-guarded", "wmma-gemm",
     edit(WMMA, "int tile_row = blockIdx.x * 16;", "int tile_row = blockIdx.y * 16;",
          "int tile_col = blockIdx.y * 16;", "int tile_col = blockIdx.x * 16;"), {},
     r"blockIdx.x and blockIdx.y swapped.*blockIdx.x along the rows"),
    # --- races and missing barriers, named as such
    ("tiled-no-second-sync", "sgemm-tiled",
     edit(TILED, "        __syncthreads();  // ... and read by everyone before the next tile overwrites it\n", ""),
     {}, r"__syncthreads\(\)"),
    ("any-size-no-syncwarp", "wmma-gemm-any-size",
     edit(ANY, "            __syncwarp();\n            wmma::load_matrix_sync(a, a_tile, 16);",
          "            wmma::load_matrix_sync(a, a_tile, 16);"), {}, r"__syncwarp\(\)"),
    ("transpose-no-sync", "transpose",
     edit(TRANSPOSE, "    __syncthreads();  // the whole tile", "    // the whole tile"), {}, r"__syncthreads\(\)"),
    # --- 04: accumulator never set, ldm of the tile instead of the matrix
    ("wmma-no-fill", "wmma-gemm", edit(WMMA, "wmma::fill_fragment(acc, 0.0f);", ""), {}, r"fill_fragment"),
    ("wmma-ldm-16", "wmma-gemm", edit(WMMA, "wmma::load_matrix_sync(a, A + tile_row * K + k, K);",
                                      "wmma::load_matrix_sync(a, A + tile_row * K + k, 16);"), {},
     r"ldm .*row length of the\s+whole matrix"),
    ("epilogue-swapped", "wmma-gemm-epilogue",
     edit(EPI, "alpha * acc.x[i] + beta * c.x[i]", "beta * acc.x[i] + alpha * c.x[i]"), {}, r"alpha and beta are swapped"),
    # --- 05: the probe written in the wrong order
    ("probe-slot-major", "fragment-probe",
     edit(PROBE, "held[threadIdx.x * f.num_elements + i]", "held[i * 32 + threadIdx.x]"), {},
     r"held\[lane \* 16 \+ i\]"),
]

CORRECT = [
    ("transpose", TRANSPOSE, {}),
    ("sgemm-naive", NAIVE, {}),
    ("sgemm-tiled", TILED, dict(tile=32)),
    ("sgemm-tiled", TILED, dict(tile=16)),
    ("wmma-gemm", WMMA, {}),
    ("wmma-gemm-any-size", ANY, {}),
    ("wmma-gemm-epilogue", EPI, {}),
    ("fragment-probe", PROBE, {}),
    # a student's any-size kernel whose padding is written by an else branch
    ("wmma-gemm-any-size", edit(ANY, "a_tile[e] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : __float2half(0.0f);",
                                "if (gr < M && gc < K) a_tile[e] = A[(size_t)gr * K + gc]; "
                                "else a_tile[e] = __float2half(0.0f);"), {}),
]


def first_failure(v):
    bad = [i for i in v.items if i.status == FAIL]
    assert bad, f"expected a failure:\n{v.text()}"
    return bad[0]


@pytest.mark.parametrize("mid,exercise,source,launch,names", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_first_hint_names_the_mistake(mid, exercise, source, launch, names):
    v = check(exercise, source, backend="emu", **launch)
    item = first_failure(v)
    said = f"{item.message}\n{item.hint}"
    assert re.search(names, said, re.S), f"{mid}: the first failure does not name the mistake:\n{v.text()}"
    hint = item.hint
    for unseen in UNSEEN:
        assert unseen not in hint, f"{mid}: the hint names `{unseen}`, which the student never saw:\n{hint}"


@pytest.mark.parametrize("exercise,source,launch", CORRECT, ids=[f"{c[0]}-{i}" for i, c in enumerate(CORRECT)])
def test_every_correct_variant_passes(exercise, source, launch):
    v = check(exercise, source, backend="emu", **launch)
    assert v.correct, v.text()


def test_enough_mistakes_per_notebook():
    """At least the classes of issue 25, several variants each, across notebooks 01-05."""
    per = {}
    for mid, exercise, *_ in MISTAKES:
        per[exercise] = per.get(exercise, 0) + 1
    assert per["transpose"] >= 5 and per["sgemm-naive"] + per["sgemm-tiled"] >= 6
    assert per["wmma-gemm"] + per["wmma-gemm-any-size"] + per["wmma-gemm-epilogue"] >= 12
    assert per["fragment-probe"] >= 1
    assert len(MISTAKES) >= 28


MMA_WORDS = {  # what the first failure of each of mma-gemm's recorded mistakes must say (an mma.sync student's terms)
    "mma_b_fragments_mixed": r"m16n8k16.*\.trans",
    "mma_rows_g8_not_stored": r"c\[2\], c\[3\] \(row g \+ 8\)",
    "mma_c_rows_swapped": r"c\[0\], c\[1\] row g, columns 2t",
}


@pytest.mark.parametrize("name", sorted(MMA_WORDS))
def test_an_mma_sync_mistake_is_told_in_mma_sync_terms(name):
    """mma-gemm's students write PTX mma.sync, ldmatrix and cp.async: the hint of their first failure
    names the m16n8k16 fragments, never WMMA's load_matrix_sync / store_matrix_sync (which it did
    before the exercise had a hint family of its own: h-fp8red's finding); and a kernel whose
    results are mostly wrong is not also told its tensor-core work does not reach them."""
    from grader.checking.exercises import get

    ex = get("mma-gemm")
    m = next(m for m in ex.mistakes if m.name == name)
    v = check("mma-gemm", ref(ex.reference).replace(m.old, m.new, 1), backend="emu", case_timeout=20)
    first = next(i for i in v.items if i.status == FAIL)
    said = f"{first.message}\n{first.hint}"
    assert first.kind in m.expect and re.search(MMA_WORDS[name], said, re.S), v.text()
    assert not re.search(r"matrix_sync|fill_fragment|\bldm\b", said), v.text()
    assert not [i for i in v.items if i.kind == "tensor-cores-unused"], v.text()
