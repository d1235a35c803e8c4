"""The CUDA stack a machine gets, against mocked drivers: the rule (grader/runtime/stack.py),
what ./course.sh and the stand-alone script answer with a stand-in nvidia-smi on PATH, and
the doctor's one-line diagnosis of a wrong stack."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.runtime import stack

from fake_driver import fake_smi, smi_header

ROOT = Path(__file__).resolve().parents[2]


# (driver, nvidia-smi's CUDA Version, GPU, compute capability) -> the stack and extras
CASES = [
    ("550.54.15", "12.4", "Tesla T4", "7.5", "cuda12", ["cuda12", "gpu12"]),  # Colab's free T4
    ("535.104.05", "12.2", "NVIDIA A100-SXM4-40GB", "8.0", "cuda12", ["cuda12", "gpu12"]),  # a cluster
    ("525.60.13", "12.0", "Tesla V100-SXM2-16GB", "7.0", "cuda12", ["cuda12", "gpu12"]),
    ("575.51.03", "12.9", "NVIDIA GeForce RTX 2060", "7.5", "cuda12", ["cuda12", "gpu12"]),
    ("580.65.06", "13.0", "NVIDIA H100 80GB HBM3", "9.0", "cuda13", ["cuda13", "gpu13"]),
    ("580.65.06", "13.0", "Tesla V100-SXM2-32GB", "7.0", "cuda12", ["cuda12", "gpu12"]),  # NVRTC 13: no sm_70
    ("590.10", "13.1", "NVIDIA H200", "9.0", "cuda13", ["cuda13", "gpu13"]),
    ("550.54.15", None, "Tesla T4", "7.5", "cuda12", ["cuda12", "gpu12"]),  # no CUDA line: from the branch
]


@pytest.mark.parametrize("driver,cuda,gpu,cc,want,extras", CASES, ids=lambda v: str(v))
def test_choice_follows_the_driver(driver, cuda, gpu, cc, want, extras):
    d = stack.parse_smi(smi_header(driver, cuda), f"GPU 0: {gpu} (UUID: GPU-1)\n", f"{cc}\n")
    c = stack.choose(d)
    assert (c.stack.name, c.extras) == (want, extras), c.reason


def test_no_gpu_keeps_the_cuda13_set():
    c = stack.choose(stack.Driver(None, None))
    assert c.extras == ["cuda13"] and not c.gpu


def test_driver_older_than_cuda12_falls_back_to_cpu_mode_with_a_warning():
    d = stack.parse_smi(smi_header("470.82.01", "11.4"), "GPU 0: Tesla K80 (UUID: x)\n", "3.7\n")
    c = stack.choose(d)
    assert c.extras == ["cuda13"] and "525" in c.warning


def test_tc_stack_forces_the_choice():
    d = stack.parse_smi(smi_header("580.65.06", "13.0"), "GPU 0: H100 (UUID: x)\n", "9.0\n")
    assert stack.choose(d, "cuda12").extras == ["cuda12", "gpu12"]
    assert stack.choose(stack.Driver(None, None), "cuda12").extras == ["cuda12"]
    with pytest.raises(ValueError):
        stack.choose(d, "cuda11")


def test_wrong_stack_for_the_driver_is_one_line_with_the_fix():
    t4 = stack.parse_smi(smi_header("550.54.15", "12.4"), "GPU 0: Tesla T4 (UUID: x)\n", "7.5\n")
    ok, what, fix = stack.diagnose(["cuda13"], t4)
    assert not ok and "\n" not in what + fix
    assert "CUDA 12.4" in what and "cupy-cuda13x" in what
    assert '.[cuda12,gpu12]' in fix and "pip uninstall -y cupy-cuda13x" in fix
    assert stack.diagnose(["cuda12"], t4)[0]
    h100 = stack.parse_smi(smi_header("580.65.06", "13.0"), "GPU 0: H100 (UUID: x)\n", "9.0\n")
    assert stack.diagnose(["cuda12"], h100)[0]  # CUDA 12 runs on a newer driver
    both = stack.diagnose(["cuda12", "cuda13"], h100)
    assert not both[0] and both[2] == "pip uninstall -y cupy-cuda12x"
    assert not stack.diagnose([], h100)[0]


def test_doctor_reports_the_stack_and_why():
    from grader.classroom.doctor import stack_check

    t4 = stack.parse_smi(smi_header("550.54.15", "12.4"), "GPU 0: Tesla T4 (UUID: x)\n", "7.5\n")
    bad = stack_check(t4, ["cuda13"])
    assert bad.ok is False and "cannot use the GPU" in bad.detail and "cuda12" in bad.fix
    good = stack_check(t4, ["cuda12"])
    assert good.ok and "CUDA 12 (cupy-cuda12x)" in good.detail and "12.4" in good.detail
    cpu = stack_check(stack.Driver(None, None), ["cuda13"])
    assert cpu.ok and "no NVIDIA GPU" in cpu.detail


# ------------------------------------------------------- the scripts, with a stand-in nvidia-smi
def run_with_path(cmd, path_dirs, **env):
    e = {k: v for k, v in os.environ.items() if k != "TC_STACK"}
    base = [d for d in e.get("PATH", "").split(os.pathsep) if not (Path(d) / "nvidia-smi").exists()]
    e.update(PATH=os.pathsep.join([*map(str, path_dirs), *base]), **env)
    return subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("driver,cuda,gpu,cc,want,extras", [CASES[0], CASES[4], CASES[5]], ids=["T4", "H100", "V100"])
def test_stack_script_and_course_sh_with_a_fake_driver(tmp_path, driver, cuda, gpu, cc, want, extras):
    fake_smi(tmp_path / "bin", driver, cuda, gpu, cc)
    r = run_with_path([sys.executable, "grader/runtime/stack.py", "extras"], [tmp_path / "bin"])
    assert r.returncode == 0 and r.stdout.strip() == ",".join(extras), r.stderr
    r = run_with_path(["./course.sh", "stack"], [tmp_path / "bin"])  # says, installs nothing
    assert r.returncode == 0 and r.stdout.startswith(f"CUDA {want[-2:]} stack (extras {','.join(extras)})"), r


def test_stack_script_without_a_gpu(tmp_path):
    r = run_with_path([sys.executable, "grader/runtime/stack.py", "extras"], [])
    assert r.returncode == 0 and r.stdout.strip() == "cuda13"
    r = run_with_path([sys.executable, "grader/runtime/stack.py", "extras"], [], TC_STACK="cuda12")
    assert r.stdout.strip() == "cuda12"
    r = run_with_path([sys.executable, "grader/runtime/stack.py", "extras"], [], TC_STACK="cuda9")
    assert r.returncode == 2 and "cuda9" in r.stderr


def test_stack_script_needs_only_the_standard_library(tmp_path):
    """course.sh runs it with the system Python before anything is installed."""
    r = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "grader/runtime/stack.py"), "explain"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
