"""One way to load and launch a kernel, whichever backend runs it.

`gpu` is CuPy on a CUDA device; `emu` is the course's CPU emulator (grader.emu), which runs
the same source unchanged; `auto` picks `gpu` when a device is present.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

import re

from grader.runtime.device import has_gpu
from grader.runtime.errors import CompileError, CourseError, NoGPU

BACKENDS = ("auto", "gpu", "emu")


def pick(backend: str = "auto") -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    if backend == "auto":
        return "gpu" if has_gpu() else "emu"
    if backend == "gpu" and not has_gpu():
        raise NoGPU("backend='gpu' was asked for, but CuPy sees no CUDA device here.")
    return backend


class EmuModule:
    """The emulator behind the same interface as GpuModule (NumPy arrays instead of CuPy)."""

    backend = "emu"
    xp = np

    def __init__(self, source: str, options: Sequence[str] = (), arch: int | None = None):
        from grader import emu

        self.source = source
        self.options = tuple(options)
        self._registers: dict[str, int] | None = None
        self.arch = arch or 90  # the emulator acts as sm_90 unless asked for another arch
        # the arch decides the fragment layout (Volta's differs) and which fragment types exist
        arch_opt = [f"-arch=sm_{arch}"] if arch else []
        self._module = emu.compile_module(source, options=[*options, *arch_opt])
        from grader.runtime.signature import parse_kernels

        self.kernels = parse_kernels(source)
        self.last_stdout = ""

    def launch(self, kernel: str, grid, block, args: Sequence, shared_mem: int = 0,
               timeout: float = 60.0, race_check: bool = False, tc_double: bool = False, tc_key: int = 0):
        from grader.runtime.launch import Limits, check_geometry, params_of, prepare

        params = params_of(self.kernels, kernel)
        g, b = check_geometry(grid, block, shared_mem, Limits())
        self._check_registers(kernel, b[0] * b[1] * b[2])
        converted = prepare(kernel, params, args, array_module="numpy")
        result = self._module.launch(kernel, g, b, converted, shared_mem=shared_mem,
                                     timeout=timeout, race_check=race_check, tc_double=tc_double,
                                     tc_key=tc_key)
        self.last_stdout = result.stdout
        return result

    def registers(self, kernel: str) -> int | None:
        """ptxas's registers per thread of `kernel` at this arch (NVRTC, once per module), or None
        where NVRTC cannot say: what a GPU allots each thread of its launches."""
        if self._registers is None:
            from grader.runtime.compile import nvrtc_compile

            try:
                found = nvrtc_compile(self.source, arch=self.arch, options=self.options).resources
                self._registers = {k: r.registers for k, r in found.items() if r.registers}
            except (CourseError, ValueError, OSError):  # no NVRTC here, or not an arch it targets
                self._registers = {}
        return self._registers.get(kernel)

    def _check_registers(self, kernel: str, threads: int) -> None:
        """Refuse, as a GPU does, a block that needs more registers than an SM has (a 1024-thread
        block at more than 64 registers per thread): the emulator has no such limit, and ran such a
        kernel right where the GPU refuses it, so the two graded it differently."""
        from grader.runtime.errors import KernelFault
        from grader.runtime.launch import Limits, block_registers

        if threads <= 256:  # 255 registers (the most a thread gets) x 256 threads fit every SM
            return
        regs, limits = self.registers(kernel), Limits()
        if regs and block_registers(regs, threads, limits) > limits.regs_per_sm:
            raise KernelFault(
                "launch-resources",
                f"the launch asked for more registers than an SM has: {regs} registers per thread x {threads} "
                f"threads is more than {limits.regs_per_sm}: a GPU refuses such a launch ('too many resources "
                "requested for launch'), and so does the emulator",
                hint=f"Write __launch_bounds__({threads}) before the kernel, so that ptxas keeps to "
                     f"{limits.regs_per_sm // threads} registers per thread, or launch fewer threads per block.")


def load(source: str, backend: str = "auto", options: Sequence[str] = (), arch: int | None = None):
    """Compile `source` for `backend` and return a module with `.kernels` and
    `.launch(kernel, grid, block, args, shared_mem=0)`. `arch` (70, 75 ...) compiles for that
    architecture: on the GPU as PTX for an older arch, on the emulator with its fragment
    layout and feature set; None: the GPU's own (or TC_ARCH), the emulator's sm_90."""
    chosen = pick(backend)
    if chosen == "gpu":
        from grader.runtime.gpu import GpuModule

        try:
            return GpuModule(source, options, arch=arch)
        except CompileError as e:
            # "auto" on a GPU too old for this kernel (bf16/tf32/fp64 fragments, a shared-memory
            # size only sm_80 has): the lesson still runs, on the emulator, and says so in one line.
            need = needs_newer_arch(e)
            if backend != "auto" or need is None:
                raise
            try:
                module = EmuModule(source, options)
            except (CourseError, ImportError, OSError):
                raise e from None
            print(f"note: {need} ({_here()}): this runs on the course's CPU emulator instead")
            return module
    return EmuModule(source, options, arch=arch)


_NEEDS = re.compile(r"needs? (sm_\d+) or newer")


def needs_newer_arch(e: CompileError) -> str | None:
    """'needs sm_80' when a compile failed only because the target arch is too old (the hint
    of bf16/tf32/fp64 fragments, or a kernel's own #error saying so), else None."""
    m = _NEEDS.search(f"{e.hint}\n{e.message}")
    return f"needs {m[1]}" if m else None


def _here() -> str:
    from grader.runtime.device import device_info

    info = device_info()
    return f"this GPU: {info.arch}" if info else "no GPU"
