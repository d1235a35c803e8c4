"""A GPU grade is never laxer than the emulator (issue 25, item 0): a kernel that a GPU happened to
run right (an out-of-bounds read that landed on harmless memory, padding the GPU's shared memory
happened to zero) also runs on the emulator at its CPU sizes, and fails there with the emulator's
message. The GPU is mocked: its "run" returns the right answer whatever the kernel does."""
import shutil

import numpy as np
import pytest

from grader.checking import check as C
from grader.checking import isolate
from grader.checking.steps import gate
from grader.checking.verdict import FAIL, PASS, SKIP

if shutil.which("g++") is None:  # pragma: no cover
    pytest.skip("the emulator needs g++", allow_module_level=True)

GOOD = r"""
#define TILE_DIM 32
#define BLOCK_ROWS 8
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int c = blockIdx.x * TILE_DIM + threadIdx.x, r = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (c < cols && r + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(r + j) * cols + c];
    __syncthreads();
    int oc = blockIdx.y * TILE_DIM + threadIdx.x, orow = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (oc < rows && orow + j < cols) out[(orow + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
}
"""
# the load is not guarded: it reads past the end of `in` (a GPU usually reads harmless memory there)
OOB = GOOD.replace("if (c < cols && r + j < rows) tile", "tile")


@pytest.fixture
def fake_gpu(monkeypatch):
    """check() on a 'GPU' whose runs always return the transpose of the input."""
    from grader.runtime import backend, device

    real_run = isolate.run

    def run(job, **kw):
        if job["backend"] != "gpu":
            return real_run(job, **kw)
        cases = []
        for case in job["cases"]:
            x, rows, cols = case["args"][0], case["args"][2], case["args"][3]
            cases.append(dict(outputs={1: np.ascontiguousarray(x.T).astype(np.float32)}, bands={},
                              changed_inputs=[], nondeterministic=[]))
        return dict(compiled=True, cases=cases, perf=None, traffic=None, stdout="", error=None)

    monkeypatch.setattr(backend, "pick", lambda b: "gpu")
    monkeypatch.setattr(device, "needs", lambda arch: "")
    monkeypatch.setattr(gate, "arch_here", lambda b: 90)
    monkeypatch.setattr(isolate, "run", run)


def test_a_kernel_the_gpu_passes_fails_the_emulators_strict_run(fake_gpu):
    v = C.check("transpose", OOB, backend="gpu", speed=False)
    bad = [i for i in v.items if i.status == FAIL]
    assert bad and bad[0].name.startswith(C.STRICT), v.text()
    assert bad[0].kind == "out-of-bounds" and "'in'" in bad[0].message and "right on the GPU" in bad[0].message
    assert v.score == 0


def test_a_correct_kernel_keeps_its_gpu_grade(fake_gpu):
    v = C.check("transpose", GOOD, backend="gpu", speed=False)
    strict = [i for i in v.items if i.name == C.STRICT]
    assert strict and strict[0].status == PASS, v.text()
    assert v.score == 1.0


def test_strict_run_can_be_turned_off(fake_gpu, monkeypatch):
    monkeypatch.setenv("TC_GPU_STRICT", "0")
    v = C.check("transpose", OOB, backend="gpu", speed=False)
    assert v.score == 1.0 and not [i for i in v.items if i.name.startswith(C.STRICT)]


def test_what_the_emulator_cannot_run_is_skipped_not_failed(fake_gpu, monkeypatch):
    from grader.runtime.errors import Unsupported

    real = isolate.run

    def run(job, **kw):
        if job["backend"] == "emu":
            return dict(compiled=False, cases=[], perf=None, traffic=None, stdout="",
                        error=Unsupported("inline PTX wgmma needs an sm_90 GPU"))
        return real(job, **kw)

    monkeypatch.setattr(isolate, "run", run)
    v = C.check("transpose", GOOD, backend="gpu", speed=False)
    strict = [i for i in v.items if i.name == C.STRICT]
    assert strict and strict[0].status == SKIP and v.score == 1.0


def test_every_array_an_exercise_hands_the_gpu_has_a_canary():
    """The GPU child wraps every array in canary bands (isolate._guarded): an exercise whose arrays
    had no canary (fp8-gemm's uint8 codes, 2026-11-27) crashed every check on a GPU while passing on
    the emulator. Every case of every exercise at its GPU sizes, and every array type a kernel can
    declare, gets bands of its own width."""
    from grader.checking import exercises
    from grader.runtime.signature import DTYPES

    dtypes = {np.dtype(d) for d in DTYPES.values()}
    for ex in exercises.EXERCISES.values():
        sizes = ex.gpu_sizes[:1]
        case = ex.problem.make(sizes[0], np.random.default_rng(0), dict(ex.launch_defaults), reference=False)
        dtypes |= {a.dtype for a in case.args if isinstance(a, np.ndarray)}
    for d in dtypes:
        ubits, value = isolate.canary(d)
        assert np.dtype(ubits).itemsize == d.itemsize, d
        assert 0 < value < 2 ** (8 * d.itemsize), d
        # a band holding the canary reads back as the canary, and a write to it shows
        band = np.zeros(4, d)
        band.view(ubits).fill(value)
        assert (band.view(ubits) == value).all(), d


def test_a_grader_error_in_the_gpu_child_is_not_blamed_on_the_kernel():
    """A Python error of the grader's own in the GPU child (no CuPy or CUDA error) says the grader
    failed, with no hint about the student's indices; CuPy's errors stay the kernel's."""
    from grader.checking.judge import fault_item

    e = isolate._grader_fault(KeyError(np.dtype("uint8")))
    assert e is not None and e.kind == "grader-error"
    item = fault_item(e, "correct: 64x64")
    assert "grader itself failed" in item.message and "KeyError" in item.message
    assert "instructor" in item.hint and "index" not in item.hint

    class CUDARuntimeError(RuntimeError):
        pass

    CUDARuntimeError.__module__ = "cupy_backends.cuda.api.runtime"
    assert isolate._grader_fault(CUDARuntimeError("cudaErrorLaunchFailure")) is None


def test_a_grader_error_reaches_the_instructors_log_not_only_the_student():
    """The trusted record keeps a grader fault; autograde turns it into an instructor's log line per
    cell (the student reads 'the grader itself failed'), and a kernel's own fault is not one."""
    from grader.checking import trusted
    from grader.checking.judge import fault_item
    from grader.checking.verdict import Item, Verdict
    from grader.classroom.autograde import grader_errors

    e = isolate._grader_fault(KeyError(np.dtype("uint8")))
    ours = Verdict("fp8-gemm", "gpu", items=[fault_item(e, "correct: 1000x777x347 e4m3")], max_score=1, score=0.0)
    theirs = Verdict("transpose", "gpu", items=[Item("correct: 64x64", FAIL, "wrong", kind="wrong-result")],
                     max_score=2, score=0.0)
    results = dict(grades=[dict(grade_id="fp8-gemm-test", verdicts=[trusted._render(ours)]),
                           dict(grade_id="transpose-test", verdicts=[trusted._render(theirs)])])
    lines = grader_errors(results)
    assert len(lines) == 1 and lines[0].startswith("fp8-gemm-test: ") and "KeyError" in lines[0], lines


def test_a_full_gpu_is_not_blamed_on_the_kernel():
    """CuPy's OutOfMemoryError (or CUDA's allocation error) in the GPU child: the check's own arrays
    found no room, as when a cohort neighbour's notebook holds the memory. A grader error (the
    instructor's log says regrade), never a crash of the student's kernel."""
    from grader.checking.judge import fault_item

    class OutOfMemoryError(MemoryError):
        pass

    class CUDARuntimeError(RuntimeError):
        pass

    OutOfMemoryError.__module__ = "cupy.cuda.memory"
    CUDARuntimeError.__module__ = "cupy_backends.cuda.api.runtime"
    for exc in (OutOfMemoryError("Out of memory allocating 536,870,912 bytes"),
                CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")):
        e = isolate._no_gpu_memory(exc)
        assert e is not None and e.kind == "grader-error", exc
        item = fault_item(e, "correct: 4096x4096")
        assert "not your kernel" in item.message and "instructor" in item.hint and "regrade" in item.hint
    assert isolate._no_gpu_memory(CUDARuntimeError("cudaErrorIllegalAddress")) is None
    assert isolate._no_gpu_memory(KeyError("x")) is None


def test_on_a_gpu_the_strict_run_catches_the_fp8_race_a_gpu_need_not_show():
    """fp8_smem_overwritten_while_read (no __syncthreads() before the next k-step's tiles land) may
    run right on a GPU, whose other warp usually reads first; the GPU's grade still fails it, through
    the emulator's strict run with the exercise's race check (the step a GPU check runs after its own
    passes). The reference's strict run passes."""
    from pathlib import Path

    from grader.checking.exercises import get
    from grader.checking.steps.strict import strict_items
    from grader.runtime import kernels

    ex = get("fp8-gemm")
    race = (Path(__file__).parents[1] / "adversarial" / "fp8_smem_overwritten_while_read.cu").read_text()
    items = strict_items(ex, race, dict(ex.launch_defaults or {}), None)
    assert items and items[0].status == FAIL and "depends on the order the threads" in items[0].message, items
    ok = strict_items(ex, kernels.source(ex.reference), dict(ex.launch_defaults or {}), None)
    assert [i.status for i in ok] == [PASS], [i.message for i in ok]
