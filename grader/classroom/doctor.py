"""The setup doctor: is this machine ready for the course, and if not, what exactly to fix.

    python -m grader doctor        (text)
    grader.classroom.doctor.run()            (in a notebook: renders as an HTML checklist)
"""
from __future__ import annotations

import html
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
        add(Check("CuPy", False, f"cannot import cupy ({e})", "pip install cupy-cuda13x==14.2.0"))
        return rep

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
                  f"WMMA kernel compiled; tensor-core instructions: {ops or 'none'}",
                  "The compiled code has no tensor-core instruction: report this as a bug."))
    except CourseError as e:
        add(Check("NVRTC compile (sm_90, no GPU needed)", False, e.message.splitlines()[0], e.hint))
        return rep

    from grader.runtime.device import device_info

    info = device_info()
    if info is not None:
        rep.mode, rep.device = "gpu", info
        add(Check("GPU", info.cc >= 75,
                  f"{info.name}, {info.arch}, {info.sm_count} SMs, {info.memory_bytes / 2**30:.0f} GiB, "
                  f"driver supports CUDA {info.driver}",
                  "This course needs a GPU with tensor cores that CUDA 13 supports (sm_75 or newer)."))
        try:
            from grader.runtime.gpu import GpuModule

            err = _run_probe(GpuModule(PROBE), cupy)
            add(Check("WMMA kernel on the GPU", err < 1e-4, f"16x16x16 tile correct (max error {err:.1e})",
                      "The GPU produced a wrong result: run `python -m grader doctor` in a terminal "
                      "and report its output."))
        except CourseError as e:
            add(Check("WMMA kernel on the GPU", False, e.message.splitlines()[0], e.hint))
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
