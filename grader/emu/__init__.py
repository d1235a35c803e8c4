"""The CPU emulator backend ("emu"): runs the same CUDA C++ kernel source a student writes
for CuPy on the CPU, slowly but faithfully, with friendlier diagnostics than a GPU.

    mod = compile_module(src, options=("-DTILE=32",))
    mod.kernels            # {"sgemm": [Param(name="A", ctype="const float*", ...), ...]}
    res = mod.launch("sgemm", grid, block, [A, B, C, M, N, K])   # C updated in place
    res.stdout, res.seconds

See README.md in this folder for how it works and what it does not support.
May import grader.runtime only; runtime reaches it through `backend.load(..., "emu")`.
"""
from grader.emu.launch import EmuModule, EmuResult, compile_module
from grader.emu.translate import Param

__all__ = ["compile_module", "EmuModule", "EmuResult", "Param"]
