"""Notebook 11 (FP8 and 2:4 sparsity), part 2: the two tensor-core kernels run here.

- kernels/fp8_gemm_mma.cu (mma.sync m16n8k32 e4m3, fp32 accumulate, scales in the epilogue):
  its error against the float64 product of the codes it multiplied (the kernel's own error) and
  against the float64 product of the data before quantization (what FP8 costs);
- kernels/sparse_gemm_mma_sp.cu: 2:4 pruning and compression on the GPU (or emulator) against
  grader.problems.sparse24's, then mma.sp against the dense product of the pruned matrix, and
  what pruning itself changed.
On a GPU without the instructions (FP8 mma: sm_89; mma.sp: sm_80) grader.runtime.backend says so
in one line and runs the kernel on the CPU emulator.
"""
from __future__ import annotations

import numpy as np

from grader.problems import fp8, numerics, sparse24
from grader.problems.kinds import Case
from grader.runtime import backend, kernels


def launch(file: str, kernel: str, case: Case, backend_name: str = "auto") -> tuple[dict, str, dict]:
    """Run one case: ({output position: NumPy array}, the backend that ran it, tensor-core
    instruction counts {(m, n, k): count} where the emulator counted them, else {})."""
    m = backend.load(kernels.source(file), backend_name)
    args = [m.xp.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]
    res = m.launch(kernel, case.grid, case.block, args)
    outs = {p: (args[p].get() if hasattr(args[p], "get") else np.asarray(args[p])) for p in case.outputs}
    return outs, m.backend, dict(getattr(res, "tensor_ops", None) or {})


def fp8_gemm(M: int = 64, N: int = 64, K: int = 256, seed: int = 0, backend_name: str = "auto") -> dict:
    """kernels/fp8_gemm_mma.cu on per-tensor-scaled e4m3 inputs."""
    case = fp8.gemm_case(M, N, K, np.random.default_rng(seed))
    A64, B64 = fp8.gemm_inputs(M, N, K, np.random.default_rng(seed))  # the same draws gemm_case quantized
    outs, where, ops = launch("fp8_gemm_mma", "fp8_gemm", case, backend_name)
    C, e = outs[2].astype(np.float64), case.expected[2]
    size = np.abs(A64) @ np.abs(B64).T
    return dict(backend=where, tensor_ops=ops, check=numerics.compare(C, e.ref, e.bound),
                kernel_error=float(np.max(np.abs(C - e.ref) / size)),
                fp8_error=float(np.max(np.abs(C - A64 @ B64.T) / size)))


def sparse_gemm(M: int = 64, N: int = 32, K: int = 128, seed: int = 0, backend_name: str = "auto") -> dict:
    """Prune and compress A on the device, multiply with mma.sp, compare."""
    rng = np.random.default_rng(seed)
    comp = sparse24.compress_case(M, K, rng)
    outs, where, _ = launch("sparse_gemm_mma_sp", "sparse24_compress", comp, backend_name)
    Av, Am = outs[1], outs[2]
    A = comp.args[0]
    same = bool(np.array_equal(Av, comp.expected[1].ref.astype(np.float16))
                and np.array_equal(Am, comp.expected[2].ref.astype(np.uint16)))
    mul = sparse24.gemm_case(M, N, K, rng)
    B = mul.args[2]
    run = Case(mul.label, [Av, Am, B] + mul.args[3:], mul.outputs, mul.grid, mul.block)
    outs, _, ops = launch("sparse_gemm_mma_sp", "sparse_gemm", run, backend_name)
    C = outs[3].astype(np.float64)
    pruned, b64, a64 = sparse24.decompress(Av, Am), B.astype(np.float64), A.astype(np.float64)
    dense = a64 @ b64
    return dict(backend=where, tensor_ops=ops, compressed_as_python=same,
                stored=f"A {M}x{K} fp16 ({A.nbytes} bytes) -> Av {Av.shape[0]}x{Av.shape[1]} fp16 + Am "
                       f"{Am.shape[0]}x{Am.shape[1]} uint16 ({Av.nbytes + Am.nbytes} bytes)",
                check=numerics.compare(C, pruned @ b64, numerics.gemm_bound(np.abs(pruned) @ np.abs(b64), K)),
                pruning_error=float(np.linalg.norm(C - dense) / np.linalg.norm(dense)))


def show_row(A: np.ndarray, row: int = 0, width: int = 16) -> str:
    """One row's first `width` columns: dense, pruned to 2:4, the kept values and their metadata."""
    A = np.asarray(A)[:, :width]
    pruned, idx = sparse24.prune(A)
    Av, Am = sparse24.compress(A)
    fmt = " ".join
    return "\n".join([
        f"dense   : {fmt(f'{v:+.2f}' for v in A[row].astype(float))}",
        f"2:4     : {fmt(f'{v:+.2f}' if v else '  0  ' for v in pruned[row].astype(float))}",
        f"values  : {fmt(f'{v:+.2f}' for v in Av[row].astype(float))}",
        f"indices : {fmt(f'{a}{b}' for a, b in idx[row])}  (kept columns of each group of 4)",
        f"metadata: {fmt(format(int(w), '016b') for w in Am[row])}  (2 bits an index, chunk 0 lowest)"])
