"""No code of a kernel module runs but what its kernel calls (grader/emu/load_time.py). NVRTC leaves
out a device function no kernel calls; g++ kept it, and the runner ran it on load when it was a
constructor: a kernel read the tensor-core probe's key that way (session 13's red team). Every way
g++ has to run code on load or unload is refused, and honest kernels still build."""
from __future__ import annotations

import pytest

from grader.emu import compile_module
from grader.runtime.errors import CompileError

KERNEL = 'extern "C" __global__ void k(float* out) { out[threadIdx.x] = 1.f; }\n'
HOOK = "__device__ void hook() { }\n"
WAYS = {
    "constructor": "__attribute__((constructor)) " + HOOK,
    "destructor": "__attribute__((destructor)) " + HOOK,
    "c++11 attribute": "[[gnu::constructor]] " + HOOK,
    "priority": "__attribute__((constructor(101))) " + HOOK,
    "pointer in .init_array": HOOK + '__attribute__((section(".init_array"), used)) static void (*p)() = hook;\n',
    "pointer in .fini_array": HOOK + '__attribute__((section(".fini_array"), used)) static void (*p)() = hook;\n',
    "ifunc": 'extern "C" __device__ void* pick() { return 0; }\n__device__ void f() __attribute__((ifunc("pick")));\n',
    # named like the C runtime's own entry, to pass for it
    "named frame_dummy": 'extern "C" __attribute__((constructor)) __device__ void frame_dummy() { }\n',
}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_code_that_runs_on_load_is_refused(way):
    with pytest.raises(CompileError, match="loaded or unloaded"):
        compile_module(WAYS[way] + KERNEL)


def test_a_kernel_with_device_functions_and_globals_builds():
    mod = compile_module("__device__ float scale = 2.f;\n__device__ float twice(float x) { return scale * x; }\n"
                         + KERNEL.replace("1.f", "twice(1.f)"))
    assert "k" in mod.kernels
