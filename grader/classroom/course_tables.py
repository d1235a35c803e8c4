"""The tables and lists the course's texts show about its notebooks, derived from the solutions.

- each solution's introduction (its first markdown cell) ends with what it grades: every item
  with its section and points (`intro_list`);
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
    _meta(nb, assignment)
    return [what for what, _, _ in graded_cells.graded_items(nb, f"solutions/{assignment}")]


def intro_list(nb, assignment: str) -> str | None:
    """The line the notebook's introduction ends with: what it grades, where and for how much."""
    items = graded_cells.graded_items(nb, f"solutions/{assignment}")
    if not items:
        return None
    total = sum(p for _, p, _ in items)
    parts = [f"{what} ({f'section {sec}, ' if sec else ''}{p:g} point{'s' if p != 1 else ''})" for what, p, sec in items]
    return f"**Graded here** ({total:g} points): " + "; ".join(parts) + "."


def with_intro_list(nb, assignment: str) -> None:
    """Write intro_list into the notebook's first markdown cell (in place), or take it out."""
    intro = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if intro is None:
        raise ValueError(f"solutions/{assignment}: no markdown cell to introduce the notebook")
    begin = _BEGIN.format(name="graded")
    pattern = re.compile(r"\n*" + re.escape(begin) + r"\n.*?" + re.escape(_END), re.S)
    body = intro_list(nb, assignment)
    text = pattern.sub("", intro.source)
    intro.source = text + (f"\n\n{begin}\n{body}\n{_END}" if body else "")


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
