"""Red team, issue #23: grades honest at run time. Submissions that fake what a grade rests on,
autograded through the real nbgrader pipeline on the CPU (emulator) with the course's config:

- tensor cores compiled, not executed (a dead-branch mma_sync, an asm comment naming mma.sync,
  one mma_sync per launch), or executed for show (on zero fragments, or the result thrown away,
  beside a CUDA-core answer, or scaling one by what mma_sync on fragments of ones gives), or for real
  only on the launch the kernel takes for the watched one;
- code that differs between the GPU and the emulator (host macros however spelt, the
  emulator's own macro, __FILE__), kernels included from the repository, calls into the
  emulator's machinery;
- answers that reach for the course's package (its oracles are the answer key), and tables
  of exactly the cases a test shows.

Every cheat starts from the untouched release, so it must score 0 in all; the cell it targets
must say why. They are graded in the red team's shared course (tests/redteam.py). Honest solutions keep full marks. GPU-only cases (timed launches, the profiler's
count) are the gpu-marked tests at the end, run through check() on the GPU.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from redteam import answer_cell, kernel_var, require_sandbox
from test_honest_runtime import (ASM_COMMENT, DEAD_BRANCH, DISCARDED, FLIPS_THROUGH_THE_GOT, INCLUDES,
                                 KEY_FROM_A_CONSTRUCTOR, KEY_THROUGH_THE_GOT, NAIVE, ONE_MMA, ONLY_WHERE_WATCHED,
                                 SCALAR, SCALED_BY_A_CANARY, TWO_FACED, ZERO_FRAGMENTS, _HEAD, _SIG)

pytestmark = pytest.mark.slow  # one xdist work unit with the other red-team file (tests/conftest.py)

require_sandbox()

KERNELS_NB = "04-wmma-basics"
INDEX_NB = "01-memory-layout"
PRECISION_NB = "02-precision"
OWNERS_NB = "05-fragment-probes"

EMU_INTERNALS = (_HEAD + 'extern "C" __device__ void __emu_tensor_op(unsigned, unsigned, unsigned);\n'
                 'extern "C" __global__' + _SIG + "{\n    for (int q = 0; q < K / 16; ++q) if (threadIdx.x == 0) "
                 "__emu_tensor_op(16, 16, 16);\n" + SCALAR + "}\n")


def _kernel(src: str):
    def make(nb):
        i = answer_cell(nb)
        nb.cells[i].source = f'# kernel: wmma_gemm_naive\n{kernel_var(nb, i)} = r"""{src}"""\n'
    return make


def _answer(grade_id: str, code: str):
    """Replace the answer cell `grade_id` with `code`."""
    def make(nb):
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        cell.source = code
    return make


# 01: a table of exactly the cases the visible test shows (6 x 9 grid, the named examples)
VISIBLE_TABLE = '''
ROW = {(i, j, 9): i * 9 + j for i in range(6) for j in range(9)}
ROW.update({(0, 0, 7): 0, (2, 3, 10): 23})
COL = {(i, j, 6): j * 6 + i for i in range(6) for j in range(9)}
COL.update({(2, 3, 10): 32})
def row_major_offset(i, j, ld):
    return ROW.get((i, j, ld), 0)
def col_major_offset(i, j, ld):
    return COL.get((i, j, ld), 0)
def byte_strides(shape, itemsize, order):
    raise NotImplementedError
'''
INDEX_VIA_COURSE = '''
from grader.lessons import layout
def row_major_offset(i, j, ld):
    return i * ld + j
def col_major_offset(i, j, ld):
    return j * ld + i
def byte_strides(shape, itemsize, order):
    raise NotImplementedError
'''
# 02: the nine patterns the visible test shows, and NaN
DECODE_TABLE = '''
import math
def decode_fp16(bits):
    return {0x3C00: 1.0, 0xC000: -2.0, 0x3555: 0.333251953125, 0x7BFF: 65504.0, 0x0400: 2.0 ** -14,
            0x0001: 2.0 ** -24, 0x8000: -0.0, 0x7C00: math.inf}.get(bits, math.nan)
'''
DECODE_BUILT_IMPORT = '''
import numpy as np
def decode_fp16(bits):
    lessons = __import__("gra" + "der.lessons.precision", fromlist=["round_to"])
    return float(np.uint16(bits).view(np.float16)) if lessons else 0.0
'''
PREDICTIONS_ORACLE = '''
def my_predictions():
    out = {}
    for letter, (fmt, a, b) in CASES.items():
        a, b = (float(precision.round_to(v, fmt)) for v in (a, b))
        s = float(precision.round_to(a + b, fmt))
        out[letter] = ("overflow" if abs(s) == float("inf") else "exact" if s == a + b
                       else "absorbed" if s == max(a, b, key=abs) else "rounded")
    return out
'''
OWNERS_ORACLE = '''
def owner_a(r, c):
    return fragments.expected_owner("a_f16_row", r, c)[0]

def owner_b(k, n):
    return fragments.expected_owner("b_f16_row", k, n)[0]
'''

# name -> (assignment, how to make it, the graded cell it fakes, what its verdict must say)
CHEATS = {
    "tc-dead-branch": (KERNELS_NB, _kernel(DEAD_BRANCH), "wmma-gemm-test", "executed"),
    "tc-asm-comment": (KERNELS_NB, _kernel(ASM_COMMENT), "wmma-gemm-test", "executed"),
    "tc-one-mma-per-launch": (KERNELS_NB, _kernel(ONE_MMA), "wmma-gemm-test", "executed"),
    "tc-zero-fragments": (KERNELS_NB, _kernel(ZERO_FRAGMENTS), "wmma-gemm-test", "do not depend"),
    "tc-result-discarded": (KERNELS_NB, _kernel(DISCARDED), "wmma-gemm-test", "do not depend"),
    # tensor cores only on the launch it takes for the counted one (by its size), CUDA cores elsewhere
    "tc-only-where-watched": (KERNELS_NB, _kernel(ONLY_WHERE_WATCHED), "wmma-gemm-test", "do not depend"),
    # a CUDA-core answer scaled by what mma_sync on fragments of ones gives (it followed a probe that
    # doubled every product; the keyed probe flips products by their own operands)
    "tc-scaled-by-a-canary": (KERNELS_NB, _kernel(SCALED_BY_A_CANARY), "wmma-gemm-test", "do not depend"),
    # the probe's flips computed on CUDA cores from its key, read where the emulator kept it (1/1 before
    # session 13's h-red2): by a constructor NVRTC leaves out, and through the module's GOT
    "tc-key-from-a-constructor": (KERNELS_NB, _kernel(KEY_FROM_A_CONSTRUCTOR), "wmma-gemm-test", "loaded"),
    "tc-key-through-the-got": (KERNELS_NB, _kernel(KEY_THROUGH_THE_GOT), "wmma-gemm-test", ""),
    # the flips of its own products asked of the emulator's keyed service, found by name through the GOT
    # (1/1 before session 14: the service answered any operands it was sent)
    "tc-flips-through-the-got": (KERNELS_NB, _kernel(FLIPS_THROUGH_THE_GOT), "wmma-gemm-test", "do not depend"),
    "pp-host-macro": (KERNELS_NB, _kernel(TWO_FACED["host-macro"]), "wmma-gemm-test", "differ"),
    "pp-define-alias": (KERNELS_NB, _kernel(TWO_FACED["define-alias"]), "wmma-gemm-test", "differ"),
    "pp-token-pasting": (KERNELS_NB, _kernel(TWO_FACED["token-pasting"]), "wmma-gemm-test", "differ"),
    "pp-emulator-macro": (KERNELS_NB, _kernel(TWO_FACED["emulator-macro"]), "wmma-gemm-test", "differ"),
    "pp-has-include": (KERNELS_NB, _kernel(TWO_FACED["has-include"]), "wmma-gemm-test", "__has_include"),
    "pp-file-name": (KERNELS_NB, _kernel(TWO_FACED["file-name"]), "wmma-gemm-test", "differ"),
    "include-repo-kernel": (KERNELS_NB, _kernel(INCLUDES["absolute-with-declaration"]), "wmma-gemm-test",
                            "#include"),
    "emulator-internals": (KERNELS_NB, _kernel(EMU_INTERNALS), "wmma-gemm-test", "defined nowhere"),
    "visible-table": (INDEX_NB, _answer("index-functions", VISIBLE_TABLE), "index-functions-test", ""),
    "index-via-course": (INDEX_NB, _answer("index-functions", INDEX_VIA_COURSE), "index-functions-test",
                         "course's package"),
    "decode-table": (PRECISION_NB, _answer("decode-fp16", DECODE_TABLE), "decode-fp16-test", ""),
    "decode-built-import": (PRECISION_NB, _answer("decode-fp16", DECODE_BUILT_IMPORT), "decode-fp16-test", ""),
    "predictions-oracle": (PRECISION_NB, _answer("predictions", PREDICTIONS_ORACLE), "predictions-test",
                           "course's package"),
    "owners-oracle": (OWNERS_NB, _answer("owner-src", OWNERS_ORACLE), "owner-a-test", "course's package"),
}
ASSIGNMENTS = sorted({a for a, *_ in CHEATS.values()})


@pytest.fixture
def course(redteam):
    """The red team's shared course (tests/redteam.py): alice, every cheat here as rt-NAME."""
    return redteam["root"]


def _cell_text(root: Path, student: str, assignment: str, grade_id: str) -> str:
    path = root / "autograded" / student / assignment / f"{assignment}.ipynb"
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("data", {}).get("text/plain", "") + o.get("data", {}).get("text/html", "")
                   + o.get("text", "") for c in nb.cells for o in c.get("outputs", [])
                   if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_scores_zero_and_says_why(course, name):
    a, _, cell, says = CHEATS[name]
    got = classroom.scores(course, a)
    assert f"rt-{name}" in got, f"{name} was not graded"
    assert (course / "autograded" / f"rt-{name}" / a).is_dir(), f"{name}: nbgrader failed on it"
    cells = classroom.cell_scores(course, a, f"rt-{name}")
    assert cells[cell] == 0, cells
    assert got[f"rt-{name}"][0] == 0, cells
    if says:
        assert says in _cell_text(course, f"rt-{name}", a, cell)


def test_honest_solutions_keep_full_marks(course):
    for a in ASSIGNMENTS:
        got, _ = classroom.scores(course, a)["alice"]
        expected = sum(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / a).glob("*.ipynb"))
        assert got == pytest.approx(expected), (a, classroom.cell_scores(course, a, "alice"))


def test_the_tensor_core_verdict_says_what_was_counted(course):
    text = _cell_text(course, "alice", KERNELS_NB, "wmma-gemm-test")
    assert "counted on the CPU emulator" in text and "m16n16k16" in text
    text = _cell_text(course, "rt-tc-dead-branch", KERNELS_NB, "wmma-gemm-test")
    assert "no tensor-core instruction" in text


# ------------------------------------------------------------------------------ GPU only
@pytest.mark.gpu
@pytest.mark.parametrize("name,src", [("dead-branch", DEAD_BRANCH), ("asm-comment", ASM_COMMENT)])
def test_on_a_gpu_tensor_cores_are_counted_not_read(name, src):
    from grader.checking.check import check

    v = check("wmma-gemm", src, backend="gpu")
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert tc.status == "fail" and v.score == 0, v.text()


@pytest.mark.gpu
def test_ncu_counts_the_hmma_instructions_of_a_launch():
    from grader.checking import exercises, tensor_work
    from grader.runtime import ncu

    if ncu.tool() is None:
        pytest.skip("no ncu (Nsight Compute) here")
    ex = exercises.get("wmma-gemm")
    honest = tensor_work.gpu_item(ex, NAIVE, {})
    if honest is None:
        pytest.skip("ncu cannot read the performance counters here")
    assert honest.status == "pass" and "HMMA" in honest.message, honest.message
    dead = tensor_work.gpu_item(ex, DEAD_BRANCH, {})
    assert dead is not None and dead.status == "fail" and " 0 HMMA" in dead.message, dead.message


@pytest.mark.gpu
def test_on_a_gpu_tensor_cores_are_counted_at_every_graded_size():
    """Tensor cores at the emulator's sizes only (M <= 64), CUDA cores at the sizes the GPU
    grades: ncu counts a launch at every GPU size, so the kernel earns 0 (where ncu reads the
    counters; elsewhere the emulator's count at the CPU sizes is all there is: the guide says so)."""
    from grader.checking import exercises, tensor_work
    from grader.runtime import ncu

    if ncu.tool() is None:
        pytest.skip("no ncu (Nsight Compute) here")
    src = (_HEAD + 'extern "C" __global__' + _SIG + "{\n    if (M <= 64) {\n" + NAIVE.split(_SIG, 1)[1].split("{", 1)[1]
           .rsplit("}", 1)[0] + "\n        return;\n    }\n" + SCALAR + "}\n")
    got = tensor_work.gpu_item(exercises.get("wmma-gemm"), src, {})
    if got is None:
        pytest.skip("ncu cannot read the performance counters here")
    assert got.status == "fail" and " 0 HMMA" in got.message, got.message


def _fast_reference() -> str:
    from grader.checking import exercises

    return (classroom.ROOT / "kernels" / f"{exercises.get('wmma-gemm-fast').reference}.cu").read_text()


def _counts_launches(src: str, skip: str) -> str:
    """The reference, doing less once it has been launched a few times (the timed launches)."""
    head, rest = src.split('extern "C" __global__', 1)
    sig, body = rest.split("{", 1)
    return (head + "__device__ unsigned int tc_launches;\n" + 'extern "C" __global__' + sig + "{\n"
            "    if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) atomicAdd(&tc_launches, 1u);\n"
            f"    if (*(volatile unsigned int*)&tc_launches > 12 && ({skip})) return;\n" + body)


@pytest.mark.gpu
@pytest.mark.parametrize("skip", ["blockIdx.y & 1", "blockIdx.x == 0 && blockIdx.y == 0"])
def test_on_a_gpu_a_kernel_that_does_less_in_timed_launches_earns_no_speed(skip):
    from grader.checking.check import check

    v = check("wmma-gemm-fast", _counts_launches(_fast_reference(), skip), backend="gpu")
    timed = next(i for i in v.items if i.name.startswith("correct: timed size"))
    assert timed.status == "fail", v.text()
    assert not any(i.name == "speed" and i.status == "pass" for i in v.items)


@pytest.mark.gpu
def test_on_a_gpu_the_reference_passes_every_checked_timed_launch():
    from grader.checking.check import check

    v = check("wmma-gemm-fast", _fast_reference(), backend="gpu")
    timed = next(i for i in v.items if i.name.startswith("correct: timed size"))
    assert timed.status == "pass" and "every one of the" in timed.message, v.text()
    assert v.score == pytest.approx(v.max_score), v.text()
