"""Plumbing for notebook 02 (precision): the five formats, rounding to bf16/tf32, the bit
explorer and its widget, and the accumulation-error experiment's plot. The teaching code
(the accumulation loops, the fp16 decoder exercise) lives in the notebook."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Format:
    name: str
    exp_bits: int
    man_bits: int  # stored fraction bits (the significand has one more, implicit)

    @property
    def bias(self) -> int:
        return 2 ** (self.exp_bits - 1) - 1

    @property
    def bits(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def eps(self) -> float:  # distance from 1 to the next number
        return 2.0 ** -self.man_bits

    @property
    def max(self) -> float:
        return (2 - 2.0 ** -self.man_bits) * 2.0 ** self.bias

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (1 - self.bias - self.man_bits)

    @property
    def digits(self) -> float:  # decimal digits the significand carries
        return (self.man_bits + 1) * math.log10(2)


# tf32 is stored in 32 bits but only 1 + 8 + 10 of them are used by the tensor cores
FORMATS = {f.name: f for f in (Format("fp64", 11, 52), Format("fp32", 8, 23), Format("tf32", 8, 10),
                               Format("bf16", 8, 7), Format("fp16", 5, 10))}


def round_to(x, fmt: str) -> np.ndarray:
    """Round float64 values to the format (round to nearest, ties to even), returned as
    float64. bf16 and tf32 are fp32 with the low 16 / 13 fraction bits rounded away."""
    x = np.asarray(x, dtype=np.float64)
    if fmt == "fp64":
        return x.copy()
    if fmt == "fp16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float64)
    with np.errstate(over="ignore"):
        f32 = x.astype(np.float32)
    if fmt == "fp32":
        return f32.astype(np.float64)
    drop = {"bf16": 16, "tf32": 13}[fmt]
    u = np.atleast_1d(f32).view(np.uint32).astype(np.uint64)
    finite = np.isfinite(np.atleast_1d(f32))
    half = np.uint64(1 << (drop - 1))
    lsb = (u >> np.uint64(drop)) & np.uint64(1)
    r = ((u + half - np.uint64(1) + lsb) >> np.uint64(drop)) << np.uint64(drop)  # RNE
    r = np.where(finite, r, u).astype(np.uint32)
    out = r.view(np.float32).astype(np.float64).reshape(f32.shape)
    return out


def _fields(v: float, f: Format) -> tuple[int, int, int]:
    """(sign, biased exponent, fraction) of a value already representable in f."""
    if f.name == "fp64":
        u = int(np.float64(v).view(np.uint64))
        return u >> 63, (u >> 52) & 0x7FF, u & ((1 << 52) - 1)
    if f.name == "fp16":
        u = int(np.float16(v).view(np.uint16))
        return u >> 15, (u >> 10) & 0x1F, u & 0x3FF
    with np.errstate(over="ignore"):
        u = int(np.float32(v).view(np.uint32))
    drop = 23 - f.man_bits
    return u >> 31, (u >> 23) & 0xFF, (u & 0x7FFFFF) >> drop


def bits(x: float, fmt: str) -> dict:
    """x rounded to fmt, its fields as bit strings, what kind of number it is, and its two
    neighbours in that format."""
    f = FORMATS[fmt]
    v = float(round_to(x, fmt))
    s, e, m = _fields(v, f)
    kind = ("inf" if math.isinf(v) else "nan" if math.isnan(v) else "zero" if v == 0
            else "subnormal" if e == 0 else "normal")
    down, up = neighbours(v, fmt) if kind in ("normal", "subnormal", "zero") else (math.nan, math.nan)
    return dict(format=fmt, value=v, sign=str(s), exponent=format(e, f"0{f.exp_bits}b"),
                fraction=format(m, f"0{f.man_bits}b"), kind=kind, error=v - x if math.isfinite(v) else math.inf,
                down=down, up=up)


def neighbours(v: float, fmt: str) -> tuple[float, float]:
    """The representable numbers just below and just above v in fmt."""
    f = FORMATS[fmt]
    if v == 0:
        return -f.min_subnormal, f.min_subnormal
    e = max(math.floor(math.log2(abs(v))), 1 - f.bias)
    ulp = 2.0 ** (e - f.man_bits)
    # just below a power of two the spacing halves
    below = ulp / 2 if abs(v) == 2.0 ** e and e > 1 - f.bias else ulp
    if v > 0:
        return v - below, (v + ulp if v + ulp <= f.max else math.inf)
    return (v - ulp if -(v - ulp) <= f.max else -math.inf), v + below


_COLORS = dict(sign="#cf222e", exponent="#0969da", fraction="#2da44e")


def explore(x: float, formats=("fp64", "fp32", "tf32", "bf16", "fp16")):
    """HTML table: x in each format, its bits coloured by field, the rounding error and the
    neighbours (plain-text repr for static renders)."""
    return bits_table(x, formats, bits, 17, lambda fmt: math.ceil(FORMATS[fmt].digits) + 1)


def bits_table(x: float, formats, bits_of, value_digits: int, neighbour_digits):
    """The explorer's table for any codec: `bits_of(x, fmt)` gives the fields, kind, error and
    neighbours (notebook 02's formats here, notebook 11's FP8 in grader.lessons.fp8_formats)."""
    from grader.checking.display import HTML

    rows, text, vd = [], [], value_digits
    for fmt in formats:
        b = bits_of(x, fmt)
        nd = neighbour_digits(fmt)  # enough digits to tell neighbours apart
        bitcells = "".join(f"<span style='color:{_COLORS[k]}'>{b[k]}</span> " for k in ("sign", "exponent", "fraction"))
        rows.append(f"<tr><td><b>{fmt}</b></td><td style='font-family:monospace'>{bitcells}</td>"
                    f"<td>{b['value']:.{vd}g}</td><td>{b['kind']}</td><td>{b['error']:.3g}</td>"
                    f"<td>{b['down']:.{nd}g}</td><td>{b['up']:.{nd}g}</td></tr>")
        text.append(f"{fmt:5} {b['sign']} {b['exponent']} {b['fraction']}  = {b['value']:.{vd}g} ({b['kind']}, "
                    f"error {b['error']:.3g}; neighbours {b['down']:.{nd}g} / {b['up']:.{nd}g})")
    head = ("<tr><th>format</th><th>bits: <span style='color:#cf222e'>sign</span> "
            "<span style='color:#0969da'>exponent</span> <span style='color:#2da44e'>fraction</span></th>"
            "<th>stored value</th><th>kind</th><th>rounding error</th><th>next below</th><th>next above</th></tr>")
    return HTML(f"<p>x = {html.escape(repr(x))}</p><table>{head}{''.join(rows)}</table>",
                f"x = {x!r}\n" + "\n".join(text))


def explorer_widget(value: str = "0.1", explore=explore):
    """A text box: type a number, see `explore(x)` (notebook 02's formats, or another codec's)."""
    import ipywidgets as w
    from IPython.display import display

    box = w.Text(value=value, description="x =", continuous_update=False)
    out = w.Output()

    def show(change=None):
        out.clear_output()
        with out:
            try:
                display(explore(float(box.value)))
            except ValueError:
                print(f"not a number: {box.value!r}")

    box.observe(show, names="value")
    show()
    return w.VBox([box, out])


def formats_table() -> list[dict]:
    return [dict(format=f.name, bits=f.bits, exponent=f.exp_bits, fraction=f.man_bits,
                 max=f"{f.max:.4g}", min_normal=f"{f.min_normal:.3g}", min_subnormal=f"{f.min_subnormal:.3g}",
                 epsilon=f"{f.eps:.3g}", digits=f"{f.digits:.1f}") for f in FORMATS.values()]


def plot_ranges():
    """Each format as a bar on a log2 axis from its smallest subnormal to its largest value,
    the normal range solid, the subnormal range hatched, with epsilon written beside."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.6))
    for k, f in enumerate(reversed(list(FORMATS.values()))):
        lo, mid, hi = math.log2(f.min_subnormal), math.log2(f.min_normal), math.log2(f.max)
        ax.barh(k, mid - lo, left=lo, color="#bbbbbb", hatch="//", edgecolor="w")
        ax.barh(k, hi - mid, left=mid, color="#0969da")
        ax.text(hi + 25, k, f"eps 2^-{f.man_bits}, {f.digits:.1f} digits", va="center", fontsize=11)
    ax.set_yticks(range(len(FORMATS)), [f.name for f in reversed(list(FORMATS.values()))], fontsize=11)
    ax.tick_params(axis="x", labelsize=10)
    ax.set_xlabel("log2 |x|  (grey: subnormals; blue: normal numbers)", fontsize=11)
    ax.set_xlim(-1100, 1750)
    ax.set_title("Range of each format (log2 of the smallest subnormal to the largest value)", fontsize=12)
    plt.tight_layout()
    plt.show()
    return fig


def plot_accumulation(Ks, errors: dict, bounds: dict, title: str):
    """Log-log plot of error against K: `errors` maps a label to one value per K (measured),
    `bounds` a label to one value per K (drawn dashed)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    colors = {"fp16": "#cf222e", "fp32": "#0969da", "gpu": "#2da44e"}
    for label, ys in errors.items():
        c = next((v for k, v in colors.items() if k in label), None)
        ax.loglog(Ks, ys, "o-", label=label, color=c, ms=4)
    for label, ys in bounds.items():
        c = next((v for k, v in colors.items() if k in label), None)
        ax.loglog(Ks, ys, "--", label=label, color=c, lw=1)
    ax.set_xlabel("K (terms in the sum)", fontsize=11)
    ax.set_ylabel("|s - s64| / sum |a_k b_k|", fontsize=11)
    ax.tick_params(labelsize=10)
    ax.set_title(title, fontsize=12)
    # the legend below the axes: inside, it would sit on the curves
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    ax.grid(True, which="both", alpha=0.3)
    plt.tight_layout()
    plt.show()
    return fig
