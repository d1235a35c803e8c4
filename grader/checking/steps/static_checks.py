"""What the source shows before it runs: a launch constant redefined, a call no GPU could load,
code that differs between the GPU's and the emulator's preprocessing, an empty kernel body."""
from __future__ import annotations

import re

from grader.checking import evidence, same_source
from grader.checking.steps.context import Stop, Submission, handed_in
from grader.checking.verdict import FAIL, Item
from grader.runtime.signature import kernel_body

# Functions a kernel may call that no kernel source defines: the CUDA runtime's own (printf,
# malloc, assert). Any other external function would be resolved only when the module is
# loaded: on a GPU it fails there, on the emulator it could reach the emulator's machinery.
_CUDA_EXTERNALS = {"vprintf", "malloc", "free", "__assertfail", "__assert_fail", "cudaGetParameterBuffer",
                   "cudaLaunchDevice", "cudaGetParameterBufferV2", "cudaLaunchDeviceV2", "cudaDeviceSynchronize",
                   "cudaGetLastError", "cudaPeekAtLastError", "cudaMalloc", "cudaFree"}
_PTX_EXTERN = re.compile(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", re.M)


def redefined(sub: Submission) -> list[Item]:
    item = evidence.redefined_item(sub.ex, sub.source, sub.launch)
    return [] if item is None else Stop([item])


def same_backend(sub: Submission) -> list[Item]:
    """One preprocessor: the GPU's and the emulator's macros give the same code."""
    item = external_item(sub.compiled.ptx) or same_source.check_item(sub.source, sub.options, sub.arch)
    return [] if item is None else Stop([item])


def external_item(ptx: str) -> Item | None:
    names = sorted(set(_PTX_EXTERN.findall(ptx)) - _CUDA_EXTERNALS)
    names = [n for n in names if not n.startswith("__nv_")]
    if not names:
        return None
    return Item("same on every backend", FAIL,
                f"your kernel calls {', '.join(names[:5])}, declared but defined nowhere: no GPU can run it "
                "(it would fail to load), and the grader does not run what a GPU cannot",
                kind="backend-detection", hint="Call only functions you define in your source, and CUDA's own.")


def empty_kernel(sub: Submission) -> list[Item]:
    """Said once, not once per case."""
    body = kernel_body(sub.source, sub.ex.kernel)
    if body is None or body.strip():
        return []
    hint = ("Write it, try it with the notebook's check cell, then hand the notebook in again." if handed_in()
            else "If you did write it, run that cell again: the check sees the source as it was when its "
                 "cell last ran.")
    return Stop([Item("kernel", FAIL, "Your kernel body is still empty — write the kernel in "
                      f"{sub.cell.name if sub.cell else 'the cell above'}", kind="empty-kernel", hint=hint)])
