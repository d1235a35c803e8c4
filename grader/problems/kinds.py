"""What each kind of exercise computes: inputs, launch geometry, reference and tolerance.

A Problem builds `Case`s (positional kernel arguments with outputs poisoned) and knows the
float64 reference of each output. The reference stays in the grading process: the child
process that runs the student's kernel only ever sees the arguments.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grader.problems import gemm_launch, numerics
from grader.problems.conv import im2col_launch, im2col_nhwc, out_size, transpose_launch, weights_as_b

# Poison (what outputs hold before launch) per dtype: NaNs with a recognisable payload, so
# "never written" can be told apart from "computed NaN". Integers get an unlikely value.
POISON_BITS = {np.dtype(np.float16): (np.uint16, 0x7E5A), np.dtype(np.float32): (np.uint32, 0x7FC0DEAD),
               np.dtype(np.float64): (np.uint64, 0x7FF8DEADDEADDEAD),
               np.dtype(np.int32): (np.uint32, 0xF8A432EB)}


def poisoned(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    ubits, value = POISON_BITS[dtype]
    return np.full(shape, value, dtype=ubits).view(dtype)


def is_poison(a: np.ndarray) -> np.ndarray:
    ubits, value = POISON_BITS[a.dtype]
    return np.ascontiguousarray(a).view(ubits) == value


@dataclass
class Expected:
    """Reference for one output argument: values (float64), allowed |error|, and the tile
    size the feedback map groups errors by."""

    ref: np.ndarray
    bound: np.ndarray | float
    tile: tuple[int, int] = (16, 16)
    exact: bool = False  # integer outputs must match exactly


@dataclass
class Case:
    label: str
    args: list  # positional kernel arguments (NumPy arrays and Python numbers)
    outputs: list[int]  # positions of output arrays
    grid: tuple
    block: tuple
    shared_mem: int = 0
    expected: dict[int, Expected] = field(default_factory=dict)  # never sent to the child

    def job(self) -> dict:
        """What the child process needs to run this case (no reference)."""
        return dict(label=self.label, args=self.args, outputs=self.outputs, grid=self.grid,
                    block=self.block, shared_mem=self.shared_mem)


def _uniform(rng, shape, dtype, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(dtype)


class Problem:
    """Base: subclasses define params, make(), sizes and the speed baseline."""

    params: tuple[tuple[str, str], ...]  # (name, C type) in order: the fixed contract
    baseline: str | None = None  # what speed is compared with (see grader.baselines)
    fixed_input = False  # the input is the same every time: one run says all (no 2nd random input)
    # the output sums over dims["K"] (a GEMM): its stores per FLOP shrink as K grows, which the
    # coach's traffic model scales from the emulator's small K to the timed one
    sums_over_k = False
    passed = "matches the float64 reference"  # what a correct output is said to do

    def signature(self, kernel: str) -> str:
        return f'extern "C" __global__ void {kernel}({", ".join(f"{t} {n}" for n, t in self.params)})'

    def summed(self, dims: dict) -> int | None:
        """How many products each output element sums (the coach scales output stores per FLOP by it), or None."""
        return dims.get("K") if self.sums_over_k else None

    def options(self, launch: dict) -> tuple[str, ...]:
        return ()

    def make(self, dims: dict, rng, launch: dict, reference: bool = True) -> Case:
        """A case on fresh random inputs; reference=False skips the float64 reference (speed runs)."""
        raise NotImplementedError

    def flops(self, dims: dict) -> float:
        return 0.0

    def sample(self, case: Case, flat) -> tuple[np.ndarray, np.ndarray | float]:
        """float64 reference and allowed |error| of the output elements at `flat` (indices into
        the raveled output) of a case made with reference=False: how the output of timed
        launches at full size is checked without a full-size float64 reference."""
        raise NotImplementedError(f"{type(self).__name__} has no sampled reference")

    def probe_reference(self, case: Case, key: int) -> dict | None:
        """{output position: (float64 reference, allowed |error|)} of the tensor-core probe run
        with `key` (grader.problems.signed_products: every product's sign flipped by a keyed hash
        of its operands), or None where the grader cannot reproduce the operands' bits (then the
        probe doubles every product and asks only that every output element changes)."""
        return None


# ---------------------------------------------------------------------------- GEMM family
class Gemm(Problem):
    """C = A B (fp16 in / fp32 out, fp32 in/out, or fp64), row-major, course launch rules."""

    sums_over_k = True

    def __init__(self, in_dtype="float16", out_dtype="float32", accumulate="fp32",
                 launch_rule="warp16", baseline="cublas-fp16", epilogue=False):
        self.in_dtype, self.out_dtype, self.accumulate = in_dtype, out_dtype, accumulate
        self.launch_rule, self.baseline, self.epilogue = launch_rule, baseline, epilogue
        ct = {"float16": "half", "float32": "float", "float64": "double"}
        a, o = ct[in_dtype], ct[out_dtype]
        if epilogue:
            self.params = (("A", f"const {a}*"), ("B", f"const {a}*"), ("C", f"const {o}*"),
                           ("D", f"{o}*"), ("M", "int"), ("N", "int"), ("K", "int"),
                           ("alpha", "float"), ("beta", "float"))
        else:
            self.params = (("A", f"const {a}*"), ("B", f"const {a}*"), ("C", f"{o}*"),
                           ("M", "int"), ("N", "int"), ("K", "int"))

    def launch(self, launch: dict, kernel: str = "") -> gemm_launch.GemmSpec:
        """How the student's kernel is launched with these launch keywords (one description,
        grader.problems.gemm_launch, shared with the bench ladders and the lessons)."""
        return gemm_launch.student(self.launch_rule, launch, kernel, self.in_dtype, self.out_dtype,
                                   accumulate=self.accumulate)

    def options(self, launch):
        return self.launch(launch).options

    def geometry(self, M, N, K, launch):
        spec = self.launch(launch)
        return spec.grid(M, N, K), spec.block, spec.shared_mem

    def make(self, dims, rng, launch, reference=True):
        M, N, K = dims["M"], dims["N"], dims["K"]
        A = _uniform(rng, (M, K), self.in_dtype)
        B = _uniform(rng, (K, N), self.in_dtype)
        ref, abs_ab = numerics.gemm_reference(A, B) if reference else (None, None)
        spec = self.launch(launch)
        if self.epilogue:
            alpha, beta = float(np.float32(rng.uniform(0.5, 2))), float(np.float32(rng.uniform(-2, -0.5)))
            C = _uniform(rng, (M, N), self.out_dtype)
            D = poisoned((M, N), self.out_dtype)
            args, outputs = [A, B, C, D, M, N, K, alpha, beta], [3]
        else:
            C = poisoned((M, N), self.out_dtype)
            args, outputs = [A, B, C, M, N, K], [2]
        if reference:
            ref, bound = self._finish(args, ref, abs_ab)
        # the feedback map groups errors by what one block (or warp) computes; a block of the
        # "block" rule is many warps, so there by one warp's 16x16 fragment
        tile = (16, 16) if self.launch_rule == "block" else spec.tile
        expected = {outputs[0]: Expected(ref, bound, tile)} if reference else {}
        return Case(f"M={M} N={N} K={K}", args, outputs, spec.grid(M, N, K), spec.block, spec.shared_mem,
                    expected)

    def flops(self, dims):
        return 2.0 * dims["M"] * dims["N"] * dims["K"]

    def sample(self, case, flat):
        A, B = case.args[0], case.args[1]
        M, N, K = A.shape[0], B.shape[1], A.shape[1]
        i, j = np.divmod(np.asarray(flat), N)
        a, b = A[i].astype(np.float64), B[:, j].T.astype(np.float64)  # one row of A, one column of B each
        ref, abs_ab = np.einsum("sk,sk->s", a, b), np.einsum("sk,sk->s", np.abs(a), np.abs(b))
        return self._finish(case.args, ref, abs_ab, (i, j))

    def probe_reference(self, case, key):
        from grader.problems.signed_products import signed_sum

        A, B = case.args[0], case.args[1]
        ref = signed_sum(key, A, A, B, B)
        # a flip keeps every product's magnitude: the same bound as the real output's
        abs_ab = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
        return {case.outputs[0]: self._finish(case.args, ref, abs_ab)}

    def _finish(self, args, ref, abs_ab, at=(slice(None), slice(None))):
        """The output's reference and allowed |error| from A B's (`ref`) and |A||B|'s elements at
        `at` (the epilogue's C read there too), K = A's columns."""
        K = args[0].shape[1]
        if self.epilogue:
            alpha, beta = args[7], args[8]
            c = args[2][at].astype(np.float64)
            return alpha * ref + beta * c, numerics.gemm_bound(abs(alpha) * abs_ab + abs(beta) * np.abs(c), K + 2,
                                                               accumulate=self.accumulate)
        return ref, numerics.gemm_bound(abs_ab, K, accumulate=self.accumulate)


# ------------------------------------------------------------------------------ transpose
class Transpose(Problem):
    params = (("in", "const float*"), ("out", "float*"), ("rows", "int"), ("cols", "int"))
    baseline = "copy"

    def make(self, dims, rng, launch, reference=True):
        rows, cols = dims["rows"], dims["cols"]
        x = _uniform(rng, (rows, cols), np.float32)
        out = poisoned((cols, rows), np.float32)
        return Case(f"rows={rows} cols={cols}", [x, out, rows, cols], [1], *transpose_launch(rows, cols), 0,
                    {1: Expected(x.T.astype(np.float64), 0.0, (32, 32), exact=True)})

    def bytes(self, dims):
        return 2 * 4 * dims["rows"] * dims["cols"]

    def sample(self, case, flat):
        x, rows = case.args[0], case.args[2]
        c, r = np.divmod(np.asarray(flat), rows)  # out is (cols x rows): out[c, r] = in[r, c]
        return x[r, c].astype(np.float64), 0.0


# ------------------------------------------------------------------------- fragment probe
class FragmentProbe(Problem):
    """matrix_a, m16n16k16, half, row_major: which lane holds element (r, c) at which x[i]."""

    params = (("M", "const half*"), ("held", "int*"))
    kind = "a_f16_row"  # grader.fragments' name for this fragment kind
    fixed_input = True  # M is the index matrix M[r][c] = 16 r + c, never random
    passed = "every lane holds the right element of M in every x[i]"

    def make(self, dims, rng, launch, reference=True):
        from grader.problems.fragments import expected_map, probe_input

        M = probe_input(self.kind).reshape(16, 16)
        held = poisoned((32, 16), np.int32)
        ref = expected_map(self.kind).astype(np.float64)  # sm_80/sm_90 layout (FACTS.md)
        return Case("matrix_a 16x16x16 half row_major", [M, held], [1], (1, 1, 1), (32, 1, 1), 0,
                    {1: Expected(ref, 0.0, (8, 16), exact=True)})


# --------------------------------------------------------------------------------- im2col
class Im2col(Problem):
    params = (("x", "const half*"), ("col", "half*"), ("N", "int"), ("C", "int"), ("H", "int"),
              ("W", "int"), ("R", "int"), ("S", "int"), ("pad", "int"), ("stride", "int"))

    def make(self, dims, rng, launch, reference=True):
        from grader.problems.conv import im2col_nchw

        N, C, H, W, R, S, pad, stride = (dims[k] for k in ("N", "C", "H", "W", "R", "S", "pad", "stride"))
        x = _uniform(rng, (N, C, H, W), np.float16)
        ref = im2col_nchw(x, R, S, pad, stride).astype(np.float64)
        col = poisoned(ref.shape, np.float16)
        return Case(f"N={N} C={C} H={H} W={W} R={R} S={S} pad={pad} stride={stride}",
                    [x, col, N, C, H, W, R, S, pad, stride], [1], *im2col_launch(N, C, H, W, R, S, pad, stride), 0,
                    {1: Expected(ref, 0.0, (16, 16), exact=True)})


# ------------------------------------------------------------------------ conv2d on WMMA
class Conv2dWmma(Problem):
    params = (("x", "const half*"), ("w", "const half*"), ("y", "float*"), ("N", "int"), ("C", "int"),
              ("H", "int"), ("W", "int"), ("K", "int"), ("R", "int"), ("S", "int"), ("pad", "int"))
    baseline = "im2col-cublas"

    def launch(self, launch: dict, kernel: str = "conv2d") -> gemm_launch.GemmSpec:
        """The implicit GEMM's launch (M = N*P*Q rows, N = K columns): the "block" rule."""
        return gemm_launch.student("block", launch, kernel)

    def options(self, launch):
        return self.launch(launch).options

    def make(self, dims, rng, launch, reference=True):
        N, C, H, W, K, R, S, pad = (dims[k] for k in ("N", "C", "H", "W", "K", "R", "S", "pad"))
        x = _uniform(rng, (N, H, W, C), np.float16)
        w = _uniform(rng, (K, R, S, C), np.float16)
        P, Q = out_size(H, R, pad), out_size(W, S, pad)
        y = poisoned((N, P, Q, K), np.float32)
        expected = {}
        if reference:
            from grader.problems.conv import conv2d_nhwc_reference

            ref, abs_ref = conv2d_nhwc_reference(x, w, pad)  # float64 y and (|x| * |w|)
            bound = numerics.gemm_bound(abs_ref, R * S * C)
            expected = {2: Expected(ref.reshape(N * P * Q, K), bound.reshape(N * P * Q, K), (16, 16))}
        spec = self.launch(launch)
        return Case(f"N={N} C={C} H={H} W={W} K={K} {R}x{S} pad={pad}",
                    [x, w, y, N, C, H, W, K, R, S, pad], [2], spec.grid(N * P * Q, K), spec.block,
                    spec.shared_mem, expected)

    def flops(self, dims):
        P, Q = out_size(dims["H"], dims["R"], dims["pad"]), out_size(dims["W"], dims["S"], dims["pad"])
        return 2.0 * dims["N"] * P * Q * dims["K"] * dims["R"] * dims["S"] * dims["C"]

    def summed(self, dims):
        return dims["R"] * dims["S"] * dims["C"]  # the implicit GEMM's K (dims["K"] is the output channels)

    def sample(self, case, flat):
        x, w = case.args[0], case.args[1]
        N, H, W, C = x.shape
        K, R, S = w.shape[0], w.shape[1], w.shape[2]
        pad = case.args[10]
        P, Q = out_size(H, R, pad), out_size(W, S, pad)
        row, k = np.divmod(np.asarray(flat), K)  # y is (N*P*Q, K), NHWC
        n, pq = np.divmod(row, P * Q)
        p, q = np.divmod(pq, Q)
        xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
        rr, ss = np.arange(R)[:, None], np.arange(S)[None, :]
        win = xp[n[:, None, None], p[:, None, None] + rr, q[:, None, None] + ss].astype(np.float64)  # (s, R, S, C)
        wk = w[k].astype(np.float64)
        ref = np.einsum("srtc,srtc->s", win, wk)
        return ref, numerics.gemm_bound(np.einsum("srtc,srtc->s", np.abs(win), np.abs(wk)), R * S * C)

    def probe_reference(self, case, key):
        """The implicit GEMM's products: rows of the patches (n, p, q) by columns (r, s, c), zero
        where a window leaves the image (a zero's product is zero whatever its flip)."""
        from grader.problems.signed_products import signed_sum

        x, w = case.args[0], case.args[1]
        _, R, S, C = w.shape
        col = im2col_nhwc(x, R, S, case.args[10])
        wt = np.ascontiguousarray(weights_as_b(w))
        ref = signed_sum(key, col, col, wt, wt)
        abs_ref = np.abs(col.astype(np.float64)) @ np.abs(wt.astype(np.float64))
        return {2: (ref, numerics.gemm_bound(abs_ref, R * S * C))}


