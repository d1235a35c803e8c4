"""Tensor-core instructions a GPU launch executed, read by Nsight Compute (ncu).

`smsp__inst_executed_pipe_tensor_op_hmma.sum` counts the warp-level HMMA instructions a launch
executed (FACTS.md: 8192 for the naive WMMA GEMM at 256^3, 0 for a kernel whose mma_sync is never
reached); the dmma counterpart counts fp64 ones. ncu needs the GPU's performance counters
(root, or the driver's profiling restriction lifted): where it cannot read them, `count` returns
None and the grade rests on the emulator's count alone.

The launch runs in a child process under ncu (`python -m grader.runtime.ncu JOBFILE`), like every
other student launch: a crash costs this count only.
"""
from __future__ import annotations

import csv
import io
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

import numpy as np

METRICS = {"hmma": "smsp__inst_executed_pipe_tensor_op_hmma.sum",
           "dmma": "smsp__inst_executed_pipe_tensor_op_dmma.sum"}
# the most multiply-adds one such instruction does (sm_80+: HMMA.16816; DMMA.16816 on sm_90):
# a kernel must execute at least M*N*K / this many; smaller shapes only need more of them
MACS_PER_INSTRUCTION = {"hmma": 16 * 8 * 16, "dmma": 16 * 8 * 16}


def tool() -> str | None:
    """The ncu binary, or None (then no GPU count is taken)."""
    found = shutil.which("ncu")
    if found:
        return found
    for d in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        p = os.path.join(d, "bin", "ncu") if d else ""
        if p and os.access(p, os.X_OK):
            return p
    return None


# ncu --csv's units, to base units (bytes, nanoseconds, hertz); counts have none
UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3, "msecond": 1e6,
         "second": 1e9, "hz": 1, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "cycle/second": 1, "cycle/nsecond": 1e9,
         "cycle/usecond": 1e6}


def launches(text: str) -> list[dict]:
    """One dict per profiled launch of `ncu --csv` output: kernel name, grid, block, device, and
    {metric name: value in base units}; values that are not numbers are left out."""
    start = text.find('"ID"')
    if start < 0:
        return []
    found: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        got = found.setdefault(row.get("ID", ""), dict(kernel=row.get("Kernel Name", ""), grid=row.get("Grid Size", ""),
                                                       block=row.get("Block Size", ""), device=row.get("Device", ""),
                                                       metrics={}))
        try:
            value = float((row.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            continue
        got["metrics"][row.get("Metric Name", "")] = value * UNITS.get((row.get("Metric Unit") or "").strip(), 1)
    return list(found.values())


def parse_csv(text: str) -> dict[str, float]:
    """Sum of each metric of METRICS over the profiled launches, from `ncu --csv` output."""
    out: dict[str, float] = {}
    for launch in launches(text):
        for key, metric in METRICS.items():
            if metric in launch["metrics"]:
                out[key] = out.get(key, 0.0) + launch["metrics"][metric]
    return out


def count(source: str, options, kernel: str, case_job: dict, *, timeout: float = 60.0) -> dict[str, float] | None:
    """{"hmma": n, "dmma": n} for one launch of `kernel` on `case_job`'s arguments, or None where
    ncu is missing, cannot read counters, or the launch failed."""
    exe = tool()
    if exe is None:
        return None
    from grader.runtime import proctree, sandbox

    with tempfile.TemporaryDirectory(prefix="tc-ncu-") as tmp:
        job = os.path.join(tmp, "job.pkl")
        with open(job, "wb") as f:
            pickle.dump(dict(source=source, options=list(options), kernel=kernel, case=case_job), f)
        # both counters at once; where one is unknown to this GPU's ncu, each on its own
        for names in ([*METRICS.values()], [METRICS["hmma"]], [METRICS["dmma"]]):
            cmd = [exe, "--csv", "--clock-control", "none", "--kernel-name", kernel, "--launch-count", "1",
                   "--metrics", ",".join(names)] + sandbox.python_command("grader.runtime.ncu") + [job]
            try:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                return None
            try:
                stdout, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                # ncu and the program it profiles (its child, in which the kernel may still run on
                # the GPU): both ended and reaped, never left to pid 1
                proctree.stop(proc)
                proc.communicate()
                return None
            got = parse_csv(stdout) if proc.returncode == 0 else {}
            if got:
                return got
        return None


def _child(path: str) -> None:
    import cupy

    from grader.runtime.backend import load

    with open(path, "rb") as f:
        job = pickle.load(f)  # written by the parent a moment ago, in its own folder
    case = job["case"]
    module = load(job["source"], "gpu", job["options"])
    args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
    module.bind(job["kernel"], case["grid"], case["block"], args, case["shared_mem"])()
    cupy.cuda.runtime.deviceSynchronize()


if __name__ == "__main__":
    _child(sys.argv[1])
