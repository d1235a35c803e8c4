"""The header finder, on each layout a machine may have: CUDA 13 wheels (one folder), CUDA 12
wheels (runtime + nvcc's crt/), a toolkit."""
from pathlib import Path

import pytest

from grader.runtime.errors import HeadersNotFound
from grader.runtime.headers import REQUIRED, candidate_dirs, resolve


def make(root: Path, headers) -> Path:
    for h in headers:
        p = root / h
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("// stub\n")
    return root


ALL = list(REQUIRED)
NO_CRT = [h for h in ALL if not h.startswith("crt/")]


def test_complete_toolkit_wins(tmp_path):
    pip = make(tmp_path / "pip", NO_CRT)
    toolkit = make(tmp_path / "toolkit", ALL)
    assert resolve([pip, toolkit]) == [toolkit]


def test_first_complete_folder_in_order(tmp_path):
    a = make(tmp_path / "a", ALL)
    b = make(tmp_path / "b", ALL)
    assert resolve([a, b]) == [a]


def test_split_wheels_are_combined(tmp_path):
    runtime = make(tmp_path / "runtime", NO_CRT)
    crt = make(tmp_path / "crt", ["crt/mma.h"])
    assert resolve([runtime, crt]) == [runtime, crt]


def test_missing_crt_names_header_and_wheel(tmp_path):
    runtime = make(tmp_path / "runtime", NO_CRT)
    with pytest.raises(HeadersNotFound) as e:
        resolve([runtime, tmp_path / "absent"])
    text = str(e.value)
    assert "crt/mma.h" in text and "nvidia-cuda-crt" in text and '.[cuda13]' in text
    assert "cuda_fp16.h" not in text.split("\n")[0]  # only what is missing is named
    assert str(tmp_path / "absent") in text  # says where it looked


def test_nothing_found_lists_everything(tmp_path):
    with pytest.raises(HeadersNotFound) as e:
        resolve([tmp_path / "x"])
    for h in ALL:
        assert h in str(e.value)
    assert "nvidia-cuda-runtime" in str(e.value)


def test_candidates_order(tmp_path):
    dirs = candidate_dirs(env={"CUDA_PATH": str(tmp_path / "cuda")}, paths=[str(tmp_path / "site")])
    assert dirs[0] == tmp_path / "cuda" / "include"
    assert dirs[1] == tmp_path / "site" / "nvidia" / "cu13" / "include"
    assert dirs[-1] == Path("/usr/local/cuda/include")


def test_this_machine_has_headers():
    from grader.runtime.headers import include_dirs

    dirs = include_dirs()
    assert any((Path(d) / "crt" / "mma.h").is_file() for d in dirs)


def test_cuda12_wheel_layout(tmp_path):
    """cu12: mma.h in nvidia/cuda_runtime/include, crt/mma.h only in nvidia/cuda_nvcc/include."""
    site = tmp_path / "site"
    runtime = make(site / "nvidia" / "cuda_runtime" / "include", NO_CRT)
    nvcc = make(site / "nvidia" / "cuda_nvcc" / "include", ["crt/mma.h"])
    make(site / "nvidia" / "cu13" / "include", ALL)  # the other stack's headers: never mixed in
    dirs = candidate_dirs(env={}, paths=[str(site)], stack="cuda12")
    assert resolve(dirs, stack="cuda12") == [runtime, nvcc]


def test_cuda12_missing_crt_names_the_nvcc_wheel(tmp_path):
    site = tmp_path / "site"
    make(site / "nvidia" / "cuda_runtime" / "include", NO_CRT)
    with pytest.raises(HeadersNotFound) as e:
        resolve(candidate_dirs(env={}, paths=[str(site)], stack="cuda12"), stack="cuda12")
    text = str(e.value)
    assert "CUDA 12 headers" in text and "nvidia-cuda-nvcc-cu12" in text and ".[cuda12]" in text


def test_toolkit_of_the_other_major_is_skipped(tmp_path):
    cuda12 = tmp_path / "cuda12"
    make(cuda12 / "include", ALL)
    (cuda12 / "include" / "cuda.h").write_text("#define CUDA_VERSION 12040\n")
    assert cuda12 / "include" not in candidate_dirs(env={"CUDA_PATH": str(cuda12)}, paths=[], stack="cuda13")
    assert candidate_dirs(env={"CUDA_PATH": str(cuda12)}, paths=[], stack="cuda12")[0] == cuda12 / "include"


def test_this_machine_has_cuda12_headers_when_nvrtc12_is_installed():
    from grader.runtime import nvrtc
    from grader.runtime.headers import include_dirs

    if nvrtc.load("cuda12") is None:
        pytest.skip("NVRTC 12 not installed (pip install -e '.[nvrtc12]')")
    dirs = include_dirs("cuda12")
    assert any((Path(d) / "crt" / "mma.h").is_file() for d in dirs)
    assert any((Path(d) / "mma.h").is_file() for d in dirs)


def test_nvrtc_found_on_the_library_path_after_the_wheels(tmp_path):
    """A cluster's `module load cuda/12.x` (or .ci/gpu-cuda12's carried NVRTC) sits on
    LD_LIBRARY_PATH: found after the pinned pip wheel, before a toolkit."""
    from grader.runtime import nvrtc
    from grader.runtime.stack import STACKS

    found = nvrtc.candidates(STACKS["cuda12"], paths=[tmp_path / "site"],
                             env={"LD_LIBRARY_PATH": f"{tmp_path}/mod/lib64:", "CUDA_PATH": str(tmp_path / "tk")})
    assert found[:3] == [tmp_path / "site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
                         tmp_path / "mod/lib64/libnvrtc.so.12", tmp_path / "tk/lib64/libnvrtc.so.12"]


def test_headers_beside_each_nvrtc_layout(tmp_path):
    from grader.runtime.nvrtc import headers_beside

    site = tmp_path / "nvidia"
    assert headers_beside(site / "cuda_nvrtc/lib/libnvrtc.so.12") == [site / "cuda_runtime/include",
                                                                      site / "cuda_nvcc/include"]
    assert headers_beside(site / "cu13/lib/libnvrtc.so.13") == [site / "cu13/include"]
    assert headers_beside(tmp_path / "cuda-12.4/lib64/libnvrtc.so.12") == [tmp_path / "cuda-12.4/include"]
