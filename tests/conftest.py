import pytest

from grader.device import has_gpu


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none found by CuPy)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
