"""Evidence for hints: patterns in a kernel's source or output that name the real cause of a
failure (a #define that overrides a launch parameter, a write into a const input, a transpose that
moved tiles without transposing them or stepped with the other matrix's row length). Each returns
nothing when its evidence is absent, so a hint is said only when the run backs it."""
from __future__ import annotations

import re

import numpy as np

from grader.checking.verdict import FAIL, Item
from grader.problems.kinds import Case
from grader.runtime.signature import parse_kernels

_DEFINE = re.compile(r"^-D(\w+)=(.*)$")


def redefined_item(ex, source: str, launch: dict) -> Item | None:
    """A `#define` of a launch parameter's macro (TILE, BLOCK_M ...) to another value than the launch
    passes: the block the grader launches and the tile the kernel computes no longer agree, which shows
    up as wrong tiles or races far from the cause. (Inside `#ifndef NAME` it only gives a default.)"""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), source, flags=re.S)
    lines = text.split("\n")
    for opt in ex.problem.options(launch):
        m = _DEFINE.match(opt)
        if not m:
            continue
        name, value = m[1], m[2]
        for n, ln in enumerate(lines):
            d = re.match(rf"^\s*#\s*define\s+{name}\s+(.+?)\s*$", ln)
            if not d or d[1] == value:
                continue
            before = next((p.strip() for p in reversed(lines[:n]) if p.strip()), "")
            if re.match(rf"#\s*(ifndef\s+{name}|if\s+!\s*defined\s*\(?\s*{name})\b", before):
                continue
            key = next((k for k in launch if k.upper() == name), name.lower())
            return Item("launch", FAIL,
                        f"line {n + 1}: `#define {name} {d[1]}`, but the launch parameter {key}={launch.get(key, value)} "
                        f"makes {name} {value} (the grader passes -D{name}={value} and launches the block for it): "
                        f"your kernel would compute with {d[1]} inside a block made for {value}",
                        kind="redefined-launch-macro", where=dict(line=n + 1),
                        hint=f"Delete the #define, or wrap it as a default: #ifndef {name} / #define {name} {d[1]} / "
                             f"#endif; to try {name} = {d[1]}, pass {key}={d[1]} to check().")
    return None


def const_write_hint(d, source: str) -> str:
    """A write into a parameter the kernel declares const: name that parameter."""
    if "must be a modifiable lvalue" not in d.message or not d.source_line:
        return ""
    const = {p.name for ps in parse_kernels(source).values() for p in ps if p.is_const}
    hit = [n for n in re.findall(r"\b(\w+)\s*\[[^\]]*\]\s*(?:[-+*/]?=)(?!=)", d.source_line) if n in const]
    if not hit:
        return ""
    return (f"`{hit[0]}` is declared `const` in the kernel's signature: an input, which the kernel may only read. "
            "Write results to the output parameter (the pointer without const).")


def tiles_not_transposed(case: Case, vals: np.ndarray) -> bool:
    """out holds each 32x32 tile of in at the transposed tile position, but untransposed inside:
    the transpose kernel that forgot to read its shared tile transposed."""
    x, rows, cols = np.asarray(case.args[0], np.float64), case.args[2], case.args[3]
    got = vals.reshape(cols, rows)
    cand = np.full((cols, rows), np.nan)
    for br in range(0, rows, 32):
        for bc in range(0, cols, 32):
            src = x[br:br + 32, bc:bc + 32]  # in tile (br, bc), as loaded
            h, w = min(32, cols - bc), min(32, rows - br)
            n_i, n_j = min(h, src.shape[0]), min(w, src.shape[1])
            cand[bc:bc + n_i, br:br + n_j] = src[:n_i, :n_j]
    ok = ~np.isnan(cand)
    return bool(ok.any()) and np.array_equal(got[ok], cand[ok]) and not np.array_equal(cand[ok], x.T[ok])


def transpose_wrong_ld(case: Case, vals: np.ndarray) -> str:
    """out matches a transpose that steps through in (or out) with the other matrix's row length."""
    x, rows, cols = np.asarray(case.args[0], np.float64), case.args[2], case.args[3]
    got = vals.reshape(cols, rows)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="xy")  # out[c, r]
    flat_in = r * rows + c  # read in[r][c] at r * rows + c
    ok = flat_in < x.size
    if ok.sum() > got.size // 2 and np.array_equal(got[ok], x.ravel()[flat_in[ok]]):
        return "out matches in read at r * rows + c: the kernel reads in with out's row length"
    flat_out = c * cols + r  # wrote out[c][r] at c * cols + r
    ok = flat_out < got.size
    if ok.sum() > got.size // 2 and np.array_equal(got.ravel()[flat_out[ok]], x.T[ok]):
        return "out matches a store at c * cols + r: the kernel writes out with in's row length"
    return ""


def _fp8_operands(case: Case):
    """fp8-gemm's decoded codes (A M x K, B N x K: unscaled) and its two scales."""
    from grader.problems import fp8

    a, b = case.args[0], case.args[1]
    return fp8.decode(a), fp8.decode(b), float(case.args[6]), float(case.args[7])


def _matches(got: np.ndarray, cand: np.ndarray) -> bool:
    """got is cand element by element but for fp32 rounding (a wrong candidate, or a few wrong elements,
    differ by far more)."""
    size = float(np.max(np.abs(cand))) if cand.size else 0.0
    return bool(size > 0 and np.all(np.isfinite(cand)) and np.all(np.abs(got - cand) <= 1e-4 * size))


def fp8_wrong_sum(case: Case, vals: np.ndarray) -> str:
    """What a wrong fp8-gemm output equals, in words: the right sum scaled wrongly, the sum over part of
    K (a k-step or the last codes left out), B read as K x N, or the right sums at the wrong elements.
    '' when it is none of them."""
    da, db, sa, sb = _fp8_operands(case)
    (M, K), N = da.shape, db.shape[0]
    # every mistake below shows in each row of C: its first 64 rows (4 whole m16 tiles) say it at a GPU's
    # sizes without a float64 product of the whole matrix per candidate
    M = min(M, 64)
    da, got = da[:M], vals.reshape(-1, N)[:M]
    s, unscaled = sa * sb, da @ db.T
    scaled = (  # (factor of the unscaled sum, what went wrong)
        (1.0, "the scales are not applied: multiply the fp32 sums by scale_a * scale_b"),
        (sa, "only scale_a is applied: the epilogue multiplies by scale_a * scale_b"),
        (sb, "only scale_b is applied: the epilogue multiplies by scale_a * scale_b"),
        (s * s, "the scales are applied twice: once, to the final fp32 sum, is enough"),
        (1.0 / s, "C is divided by the scales: the codes are the data divided by its scale, so the product "
                  "is scale_a * scale_b times the sum of the codes' products: multiply"),
        (sa * sa, "scale_a is applied twice and scale_b not at all"),
        (sb * sb, "scale_b is applied twice and scale_a not at all"))
    for f, said in scaled:
        if _matches(got, f * unscaled):
            return said
    steps = [(k0, min(k0 + 32, K)) for k0 in range(0, K, 32)]
    split = ("a K loop that skips them, or warps that split K whose partial sums are not all added: a race "
             "between the warps' stores to C, or a missing __syncthreads() between them")
    if 1 < len(steps) <= 8:  # the sum over some k-steps only (a k-loop, or warps that split K)
        for mask in range(1, 2 ** len(steps) - 1):
            kept = [st for i, st in enumerate(steps) if mask >> i & 1]
            cols = np.concatenate([np.arange(*st) for st in kept])
            if not _matches(got, s * da[:, cols] @ db[:, cols].T):
                continue
            if mask == 2 ** (len(steps) - 1) - 1 and K % 32:
                return (f"C is the sum over k < {steps[-1][0]} only: the K loop stops before the last, partial "
                        f"k-step (K = {K} is no multiple of 32); run it while k0 < K and load 0 past K")
            ks = ", ".join(f"{a}..{b - 1}" for a, b in kept)
            if mask == 2 ** (len(steps) - 1):  # the last k-step alone: what came before was lost each time
                return (f"C is the sum over the last k-step (k = {ks}) only: each k-step's sum replaces the ones "
                        "before it. The mma adds A B to its C operand: C must be the running sums (\"+f\" on the "
                        "accumulators), not zeros or fresh registers, and a sum kept outside the mma needs +=; "
                        "and scale_a * scale_b goes on after the K loop, not inside it (each multiply there "
                        "shrinks the earlier k-steps to nothing); otherwise " + split)
            return f"C is the sum over the k-steps k = {ks} only: the others never reach it ({split})"
    for k in sorted({K // 4 * 4, K // 8 * 8, K // 16 * 16} - {0, K}):
        if _matches(got, s * da[:, :k] @ db[:, :k].T):
            return (f"C is the sum over k < {k} only: the last {K - k} codes of each row of A and B "
                    f"(K = {K}) are left out; guard each code (k + j < K), not whole groups")
    # one operand's two 16-code halves of each k-step swapped (codes past K read as 0)
    pad = -K % 32
    swap = np.arange(K + pad) ^ 16
    pa, pb = np.pad(da, ((0, 0), (0, pad))), np.pad(db, ((0, 0), (0, pad)))
    if _matches(got, s * pa @ pb[:, swap].T):
        return ("b[0] and b[1] are swapped: b[0] holds k 4t..4t+3 of the k-step, b[1] the codes 16 further along k")
    if _matches(got, s * pa[:, swap] @ pb.T):
        return ("A's two halves of the k-step are swapped: a[0], a[1] hold k 4t..4t+3, a[2], a[3] the codes 16 "
                "further along k")
    # the codes converted as numbers: __nv_fp8_e4m3(code) encodes the integer 0..255 as a new e4m3 value
    from grader.problems import fp8

    ea, eb = (fp8.decode(fp8.encode(np.asarray(x, np.float64))) for x in (case.args[0][:M], case.args[1]))
    for x, y, which in ((ea, eb, "A and B"), (ea, db, "A"), (da, eb, "B")):
        if _matches(got, s * x @ y.T):
            return (f"the codes of {which} were converted as numbers: __nv_fp8_e4m3(code) (or a float cast) "
                    "makes the integer 0..255 a new e4m3 value. The bytes already are e4m3 codes: put them "
                    "into the registers as they are (four to a register, the lowest k in the lowest byte)")
    if _matches(got, s * da @ np.asarray(db.ravel()).reshape(K, N)):
        return ("B is read as K x N (row-major): it is N x K, K-major (the transpose stored, \"TN\"), so b[0] "
                "of a lane holds B[(n0 + g) * K + k0 + 4t .. + 3]")
    ref = s * unscaled
    fr, fc = M // 16 * 16, N // 8 * 8  # the whole 16 x 8 tiles: the edge ones lose what falls outside C
    if fr and fc and _matches(np.sort(got[:fr, :fc].ravel()), np.sort(ref[:fr, :fc].ravel())):
        return ("C holds the right sums at the wrong elements: of each 16 x 8 tile, a lane's c[0], c[1] are "
                "row g, columns 2t, 2t + 1 and c[2], c[3] row g + 8 (g = lane / 4, t = lane % 4)")
    return ""


def fp8_nonfinite(case: Case, vals: np.ndarray, source: str) -> str:
    """Why an fp8-gemm output holds NaN or Inf though every code is finite: an mma that reads the
    codes as e5m2, or sums kept in fp16 (past 65504). '' when neither is shown."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source or "", flags=re.S)
    if re.search(r"mma[\w.]*\.e5m2", code):
        return ("Your mma.sync reads the codes as .e5m2, but A and B hold e4m3 codes: name them .e4m3.e4m3. "
                "Read as e5m2 (5 exponent bits), every code from 0x7C up is Inf or NaN.")
    if not re.search(r"\b(?:__float2half\w*|__half2?|half2?)\b|\.f16\b", code):
        return ""
    da, db, *_ = _fp8_operands(case)
    (M, K), N = da.shape, db.shape[0]
    # the largest the unscaled running sum gets, k-step by k-step: Inf past 65504, then NaN (Inf - Inf)
    run, top = np.zeros((M, N)), np.zeros((M, N))
    for k0 in range(0, K, 32):
        run += da[:, k0:k0 + 32] @ db[:, k0:k0 + 32].T
        top = np.maximum(top, np.abs(run))
    bad = ~np.isfinite(vals.reshape(M, N))
    if np.all(top[bad] > 65504):
        return ("C is Inf or NaN where the unscaled running sum passes 65504, fp16's largest value: the sum of "
                "e4m3 codes (a product can be 448 x 448) must stay in fp32 (the .f32 accumulators of mma.sync, "
                "float variables); apply scale_a * scale_b once, to the final fp32 sum.")
    return ""
