import shutil

import pytest

if shutil.which("g++") is None:  # pragma: no cover - CI images have g++
    pytest.skip("the CPU emulator needs g++", allow_module_level=True)
