"""The tables the course's texts show about its notebooks, derived from the solution notebooks.

- README.md, "The course": a row per notebook: its number and title and what you learn (the
  notebook's metadata, `course`: `title`, `learn`), what is graded (the exercises its test cells
  `grade()`, in notebook order, and the Python test cells by the label `course.graded` gives
  their grade id), and its "Open in Colab" link (grader/classroom/colab.py);
- course/README.md: the list of assignments and the "Expected scores" table (the points of each
  solution's test cells, and what grading without a GPU can award: workflow.cpu_max_score).

Each sits between `<!-- derived: NAME ... -->` and `<!-- end derived -->` in its file;
`python -m grader.classroom.notebooks sync` writes them (grader/classroom/notebooks.py).
"""
from __future__ import annotations

import re
from pathlib import Path

from grader.classroom import graded_cells

_BEGIN = "<!-- derived: {name} (python -m grader.classroom.notebooks sync writes it; edit the notebooks) -->"
_END = "<!-- end derived -->"


def _meta(nb, assignment: str) -> dict:
    meta = nb.metadata.get("course")
    if not isinstance(meta, dict) or not {"title", "learn"} <= set(meta):
        raise ValueError(f"solutions/{assignment}: the notebook's metadata has no course.title and course.learn "
                         "(the README's course table shows them)")
    return meta


def graded_list(nb, assignment: str) -> list[str]:
    """What a notebook grades, in its order: `exercise` for a grade() cell, the label of a Python one."""
    labels = _meta(nb, assignment).get("graded", {})
    out = []
    for cell in nb.cells:
        if not graded_cells.is_test(cell):
            continue
        calls = graded_cells.grade_calls(cell.source)
        gid = cell.metadata["nbgrader"].get("grade_id")
        if calls:
            items = [f"`{ex}`" for ex, _ in calls]
        elif gid in labels:
            items = [labels[gid]]
        else:
            raise ValueError(f"solutions/{assignment}: test cell {gid} grades Python and course.graded in the "
                             "notebook's metadata gives it no label (the README's course table lists it)")
        out += [i for i in items if i not in out]
    return out


def course_table(books: dict) -> str:
    from grader.classroom.colab import colab_url

    rows = ["| notebook | you learn | graded | Colab |", "|---|---|---|---|"]
    for a, nb in books.items():
        meta = _meta(nb, a)
        graded = ", ".join(graded_list(nb, a)) or "—"
        if meta.get("graded_note"):
            graded += f" ({meta['graded_note']})"
        link = colab_url(f"notebooks/{a}/{a}.ipynb")
        rows.append(f"| {a.split('-', 1)[0]} {meta['title']} | {meta['learn']} | {graded} | [open]({link}) |")
    return "\n".join(rows)


def assignment_list(books: dict) -> str:
    names = ", ".join(f"`{a}`" for a in books)
    none = [a.split("-", 1)[0] for a in books if _points(books[a]) == 0]
    worthless = f"\n(`{'` and `'.join(none)}` award no points)." if none else "."
    return f"The assignments are the folder names in `solutions/`: {names}{worthless}"


def _points(nb) -> float:
    return sum(float(c.metadata["nbgrader"].get("points", 0)) for c in nb.cells if graded_cells.is_test(c))


def expected_scores(books: dict, solutions: Path) -> str:
    from grader.classroom.workflow import cpu_max_score

    rows = ["| assignment | points | solution, GPU | solution, CPU | solution, CPU-only grading | untouched release |",
            "|---|---|---|---|---|---|"]
    for a, nb in books.items():
        total = _points(nb)
        cpu = sum(cpu_max_score(p) for p in sorted((solutions / a).glob("*.ipynb")))
        rows.append(f"| `{a}` | {total:g} | {total:g} / {total:g} | {cpu:g} / {total:g} | {cpu:g} / {cpu:g} | 0 |")
    return "\n".join(rows)


def replace(text: str, name: str, body: str, where: str) -> str:
    """`text` with its derived block NAME holding `body`."""
    begin = _BEGIN.format(name=name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{where} has no derived block {name!r} (a line {begin!r}, then {_END!r})")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{_END}", text, count=1)


def expected(books: dict, root: Path) -> dict[Path, str]:
    """{README.md: text, course/README.md: text} with their derived blocks written from `books`
    ({assignment: solution notebook}, in order)."""
    readme, guide = root / "README.md", root / "course" / "README.md"
    out = {readme: replace(readme.read_text(), "course-table", course_table(books), "README.md")}
    text = replace(guide.read_text(), "assignments", assignment_list(books), "course/README.md")
    out[guide] = replace(text, "expected-scores", expected_scores(books, root / "solutions"), "course/README.md")
    return out
