"""An exercise is one record (issue 34): every per-exercise fact lives in its entry of
grader/checking/exercises.py, every consumer iterates the registry, and no other module of
grader/ names an exercise id.

The rule for "names an exercise id": a string constant (anywhere in the module's code, not in
comments) equal to an id. Two ids are also kernel names ("transpose" and "im2col" are entry
points and kernels/*.cu files: mod.bind("transpose", ...) names the kernel) and one is a speed
baseline's ("sgemm-naive", grader.problems.baselines); such a shared name is flagged only where
the code uses it as an exercise id: passed to check()/grade()/exercises.get() or a function named
for exercises, as an exercise= argument, as a key of EXERCISES, compared with something called an
id or an exercise, or in a collection at the place of an id no kernel shares (a dict keyed by
exercise, a list of (exercise, source) pairs).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from grader.checking import exercises, hints
from grader.coach import findings

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "grader"
REGISTRY = PKG / "checking" / "exercises.py"
IDS = set(exercises.EXERCISES)


def _other_names() -> set[str]:
    """Names that are also something other than an exercise: kernel entry points, kernel files,
    speed baselines."""
    from grader.problems import baselines

    names = {e.kernel for e in exercises.EXERCISES.values()} | set(baselines.NAMES)
    for cu in (ROOT / "kernels").glob("*.cu"):
        names.add(cu.stem)
        names |= set(re.findall(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(",
                                cu.read_text()))
    return names


OTHER = _other_names()
TAKES_AN_ID = {"check", "grade"}  # functions whose first argument is an exercise id


def _says_exercise(node: ast.AST) -> bool:
    """An expression named as an exercise or an id (ex.id, exercise_id, exercise, ...)."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "exercise" in name.lower() or name == "id" or name.endswith("_id")


def _id_positions(tree: ast.AST) -> set[int]:
    """id()s of the string constants the code uses as an exercise id."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if node.args and (fname in TAKES_AN_ID or "exercise" in fname.lower()
                              or (fname == "get" and isinstance(f, ast.Attribute)
                                  and isinstance(f.value, ast.Name) and f.value.id == "exercises")):
                out.add(id(node.args[0]))
            if fname == "startswith" and isinstance(f, ast.Attribute) and _says_exercise(f.value):
                out |= {id(a) for a in node.args}
            out |= {id(k.value) for k in node.keywords if k.arg and "exercise" in k.arg}
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "EXERCISES":
            out.add(id(node.slice))
        elif isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
            # a collection that holds an id no kernel shares holds ids: its siblings of the same
            # place are ids too (a dict keyed by exercise, a list of (exercise, source) pairs)
            groups = [node.keys, node.values] if isinstance(node, ast.Dict) else [node.elts]
            for elts in groups:
                for at in [None, *range(max((len(e.elts) for e in elts if isinstance(e, ast.Tuple)), default=0))]:
                    col = [e if at is None else e.elts[at] if isinstance(e, ast.Tuple) and at < len(e.elts) else None
                           for e in elts]
                    col = [c for c in col if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                    if any(c.value in IDS and c.value not in OTHER for c in col):
                        out |= {id(c) for c in col}
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_says_exercise(s) for s in sides):
                for s in sides:
                    out |= {id(e) for e in ast.walk(s)}
    return out


def exercise_ids_in(text: str) -> list[tuple[int, str]]:
    """(line, id) of every exercise id the module's code names."""
    tree = ast.parse(text)
    as_id = _id_positions(tree)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in IDS
            and (n.value not in OTHER or id(n) in as_id)]


def test_the_rule_flags_ids_and_spares_kernel_names():
    """The scan itself: a shared name is a kernel's until the code treats it as an exercise."""
    flagged = exercise_ids_in('''
a = check("transpose", src)
b = exercise_id.startswith("transpose")
c = exercises.get("im2col")
d = "wmma-gemm-fast"
e = ex.id == "transpose"
f = Verdict(exercise="im2col")
g = EXERCISES["sgemm-naive"]
h = _exercise_item("im2col")
i = {"transpose": 1, "wmma-gemm": 2}
j = {"a": ("wmma-gemm", s), "b": ("transpose", t)}
''')
    assert sorted(line for line, _ in flagged) == [2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 11, 11], flagged
    assert exercise_ids_in('''
mod.bind("transpose", grid, block, args)
m = _module("im2col")
p = dict(kernel="im2col")
if kind == "sgemm-naive": pass
if family(ex) == "transpose": pass
k = {"transpose": 1, "im2col": 2}
l = [("transpose", "### Transpose"), ("im2col", "### im2col")]
''') == []


def test_no_module_outside_the_registry_names_an_exercise():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path == REGISTRY:
            continue
        for line, ex_id in exercise_ids_in(path.read_text()):
            found.append(f"{path.relative_to(ROOT)}:{line}: '{ex_id}'")
    assert not found, ("exercise ids named outside grader/checking/exercises.py (put the fact in the "
                       "exercise's record, or take the id from the registry by a property):\n" + "\n".join(found))


# ------------------------------------------------------------------ what the consumers need


@pytest.mark.parametrize("ex", exercises.EXERCISES.values(), ids=lambda e: e.id)
def test_every_record_has_what_its_consumers_read(ex):
    from grader.bench import ladders
    from grader.problems import baselines
    from grader.runtime import kernels

    assert ex.hint_family in hints.FAMILIES, f"{ex.id}: hint_family must be one of {hints.FAMILIES}"
    for key, (nb, sec) in ex.coach_sections.items():
        assert key in findings.DEFAULT, f"{ex.id}: the coach has no finding '{key}'"
        assert sec in findings.SECTIONS.get(nb, {}), f"{ex.id}: notebook {nb} has no coach section '{sec}'"
    assert kernels.source(ex.reference)
    if ex.target is not None:  # speed-graded: the feedback's hint and the calibration's previous kernel
        assert ex.perf_size and ex.floor is not None and ex.points_speed > 0, ex.id
        assert ex.slow_hint, f"{ex.id} is speed-graded: its record needs a slow_hint"
        assert getattr(ex.problem, "baseline", None) in baselines.NAMES, (
            f"{ex.id} is speed-graded: its problem needs a baseline, one of {sorted(baselines.NAMES)}")
        assert bool(ex.previous) != bool(ex.no_previous), (
            f"{ex.id} is speed-graded: its record names the previous lesson's kernel (previous) or says "
            "why there is none (no_previous)")
    else:
        assert not (ex.slow_hint or ex.previous or ex.no_previous), f"{ex.id} is not timed"
    if ex.previous:
        assert kernels.source(ex.previous)
    if ex.ladder:
        assert ex.ladder in ladders.LADDERS, f"{ex.id}: no ladder '{ex.ladder}' in grader.bench.ladders"
        assert exercises.graded_ladder(ex.ladder) is ex, f"ladder '{ex.ladder}' is graded as two exercises"
    for dims in ex.crosscheck_sizes:
        assert set(dims) == set(ex.cpu_sizes[0]), f"{ex.id}: a crosscheck size names other dimensions"


# A GEMM-like exercise: every output element sums over a K axis, tiled over a 2D grid of blocks.
GEMM_LIKE = [e for e in exercises.EXERCISES.values() if e.problem.summed(e.cpu_sizes[0]) is not None]


@pytest.mark.parametrize("sizes", ["cpu_sizes", "gpu_sizes"])
@pytest.mark.parametrize("ex", GEMM_LIKE, ids=lambda e: e.id)
def test_gemm_like_sizes_launch_three_blocks_along_each_axis(ex, sizes):
    """With one or two blocks along an axis, a kernel whose block tiles overlap (m0 = (blockIdx.y + warp)
    * 16) still covers C, and a square grid hides grid axes swapped: both earned the correctness point on
    the emulator (fp8-gemm, sgemm-tiled, mma-gemm, conv2d-wmma). The grids come from the record's own
    launch (its problem's launch rule at the reference's launch keywords). A GPU's sizes too: with conv2d-wmma's
    one block column there, swapped axes failed as "a race" instead of as tiles never written."""
    grids = [ex.problem.make(d, np.random.default_rng(0), dict(ex.launch_defaults), reference=False).grid
             for d in getattr(ex, sizes)]
    for axis in (0, 1):
        assert max(g[axis] for g in grids) >= 3, (
            f"{ex.id}: no size of {sizes} launches three blocks along grid axis {'xy'[axis]} (grids {grids})")
    assert any(g[0] != g[1] for g in grids), f"{ex.id}: every grid of {sizes} is square (grids {grids})"


def test_every_ladder_grades_one_exercise():
    from grader.bench import ladders

    for name in ladders.LADDERS:
        assert exercises.graded_ladder(name).ladder == name


@pytest.mark.parametrize("ex", [e for e in exercises.EXERCISES.values() if e.mistakes], ids=lambda e: e.id)
def test_every_mistake_applies(ex):
    """Each mistake's edit applies exactly once to the reference kernel; a whole-file one exists."""
    from grader.runtime import kernels

    from adversarial.cases import edit_of

    src = kernels.source(ex.reference)
    for m in ex.mistakes:
        assert m.expect and m.why, m.name
        old = m.old or (edit_of(m.name) or ("",))[0]
        if old:
            assert src.count(old) == 1, f"{ex.id}/{m.name}: the edit no longer applies once to {ex.reference}"
        else:
            assert (ROOT / "tests" / "adversarial" / f"{m.name}.cu").is_file(), m.name


def test_every_adversarial_file_is_a_records_mistake():
    """Each tests/adversarial/<name>.cu or .edit is a mistake of a record that quotes no edit itself."""
    unquoted = {m.name for e in exercises.EXERCISES.values() for m in e.mistakes if not m.old}
    files = [p.stem for p in (ROOT / "tests" / "adversarial").iterdir() if p.suffix in (".cu", ".edit")]
    assert sorted(files) == sorted(unquoted), f"tests/adversarial: files no record lists, or two for one mistake: {files}"


def test_consumers_iterate_the_registry():
    """The crosscheck runs every exercise's reference at its sizes, the adversarial suite is every
    record's mistakes, the calibration every speed-graded record's previous kernel."""
    from grader.bench import calibrate, crosscheck

    sys.path.insert(0, str(ROOT / "tests"))
    from adversarial.cases import CASES

    items = {i.name: i for i in crosscheck.ITEMS}
    for ex in exercises.EXERCISES.values():
        item = items.get(f"{ex.reference} (exercise {ex.id})")
        assert item is not None, f"the crosscheck misses {ex.id}"
        assert len(item.cases(np.random.default_rng(0))) == len(ex.cpu_sizes) + len(ex.crosscheck_sizes)
    assert sorted((b.exercise, b.name) for b in CASES) == sorted(
        (e.id, m.name) for e in exercises.EXERCISES.values() for m in e.mistakes)
    assert set(calibrate.PREVIOUS) == {e.id for e in exercises.EXERCISES.values() if e.previous}


def test_every_coach_panel_is_told_where_its_exercise_is_taught():
    """panel.build's findings point to the record's notebook sections only if the caller passes them."""
    missing = set()
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "build"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "panel"
                    and not any(k.arg == "sections" for k in node.keywords)):
                missing.add(str(path.relative_to(ROOT)))
    assert not missing, f"panel.build without sections=ex.coach_sections: {missing}"


def test_every_exercise_is_graded_by_one_notebook_cell():
    """The registry and the solution notebooks' grade() cells name the same exercises, each once:
    a record without its notebook block, or a block without its record, fails here saying which
    part of the recipe (CONTRIBUTING.md, "A graded exercise") is missing."""
    from grader.classroom import graded_cells, notebook_file, notebooks

    cells: dict[str, list[str]] = {}
    for path in notebooks.sources():
        for c in notebook_file.read(path).cells:
            if graded_cells.is_test(c):
                where = f"{path.relative_to(ROOT)} (cell {c.metadata['nbgrader']['grade_id']})"
                for ex_id, _var in graded_cells.grade_calls(c.source):
                    cells.setdefault(ex_id, []).append(where)
    unknown = [f"{where}: grade(\"{ex_id}\", ...) names no exercise: add its Exercise(...) to "
               "grader/checking/exercises.py" for ex_id in sorted(set(cells) - IDS) for where in cells[ex_id]]
    ungraded = [f"{ex_id}: no solution notebook grades it: add its block to solutions/<NN-topic>/ (a `# kernel:` "
                f"cell, check(\"{ex_id}\", SRC), a locked test cell grade(\"{ex_id}\", SRC, points=P)), then run "
                "python -m grader.classroom.notebooks sync" for ex_id in sorted(IDS - set(cells))]
    twice = [f"{ex_id} is graded twice: {', '.join(where)}" for ex_id, where in sorted(cells.items()) if len(where) > 1]
    assert not (unknown or ungraded or twice), "\n".join(unknown + ungraded + twice)


@pytest.mark.parametrize("ex", [e for e in exercises.EXERCISES.values() if e.tensor_shapes], ids=lambda e: e.id)
def test_gpu_sizes_reach_every_k_tail_the_cpu_sizes_reach(ex):
    """A mistake in a partial last k-step shows only at a K whose tail reaches it (fp8-gemm's dropped
    upper half needs K % 32 > 16): the GPU grades what the emulator's sizes were chosen to catch, so
    its sizes hold every tail class the CPU's do, counted in the exercise's own mma k."""
    missing = {_k_tail(ex, s) for s in ex.cpu_sizes} - {_k_tail(ex, s) for s in ex.gpu_sizes}
    assert not missing, f"{ex.id}: no GPU size has a last k-step {missing} (k = {ex.tensor_shapes[0][2]})"


def _k_tail(ex, dims) -> str:
    """The class of K's last k-step, in the exercise's own mma k: none, within the lower half or into the
    upper half; and for a partial one whether K is a whole number of 32-bit words of inputs (every row then
    starts word-aligned, so a kernel may take a word-load path there, whose own K guard only such a K tests)."""
    k = ex.tensor_shapes[0][2]
    r = dims["K"] % k
    if r == 0:
        return "none"
    words = "K a whole number of words" if dims["K"] % _per_word(ex) == 0 else "K not a whole number of words"
    return f"{'within the lower half' if r <= k // 2 else 'into the upper half'}, {words}"


def _per_word(ex) -> int:
    """Input elements a 32-bit register holds (4 e4m3 codes, 2 halves)."""
    return 4 // np.dtype(getattr(ex.problem, "in_dtype", "float16")).itemsize


# exercises whose sizes take any K: some CPU size ends in a partial k-step
ANY_K = [e for e in exercises.EXERCISES.values()
         if e.tensor_shapes and any(s["K"] % e.tensor_shapes[0][2] for s in e.cpu_sizes)]


@pytest.mark.parametrize("ex", ANY_K, ids=lambda e: e.id)
def test_any_k_sizes_hold_a_full_last_step_and_a_partial_one_with_and_without_whole_words(ex):
    """A word (or wider) load of inputs is legal only where a row starts aligned; a kernel that takes it
    wherever K is a whole number of words and forgets that path's K guard reads past K only at such a K with
    a partial last k-step (fp8-gemm: K = 96 is a whole k-step, 59 is no multiple of 4: it earned the point on
    both backends). So the CPU's sizes hold a K with no tail, one with a tail and odd words, one with a tail
    and whole words; the GPU's the same (test above)."""
    have = {_k_tail(ex, s).split(", ")[-1] for s in ex.cpu_sizes}
    assert {"none", "K a whole number of words", "K not a whole number of words"} <= have, (
        f"{ex.id}: the CPU sizes' last k-steps are {sorted(have)}")


GEMM_ANY_N = [e for e in GEMM_LIKE if {"M", "N", "K"} <= set(e.cpu_sizes[0]) and any(s["N"] % 8 for s in e.cpu_sizes)]


@pytest.mark.parametrize("sizes", ["cpu_sizes", "gpu_sizes"])
@pytest.mark.parametrize("ex", GEMM_ANY_N, ids=lambda e: e.id)
def test_any_n_sizes_hold_an_odd_n(ex, sizes):
    """C's elements in pairs (a float2 store, or c[0], c[1] guarded by the first column only) are right
    wherever N is even: rows then start 8-byte aligned and a pair never straddles N. fp8-gemm's CPU sizes
    (N = 20, 60) gave both the point; an exercise that takes any N grades an odd one on each backend."""
    assert any(s["N"] % 2 for s in getattr(ex, sizes)), f"{ex.id}: every N of {sizes} is even"
