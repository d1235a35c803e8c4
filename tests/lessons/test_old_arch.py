"""The lessons on a GPU that acts as a T4 (TC_ARCH=75) or a V100 (TC_ARCH=70): what the GPU
cannot run is skipped with one line that says why (device.cannot_run), everything else still
runs; acting as an H100 (sm_90) nothing is skipped. No GPU needed: device_info is faked and the
launches are replaced by stand-ins that record what would have run."""
import json
from pathlib import Path

import pytest

from grader.bench import conv as bench_conv
from grader.bench import mma as bench_mma
from grader.bench import wmma as bench_wmma
from grader.lessons import beyond_wmma as X
from grader.lessons import capstone_run
from grader.lessons import convolution as L
from grader.lessons import fast_gemm as F
from grader.runtime import arch as arches
from grader.runtime import backend, device

ROOT = Path(__file__).resolve().parents[2]


def fake_info(cc: int) -> device.DeviceInfo:
    """An H100 acting as sm_`cc` (as device_info() builds it under TC_ARCH)."""
    return device.DeviceInfo(name="NVIDIA H100 80GB HBM3", cc=cc, sm_count=132, memory_bytes=80 << 30,
                             l2_bytes=50 << 20, max_shared_optin=arches.shared_optin(cc), clock_mhz=1755.0,
                             driver="12.4", runtime="12.4", native_cc=90)


class Launched(Exception):
    """Raised by the stand-in of a launch: the lesson went on to run the kernel."""


@pytest.fixture
def act_as(monkeypatch):
    def act(cc: int) -> device.DeviceInfo:
        info = fake_info(cc)
        for mod in (device, F, X, L, bench_conv, bench_mma, bench_wmma, backend):
            if hasattr(mod, "device_info"):
                monkeypatch.setattr(mod, "device_info", lambda: info)
            if hasattr(mod, "has_gpu"):
                monkeypatch.setattr(mod, "has_gpu", lambda: True)
        return info
    return act


# ---------------------------------------------------------------- the one gate
@pytest.mark.parametrize("cc,limit", [(75, "64 KB"), (70, "96 KB")])
def test_cannot_run_names_shared_memory_and_arch(act_as, cc, limit):
    act_as(cc)
    why = device.cannot_run("wmma_gemm_async", 107520)
    assert why.startswith("skipped here: wmma_gemm_async needs 105 KB of shared memory per block")
    assert f"acts as sm_{cc}" in why and "sm_90" in why and limit in why and "\n" not in why
    # the minimum arch comes from the kernel file's own `Requires: sm_80` line
    assert "needs sm_80" in device.cannot_run("mma_gemm_ldmatrix")
    assert "needs sm_90" in device.cannot_run("hgemm_wgmma")
    assert device.cannot_run("wmma_gemm_padded", bench_wmma.Rung("p", "wmma_gemm_padded").shared_mem) == ""
    assert device.cannot_run("wmma_gemm_async", 107520, backend="emu") == ""  # the emulator runs it


def test_ldmatrix_needs_turing(act_as):
    act_as(70)
    assert "needs sm_75" in device.cannot_run("ldmatrix_layouts")
    act_as(75)
    assert device.cannot_run("ldmatrix_layouts") == ""


def test_an_h100_and_no_gpu_run_everything(act_as, monkeypatch):
    act_as(90)
    for name, smem in (("wmma_gemm_async", 107520), ("wmma_gemm_fragdb", 156672), ("hgemm_wgmma", 0),
                       ("mma_gemm_tuned", 147456)):
        assert device.cannot_run(name, smem) == ""
    monkeypatch.setattr(device, "device_info", lambda: None)
    assert device.cannot_run("hgemm_wgmma", 10 ** 6) == ""


# ---------------------------------------------------------------- notebook 06
def _no_launch(*a, **k):
    raise Launched


@pytest.mark.parametrize("cc", [75, 70])
@pytest.mark.parametrize("name", F.RUNGS[4:])  # the rungs from cp.async up: sm_80's shared memory
def test_06_check_rung_skips_on_old_gpus(act_as, monkeypatch, cc, name):
    act_as(cc)
    monkeypatch.setattr(F.backend, "load", _no_launch)
    why = F.check_rung(name, 256, 128)
    assert why.startswith(f"skipped here: {name} needs") and f"sm_{cc}" in why


@pytest.mark.parametrize("cc", [75, 70])
def test_06_lower_rungs_still_run_on_old_gpus(act_as, monkeypatch, cc):
    act_as(cc)
    monkeypatch.setattr(F.backend, "load", _no_launch)
    for name in ("wmma_gemm_naive", "wmma_gemm_smem", "wmma_gemm_warptile", "wmma_gemm_padded"):
        with pytest.raises(Launched):
            F.check_rung(name, 256, 128)


def test_06_check_rung_runs_on_an_h100(act_as, monkeypatch):
    act_as(90)
    monkeypatch.setattr(F.backend, "load", _no_launch)
    with pytest.raises(Launched):
        F.check_rung("wmma_gemm_async", 256, 128)


def _fake_bench(monkeypatch, timed: list):
    monkeypatch.setattr(bench_wmma, "_module", lambda name, options=(): type("M", (), {
        "resources": lambda self, k: type("R", (), {"registers": 64})()})())
    monkeypatch.setattr(bench_wmma, "check_sizes", lambda module, spec, sizes: (True, 0.1, ""))

    def time_kernel(module, spec, n, max_seconds=1.0):
        timed.append(spec)
        return dict(tflops=100.0, lib_tflops=200.0, ratio=0.5, timing="")
    monkeypatch.setattr(bench_wmma, "time_kernel", time_kernel)


@pytest.mark.parametrize("cc,ran", [(75, 4), (70, 4), (90, len(F.RUNGS))])
def test_06_ladder_times_what_the_gpu_runs(act_as, monkeypatch, cc, ran):
    act_as(cc)
    timed = []
    _fake_bench(monkeypatch, timed)
    rows, source = F.ladder(256)
    assert len(rows) == len(timed) == ran
    if cc < 80:
        assert [r["name"] for r in rows] == F.RUNGS[:4]
        assert ", ".join(F.RUNGS[4:]) + " skipped here" in source
    else:
        assert "skipped" not in source


@pytest.mark.parametrize("cc", [75, 70])
def test_06_student_timing_says_why(act_as, cc):
    act_as(cc)
    with pytest.raises(ValueError, match=r"skipped here: .*105 KB of shared memory"):
        F.time_student("// not compiled", shared_mem=107520)


# ---------------------------------------------------------------- notebook 08 (and 09's conv points)
@pytest.mark.parametrize("cc", [75, 70, 90])
def test_08_conv_config_fits_the_gpu(act_as, cc):
    info = act_as(cc)
    N, C, H, W, K, R, S, pad = bench_conv.TVM_SHAPE
    cfg = bench_conv.config_for(C, K, N * H * W)
    assert cfg.shared_bytes <= info.max_shared_optin
    if cc == 90:
        assert cfg == bench_conv.config_for(C, K, N * H * W, bench_conv.DEFAULT_CONFIG)
    if cc == 75:  # the default (80 KB) does not fit a T4
        assert cfg.shared_bytes < bench_conv.DEFAULT_CONFIG.shared_bytes


@pytest.mark.parametrize("cc", [75, 90])
def test_08_run_implicit_launches_a_config_that_fits(act_as, monkeypatch, cc):
    info = act_as(cc)
    seen = []

    def load(source, backend="auto", options=()):
        seen.append(dict(o[2:].split("=") for o in options))
        raise Launched
    monkeypatch.setattr(backend, "load", load)
    with pytest.raises(Launched):
        L.run_implicit("// not compiled", N=3, C=64, H=13, W=9, K=256)
    d = {k: int(v) for k, v in seen[0].items()}
    cfg = next(c for c in (bench_conv.DEFAULT_CONFIG, bench_conv.MID_CONFIG, bench_conv.WIDE64_CONFIG,
                           bench_conv.NARROW_CONFIG) if c.options == tuple(f"-D{k}={v}" for k, v in seen[0].items()))
    assert cfg.shared_bytes <= info.max_shared_optin and d


# ---------------------------------------------------------------- notebook 09
@pytest.mark.parametrize("cc,tc", [(75, "wmma_gemm_padded"), (70, "wmma_gemm_padded"), (90, "wmma_gemm_swizzle")])
def test_09_capstone_checks_what_the_gpu_runs(act_as, monkeypatch, cc, tc):
    act_as(cc)
    checked = []
    monkeypatch.setattr(capstone_run, "_checked", lambda name, spec, opts=(): checked.append(name) or object())
    lines = []
    mods, skipped = capstone_run.check_kernels(capstone_run.sgemm_specs(), capstone_run.wmma_specs(), lines.append)
    assert set(checked) | set(skipped) == set(mods) and not set(checked) & set(skipped)
    if cc < 80:
        assert {*F.RUNGS[4:], "dmma_gemm_naive", "dmma_gemm_fast"} == set(skipped)
        assert all(skipped[k] in lines and skipped[k].startswith(f"skipped here: {k} needs") for k in skipped)
    else:
        assert not skipped
    assert capstone_run.tensor_core_kernel(mods) == tc


# ---------------------------------------------------------------- notebook 10
def test_10_mma_probe_falls_back_to_the_emulator_below_sm80():
    """NVRTC passes inline PTX through, so without its #error the sm_75 probe reached the driver
    (CUDA_ERROR_INVALID_PTX); with it, backend.load("auto") runs it on the emulator, saying so."""
    from grader.runtime.compile import nvrtc_compile
    from grader.runtime.errors import CompileError

    for arch in (70, 75):
        with pytest.raises(CompileError) as e:
            nvrtc_compile(X._PROBE, arch=arch, resources=False)
        assert backend.needs_newer_arch(e.value) == "needs sm_80"
    nvrtc_compile(X._PROBE, arch=80, resources=False)


@pytest.mark.parametrize("cc", [75, 70, 90])
def test_10_ladder_skips_what_the_gpu_lacks(act_as, monkeypatch, cc):
    act_as(cc)
    timed = []
    _fake_bench(monkeypatch, timed)
    monkeypatch.setattr(bench_mma, "module_of", lambda rung: object())
    monkeypatch.setattr(bench_mma, "probe", lambda rung: None)
    rows, source = X.ladder(4096)
    assert [r["name"] for r in rows] == X.RUNGS
    if cc < 80:  # every rung needs sm_80: nothing timed, the recorded ladder shown, saying why
        assert not timed and source.startswith(X.recorded_ladder(4096)[1])
        assert "skipped here: hgemm_wgmma needs sm_90" in source
    else:
        assert len(timed) == len(rows) and source.startswith("measured now")


@pytest.mark.parametrize("cc,bank_skip", [(75, False), (70, True)])
def test_10_measurements_fall_back_to_records(act_as, monkeypatch, cc, bank_skip):
    act_as(cc)
    monkeypatch.setattr(X, "measure_banks", _no_launch)
    monkeypatch.setattr(bench_wmma, "_module", _no_launch)
    if bank_skip:
        assert "needs sm_75" in X.bank_times()[1]
    else:
        with pytest.raises(Launched):
            X.bank_times()
    assert "skipped here: mma_peak_niter needs sm_80" in X.ceilings()[1]
    assert "skipped here: dmma_gemm_m16n8k16 needs sm_90" in X.fp64()[1]
    with pytest.raises(ValueError, match="needs sm_80"):
        X.time_student("// not compiled")
    assert X.gpu_arch() == cc  # TC_ARCH's arch, not a parse of the "sm_75, as TC_ARCH asks" text


# ---------------------------------------------------------------- notebook 11
@pytest.mark.parametrize("cc,says", [(75, "needs sm_89"), (70, "needs sm_89"), (90, "sm_90")])
def test_11_first_cell_under_tc_arch(act_as, monkeypatch, capsys, cc, says):
    """Its first code cell read the arch as int(info.arch[3:]), which TC_ARCH's 'sm_75, as
    TC_ARCH asks; the GPU is sm_90' broke (ValueError)."""
    act_as(cc)
    nb = json.loads((ROOT / "solutions/11-fp8-sparsity/11-fp8-sparsity.ipynb").read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    exec(compile(cell, "11[1]", "exec"), {"display": print})
    out = capsys.readouterr().out
    assert says in out and ("emulator" in out) == (cc < 89)


def test_09_a_tc_arch_run_is_saved_as_its_own(act_as):
    """An H100 acting as a T4 saves (and loads) its capstone run under its own name, so the
    H100's own run is neither replaced nor skipped because of it."""
    from grader.lessons import capstone

    h100, t4 = capstone_run.gpu_label(act_as(90)), capstone_run.gpu_label(act_as(75))
    assert h100 == "NVIDIA H100 80GB HBM3" and t4 == "NVIDIA H100 80GB HBM3 as sm_75"
    assert capstone.results_path(h100) != capstone.results_path(t4)


@pytest.mark.parametrize("cc,fits", [(75, False), (70, False), (90, True)])
def test_06_live_sweep_uses_the_one_gate(act_as, cc, fits):
    act_as(cc)
    why = F.config_problem(128, 128, 64, 4, 4, 3)  # 107520 B
    assert (why is None) == fits
    if not fits:
        assert why.startswith("skipped here: wmma_gemm_swizzle needs 105 KB") and f"sm_{cc}" in why
    assert F.config_problem(64, 64, 32, 2, 2, 2) is None  # 2 * (64*40 + 32*72) * 2 = 19456 B: fits all
