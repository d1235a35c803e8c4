"""TC_ARCH: a newer GPU acts as an older arch (compile target, limits, messages). The GPU is
mocked (CuPy's device properties), so this runs on the CPU; .ci/gpu-cuda12 runs it for real."""
import pytest

from grader.runtime import arch, device


def test_parse_forms():
    assert [arch.parse(t) for t in ("75", "sm_75", "compute_75", "7.5", " 70 ")] == [75, 75, 75, 75, 70]
    for bad in ("sm_61", "7", "turing", "100"):
        with pytest.raises(arch.ArchError):
            arch.parse(bad)


def test_effective_never_newer_than_the_gpu():
    assert arch.effective(90, {"TC_ARCH": "75"}) == 75
    assert arch.effective(90, {"TC_ARCH": "70"}) == 70
    assert arch.effective(75, {"TC_ARCH": "90"}) == 75  # a T4 cannot act as an H100
    assert arch.effective(90, {}) == 90
    assert arch.effective(90, {"TC_ARCH": "nonsense"}) == 90  # the doctor names it


@pytest.fixture
def fake_h100(monkeypatch):
    """device_info() on a mocked H100 (sm_90, 227 KB opt-in shared memory)."""
    import cupy

    props = {"name": b"NVIDIA H100 80GB HBM3", "major": 9, "minor": 0, "multiProcessorCount": 132,
             "totalGlobalMem": 80 * 2**30, "l2CacheSize": 50 * 2**20, "sharedMemPerBlockOptin": 227 * 1024,
             "clockRate": 1980000}
    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceProperties", lambda i: props)
    monkeypatch.setattr(cupy.cuda.runtime, "driverGetVersion", lambda: 13000)
    monkeypatch.setattr(cupy.cuda.runtime, "runtimeGetVersion", lambda: 13000)
    from grader.runtime import backend

    monkeypatch.setattr(device, "has_gpu", lambda: True)
    monkeypatch.setattr(backend, "has_gpu", lambda: True)  # backend.pick holds its own reference
    device.device_info.cache_clear()
    yield
    device.device_info.cache_clear()


def test_h100_as_t4(fake_h100, monkeypatch):
    monkeypatch.setenv("TC_ARCH", "75")
    info = device.device_info()
    assert (info.cc, info.native_cc, info.emulated) == (75, 90, True)
    assert info.arch.startswith("sm_75") and "sm_90" in info.arch
    assert info.max_shared_optin == 64 * 1024  # Turing's limit, not Hopper's
    assert device.limits().max_shared_optin == 64 * 1024
    assert device.needs(80) == "needs sm_80 or newer (this GPU: " + info.arch + ")"
    table = device.tensor_core_table(info.cc)
    assert [r["inputs"] for r in table if r["supported"]][:1] == ["half (fp16)"]
    assert not next(r for r in table if r["inputs"].startswith("__nv_bfloat16"))["supported"]


def test_h100_as_itself(fake_h100, monkeypatch):
    monkeypatch.delenv("TC_ARCH", raising=False)
    info = device.device_info()
    assert (info.cc, info.emulated, info.arch) == (90, False, "sm_90")
    assert device.needs(80) == ""


def test_probe_graded_against_the_hardware_layout(fake_h100, monkeypatch):
    """TC_ARCH=70 changes the compile target, not the H100's fragment layout."""
    from grader.problems import fragments

    monkeypatch.setenv("TC_ARCH", "70")
    assert fragments.layout_arch() == 90
    assert (fragments.expected_map("a_f16_row") == fragments.expected_map("a_f16_row", 90)).all()


def test_gpu_module_compiles_ptx_for_the_arch_asked(fake_h100, monkeypatch):
    """Acting as sm_75, GpuModule hands CuPy PTX for compute_75 from the course's NVRTC."""
    import cupy

    from grader.runtime import kernels
    from grader.runtime.gpu import GpuModule

    seen = {}

    class FakeRawModule:
        def __init__(self, code=None, path=None, **kw):
            seen["code"], seen["ptx"] = code, open(path).read() if path else None

    monkeypatch.setattr(cupy, "RawModule", FakeRawModule)
    monkeypatch.setenv("TC_ARCH", "75")
    GpuModule(kernels.source("wmma_gemm_naive"))
    assert seen["code"] is None and ".target sm_75" in seen["ptx"] and "wmma.mma.sync" in seen["ptx"]
    seen.clear()
    GpuModule(kernels.source("wmma_gemm_naive"), arch=70)
    assert ".target sm_70" in seen["ptx"]


def test_sm80_kernel_says_so_when_acting_as_t4(fake_h100, monkeypatch):
    from grader.runtime import kernels
    from grader.runtime.errors import CompileError
    from grader.runtime.gpu import GpuModule

    monkeypatch.setenv("TC_ARCH", "75")
    with pytest.raises(CompileError) as e:
        GpuModule(kernels.source("dmma_gemm_naive"))
    assert "need sm_80 or newer; this compile targets sm_75" in str(e.value)


def test_doctor_line(fake_h100, monkeypatch):
    from grader.classroom.doctor import tc_arch_check

    monkeypatch.setenv("TC_ARCH", "75")
    c = tc_arch_check(device.device_info())
    assert c.ok and "acts as Turing sm_75" in c.detail and "64 KB" in c.detail
    monkeypatch.setenv("TC_ARCH", "90")
    device.device_info.cache_clear()
    assert tc_arch_check(device.device_info()).ok  # equal to the GPU's own: fine
    monkeypatch.setenv("TC_ARCH", "sm_61")
    assert tc_arch_check(device.device_info()).ok is False


def test_lessons_fall_back_to_the_emulator_with_one_line(fake_h100, monkeypatch, capsys):
    """backend.load(..., "auto") of an sm_80 kernel on a GPU acting as sm_75: the lesson runs on
    the emulator and says why in one line; asked for "gpu" explicitly, the error stands."""
    from grader.runtime import kernels
    from grader.runtime.backend import load
    from grader.runtime.errors import CompileError

    monkeypatch.setenv("TC_ARCH", "75")
    m = load(kernels.source("dmma_gemm_naive"), "auto")
    assert m.backend == "emu"
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["note: needs sm_80 (this GPU: sm_75, as TC_ARCH asks; the GPU is sm_90): this runs on the "
                   "course's CPU emulator instead"]
    with pytest.raises(CompileError):
        load(kernels.source("dmma_gemm_naive"), "gpu")


def test_exercise_above_the_gpus_arch_is_skipped_not_crashed(monkeypatch):
    """On a GPU below an exercise's minimum arch (a T4 for an sm_80 exercise) the check says
    'needs sm_80' and awards nothing, before compiling anything."""
    from grader import check
    from grader.checking.steps import compile as C
    from grader.runtime import backend, device
    from grader.runtime.kernels import source

    monkeypatch.setattr(backend, "pick", lambda b="auto": "gpu")
    monkeypatch.setattr(device, "needs", lambda m: f"needs sm_{m} or newer (this GPU: sm_75)" if m > 75 else "")
    monkeypatch.setattr(C, "nvrtc_compile", lambda *a, **k: pytest.fail("compiled although it cannot run"))
    v = check("dmma-gemm", source("dmma_gemm_naive"))
    assert v.score == 0 and v.items[0].status == "skip" and "needs sm_80" in v.items[0].message


@pytest.mark.parametrize("tc_arch", ["70", "75", ""])
def test_what_a_solution_can_earn_here_follows_the_arch(fake_h100, monkeypatch, tc_arch):
    """The autograde dry run expects of each solution what this GPU can award: as a V100 or a T4
    every exercise but the sm_80 ones (fp64, large shared memory, mma.sync m16n8k16) in full,
    fp16 WMMA included; as itself, everything."""
    import nbformat

    from grader.checking import exercises
    from grader.classroom import workflow

    monkeypatch.setenv("TC_ARCH", tc_arch)
    device.device_info.cache_clear()
    sm80 = {e.id for e in exercises.EXERCISES.values() if e.min_arch >= 80}  # read, not listed: a new record counts
    assert {"fragment-probe", "wmma-gemm-fast", "dmma-gemm", "conv2d-wmma", "mma-gemm"} <= sm80
    assert {e.id for e in exercises.EXERCISES.values() if device.needs(e.min_arch)} == (sm80 if tc_arch else set())
    for a in ("04-wmma-basics", "06-fast-wmma-gemm"):
        nb = workflow.SOLUTIONS / a / f"{a}.ipynb"
        full = sum(float(c.metadata["nbgrader"]["points"]) for c in nbformat.read(nb, as_version=4).cells
                   if c.metadata.get("nbgrader", {}).get("grade"))
        here = workflow.max_score_here(nb, gpu=True)
        if a == "04-wmma-basics" or not tc_arch:
            assert here == full
        else:  # 06's fast kernel needs sm_80: its points are left out
            assert here == full - exercises.get("wmma-gemm-fast").points
