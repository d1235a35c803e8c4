"""GPU architectures the course knows, and TC_ARCH: behave as an older GPU on a newer one.

`TC_ARCH=75` (or 70, `sm_75`, `7.5`) makes the course compile for that arch, gate what it lacks
(bf16/tf32/fp64 fragments, cp.async, shared memory above its limit) and name it in messages,
on any GPU at least that new: an H100 run then proves the T4 path. The hardware does not
change: a fragment probe still shows the GPU's own layout.
"""
from __future__ import annotations

import os
import re

# name, and the most shared memory one block may opt into (bytes): CUDA C++ Programming
# Guide, "Technical Specifications per Compute Capability" (7.0: 96 KB, 7.5: 64 KB, 8.0:
# 163 KB, 8.6/8.9: 99 KB, 9.0: 227 KB).
ARCHS = {
    70: ("Volta", 96 * 1024),
    75: ("Turing", 64 * 1024),
    80: ("Ampere", 163 * 1024),
    86: ("Ampere", 99 * 1024),
    89: ("Ada", 99 * 1024),
    90: ("Hopper", 227 * 1024),
}


class ArchError(ValueError):
    """TC_ARCH holds something the course cannot act on."""


def parse(text: str) -> int:
    """'75', 'sm_75', 'compute_75', '7.5' -> 75."""
    t = text.strip().lower()
    m = re.fullmatch(r"(?:sm_|compute_)?(\d)\.?(\d)", t)
    if not m:
        raise ArchError(f"TC_ARCH={text!r}: write the compute capability, e.g. 75 (T4) or 70 (V100)")
    arch = int(m[1]) * 10 + int(m[2])
    if arch not in ARCHS:
        raise ArchError(f"TC_ARCH={text!r}: the course knows {', '.join(f'sm_{a}' for a in ARCHS)}")
    return arch


def requested(env: dict | None = None) -> int | None:
    """The arch TC_ARCH asks for, or None when unset."""
    env = os.environ if env is None else env
    text = env.get("TC_ARCH", "").strip()
    return parse(text) if text else None


def effective(native: int, env: dict | None = None) -> int:
    """The arch the course acts as on a GPU of compute capability `native`: TC_ARCH when set
    and not newer than the GPU (an older GPU cannot run a newer arch's code), else `native`.
    A bad TC_ARCH is ignored here; `python -m grader doctor` names it."""
    try:
        want = requested(env)
    except ArchError:
        return native
    return want if want is not None and want <= native else native


def shared_optin(arch: int) -> int | None:
    return ARCHS[arch][1] if arch in ARCHS else None


def name(arch: int) -> str:
    return f"{ARCHS[arch][0]} sm_{arch}" if arch in ARCHS else f"sm_{arch}"
