"""Find the CUDA headers that student kernels include, wherever this machine keeps them.

Each CUDA stack (grader/runtime/stack.py) keeps its pip headers in its own layout:
- CUDA 13: one folder, nvidia/cu13/include. `mma.h` and `cuda_fp16.h` come with
  nvidia-cuda-runtime, but `mma.h` includes `crt/mma.h`, which only nvidia-cuda-crt has
  (FACTS.md). A missing `crt/` is the classic "cannot open source file crt/mma.h".
- CUDA 12: nvidia/cuda_runtime/include (nvidia-cuda-runtime-cu12: mma.h, cuda_fp16.h ...)
  plus nvidia/cuda_nvcc/include (nvidia-cuda-nvcc-cu12: crt/mma.h; the cu12 runtime wheel
  has no crt/).
NVRTC must read the headers of its own CUDA version, so each stack is resolved on its own.
"""
from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path

from grader.runtime.errors import HeadersNotFound
from grader.runtime.stack import DEFAULT, STACKS, Stack

# What a course kernel may include, and which pip wheel provides each (for the fix message);
# a stack's own wheel names replace these (Stack.wheels).
REQUIRED = {
    "cuda_fp16.h": "nvidia-cuda-runtime",
    "cuda_bf16.h": "nvidia-cuda-runtime",
    "mma.h": "nvidia-cuda-runtime",
    "cuda_pipeline.h": "nvidia-cuda-runtime",
    "crt/mma.h": "nvidia-cuda-crt",
}


def _wheels(stack: Stack) -> dict[str, str]:
    runtime = "nvidia-cuda-runtime" if stack.cuda >= 13 else f"nvidia-cuda-runtime-cu{stack.cuda}"
    return {h: stack.wheels.get(h, runtime) for h in REQUIRED}


def toolkit_major(include: Path) -> int | None:
    """CUDA major version of a toolkit's include folder (from cuda.h), None if unknown."""
    try:
        m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", (include / "cuda.h").read_text(errors="replace"))
    except OSError:
        return None
    return int(m[1]) // 1000 if m else None


def candidate_dirs(env: dict | None = None, paths: list[str] | None = None,
                   stack: Stack | str = DEFAULT) -> list[Path]:
    """Include folders to try for `stack`, most specific first: an explicit CUDA_PATH/CUDA_HOME,
    the stack's pip wheels, then the system toolkit. A toolkit of another CUDA major is
    skipped (its headers do not go with this stack's NVRTC)."""
    stack = STACKS[stack] if isinstance(stack, str) else stack
    env = os.environ if env is None else env
    paths = sys.path if paths is None else paths
    found: list[Path] = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if env.get(var):
            found.append(Path(env[var]) / "include")
    for entry in paths:
        if entry:
            found += [Path(entry) / rel for rel in stack.include]
    found.append(Path("/usr/local/cuda/include"))
    unique: list[Path] = []
    for d in found:
        if d not in unique and toolkit_major(d) in (None, stack.cuda):
            unique.append(d)
    return unique


def _is(p: Path, test: str) -> bool:
    """p.is_dir() / p.is_file(), False where a folder above it cannot be read (in the sandbox)."""
    try:
        return getattr(p, test)()
    except OSError:
        return False


def resolve(candidates: list[Path], required: dict[str, str] = REQUIRED, stack: Stack | str = DEFAULT) -> list[Path]:
    """Pick include folders that together hold every required header.

    One folder that holds them all wins (headers of one version); otherwise the first folder
    holding each missing header is added in order. Raises HeadersNotFound naming each
    missing header, the folders searched and the pip command that installs it.
    """
    stack = STACKS[stack] if isinstance(stack, str) else stack
    existing = [d for d in candidates if _is(d, "is_dir")]
    for d in existing:
        if all(_is(d / h, "is_file") for h in required):
            return [d]
    chosen: list[Path] = []
    missing: list[str] = []
    for header in required:
        holder = next((d for d in existing if _is(d / header, "is_file")), None)
        if holder is None:
            missing.append(header)
        elif holder not in chosen:
            chosen.append(holder)
    if missing:
        names = _wheels(stack) if required is REQUIRED else required
        wheels = " ".join(sorted({names[h] for h in missing}))
        searched = "\n  ".join(str(d) for d in candidates) or "(none)"
        raise HeadersNotFound(
            f"CUDA {stack.cuda} headers not found: {', '.join(missing)}.\nSearched:\n  {searched}",
            hint=f"They come with the wheels {wheels}: from the course folder run `pip install -e "
                 f"\".[{stack.name}]\"` (the pinned versions), or set CUDA_PATH to a CUDA {stack.cuda} toolkit "
                 "(the folder that contains include/crt/mma.h).")
    return chosen


@lru_cache(maxsize=None)
def include_dirs(stack: str | None = None) -> tuple[str, ...]:
    """The include folders of `stack` on this machine (default: the stack CuPy belongs to, or
    CUDA 13 without CuPy), cached."""
    from grader.runtime import nvrtc

    if stack is None:
        from grader.runtime.stack import in_use

        s = in_use()
        stack = s.name if s else DEFAULT
    # the headers that came with this stack's NVRTC, wherever it was found, go first
    nv = nvrtc.load(stack)
    beside = nvrtc.headers_beside(nv.path) if nv is not None else []
    dirs = beside + [d for d in candidate_dirs(stack=stack) if d not in beside]
    return tuple(str(d) for d in resolve(dirs, stack=stack))


def include_options(stack: str | None = None) -> list[str]:
    return [f"-I{d}" for d in include_dirs(stack)]
