import os

import pytest

# Notebook kernels started by the tests inherit this: widgets render statically headless
# (grader/classroom/headless.py explains the hang it avoids).
os.environ.setdefault("TC_HEADLESS", "1")

from grader.runtime.device import has_gpu


@pytest.fixture
def nvrtc_of():
    """nvrtc_of("cuda12") -> that stack's NVRTC; skips when it is not installed, unless CI
    asks to prove it (TC_REQUIRE_NVRTC12=1, set by .ci/run: the test extra installs it)."""
    from grader.runtime import nvrtc

    def get(stack: str):
        nv = nvrtc.load(stack)
        if nv is None:
            if stack == "cuda12" and os.environ.get("TC_REQUIRE_NVRTC12") == "1":
                pytest.fail("NVRTC 12 is not installed, and CI must prove the CUDA 12 compiles: "
                            "pip install -e '.[nvrtc12]'")
            pytest.skip(f"the {stack} stack's NVRTC is not installed (pip install -e '.[nvrtc12]' for CUDA 12)")
        return nv
    return get


def pytest_collection_modifyitems(config, items):
    gpu = has_gpu()
    # On CPU the class-workflow test autogrades every solution and student copy, which
    # executes each notebook top to bottom: running them again here would double CI time.
    autograding = any(i.nodeid.startswith("tests/test_class_workflow.py") for i in items)
    covered = pytest.mark.skip(reason="executed by tests/test_class_workflow.py (nbgrader autograde)")
    no_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (none found by CuPy)")
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(no_gpu)
        if autograding and not gpu and "test_notebook_runs_top_to_bottom" in item.nodeid:
            item.add_marker(covered)
