"""The `gpu` backend: CuPy RawModule with the course's include path, mapped compile errors,
checked launches and per-kernel resource usage.

Acting as an older arch (TC_ARCH, or `arch=`), the kernel is compiled by the course's NVRTC as
PTX for that arch and loaded through CuPy: the driver JIT-compiles it for the GPU in hand, so
an H100 runs exactly the code a T4 (compute_75) or a V100 (compute_70) would be given.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable, Sequence

from grader.runtime.compile import BASE_OPTIONS, KernelResources, compile_error
from grader.runtime.device import limits
from grader.runtime.headers import include_options
from grader.runtime.launch import check_geometry, params_of, prepare
from grader.runtime.signature import parse_kernels

SHARED_DEFAULT_MAX = 48 * 1024


class GpuModule:
    """Compiles at construction (so errors surface at once) and launches kernels by name."""

    backend = "gpu"

    @property
    def xp(self):
        """The array module whose arrays this backend's kernels take."""
        import cupy

        return cupy

    def __init__(self, source: str, options: Sequence[str] = (), arch: int | None = None):
        import cupy

        from grader.runtime.device import device_info

        self.source = source
        self.kernels = parse_kernels(source)
        self._functions: dict[str, object] = {}
        info = device_info()
        target = arch or (info.cc if info is not None else None)
        self.arch = target
        if info is not None and target is not None and target != info.native_cc:
            from grader.runtime.compile import nvrtc_compile

            ptx = nvrtc_compile(source, arch=target, options=tuple(options), resources=False).ptx
            self._ptx_dir = tempfile.TemporaryDirectory(prefix="tc-ptx-")  # lives as long as the module
            path = Path(self._ptx_dir.name) / "kernel.ptx"
            path.write_text(ptx)
            self._module = cupy.RawModule(path=str(path))
            return
        opts = (*BASE_OPTIONS, *include_options(), *options)
        self._module = cupy.RawModule(code=source, options=opts, backend="nvrtc")
        try:
            self._module.compile()
        except cupy.cuda.compiler.CompileException as e:
            raise compile_error(e.get_message(), source, filename=".cu", arch=target) from None

    def function(self, kernel: str):
        params_of(self.kernels, kernel)
        if kernel not in self._functions:
            self._functions[kernel] = self._module.get_function(kernel)
        return self._functions[kernel]

    def bind(self, kernel: str, grid, block, args: Sequence, shared_mem: int = 0) -> Callable[[], None]:
        """Check the launch once and return a function that launches it (for timing loops)."""
        fn = self.function(kernel)
        g, b = check_geometry(grid, block, shared_mem, limits())
        converted = tuple(prepare(kernel, self.kernels[kernel], args, array_module="cupy"))
        if shared_mem > SHARED_DEFAULT_MAX:
            fn.max_dynamic_shared_size_bytes = shared_mem  # opt in above 48 KB
        return lambda: fn(g, b, converted, shared_mem=shared_mem)

    def launch(self, kernel: str, grid, block, args: Sequence, shared_mem: int = 0) -> None:
        self.bind(kernel, grid, block, args, shared_mem)()

    def resources(self, kernel: str) -> KernelResources:
        fn = self.function(kernel)
        return KernelResources(registers=fn.num_regs, shared_bytes=fn.shared_size_bytes,
                               stack_bytes=fn.local_size_bytes, spill_stores=-1, spill_loads=-1)
