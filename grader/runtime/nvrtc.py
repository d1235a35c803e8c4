"""NVRTC through ctypes: any installed NVRTC, whichever CuPy is installed.

CuPy binds the one NVRTC of its own CUDA version. The course needs to pick: NVRTC 13 for the
CUDA 13 stack, NVRTC 12 for the CUDA 12 stack and for Volta (sm_70, which NVRTC 13 cannot
target), both on one machine in CI. NVRTC works without a GPU or driver (FACTS.md).
"""
from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from grader.runtime.stack import STACKS, Stack


try:
    _uselocale = ctypes.CDLL(None).uselocale  # POSIX; the course runs on Linux
    _uselocale.argtypes, _uselocale.restype = [ctypes.c_void_p], ctypes.c_void_p
except (OSError, TypeError, AttributeError):  # pragma: no cover - not a POSIX libc
    _uselocale = None


class _KeepLocale:
    """NVRTC 12 switches the calling thread to the "C" locale (uselocale) and leaves it there,
    which turns Python's default text encoding into ASCII for the rest of the process: put the
    thread's locale back after every call."""

    def __enter__(self):
        self.saved = _uselocale(None) if _uselocale else None

    def __exit__(self, *exc):
        if _uselocale:
            _uselocale(self.saved)


class NvrtcFailed(Exception):
    """A compile that NVRTC rejected; `log` holds its messages."""

    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


def _paths() -> list[Path]:
    """Folders that may hold pip's nvidia/ wheels: this Python's path, in order."""
    return [Path(p) for p in sys.path if p and Path(p).is_dir()]


def candidates(stack: Stack, paths: list[Path] | None = None, env: dict | None = None) -> list[Path]:
    """Where `stack`'s libnvrtc may be: the pip wheels first (the pinned version), then the
    library path (a cluster's `module load cuda`; .ci/gpu-cuda12's carried NVRTC), then a
    toolkit (CUDA_PATH, CUDA_HOME, /usr/local/cuda)."""
    env = os.environ if env is None else env
    found = [p / rel for p in (_paths() if paths is None else paths) for rel in stack.nvrtc]
    so = f"libnvrtc.so.{stack.cuda}"
    found += [Path(d) / so for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    for root in [env.get("CUDA_PATH"), env.get("CUDA_HOME"), "/usr/local/cuda"]:
        if root:
            found += [Path(root) / "lib64" / so, Path(root) / "lib" / so]
    return found


def headers_beside(lib: Path) -> list[Path]:
    """The include folders that come with the libnvrtc at `lib`: the sibling wheels' for pip's
    layout (nvidia/cuda_nvrtc/lib -> nvidia/cuda_runtime/include, nvidia/cuda_nvcc/include;
    nvidia/cu13/lib -> nvidia/cu13/include), a toolkit's include/ for lib64/."""
    lib = Path(lib).parent
    if lib.parent.name == "cuda_nvrtc":
        return [lib.parent.parent / "cuda_runtime" / "include", lib.parent.parent / "cuda_nvcc" / "include"]
    return [lib.parent / "include"]


class Nvrtc:
    """One loaded libnvrtc."""

    def __init__(self, path: Path, stack: Stack):
        self.path, self.stack = Path(path), stack
        # NVRTC 13 dlopens its builtins by name, which finds them only on the library path or
        # already loaded: load them first from the same folder (NVRTC 12 finds its own).
        for b in sorted(self.path.parent.glob(f"libnvrtc-builtins.so.{stack.cuda}*")):
            ctypes.CDLL(str(b))
        self._lib = lib = ctypes.CDLL(str(path))  # RTLD_LOCAL: NVRTC 12 and 13 side by side
        vp = ctypes.c_void_p
        for name, args in {
            "nvrtcVersion": [ctypes.POINTER(ctypes.c_int)] * 2,
            "nvrtcCreateProgram": [ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                   ctypes.c_void_p, ctypes.c_void_p],
            "nvrtcCompileProgram": [vp, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            "nvrtcGetProgramLogSize": [vp, ctypes.POINTER(ctypes.c_size_t)],
            "nvrtcGetProgramLog": [vp, ctypes.c_char_p],
            "nvrtcGetPTXSize": [vp, ctypes.POINTER(ctypes.c_size_t)],
            "nvrtcGetPTX": [vp, ctypes.c_char_p],
            "nvrtcGetCUBINSize": [vp, ctypes.POINTER(ctypes.c_size_t)],
            "nvrtcGetCUBIN": [vp, ctypes.c_char_p],
            "nvrtcDestroyProgram": [ctypes.POINTER(vp)],
            "nvrtcGetNumSupportedArchs": [ctypes.POINTER(ctypes.c_int)],
            "nvrtcGetSupportedArchs": [ctypes.POINTER(ctypes.c_int)],
        }.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)
        n = ctypes.c_int()
        lib.nvrtcGetNumSupportedArchs(ctypes.byref(n))
        archs = (ctypes.c_int * n.value)()
        lib.nvrtcGetSupportedArchs(archs)
        self.archs = tuple(archs)

    def __repr__(self) -> str:
        return f"NVRTC {self.version[0]}.{self.version[1]} ({self.path})"

    def _text(self, prog, size_fn, get_fn) -> bytes:
        size = ctypes.c_size_t()
        size_fn(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        get_fn(prog, buf)
        return buf.raw[: size.value]

    def compile(self, source: str, options: list[str], filename: str, output: str = "ptx") -> "Output":
        """Compile once. output: "ptx", "cubin" (needs -arch=sm_XX) or "log" (only the log).
        Raises NvrtcFailed with the log when NVRTC rejects the source."""
        with _KeepLocale():
            return self._compile(source, options, filename, output)

    def _compile(self, source: str, options: list[str], filename: str, output: str) -> "Output":
        lib = self._lib
        prog = ctypes.c_void_p()
        rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), filename.encode(), 0, None, None)
        if rc != 0:
            raise NvrtcFailed(f"nvrtcCreateProgram failed ({rc})")
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            rc = lib.nvrtcCompileProgram(prog, len(options), opts)
            log = self._text(prog, lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog).rstrip(b"\x00").decode(
                errors="replace")
            if rc != 0:
                raise NvrtcFailed(log or f"NVRTC error {rc}")
            code = b""
            if output == "ptx":
                code = self._text(prog, lib.nvrtcGetPTXSize, lib.nvrtcGetPTX).rstrip(b"\x00")
            elif output == "cubin":
                code = self._text(prog, lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN)
            return Output(log, code)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


@dataclass
class Output:
    log: str
    code: bytes  # PTX text (bytes) or a cubin; empty for output="log"


@lru_cache(maxsize=None)
def load(stack_name: str) -> Nvrtc | None:
    """The NVRTC of `stack_name` ("cuda12" | "cuda13"), or None when it is not installed."""
    stack = STACKS[stack_name]
    for path in candidates(stack):
        try:  # a folder on sys.path may be unreadable here (inside the sandbox): not a candidate then
            if not path.is_file():
                continue
            return Nvrtc(path, stack)
        except OSError:
            continue
    return None


def available() -> list[Nvrtc]:
    """Every installed NVRTC, the stack CuPy uses first."""
    from grader.runtime.stack import in_use

    first = in_use()
    order = ([first.name] if first else []) + [n for n in STACKS if not first or n != first.name]
    return [nv for nv in (load(n) for n in order) if nv is not None]
