"""mma-gemm asks for PTX mma.sync m16n8k16 (notebook 10): a WMMA kernel that is correct under the
same contract (notebook 06's best rung, its entry renamed) executes m16n16k16 and earns nothing
for tensor-core work, while the reference passes. Counted by the emulator on every backend."""
from grader.bench.calibrate import PREVIOUS, previous_source
from grader.bench.wmma import LADDER
from grader.checking.check import check
from grader.checking.verdict import FAIL, PASS
from grader.runtime import kernels


def _renamed_wmma() -> str:
    import re

    return re.sub(r"\bwmma_gemm\(", "mma_gemm(", kernels.source("wmma_gemm_fragdb"))


def test_wmma_kernel_is_not_the_mma_sync_exercise():
    launch = next(r for r in LADDER if r.file == "wmma_gemm_fragdb").launch
    v = check("mma-gemm", _renamed_wmma(), backend="emu", **launch)
    correct = [i for i in v.items if i.name.startswith("correct")]
    assert correct and all(i.status == PASS for i in correct), v.text()
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert tc.status == FAIL and tc.kind == "wrong-instruction", v.text()
    assert "m16n16k16" in tc.message and "m16n8k16" in tc.message and "notebook 10" in tc.hint
    assert v.score == 0 and not v.passed


def test_mma_sync_kernels_count():
    """The reference and notebook 10's first rung (the calibration's 'previous' kernel) both pass it."""
    first = check("mma-gemm", previous_source("mma-gemm"), backend="emu", **PREVIOUS["mma-gemm"][1])
    for v in (check("mma-gemm", kernels.source("mma_gemm_tuned"), backend="emu"), first):
        tc = next(i for i in v.items if i.name == "tensor cores")
        assert tc.status == PASS and "m16n8k16" in tc.message, v.text()
        assert all(i.status == PASS for i in v.items if i.name.startswith("correct")), v.text()
