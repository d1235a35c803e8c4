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
    """ONE course for the red team (tests/checking/test_cheats.py, tests/checking/test_cheats_runtime.py,
    tests/classroom/test_handin_guards.py): every
    cheat handed in and graded by real nbgrader, once a session (tests/redteam.py). Under
    pytest-xdist both files are one work unit (SHARED below), so one worker builds it."""
    import redteam

    return redteam.build_course(tmp_path_factory)


# CI runs the suite on two pytest-xdist workers (.ci/run: -n 2 --dist loadgroup), scheduled by
# work units (pytest_xdist_make_scheduler below): a unit runs whole on one worker, so a module's
# fixtures (a compiled kernel, a graded course) are built once.
# - The modules whose fixtures grade whole courses through nbgrader go first, costliest first
#   (seconds on the 2-core CI machine), so that the many short modules fill in around them.
HEAVY = ["test_class_workflow", "test_cheats", "test_cheats_runtime", "test_handin_guards", "test_term",
         "test_cohort", "test_cohort_redteam", "test_handin_extras", "test_readme_commands", "test_term_exchange", "test_term_actions",
         "test_instructor_guide",
         "test_handout", "test_colab_setup", "test_add_exercise"]
# - Modules whose fixture the xdist controller starts at once (tests/early.py: mostly waiting) go
#   after the others (but before SPREAD), so that what it made is ready when their tests run.
EARLY = ["test_machine_safety"]
# - Modules that share one session fixture are one unit: the red team's course (tests/redteam.py).
SHARED = {"test_cheats": "redteam", "test_cheats_runtime": "redteam", "test_handin_guards": "redteam",
          "test_outputs": "redteam", "test_browser_outputs": "redteam"}
# - Modules of many independent tests (no module fixture, no shared state) that together take
#   minutes: each test is a unit of its own, sent to whichever worker is free, last, so they even
#   out the end of a run.
SPREAD = ["test_compile"]


# - Modules that tell a term's story in dozens of small nbgrader commands (export, db, feedback,
#   one student's autograde): there nbgrader's own start-up (about 2 s of CPU each) was much of the
#   cost, so their commands run as forks of one warm nbgrader (TC_NBGRADER_FORK,
#   grader.classroom.workflow.nbgrader), as the cohort runs them. The red team, the class workflow
#   and the machine-safety runs keep a fresh process per command, as the guide's instructor has.
FORKED = ["test_term", "test_term_actions", "test_term_exchange", "test_term_regrade", "test_term_cohort",
          "test_term_concurrent", "test_term_units"]


@pytest.fixture(scope="module", autouse=True)
def _warm_nbgrader(request):
    with pytest.MonkeyPatch.context() as mp:
        if _stem(request.module.__file__) in FORKED and "TC_NBGRADER_FORK" not in os.environ:
            mp.setenv("TC_NBGRADER_FORK", "1")
        yield


def _stem(nodeid: str) -> str:
    return nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: its module, its SHARED group, or itself (SPREAD)."""
    nodeid = nodeid.split("@")[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid
    stem = _stem(nodeid)
    if stem in SHARED:
        return SHARED[stem]
    return nodeid if stem in SPREAD else nodeid.split("::")[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` by work_unit(). Not xdist's own loadgroup: its xdist_group marks work by
    renaming each test (item._nodeid), which pytest 9 no longer reads, so every test went alone
    to either worker and each heavy fixture was built on both (checked with pytest 9.2 and
    pytest-xdist 3.8.0)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class CourseScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # the collection's order (heavy first), not xdist's by size
    return CourseScheduling(config, log)


def _heavy_first(items):
    def rank(item):
        stem = _stem(item.nodeid)
        if stem in HEAVY:
            return HEAVY.index(stem)
        return len(HEAVY) + (0.5 if stem in EARLY else stem in SPREAD)

    items[:] = sorted(items, key=rank)  # stable: a module's tests keep their order


def pytest_collection_modifyitems(config, items):
    _heavy_first(items)
    gpu = has_gpu()
    # On CPU the class-workflow test autogrades every solution and student copy, which
    # executes each notebook top to bottom: running them again here would double CI time.
    autograding = any(i.nodeid.startswith("tests/classroom/test_class_workflow.py") for i in items)
    covered = pytest.mark.skip(reason="executed by tests/classroom/test_class_workflow.py (nbgrader autograde)")
    no_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (none found by CuPy)")
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(no_gpu)
        if autograding and not gpu and "test_notebook_runs_top_to_bottom" in item.nodeid:
            item.add_marker(covered)


class _GpuPart:
    """TC_GPU_PART=k/n keeps every n-th GPU test from the k-th (1-based): .ci/gpu-accept spreads
    `pytest -m gpu` over a machine's GPUs, one part each, as it outgrew one 10-minute call
    (2026-11-27: 57 % of it in 540 s). Item by item, so a file's long tests fall into every part."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        k, n = (int(x) for x in os.environ["TC_GPU_PART"].split("/"))
        gpu = [i for i in items if "gpu" in i.keywords]
        keep = set(map(id, gpu[k - 1::n]))
        config.hook.pytest_deselected(items=[i for i in items if id(i) not in keep])
        items[:] = [i for i in items if id(i) in keep]


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # not an xdist worker: the controller, or a plain run
        import early

        config.pluginmanager.register(early.Controller(config), "tc-early")
    if os.environ.get("TC_GPU_PART"):
        config.pluginmanager.register(_GpuPart(), "tc-gpu-part")
