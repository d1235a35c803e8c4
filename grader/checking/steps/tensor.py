"""Tensor-core work: what the launches executed, never what the PTX mentions."""
from __future__ import annotations

import secrets

import numpy as np

from grader.checking import isolate
from grader.checking.steps.context import Submission
from grader.checking.verdict import FAIL, PASS, SKIP, Item
from grader.runtime.errors import KernelFault, KernelTimeout, Unsupported


def tensor_cores(sub: Submission) -> list[Item]:
    ex = sub.ex
    if not ex.tensor_cores:
        return []
    if sub.chosen == "gpu" and isinstance(sub.result["error"], (KernelTimeout, KernelFault)):
        # a kernel the GPU stopped or that faulted fails already: counting its work would run it
        # again (on the emulator, under ncu on the GPU) and, for a hang, wait for it again
        return [Item("tensor cores", SKIP, "not counted: the kernel did not finish its runs on the GPU")]
    item = tensor_item(ex, sub.source, sub.launch, sub.chosen, sub.dims_list, sub.result, sub.case_timeout,
                        sub.arch, sub.cases, sub.job.get("tc_key", 0))
    if item.status == FAIL and item.message.startswith("no launch") and isinstance(
            sub.result["error"], (KernelTimeout, KernelFault)):
        # the launches it did not finish counted nothing: no sign that it skips the tensor cores, so no
        # advice to use them (the fault above is what to fix)
        item.message += " (the kernel did not finish its runs: see the failure above)"
        item.hint = "Fix the failure above first: the launches that did not finish could not be counted."
    elif item.status == FAIL and item.message.startswith("no launch") and isinstance(sub.result["error"], Unsupported):
        # nor when the emulator could not run it at all (a form or function it lacks): nothing ran to count
        item.message += " (the emulator could not run it: see the failure above)"
        item.hint = ("The CPU emulator could not run this kernel (the failure above says why), so nothing could be "
                     "counted: keep to what it runs to have the tensor-core work counted, on a GPU too.")
    return [item]


def tensor_item(ex, source, launch, chosen, dims_list, result, case_timeout, arch, cases, key=0) -> Item:
    """Tensor-core work counted per launch by the emulator at the CPU sizes, on every backend
    (on a GPU the emulator runs them too), and by ncu's counter on a GPU where it can be read.
    `cases` and `key`: the emulator's cases and their probe's key (a GPU run makes its own)."""
    from grader.checking import tensor_work

    if chosen == "emu":
        runs, dims_run = result["cases"], dims_list
    else:
        dims_run = list(ex.cpu_sizes)
        cases = [ex.problem.make(d, np.random.default_rng(secrets.randbits(32)), launch, reference=False)
                 for d in dims_run]
        key = tensor_work.probe_key(ex)
        # the GPU's arch, so __CUDA_ARCH__ reads the same as in the GPU's compile
        job = dict(exercise=ex.id, source=source, backend="emu",
                   options=[*ex.problem.options(launch), f"-arch=compute_{arch}"],
                   kernel=ex.kernel, cases=[c.job() for c in cases], race_check=False, launch=launch,
                   perf=False, case_timeout=case_timeout, tc_probe=True, tc_key=key)
        runs = isolate.run(job, compile_timeout=240, case_timeout=case_timeout)["cases"]
    labels = [dims_label(d) for d in dims_run] if chosen != "emu" else [c.label for c in cases]
    counted = [(label, d, tensor_work.from_result(r.get("tensor_ops")), tensor_work.probe_result(ex, case, r, key))
               for label, d, r, case in zip(labels, dims_run, runs, cases) if "tensor_ops" in r]
    emu_item = tensor_work.item(ex, counted)
    if chosen != "gpu":
        return emu_item
    gpu = tensor_work.gpu_item(ex, source, launch)  # None where ncu cannot read the counters
    if gpu is None:
        if emu_item.status == PASS:
            emu_item.message += " (the GPU's own counter could not be read here: ncu is not available)"
        return emu_item
    if emu_item.status == FAIL and counted:  # counted and too few: the emulator's count stands
        return emu_item
    if not counted and ex.tensor_shapes:
        # ncu's tensor-pipe counter counts every shape alike (FP8's m16n8k32 and fp16's m16n8k16, WMMA's and
        # mma.sync's): which instruction ran, only the emulator's count says; without it, fail closed
        asked = " or ".join(f"m{m}n{n}k{k}" for m, n, k in ex.tensor_shapes)
        return Item("tensor cores", FAIL, f"not proven: this exercise asks for {asked} (PTX mma.sync), which the "
                    "GPU's counter cannot tell from other tensor-core instructions, and the CPU emulator, which "
                    f"can, counted no launch of your kernel ({emu_item.message})", kind="no-tensor-cores",
                    hint="Keep the kernel to what the CPU emulator runs (check it with backend='emu': its message "
                         "names what it cannot run) so the instruction can be counted. " + tensor_work.shape_hint(ex))
    if gpu.status == FAIL or not counted:
        return gpu
    emu_item.message += "; " + gpu.message
    return emu_item


def dims_label(d: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in d.items())
