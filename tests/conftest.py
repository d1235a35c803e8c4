import os

import pytest

# Notebook kernels started by the tests inherit this: widgets render statically headless
# (grader/classroom/headless.py explains the hang it avoids).
os.environ.setdefault("TC_HEADLESS", "1")

from grader.runtime.device import has_gpu


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
