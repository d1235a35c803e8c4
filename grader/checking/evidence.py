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
