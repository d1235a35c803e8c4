"""The emulator's fragment layouts equal what an H200 (sm_90) measured for every fragment kind:
kernels/fragment_maps_sm90.json was written by `python -m grader.bench.conv` on the GPU, and
here the same probe kernels (kernels/fragment_probe.cu) run on the emulator."""
import numpy as np
import pytest

from grader.problems import fragments
from grader.runtime import kernels
from grader.runtime.backend import EmuModule

if not fragments.MEASURED_JSON.exists():  # pragma: no cover
    pytest.skip("no recorded sm_90 maps", allow_module_level=True)

MEASURED = fragments.measured_maps()


@pytest.fixture(scope="module")
def module():
    return EmuModule(kernels.source("fragment_probe"))


@pytest.mark.parametrize("kind", sorted(MEASURED))
def test_emulator_map_equals_sm90(module, kind):
    k = fragments.KINDS[kind]
    held = np.full(MEASURED[kind].shape, -1, dtype=np.int32)
    module.launch(k.kernel, (1,), (32,), [fragments.probe_input(kind), held])
    assert (held == MEASURED[kind]).all(), (
        f"{kind}: first differing (lane, i) {tuple(np.argwhere(held != MEASURED[kind])[0])}")
