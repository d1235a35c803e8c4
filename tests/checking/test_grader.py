"""The grader: every reference passes, every adversarial kernel gets its own diagnosis, and
one bad kernel never takes the next check down. Runs on the emulator here (CPU) and on
CuPy where a GPU exists (tests marked gpu)."""
import json
import subprocess
import sys

import pytest
from adversarial.cases import CASES

from grader.bench.calibrate import PREVIOUS, previous_source
from grader.checking import exercises
from grader.checking.check import check, grade
from grader.checking.verdict import FAIL, PASS, SKIP
from grader.runtime import kernels

ROOT = kernels.KERNELS_DIR.parent
IDS = list(exercises.EXERCISES)


def failure_kinds(v):
    return [i.kind for i in v.items if i.status == FAIL]


# ------------------------------------------------------------------------------- CPU (emu)
@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_passes_on_emulator(exercise_id):
    ex = exercises.get(exercise_id)
    v = check(ex.id, kernels.source(ex.reference), backend="emu")
    assert v.passed, v.text()
    assert v.score == ex.points_correct, v.text()
    speed = [i for i in v.items if i.name == "speed"]
    if ex.target is not None:  # never passes without a GPU, never awards points
        assert [i.status for i in speed] == [SKIP] and "needs a GPU" in speed[0].message
        assert "speed not checked: needs a GPU" in v.headline
    else:
        assert speed == []


@pytest.mark.parametrize("bad", CASES, ids=lambda b: b.name)
def test_adversarial_on_emulator(bad):
    v = check(bad.exercise, bad.source(), backend="emu", case_timeout=6)
    assert not v.passed and v.score == 0
    kinds = failure_kinds(v)
    assert kinds and kinds[0] in bad.expect, v.text()
    first = next(i for i in v.items if i.status == FAIL)
    assert first.hint, f"no hint for {first.kind}"


def test_a_crash_or_hang_costs_only_that_check():
    hang = next(b for b in CASES if b.name == "infinite_loop")
    assert "timeout" in failure_kinds(check(hang.exercise, hang.source(), backend="emu", case_timeout=4))
    v = check("sgemm-naive", kernels.source("sgemm_naive"), backend="emu")
    assert v.passed


def test_compile_error_points_at_the_students_line():
    bad = next(b for b in CASES if b.name == "compile_error")
    src = bad.source()
    v = check(bad.exercise, src, backend="emu")
    item = v.items[0]
    assert item.kind == "compile-error"
    # NVRTC reports a missing ';' at the line that follows it.
    line = next(i for i, l in enumerate(src.splitlines(), 1) if "mma_sync(acc, a, b, acc)" in l)
    assert item.where["line"] in (line, line + 1)


def signature_item(src):
    v = check("sgemm-naive", src, backend="emu")
    return next(i for i in v.items if i.name == "signature")


def test_wrong_signature_is_named():
    base = kernels.source("sgemm_naive")
    extra = signature_item(base.replace("int M, int N, int K)", "int M, int N, int K, int lda)"))
    assert extra.status == FAIL and "7 parameters" in extra.message and "passes 6" in extra.message
    typed = signature_item(base.replace("float* C,", "double* C,"))
    assert typed.status == FAIL and "parameter 3 is `double* C`" in typed.message
    renamed = signature_item(base.replace('void sgemm(', 'void gemm('))
    assert "no kernel named sgemm" in renamed.message and "gemm" in renamed.message
    renamed_param = base.replace("float* C,", "float* out,").replace("C[row", "out[row")
    assert signature_item(renamed_param).status == PASS  # parameter names are the student's
    # another name of the type the grader passes is the same parameter (the signature step alone: NVRTC
    # knows int32_t only from <cstdint>); another type is not
    from grader.checking.steps.signature import signature_item as step
    ex = exercises.get("sgemm-naive")
    assert step(ex, base.replace("int M, int N, int K)", "int32_t M, int N, int K)")).status == PASS
    assert step(ex, base.replace("int M, int N, int K)", "unsigned M, int N, int K)")).status == FAIL


def test_unknown_launch_parameter_is_refused():
    """A verdict that lists the accepted parameters, not a bare LaunchArgumentError traceback."""
    v = check("sgemm-tiled", kernels.source("sgemm_tiled"), backend="emu", tiles=16)
    (item,) = [i for i in v.items if i.status == FAIL]
    assert item.kind == "launch-parameter" and "tiles" in item.message and "takes tile" in item.message
    assert not v.passed and v.score == 0


def test_launch_parameter_reaches_the_kernel():
    v = check("sgemm-tiled", kernels.source("sgemm_tiled"), backend="emu", tile=16)
    assert v.passed, v.text()
    assert all(i.name != "correct" or "16" for i in v.items)


def test_grade_returns_plain_capped_float():
    pts = grade("sgemm-naive", kernels.source("sgemm_naive"), points=3, backend="emu")
    assert type(pts) is float and pts == 3.0
    bad = next(b for b in CASES if b.name == "wrong_result")
    assert grade(bad.exercise, bad.source(), points=3, backend="emu") == 0.0
    # speed points missing on CPU: a correct sgemm-tiled earns its correctness share only
    assert grade("sgemm-tiled", kernels.source("sgemm_tiled"), points=4, backend="emu") == 2.0


def test_verdict_renderings_show_the_diagnosis():
    bad = next(b for b in CASES if b.name == "edge_off_by_one")
    v = check(bad.exercise, bad.source(), backend="emu")
    html = v._repr_html_()
    assert "NOT YET" in html and "Try:" in html and "data:image/png;base64" in html
    text = v.text()
    assert "hint:" in text and "error map" in text
    data = json.loads(v.to_json())
    assert data["passed"] is False and any(i["kind"] == "edge" for i in data["items"])


def test_verdict_and_problem_never_carry_the_reference_to_the_child():
    ex = exercises.get("sgemm-naive")
    import numpy as np

    case = ex.problem.make(ex.cpu_sizes[0], np.random.default_rng(1), {})
    assert "expected" not in case.job() and len(case.expected) == 1


def cli(*args):
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_exit_codes():
    ok = cli("check", "sgemm-tiled", "kernels/sgemm_tiled.cu", "--backend", "emu", "--tile", "16")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "correct; speed not checked: needs a GPU" in ok.stdout
    wrong = cli("check", "wmma-gemm", "tests/adversarial/no_tensor_cores.cu", "--backend", "emu", "--json")
    assert wrong.returncode == 1 and json.loads(wrong.stdout)["passed"] is False
    assert cli("check", "no-such-exercise", "kernels/sgemm_tiled.cu").returncode == 2
    assert cli("check", "sgemm-tiled", "missing.cu").returncode == 2
    assert cli("check", "sgemm-tiled", "kernels/sgemm_tiled.cu", "--set", "tile=x").returncode == 2
    listing = cli("list")
    assert listing.returncode == 0
    for ex in exercises.EXERCISES.values():
        assert ex.id in listing.stdout and ex.signature in listing.stdout


# ------------------------------------------------------------------------------------ GPU
@pytest.mark.gpu
@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_full_points_on_gpu(exercise_id):
    ex = exercises.get(exercise_id)
    v = check(ex.id, kernels.source(ex.reference), backend="gpu")
    print(v.text())
    assert v.passed and v.score == ex.points, v.text()
    if ex.target is not None:
        assert v.speed["ratio"] >= 1.3 * ex.target, f"margin below 1.3x: {v.speed}"


@pytest.mark.gpu
@pytest.mark.parametrize("exercise_id", sorted(PREVIOUS))
def test_previous_lessons_kernel_misses_the_target_on_gpu(exercise_id):
    """The other half of the calibration rule (DESIGN.md): what the student had before this
    lesson is correct under the contract and misses the target (it may earn partial credit)."""
    name, launch = PREVIOUS[exercise_id]
    v = check(exercise_id, previous_source(exercise_id), backend="gpu", **launch)
    print(v.text())
    assert all(i.status == PASS for i in v.items if i.name.startswith("correct")), v.text()
    assert v.speed["ratio"] < v.speed["target"], f"{name} meets the target: {v.speed}"


@pytest.mark.parametrize("exercise_id", sorted(PREVIOUS))
def test_previous_lessons_kernel_is_correct_under_the_contract(exercise_id):
    """On CPU: the calibration's stand-ins compile and are correct under the exercise's
    contract, so on a GPU their speed is what separates them from the reference."""
    name, launch = PREVIOUS[exercise_id]
    v = check(exercise_id, previous_source(exercise_id), backend="emu", **launch)
    correct = [i.status for i in v.items if i.name.startswith("correct")]
    assert correct and all(st == PASS for st in correct), v.text()


@pytest.mark.gpu
@pytest.mark.parametrize("bad", [b for b in CASES if b.gpu], ids=lambda b: b.name)
def test_adversarial_on_gpu(bad):
    v = check(bad.exercise, bad.source(), backend="gpu", case_timeout=10, speed=False)
    print(v.text())
    kinds = failure_kinds(v)
    assert not v.passed and kinds and kinds[0] in bad.expect, v.text()


@pytest.mark.gpu
def test_gpu_keeps_going_after_an_illegal_address():
    bad = next(b for b in CASES if b.name == "illegal_address")
    check(bad.exercise, bad.source(), backend="gpu", speed=False)
    assert check("sgemm-naive", kernels.source("sgemm_naive"), backend="gpu").passed
