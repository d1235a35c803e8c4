"""2:4 structured sparsity: prune, compress, and the cases of kernels/sparse_gemm_mma_sp.cu
(notebook 11). The compressed form is the kernel file's: values Av (M x K/2, the two kept
elements of each 4 in column order) and metadata Am (M x K/16 uint16: per 16 columns of a row,
chunk j's two 2-bit column indices in bits 4j..4j+3, the lower index in the low bits)."""
from __future__ import annotations

import numpy as np

from grader.problems import numerics
from grader.problems.kinds import Case, Expected, poisoned


def prune(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pruned A, kept column index pairs [M, K/4, 2]): the 2 largest magnitudes of every 4
    consecutive elements of a row (the lower column on a tie), in column order."""
    M, K = A.shape
    chunks = np.abs(A.astype(np.float64)).reshape(M, K // 4, 4)
    order = np.argsort(-chunks, axis=2, kind="stable")[:, :, :2]  # stable: a tie keeps the lower column
    idx = np.sort(order, axis=2)
    keep = np.zeros_like(chunks, bool)
    np.put_along_axis(keep, idx, True, axis=2)
    return np.where(keep.reshape(M, K), A, np.zeros_like(A)), idx


def compress(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Av, Am) of A's 2:4 pruning (K a multiple of 16)."""
    M, K = A.shape
    _, idx = prune(A)
    Av = np.take_along_axis(A.reshape(M, K // 4, 4), idx, axis=2).reshape(M, K // 2)
    nib = (idx[:, :, 0] | idx[:, :, 1] << 2).reshape(M, K // 16, 4).astype(np.uint32)
    Am = (nib << (4 * np.arange(4, dtype=np.uint32))).sum(axis=2).astype(np.uint16)
    return Av, Am


def decompress(Av: np.ndarray, Am: np.ndarray) -> np.ndarray:
    """The dense M x K matrix (float64) that (Av, Am) stand for."""
    M, KV = Av.shape
    K = 2 * KV
    nib = (Am.astype(np.uint32)[:, :, None] >> (4 * np.arange(4, dtype=np.uint32))) & 0xF
    idx = np.stack([nib & 3, nib >> 2], axis=-1).reshape(M, K // 4, 2).astype(np.int64)
    A = np.zeros((M, K // 4, 4))
    np.put_along_axis(A, idx, Av.astype(np.float64).reshape(M, K // 4, 2), axis=2)
    return A.reshape(M, K)


def compress_case(M: int, K: int, rng: np.random.Generator) -> Case:
    """sparse24_compress on a dense fp16 A (some chunks with ties and zeros): Av and Am exactly."""
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    A[0, :8] = 0  # a chunk of zeros, and ties: the lower columns are kept
    A[1, 4:8] = np.float16(0.5)
    Av, Am = compress(A)
    groups = K // 16
    return Case(f"compress {M}x{K}:sparse24_compress",
                [A, poisoned((M, K // 2), np.float16), np.full((M, groups), 0xFFFF, np.uint16), M, K], [1, 2],
                (-(-(M * groups) // 128), 1, 1), (128, 1, 1), 0,
                {1: Expected(Av.astype(np.float64), 0.0, exact=True), 2: Expected(Am.astype(np.float64), 0.0,
                                                                                    exact=True)})


def gemm_case(M: int, N: int, K: int, rng: np.random.Generator) -> Case:
    """sparse_gemm on the compressed form of a pruned random A: against the dense float64 product."""
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    Av, Am = compress(A)
    dense = decompress(Av, Am)
    b64 = B.astype(np.float64)
    ref = dense @ b64
    bound = numerics.gemm_bound(np.abs(dense) @ np.abs(b64), K)
    return Case(f"{M}x{N}x{K} 2:4:sparse_gemm", [Av, Am, B, poisoned((M, N), np.float32), M, N, K], [3],
                (-(-N // 16), -(-M // 32), 1), (64, 1, 1), 0, {3: Expected(ref, bound)})
