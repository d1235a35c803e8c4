"""Notebook 11 (FP8 and 2:4 sparsity), part 1: the two FP8 formats beside fp16 and bf16, and why
FP8 needs scales.

- a bit explorer like notebook 02's (type a number: its bits, its neighbours, its rounding error in
  e4m3, e5m2, fp16 and bf16);
- each format's range, subnormals and saturation computed from the codec (grader.problems.fp8 for
  the FP8 formats, grader.lessons.precision for fp16 and bf16), never typed in;
- the scaling lesson measured: an FP8 GEMM emulated in NumPy (e4m3 codes, exact products, fp32
  accumulation) against the float64 product of the original data, as K grows, with no scale, one
  scale per tensor, and one scale per block of 32 along K (the OCP microscaling idea).
"""
from __future__ import annotations

import math

import numpy as np

from grader.lessons import precision
from grader.problems import fp8

FP8 = tuple(fp8.FORMATS)  # ("e4m3", "e5m2")
WIDE = ("fp16", "bf16")  # the 16-bit formats they stand beside (notebook 02's codec)
BLOCK = 32  # OCP Microscaling (MX) v1.0: one shared scale per 32 consecutive elements


# ---------------------------------------------------------------- one number in each format
def _finite_codes(fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """(codes, values) of every finite value of an FP8 format, in increasing value (-0 left out)."""
    codes = np.arange(256, dtype=np.uint8)
    vals = fp8.decode(codes, fmt)
    keep = np.isfinite(vals) & ~((vals == 0) & (codes & 0x80 != 0))
    order = np.argsort(vals[keep], kind="stable")
    return codes[keep][order], vals[keep][order]


def fp8_bits(x: float, fmt: str) -> dict:
    """x encoded in an FP8 format (nearest, ties to even, saturating as cvt.rn.satfinite): its
    fields as bit strings, its kind, its rounding error and its two neighbours."""
    ebits, mbits, _ = fp8.FORMATS[fmt]
    code = int(fp8.encode(np.array([x]), fmt)[0])
    v = float(fp8.decode(np.array([code], np.uint8), fmt)[0])
    e, m = (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
    kind = ("nan" if math.isnan(v) else "zero" if v == 0 else "subnormal" if e == 0
            else "saturated" if abs(x) > fp8.MAX[fmt] else "normal")
    codes, vals = _finite_codes(fmt)
    if math.isnan(v):
        down = up = math.nan
    else:
        i = int(np.searchsorted(vals, v))  # v's place among the finite values (0 for -0 and +0)
        down = float(vals[i - 1]) if i > 0 else -math.inf
        up = float(vals[i + 1]) if i + 1 < len(vals) else math.inf
    return dict(format=fmt, value=v, sign=str(code >> 7), exponent=format(e, f"0{ebits}b"),
                fraction=format(m, f"0{mbits}b"), kind=kind, error=v - x if math.isfinite(x) else math.nan,
                down=down, up=up, code=code)


def bits(x: float, fmt: str) -> dict:
    """x in any of the four formats (FP8 here, fp16 and bf16 by notebook 02's codec)."""
    if fmt in FP8:
        return fp8_bits(x, fmt)
    return precision.bits(x, fmt)


def explore(x: float, formats=FP8 + WIDE):
    """HTML table (plain text for static renders): x in each format, bits coloured by field."""
    return precision.bits_table(x, formats, bits, 8, lambda fmt: 6)


def explorer_widget(value: str = "0.1"):
    return precision.explorer_widget(value, explore)


# ---------------------------------------------------------------- facts, from the codecs
def all_values(fmt: str) -> np.ndarray:
    """The value of every code of the format (256 for FP8, 65536 for fp16 and bf16), by its codec."""
    if fmt in FP8:
        return fp8.decode(np.arange(256, dtype=np.uint8), fmt)
    u = np.arange(1 << 16, dtype=np.uint32)
    if fmt == "fp16":
        return u.astype(np.uint16).view(np.float16).astype(np.float64)
    with np.errstate(invalid="ignore"):  # NaN codes stay NaN
        return (u << 16).view(np.float32).astype(np.float64)  # bf16: the top half of an fp32


def _layout(fmt: str) -> tuple[int, int]:
    if fmt in FP8:
        return fp8.FORMATS[fmt][:2]
    return precision.FORMATS[fmt].exp_bits, precision.FORMATS[fmt].man_bits


def rounded(x, fmt: str) -> np.ndarray:
    """x (float64) stored in the format and read back: FP8 saturates (satfinite), fp16/bf16 overflow to inf."""
    if fmt in FP8:
        return fp8.decode(fp8.encode(np.asarray(x, np.float64), fmt), fmt)
    return precision.round_to(x, fmt)


def facts(fmt: str) -> dict:
    """Range, subnormals, precision and what happens past the range, counted over every code."""
    ebits, mbits = _layout(fmt)
    vals = all_values(fmt)
    pos = vals[np.isfinite(vals) & (vals > 0)]
    min_normal = 2.0 ** (2 - 2 ** (ebits - 1))  # exponent field 1: 2^(1 - bias)
    return dict(format=fmt, bits=1 + ebits + mbits, exponent=ebits, fraction=mbits, max=float(pos.max()),
                min_normal=min_normal, min_subnormal=float(pos.min()),
                subnormals=int(2 * np.sum(pos < min_normal)), finite_values=int(np.isfinite(vals).sum()),
                nan_codes=int(np.isnan(vals).sum()), has_inf=bool(np.isinf(vals).any()),
                unit_roundoff=2.0 ** -(mbits + 1), one_million_becomes=float(rounded(1e6, fmt)))


def facts_table() -> list[dict]:
    return [{k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in facts(f).items()} for f in FP8 + WIDE]


# ---------------------------------------------------------------- scaling, measured
SCALINGS = ("none", "per-tensor", "per-block")


def quantize(X: np.ndarray, scaling: str, fmt: str = "e4m3") -> tuple[np.ndarray, np.ndarray]:
    """(codes, scales) of X (rows x K): scales has one column per block of 32 along K ("per-block"),
    or one value broadcast to that shape ("none": 1, "per-tensor": amax / max)."""
    rows, K = X.shape
    nb = -(-K // BLOCK)
    if scaling == "none":
        s = np.ones((rows, nb))
    elif scaling == "per-tensor":
        amax = float(np.max(np.abs(X)))
        s = np.full((rows, nb), amax / fp8.MAX[fmt] if amax > 0 else 1.0)
    elif scaling == "per-block":
        pad = np.zeros((rows, nb * BLOCK))
        pad[:, :K] = np.abs(X)
        amax = pad.reshape(rows, nb, BLOCK).max(axis=2)
        s = np.where(amax > 0, amax / fp8.MAX[fmt], 1.0)
    else:
        raise ValueError(f"scaling is one of {SCALINGS}, not {scaling!r}")
    s = s.astype(np.float32).astype(np.float64)  # scales are fp32 numbers, as the kernel's are
    return fp8.encode(X / np.repeat(s, BLOCK, axis=1)[:, :K], fmt), s


def fp8_gemm(A: np.ndarray, B: np.ndarray, scaling: str, fmt: str = "e4m3") -> np.ndarray:
    """C = A B^T (A: M x K, B: N x K, float64) through FP8: quantize, multiply the codes' values
    with fp32 accumulation (products of two FP8 values are exact in fp32), apply the scales to
    each block's fp32 partial sum and add the partials in fp32."""
    qa, sa = quantize(A, scaling, fmt)
    qb, sb = quantize(B, scaling, fmt)
    da, db = fp8.decode(qa, fmt).astype(np.float32), fp8.decode(qb, fmt).astype(np.float32)
    K = A.shape[1]
    C = np.zeros((A.shape[0], B.shape[0]), np.float32)
    for j in range(sa.shape[1]):
        k = slice(j * BLOCK, min(K, (j + 1) * BLOCK))
        part = da[:, k] @ db[:, k].T  # float32 matmul: fp32 accumulation
        C += (part * np.outer(sa[:, j], sb[:, j]).astype(np.float32)).astype(np.float32)
    return C.astype(np.float64)


def sample_inputs(M: int, N: int, K: int, rng: np.random.Generator, typical: float = 1e-3):
    """Data FP8 cannot hold unscaled: normal values around `typical` whose size varies by up to
    2^+-8 from row to row (as activations do from token to token) and 2^+-2 more from one block of
    32 along K to the next (from channel to channel)."""
    def one(rows):
        nb = -(-K // BLOCK)
        spread = 2.0 ** (rng.uniform(-8, 8, (rows, 1)) + rng.uniform(-2, 2, (rows, nb)))
        return typical * rng.standard_normal((rows, K)) * np.repeat(spread, BLOCK, axis=1)[:, :K]
    return one(M), one(N)


def scaling_error(Ks, M: int = 16, N: int = 16, seed: int = 0, fmt: str = "e4m3") -> dict:
    """Worst componentwise error max |C - C64| / (|A| |B|^T) of the FP8 GEMM for each scaling and K,
    with C64 the float64 product of the original data; fp16 inputs (no scale) beside them."""
    rng = np.random.default_rng(seed)
    out = {s: [] for s in SCALINGS} | {"fp16 inputs": []}
    for K in Ks:
        A, B = sample_inputs(M, N, K, rng)
        exact, size = A @ B.T, np.abs(A) @ np.abs(B).T
        for s in SCALINGS:
            out[s].append(float(np.max(np.abs(fp8_gemm(A, B, s, fmt) - exact) / size)))
        c16 = A.astype(np.float16).astype(np.float32) @ B.astype(np.float16).astype(np.float32).T
        out["fp16 inputs"].append(float(np.max(np.abs(c16 - exact) / size)))
    return dict(K=list(Ks), fmt=fmt, errors=out)


def plot_scaling(res: dict):
    """Error against K, one line per scaling choice, with e4m3's unit roundoff drawn."""
    import matplotlib.pyplot as plt

    colors = {"none": "#cf222e", "per-tensor": "#bf8700", "per-block": "#2da44e", "fp16 inputs": "#0969da"}
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for label, ys in res["errors"].items():
        ax.loglog(res["K"], np.maximum(ys, 1e-9), "o-", ms=4, color=colors.get(label),
                  label=f"{res['fmt']}, {label} scale" if label in SCALINGS else label)
    u = facts(res["fmt"])["unit_roundoff"]
    ax.axhline(u, color="#8c959f", lw=1, ls="--", label=f"{res['fmt']} unit roundoff 2^{int(math.log2(u))}")
    ax.set_xlabel("K (length of each dot product)", fontsize=11)
    ax.set_ylabel("max |C - C64| / (|A| |B|^T)", fontsize=11)
    ax.set_title(f"FP8 GEMM error against K and the scaling choice (blocks of {BLOCK} along K)", fontsize=12)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, frameon=False)
    ax.grid(True, which="both", alpha=0.3)
    plt.tight_layout()
    plt.show()
    return fig
