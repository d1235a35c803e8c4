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


@pytest.fixture(scope="session")
def redteam(tmp_path_factory):
    """ONE course for the red team (tests/test_cheats.py, tests/test_cheats_runtime.py): every
    cheat handed in and graded by real nbgrader, once a session (tests/redteam.py). Under
    pytest-xdist both files are one group (xdist_group "redteam"), so one worker builds it."""
    import redteam

    return redteam.build_course(tmp_path_factory)


# The modules whose fixtures grade whole courses through nbgrader, costliest first (seconds on
# the 2-core CI machine). CI runs the suite on two pytest-xdist workers (.ci/run: -n 2 --dist
# loadgroup): these start first, so that the many short modules fill in around them.
HEAVY = ["test_class_workflow", "test_cheats", "test_cheats_runtime", "test_term", "test_machine_safety",
         "test_cohort", "test_instructor_guide", "test_colab_setup"]


# Modules of many independent tests (no module fixture, no shared state) that together take
# minutes: their tests go to whichever worker is free, one by one, and even out the end of a run.
SPREAD = ["test_compile"]


def _stem(item) -> str:
    return item.nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")


def _group_by_module(items):
    """Under --dist loadgroup a test without a group would be sent alone, and its module's
    fixtures (a compiled kernel, a graded course) built again on the other worker: so every
    test is grouped, by its module unless it names a group that spans modules (or its module
    is in SPREAD)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and _stem(item) not in SPREAD:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _heavy_first(items):
    def rank(item):
        stem = _stem(item)
        return HEAVY.index(stem) if stem in HEAVY else len(HEAVY) + (stem in SPREAD)

    items[:] = sorted(items, key=rank)  # stable: a module's tests keep their order


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    _heavy_first(items)
    _group_by_module(items)
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
