"""The tensor-core probe's products: each one's sign flipped by a keyed hash of its two operands.

The probe reruns a judged launch on the CPU emulator with every matrix instruction's product
a*b replaced by flip(a, b) * a*b, and the output must then be the sum of the products so flipped
(grader.checking.tensor_work). flip depends on both operands' bits and a key drawn per grading
run, so a kernel cannot measure it on operands of its own choosing (an mma_sync on fragments of
ones says what 1*1 does, nothing about a_ik * b_kj) and cannot learn it for its inputs' products
short of running them all through the tensor cores. A doubling of every product (the probe
before) was the same for every product: a kernel that scaled a CUDA-core answer by what an
mma_sync on ones gave changed exactly as an honest one.

Why an honest kernel passes whatever it does in between: a flip is exact in every format, and
|flip * a*b| = |a*b|, so the sum of flipped products is a GEMM of the same magnitudes, and the
exercise's own componentwise bound, a worst case over every summation order, holds for it as
for the real output. The flip is the same whichever slot an operand sits in (symmetric: a kernel
computing C^T = B^T A^T stays right) and ignores the operands' signs (one negating both stays
right). It needs the operands bit for bit as the inputs hold them, in the inputs' type: true of
every tensor-core exercise (fp16 in fp16 fragments, fp64 in fp64, e4m3 codes in e4m3 registers).

Why not one factor per operand (each element of A and B scaled by its own hash): one mma_sync of
an input tile by the identity would read 256 of those factors at once, and the kernel could then
compute the perturbed answer on CUDA cores; a flip of the product pair is learnt only by that
product. What stays open (as with the doubling): a canary still tells a probe run from a plain
one, but acting on it needs a correct tensor-core GEMM for the probe run, which is the exercise.

The emulator computes the same hash (grader/emu/runtime/runner.cpp, tc_execute: in the runner's parent,
which executes every matrix instruction of a keyed run, so the key is never in the process that runs
the kernel): change both together (tests/emu/test_emu_tensor_probe.py holds them equal).
"""
from __future__ import annotations

import numpy as np

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S63 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(63)


def mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 (wrapping arithmetic, as in C)."""
    z = z ^ (z >> _S30)
    z = z * _M1
    z = z ^ (z >> _S27)
    z = z * _M2
    return z ^ (z >> _S31)


def magnitude_bits(x: np.ndarray) -> np.ndarray:
    """The bits of each element in its own type, sign bit cleared, as uint64. uint8 arrays are
    fp8 codes (the sign in bit 7, as grader.problems.fp8 stores them)."""
    x = np.ascontiguousarray(x)
    size = x.dtype.itemsize
    bits = x.view(f"u{size}").astype(np.uint64)
    return bits & np.uint64((1 << (8 * size - 1)) - 1)


def operand_hash(key: int, x: np.ndarray) -> np.ndarray:
    """Each element's share of the flip: mix64(magnitude bits + key)."""
    with np.errstate(over="ignore"):
        return mix64(magnitude_bits(x) + np.uint64(key))


def signed_sum(key: int, a_raw, a, b_raw, b, chunk: int = 1 << 20) -> np.ndarray:
    """float64 sum over k of flip(a_ik, b_kj) * a_ik * b_kj for a (M x K) and b (K x N): `a_raw`
    and `b_raw` are the operands as the kernel holds them (their bits decide the flip), `a` and `b`
    their values (float64, scales included where an exercise has them)."""
    ha, hb = operand_hash(key, a_raw), operand_hash(key, b_raw)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    M, K = a.shape
    N = b.shape[1]
    out = np.zeros((M, N))
    step = max(1, chunk // max(1, M * N))  # k's per pass: about `chunk` products held at once
    with np.errstate(over="ignore"):
        for k0 in range(0, K, step):
            k1 = min(K, k0 + step)
            flip = mix64(ha[:, k0:k1, None] + hb[None, k0:k1, :]) >> _S63  # (M, k, N)
            sign = 1.0 - 2.0 * flip.astype(np.float64)
            out += np.einsum("mkn,mk,kn->mn", sign, a[:, k0:k1], b[k0:k1, :])
    return out
