"""Run, check and time a GEMM kernel of the course's contract on any backend.

Contract (issue #3): row-major contiguous A (M x K), B (K x N), C (M x N);
`kernel(A, B, C, M, N, K)`; how each kernel is launched is its GemmSpec (grader.problems.gemm_launch).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grader.problems import baselines, numerics
from grader.problems.gemm_launch import GemmSpec


def random_inputs(M: int, N: int, K: int, dtype: str, seed: int, xp=np):
    """U(-1, 1) inputs rounded to `dtype`: zero-mean data exposes wrong indexing that
    all-positive data can average away."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(dtype)
    B = rng.uniform(-1, 1, (K, N)).astype(dtype)
    return xp.asarray(A), xp.asarray(B)


@dataclass
class GemmRun:
    C: np.ndarray
    comparison: numerics.Comparison
    info: dict = field(default_factory=dict)


def run_once(module, spec: GemmSpec, M: int, N: int, K: int, seed: int, xp=None) -> GemmRun:
    """Launch once on fresh inputs with C poisoned (NaN) and compare to the fp64 reference."""
    xp = module.xp if xp is None else xp
    A, B = random_inputs(M, N, K, spec.in_dtype, seed, xp)
    C = xp.full((M, N), np.nan, dtype=spec.out_dtype)
    module.launch(spec.kernel, spec.grid(M, N, K), spec.block,
                  [A, B, C, M, N, K], shared_mem=spec.shared_mem)
    ref, abs_ab = numerics.gemm_reference(A, B)
    bound = numerics.gemm_bound(abs_ab, K, accumulate=spec.accumulate,
                                output="fp16" if spec.out_dtype == "float16" else "fp32")
    C_host = C.get() if hasattr(C, "get") else C
    return GemmRun(C_host, numerics.compare(C_host, ref, bound))


def time_gemm(module, spec: GemmSpec, M: int, N: int, K: int, seed: int = 0, max_seconds=5.0,
              inputs=None):
    """GPU timing of the kernel and of cuBLAS at the same size in the same process, in
    alternating rounds (grader.runtime.timing.paired); `inputs` = (A, B) on the GPU to reuse, else
    fresh ones from `seed`. Returns dict(kernel=Timing, library=Timing, gflops,
    library_gflops, ratio)."""
    import cupy

    from grader.runtime.timing import paired

    A, B = inputs if inputs is not None else random_inputs(M, N, K, spec.in_dtype, seed, cupy)
    C = cupy.zeros((M, N), dtype=spec.out_dtype)
    launch = module.bind(spec.kernel, spec.grid(M, N, K), spec.block, [A, B, C, M, N, K],
                         shared_mem=spec.shared_mem)
    ws = A.nbytes + B.nbytes + C.nbytes
    p = paired(launch, baselines.make(f"cublas-{spec.library}", [A, B], {}), working_set_bytes=ws,
               max_seconds=2 * max_seconds)
    flops = 2.0 * M * N * K
    return dict(kernel=p.kernel, library=p.baseline, gflops=p.kernel.gflops(flops),
                library_gflops=p.baseline.gflops(flops), ratio=p.ratio)

