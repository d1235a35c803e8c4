"""What a solution notebook grades, read from its own cells (the one place it is written).

- a kernel cell: a code cell that starts `# kernel: NAME` and sets `VAR = r\"\"\"...\"\"\"`, the text
  of kernels/NAME.cu (grader/classroom/notebooks.py writes it from the file);
- a kernel test cell: an nbgrader test cell that calls `grade("<exercise>", VAR, ...)`;
- any other nbgrader test cell grades Python (asserts whose last line is the points), named in
  the README and the intro by the label the notebook's metadata gives its grade id
  (`course.graded`: {grade_id: label}).
"""
from __future__ import annotations

import ast
import re

KERNEL_CELL = "# kernel: "
_KERNEL_VAR = re.compile(r'^(\w+) = r"""', re.M)


def is_test(cell) -> bool:
    return cell.cell_type == "code" and bool(cell.metadata.get("nbgrader", {}).get("grade"))


def grade_calls(source: str) -> list[tuple[str, str]]:
    """[(exercise id, variable)] of every `grade("<id>", VAR, ...)` call in a cell's text."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # IPython syntax (a magic), or a
        return []  # hand-in's junk: no grade() call the grader would read either
    return [(n.args[0].value, n.args[1].id) for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "grade"
            and len(n.args) >= 2 and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)
            and isinstance(n.args[1], ast.Name)]


def exercise_of(cell) -> str | None:
    """The exercise a test cell grades with grade(), or None (a Python test cell, or not a test)."""
    calls = grade_calls(cell.source) if is_test(cell) else []
    return calls[0][0] if calls else None


def graded_kernels(nb) -> dict[str, str]:
    """{variable: exercise id} of every kernel the notebook's test cells grade, in notebook order."""
    return {var: ex for c in nb.cells if is_test(c) for ex, var in grade_calls(c.source)}


def kernel_cells(nb) -> list[tuple[str, str, object]]:
    """[(kernel file name, variable, cell)] of every `# kernel: NAME` cell."""
    out = []
    for c in nb.cells:
        if c.cell_type == "code" and c.source.startswith(KERNEL_CELL):
            m = _KERNEL_VAR.search(c.source)
            if m:
                out.append((c.source.split("\n", 1)[0][len(KERNEL_CELL):].strip(), m.group(1), c))
    return out


def kernel_text(cell) -> str:
    """The CUDA source a kernel cell sets (between r\"\"\" and the closing \"\"\")."""
    return cell.source.split('r"""', 1)[1].rsplit('"""', 1)[0]


_SECTION = re.compile(r"^##\s+(\d+)\.", re.M)


def graded_items(nb, where: str = "the notebook") -> list[tuple[str, float, str | None]]:
    """[(what, points, section)] the notebook grades, in its order: what is `exercise` (in
    backticks) for a grade() cell, the label `course.graded` gives a Python test cell's grade id
    (cells with one label are one item); section is the number of the `## N.` heading above."""
    labels = (nb.metadata.get("course") or {}).get("graded", {})
    items: dict[str, list] = {}
    section = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = _SECTION.findall(cell.source)
            section = found[-1] if found else section
        if not is_test(cell):
            continue
        calls = grade_calls(cell.source)
        gid = cell.metadata["nbgrader"].get("grade_id")
        if calls:
            what = ", ".join(f"`{ex}`" for ex, _ in calls)
        elif gid in labels:
            what = labels[gid]
        else:
            raise ValueError(f"{where}: test cell {gid} grades Python and course.graded in the notebook's "
                             "metadata gives it no label (the README's course table and the intro list it)")
        item = items.setdefault(what, [what, 0.0, section])
        item[1] += float(cell.metadata["nbgrader"].get("points", 0))
    return [tuple(i) for i in items.values()]
