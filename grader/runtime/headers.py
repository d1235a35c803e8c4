"""Find the CUDA headers that student kernels include, wherever this machine keeps them.

CUDA 13 split the toolkit headers across pip wheels: `mma.h` and `cuda_fp16.h` come with
nvidia-cuda-runtime, but `mma.h` includes `crt/mma.h`, which only nvidia-cuda-crt has
(FACTS.md). A missing `crt/` is the classic "cannot open source file crt/mma.h".
"""
from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path

from grader.runtime.errors import HeadersNotFound

# What a course kernel may include, and which pip wheel provides each (for the fix message).
REQUIRED = {
    "cuda_fp16.h": "nvidia-cuda-runtime",
    "cuda_bf16.h": "nvidia-cuda-runtime",
    "mma.h": "nvidia-cuda-runtime",
    "cuda_pipeline.h": "nvidia-cuda-runtime",
    "crt/mma.h": "nvidia-cuda-crt",
}
PIN = {"nvidia-cuda-runtime": "13.0.96", "nvidia-cuda-crt": "13.0.88"}


def candidate_dirs(env: dict | None = None, paths: list[str] | None = None) -> list[Path]:
    """Include folders to try, most specific first: an explicit CUDA_PATH/CUDA_HOME, the pip
    wheels next to the NVRTC CuPy uses, then the system toolkit."""
    env = os.environ if env is None else env
    paths = sys.path if paths is None else paths
    found: list[Path] = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if env.get(var):
            found.append(Path(env[var]) / "include")
    for entry in paths:
        if entry:
            found.append(Path(entry) / "nvidia" / "cu13" / "include")
    found.append(Path("/usr/local/cuda/include"))
    unique: list[Path] = []
    for d in found:
        if d not in unique:
            unique.append(d)
    return unique


def resolve(candidates: list[Path], required: dict[str, str] = REQUIRED) -> list[Path]:
    """Pick include folders that together hold every required header.

    One folder that holds them all wins (headers of one version); otherwise the first folder
    holding each missing header is added in order. Raises HeadersNotFound naming each
    missing header, the folders searched and the pip command that installs it.
    """
    existing = [d for d in candidates if d.is_dir()]
    for d in existing:
        if all((d / h).is_file() for h in required):
            return [d]
    chosen: list[Path] = []
    missing: list[str] = []
    for header in required:
        holder = next((d for d in existing if (d / header).is_file()), None)
        if holder is None:
            missing.append(header)
        elif holder not in chosen:
            chosen.append(holder)
    if missing:
        wheels = sorted({required[h] for h in missing})
        pins = " ".join(f"{w}=={PIN[w]}" if w in PIN else w for w in wheels)
        searched = "\n  ".join(str(d) for d in candidates) or "(none)"
        raise HeadersNotFound(
            f"CUDA headers not found: {', '.join(missing)}.\nSearched:\n  {searched}",
            hint=f"Install them with `pip install {pins}`, or set CUDA_PATH to a CUDA 13 "
                 "toolkit (the folder that contains include/crt/mma.h).",
        )
    return chosen


@lru_cache(maxsize=1)
def include_dirs() -> tuple[str, ...]:
    """The include folders for this machine (cached)."""
    return tuple(str(d) for d in resolve(candidate_dirs()))


def include_options() -> list[str]:
    return [f"-I{d}" for d in include_dirs()]
