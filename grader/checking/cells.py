"""Which notebook cell a kernel source came from, so errors can name the cell's own lines.

A kernel in a notebook is a raw string in a cell that starts with `# kernel: NAME` and
`SRC = r\"\"\"`: kernel line 1 is cell line 2, and Jupyter numbers the cell's lines. When
`check` runs inside IPython (a notebook, nbgrader's autograder), the input history holds the
text of every cell that ran; the newest cell that contains the source verbatim (raw strings
are verbatim) is the one the student edits. Outside IPython there is no cell: lines stay
"line N of your kernel source".
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceCell:
    """Kernel line n is line n + offset of the cell called `name`."""

    offset: int
    name: str  # "this cell", "the cell above", "the cell that defines SRC_FAST", "cell [12]"
    number: int | None = None  # the cell's execution count (In[number])

    def line(self, n: int) -> int:
        return n + self.offset

    def where(self, n: int) -> str:
        return f"line {self.line(n)} of {self.name} (line {n} of the kernel)"

    def to_dict(self) -> dict:
        return dict(name=self.name, number=self.number, offset=self.offset)


def _history() -> list[str] | None:
    """The text of every cell run so far, oldest first (index = execution count), or None
    outside IPython. Tests replace this function with a fake `In` list."""
    if "IPython" not in sys.modules:  # never imported: not inside IPython
        return None
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return None
    ip = get_ipython()
    if ip is None:
        return None
    hm = getattr(ip, "history_manager", None)
    raw = getattr(hm, "input_hist_raw", None)  # as typed: line numbers match the cell's
    if raw:
        return list(raw)
    hist = getattr(ip, "user_ns", {}).get("In")
    return list(hist) if hist else None


_ASSIGNED = re.compile(r"(\w+)\s*=\s*[rR]?(?:\"\"\"|''')\s*$")


def find_cell(source: str) -> SourceCell | None:
    """The newest cell whose text contains `source` verbatim, or None (outside IPython, or a
    source that no cell holds as written, e.g. one built with str.replace or read from a file)."""
    try:
        history = _history()
    except Exception:  # never let a lookup break a check
        return None
    if not history or "\n" not in source.strip():  # a one-liner could be anywhere
        return None
    current = len(history) - 1  # the cell running now (it called check)
    for k in range(current, -1, -1):
        text = history[k]
        if not isinstance(text, str):
            continue
        at = text.find(source)
        if at < 0:
            continue
        offset = text.count("\n", 0, at)
        if k == current:
            name = "this cell"
        elif k == current - 1:
            name = "the cell above"
        else:
            head = text[:at].rsplit("\n", 1)[-1]
            m = _ASSIGNED.search(head)
            name = f"the cell that defines {m[1]}" if m else f"cell [{k}]"
        return SourceCell(offset, name, k)
    return None


_LINE = re.compile(r"\bline (\d+)(?=[:)]|$)", re.M)


def relabel(message: str, cell: SourceCell | None) -> str:
    """Kernel line numbers in a runtime message ("..., line 26: wmma::load...") in cell terms."""
    if cell is None:
        return message
    return _LINE.sub(lambda m: cell.where(int(m[1])), message)
