"""The process Nsight Compute profiles: compile the kernel, make the exercise's inputs at the given
size (random, from the problem's own generator), launch it ONCE with the exercise's launch, wait.

    python -m grader.coach.profile_target JOB.pkl     (JOB written by grader.coach.measured)
"""
from __future__ import annotations

import pickle
import sys

import numpy as np


def main(path: str) -> int:
    import cupy

    from grader.runtime.backend import load

    with open(path, "rb") as f:
        job = pickle.load(f)  # written by the parent a moment ago, in its own folder
    if job.get("cublas"):  # the library's point on the roofline: one fp16 GEMM through cuBLAS
        n = int(job["cublas"])
        rng = np.random.default_rng(0)
        a = cupy.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float16))
        b = cupy.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float16))
        cupy.matmul(a, b)
        cupy.cuda.runtime.deviceSynchronize()
        print(f"launched cupy.matmul fp16 {n}^3")
        return 0
    case = job["problem"].make(job["dims"], np.random.default_rng(job.get("seed", 0)), job["launch"],
                               reference=False)
    module = load(job["source"], "gpu", job["options"])
    args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]
    module.bind(job["kernel"], case.grid, case.block, args, case.shared_mem)()
    cupy.cuda.runtime.deviceSynchronize()
    print(f"launched {job['kernel']} grid {case.grid} block {case.block} shared {case.shared_mem} B")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
