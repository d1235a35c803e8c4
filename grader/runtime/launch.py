"""Check a kernel launch before it happens, and convert its arguments to exact C types.

On a GPU a wrong argument does not fail: a float32 array read as `half*` or a Python int
passed as 64 bits where the kernel takes `int` just gives garbage. Every launch of the
course goes through `prepare`, which names the offending argument instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from grader.runtime.errors import LaunchArgumentError
from grader.runtime.signature import Param


@dataclass(frozen=True)
class Limits:
    """Launch limits of a device. The defaults are sm_80/sm_90 values (CUDA programming
    guide, "Technical Specifications per Compute Capability")."""

    max_threads_per_block: int = 1024
    max_block: tuple[int, int, int] = (1024, 1024, 64)
    max_grid: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_default: int = 48 * 1024  # without opting in
    max_shared_optin: int = 227 * 1024  # sm_90; sm_80: 163 KB
    regs_per_sm: int = 64 * 1024  # 32-bit registers per SM (every arch the course targets, sm_70 to sm_90)
    reg_alloc_unit: int = 256  # registers are allotted per warp in units of 256


def dim3(value: Any, what: str) -> tuple[int, int, int]:
    """Normalise a grid or block given as int or 1-3 ints to a 3-tuple, or say what is wrong."""
    if isinstance(value, (int, np.integer)):
        value = (int(value),)
    try:
        dims = tuple(value)
    except TypeError:
        raise LaunchArgumentError(f"{what} must be an int or a tuple of 1 to 3 ints, not {value!r}",
                                  argument=what) from None
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise LaunchArgumentError(f"{what} must be an int or a tuple of 1 to 3 ints, not {value!r}",
                                  argument=what)
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if min(dims) < 1:
        raise LaunchArgumentError(
            f"{what} {dims} has a dimension below 1: every dimension must be at least 1",
            argument=what, hint="A size computed as N // 16 is 0 when N < 16: round up with "
                                "(N + 15) // 16.")
    return dims


def check_geometry(grid, block, shared_mem: int, limits: Limits = Limits()):
    g, b = dim3(grid, "grid"), dim3(block, "block")
    for axis, (n, top) in enumerate(zip(b, limits.max_block)):
        if n > top:
            raise LaunchArgumentError(f"block dimension {'xyz'[axis]} is {n}, above the limit {top}",
                                      argument="block")
    threads = b[0] * b[1] * b[2]
    if threads > limits.max_threads_per_block:
        raise LaunchArgumentError(
            f"block {b} has {threads} threads, above the limit of {limits.max_threads_per_block} per block",
            argument="block", hint="Use fewer threads per block and more blocks.")
    for axis, (n, top) in enumerate(zip(g, limits.max_grid)):
        if n > top:
            raise LaunchArgumentError(f"grid dimension {'xyz'[axis]} is {n}, above the limit {top}",
                                      argument="grid",
                                      hint="Put the largest dimension on x: it allows 2^31-1 blocks.")
    if not isinstance(shared_mem, (int, np.integer)) or shared_mem < 0:
        raise LaunchArgumentError(f"shared_mem must be a number of bytes >= 0, not {shared_mem!r}",
                                  argument="shared_mem")
    if shared_mem > limits.max_shared_optin:
        raise LaunchArgumentError(
            f"shared_mem is {shared_mem} bytes, above this GPU's limit of {limits.max_shared_optin} "
            "bytes of dynamic shared memory per block", argument="shared_mem")
    return g, b


def block_registers(registers: int, threads: int, limits: Limits = Limits()) -> int:
    """The registers a block of `threads` is allotted at `registers` per thread: whole warps, each
    rounded up to the allocation unit. Above limits.regs_per_sm a GPU refuses the launch ("too
    many resources requested for launch"); 255 per thread (the most ptxas gives) x 256 threads fit."""
    return -(-threads // 32) * warp_registers(registers, limits.reg_alloc_unit)


def warp_registers(registers: int, unit: int = Limits.reg_alloc_unit) -> int:
    """The registers one warp is allotted at `registers` per thread: 32 of them, rounded up to the unit."""
    return -(-registers * 32 // unit) * unit


def _is_array(x) -> bool:
    """A NumPy or CuPy array (not a NumPy scalar, which also has a dtype)."""
    return isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__")


def _convert_scalar(p: Param, value):
    dtype = p.dtype
    if dtype is None:
        raise LaunchArgumentError(f"parameter '{p.name}' has type `{p.ctype}`, which the course "
                                  "cannot pass from Python", argument=p.name)
    if _is_array(value) and getattr(value, "ndim", 1) > 0:
        raise LaunchArgumentError(
            f"argument '{p.name}' is an array but the kernel declares `{p.ctype} {p.name}` (a single value)",
            argument=p.name, hint=f"Pass a number, e.g. {p.name}=A.shape[0].")
    if isinstance(value, (bool, np.bool_)) and dtype != np.bool_:
        raise LaunchArgumentError(f"argument '{p.name}' is a bool but the kernel takes `{p.ctype}`",
                                  argument=p.name)
    if np.issubdtype(dtype, np.integer):
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise LaunchArgumentError(
                f"argument '{p.name}' is {value!r} but the kernel takes `{p.ctype}` (an integer)",
                argument=p.name, hint="Use // for integer division in Python.")
        if not isinstance(value, (int, float, np.integer, np.floating)):
            raise LaunchArgumentError(f"argument '{p.name}' is {type(value).__name__}, not a number",
                                      argument=p.name)
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise LaunchArgumentError(
                f"argument '{p.name}' = {int(value)} does not fit in `{p.ctype}` "
                f"({info.min}..{info.max})", argument=p.name)
        return dtype.type(int(value))
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise LaunchArgumentError(f"argument '{p.name}' is {type(value).__name__}, not a number",
                                  argument=p.name)
    return dtype.type(value)


def params_of(kernels: dict[str, list[Param]], kernel: str) -> list[Param]:
    """The parameters of `kernel`, or an error listing the kernels the source does declare."""
    if kernel not in kernels:
        known = ", ".join(kernels) or "none"
        raise LaunchArgumentError(
            f"no kernel named '{kernel}' (kernels found: {known})", argument="kernel",
            hint='Declare it as extern "C" __global__ void NAME(...) so its name is not mangled.')
    return kernels[kernel]


def prepare(kernel: str, params: Sequence[Param], args: Sequence, *, array_module: str = "cupy"):
    """Check `args` against the kernel's parameters; return them with scalars converted to
    the exact NumPy scalar type of each C parameter.

    array_module: "cupy" (GPU: arrays must be CuPy arrays) or "numpy" (emulator)."""
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise LaunchArgumentError(
            f"{kernel} takes {len(params)} arguments ({names}); got {len(args)}",
            argument=None, hint="Pass the arguments in the order of the kernel's signature.")
    out = []
    for p, a in zip(params, args):
        if p.is_pointer:
            if not _is_array(a):
                raise LaunchArgumentError(
                    f"argument '{p.name}' must be an array for `{p.ctype} {p.name}`, "
                    f"not {type(a).__name__}", argument=p.name)
            module = type(a).__module__.split(".")[0]
            if array_module == "cupy" and module == "numpy":
                raise LaunchArgumentError(
                    f"argument '{p.name}' is a NumPy array in host memory; the kernel needs a "
                    "CuPy array on the GPU", argument=p.name,
                    hint=f"Copy it to the GPU first: {p.name} = cupy.asarray({p.name}).")
            if array_module == "numpy" and module == "cupy":
                a = a.get()
            want = p.dtype
            if want is not None and a.dtype != want:
                raise LaunchArgumentError(
                    f"argument '{p.name}' has dtype {a.dtype} but the kernel declares "
                    f"`{p.ctype} {p.name}`, which needs {want}", argument=p.name,
                    hint=f"Convert it: {p.name}.astype(numpy.{want}).")
            if not a.flags.c_contiguous:
                raise LaunchArgumentError(
                    f"argument '{p.name}' is not C-contiguous (a transposed or sliced view?); the "
                    "kernel indexes it as one row-major block", argument=p.name,
                    hint=f"Pass a contiguous copy: ascontiguousarray({p.name}).")
            out.append(a)
        else:
            out.append(_convert_scalar(p, a))
    return out
