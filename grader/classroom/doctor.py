"""The setup doctor: is this machine ready for the course, and if not, what exactly to fix.

    python -m grader doctor        (text)
    grader.classroom.doctor.run()            (in a notebook: renders as an HTML checklist)
"""
from __future__ import annotations

import html
import os
import platform
import sys
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Check:
    name: str
    ok: bool | None  # None: not applicable here (e.g. GPU checks on a laptop)
    detail: str
    fix: str = ""


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    mode: str = "cpu"  # "gpu" | "cpu"
    device: object = None

    @property
    def ready(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    @property
    def verdict(self) -> str:
        if not self.ready:
            first = next(c for c in self.checks if c.ok is False)
            return f"NOT READY: {first.name}: {first.detail}. Fix: {first.fix or 'see above'}"
        if self.mode == "gpu":
            d = self.device
            return f"READY: GPU mode on {d.name} ({d.arch}); every exercise can be graded, speed included."
        emu = next((c for c in self.checks if c.name == "CPU emulator"), None)
        if emu is not None and emu.ok:
            return ("READY (CPU mode): no GPU, so kernels run on the course's emulator; "
                    "correctness is graded, speed needs a GPU.")
        return ("READY (compile-only CPU mode): no GPU and no emulator yet; kernels compile and "
                "their PTX can be inspected, but they cannot run here.")

    def text(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}
        lines = [f"[{mark[c.ok]}] {c.name}: {c.detail}" + (f"\n       fix: {c.fix}" if c.fix and c.ok is False else "")
                 for c in self.checks]
        return "\n".join(lines + ["", self.verdict])

    def _repr_html_(self) -> str:
        icon = {True: "&#9989;", False: "&#10060;", None: "&#10134;"}
        rows = "".join(
            f"<tr><td>{icon[c.ok]}</td><td><b>{html.escape(c.name)}</b></td>"
            f"<td>{html.escape(c.detail)}"
            + (f"<br><i>Fix:</i> <code>{html.escape(c.fix)}</code>" if c.fix and c.ok is False else "")
            + "</td></tr>" for c in self.checks)
        color = "#1a7f37" if self.ready else "#cf222e"
        return (f"<table>{rows}</table><p style='font-size:1.2em;color:{color}'><b>"
                f"{html.escape(self.verdict)}</b></p>")


# A tiny WMMA kernel: one warp multiplies one 16x16x16 tile. Every path of the doctor uses it.
PROBE = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void tile_mma(const half* A, const half* B, float* C)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}
"""


def _run_probe(module, xp) -> float:
    """Run PROBE on one tile and return the max error against float64."""
    rng = np.random.default_rng()
    A = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    B = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    C = xp.full((16, 16), np.nan, dtype=np.float32)
    module.launch("tile_mma", (1,), (32,), [xp.asarray(A), xp.asarray(B), C])
    out = C.get() if hasattr(C, "get") else C
    return float(np.max(np.abs(out - A.astype(np.float64) @ B.astype(np.float64))))


def stack_check(driver=None, names=None) -> Check:
    """Which CUDA stack is installed, why it is the one for this machine, and, when it is not
    (CuPy for CUDA 13 on a CUDA 12 driver sees no GPU at all), the fix in one line."""
    from grader.runtime import stack

    driver = stack.query_driver() if driver is None else driver
    names = stack.installed() if names is None else names
    ok, what, fix = stack.diagnose(names, driver)
    if not ok:
        return Check("CUDA stack", False, what, fix)
    s = stack.STACKS[names[0]]
    choice = stack.choose(driver, os.environ.get("TC_STACK") or None)
    why = (f"the one for this machine: {choice.reason}" if choice.stack == s else
           f"{what}; ./course.sh would pick CUDA {choice.stack.cuda} here ({choice.reason})")
    return Check("CUDA stack", True, f"CUDA {s.cuda} ({s.cupy}); {why}")


def nvrtc_check() -> Check:
    """The installed NVRTCs and the archs they reach: NVRTC 12 is what compiles for Volta."""
    from grader.runtime import nvrtc

    found = nvrtc.available()
    text = "; ".join(f"NVRTC {nv.version[0]}.{nv.version[1]} (sm_{min(a for a in nv.archs if a >= 70)} and up)"
                     for nv in found)
    volta = any(70 in nv.archs for nv in found)
    return Check("NVRTC", bool(found), (text or "none") + ("" if volta else "; no NVRTC 12, so no Volta (sm_70) "
                                                           "compiles: pip install -e \".[nvrtc12]\" adds it"),
                 "pip install -e \".[cuda13]\" (or the stack ./course.sh picks)")


def tc_arch_check(info) -> Check | None:
    """TC_ARCH (act as an older GPU), when set: what it does here, or why it cannot."""
    from grader.runtime import arch

    try:
        want = arch.requested()
    except arch.ArchError as e:
        return Check("TC_ARCH", False, str(e), "unset TC_ARCH or set it to 70, 75, 80, 86, 89 or 90")
    if want is None:
        return None
    if info is None:
        return Check("TC_ARCH", None, f"TC_ARCH={want} changes what a GPU compiles for; there is no GPU here "
                                      "(the emulator acts as sm_90; backend.load(..., arch=70) asks it for Volta)")
    if want > info.native_cc:
        return Check("TC_ARCH", False, f"TC_ARCH={want} asks for a newer arch than this GPU (sm_{info.native_cc})",
                     "unset TC_ARCH: a GPU can act as an older arch, never a newer one")
    return Check("TC_ARCH", True, f"{info.name} acts as {arch.name(want)}: kernels compile for compute_{want}, "
                                  f"sections that need a newer arch say so, shared memory per block is capped at "
                                  f"{info.max_shared_optin // 1024} KB")


def run() -> Report:
    rep = Report()
    add = rep.checks.append
    ok_py = sys.version_info >= (3, 10)
    add(Check("Python", ok_py, f"{platform.python_version()} ({sys.executable})",
              "Use Python 3.10 or newer."))
    try:
        import cupy

        add(Check("CuPy", True, f"cupy {cupy.__version__}, numpy {np.__version__}"))
    except Exception as e:  # pragma: no cover - depends on the install
        add(Check("CuPy", False, f"cannot import cupy ({e})",
                  "./course.sh (it picks the CUDA stack for this machine), or pip install -e \".[cuda13]\""))
        return rep
    stack = stack_check()
    add(stack)

    from grader.runtime.errors import CourseError

    try:
        from grader.runtime.headers import include_dirs

        add(Check("CUDA headers", True, ", ".join(include_dirs())))
    except CourseError as e:
        add(Check("CUDA headers", False, e.message.splitlines()[0], e.hint))
        return rep

    try:
        from grader.runtime.compile import nvrtc_compile

        out = nvrtc_compile(PROBE, arch=90)
        ops = ", ".join(str(o) for o in out.instructions)
        add(Check("NVRTC compile (sm_90, no GPU needed)", out.uses_tensor_cores,
                  f"WMMA kernel compiled by NVRTC {out.nvrtc[0]}.{out.nvrtc[1]}; tensor-core instructions: "
                  f"{ops or 'none'}",
                  "The compiled code has no tensor-core instruction: report this as a bug."))
    except CourseError as e:
        add(Check("NVRTC compile (sm_90, no GPU needed)", False, e.message.splitlines()[0], e.hint))
        return rep

    add(nvrtc_check())
    from grader.runtime.device import device_info

    info = device_info()
    tc = tc_arch_check(info)
    if tc is not None:
        add(tc)
    if info is not None:
        from grader.runtime.compile import SUPPORTED_ARCHS

        rep.mode, rep.device = "gpu", info
        add(Check("GPU", info.cc in SUPPORTED_ARCHS or info.cc > 90,
                  f"{info.name}, {info.arch}, {info.sm_count} SMs, {info.memory_bytes / 2**30:.0f} GiB, "
                  f"driver supports CUDA {info.driver}",
                  "This course needs a GPU with tensor cores (sm_70 or newer); sm_70 (Volta) needs the CUDA 12 "
                  "stack: pip install -e \".[nvrtc12]\""))
        try:
            from grader.runtime.gpu import GpuModule

            err = _run_probe(GpuModule(PROBE), cupy)
            add(Check("WMMA kernel on the GPU", err < 1e-4, f"16x16x16 tile correct (max error {err:.1e})",
                      "The GPU produced a wrong result: run `python -m grader doctor` in a terminal "
                      "and report its output."))
        except CourseError as e:
            add(Check("WMMA kernel on the GPU", False, e.message.splitlines()[0], e.hint))
    elif stack.ok is False:  # nvidia-smi sees a GPU that this CuPy cannot use: said by the stack check
        add(Check("GPU", False, "CuPy cannot use the GPU nvidia-smi sees", stack.fix))
    else:
        add(Check("GPU", None, "no CUDA GPU found: the course runs in CPU mode"))
        from grader import emu

        if not hasattr(emu, "compile_module"):
            add(Check("CPU emulator", None, "not installed in this version of the course"))
            return rep
        try:
            from grader.runtime.backend import EmuModule

            err = _run_probe(EmuModule(PROBE), np)
            add(Check("CPU emulator", err < 1e-4, f"WMMA tile emulated correctly (max error {err:.1e})",
                      "The emulator gave a wrong result: report this as a bug."))
        except CourseError as e:
            add(Check("CPU emulator", False, e.message.splitlines()[0], e.hint or
                      "Install a C++ compiler (g++ 10 or newer): the emulator builds kernels with it."))
    return rep
