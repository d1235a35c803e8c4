"""The reference CUDA sources in the repository's kernels/ folder (one concept per file)."""
from __future__ import annotations

import re
from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parents[2] / "kernels"


def path(name: str) -> Path:
    p = KERNELS_DIR / (name if name.endswith(".cu") else name + ".cu")
    if not p.is_file():
        known = ", ".join(sorted(q.stem for q in KERNELS_DIR.glob("*.cu")))
        raise FileNotFoundError(f"no kernel file {p.name} in {KERNELS_DIR} (have: {known})")
    return p


def source(name: str) -> str:
    """The text of kernels/<name>.cu."""
    return path(name).read_text()


def all_files() -> list[Path]:
    return sorted(KERNELS_DIR.glob("*.cu"))


def required_arch(source: str, default: int | None = 70) -> int | None:
    """The arch a kernel's header says it needs (` * Requires: sm_80`; `sm_90a` -> 90), else
    `default` (fp16 WMMA runs on Volta, sm_70). The one record of a kernel's minimum arch."""
    m = re.search(r"Requires:\s*sm_(\d+)", source)
    return int(m[1]) if m else default
