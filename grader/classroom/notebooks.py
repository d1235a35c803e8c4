"""Student notebooks are generated from the instructor sources in solutions/.

    python -m grader.classroom.notebooks sync     regenerate notebooks/ from solutions/
    python -m grader.classroom.notebooks check    exit 1 if any student copy is stale

The student copy is what nbgrader would release: solutions and hidden tests removed,
outputs cleared (nbgrader's own preprocessors, run without a gradebook), with the Colab
setup cell first (grader/classroom/colab.py: it does nothing outside Colab).
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
STUDENT = ROOT / "notebooks"


def sources() -> list[Path]:
    return sorted(SOLUTIONS.glob("*/*.ipynb"))


COLAB_CELL_ID = "colab-setup"


def colab_cell() -> nbformat.NotebookNode:
    """The first cell of every student notebook: Colab's one-step setup (Colab shows it as a
    titled form with the code folded)."""
    from grader.classroom.colab import CELL

    source = '#@title Colab: set up the course (run me first) { display-mode: "form" }\n' + CELL
    cell = nbformat.v4.new_code_cell(source, metadata={"cellView": "form"})
    cell.id = COLAB_CELL_ID  # fixed, so regenerating gives the same file
    return cell


def student_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, ClearOutput

    from grader.classroom.nbgrader_ext import CudaClearSolutions

    nb = nbformat.from_dict(nb)
    for pre in (CudaClearSolutions(), ClearHiddenTests(), ClearMarkScheme(), ClearOutput()):
        nb, _ = pre.preprocess(nb, {})
    nb.cells.insert(0, colab_cell())
    return nb


def _render(nb) -> str:
    return nbformat.writes(nb) + "\n"


def expected() -> dict[Path, str]:
    """Student path -> the text it should have."""
    out = {}
    for src in sources():
        nb = nbformat.read(src, as_version=4)
        out[STUDENT / src.relative_to(SOLUTIONS)] = _render(student_copy(nb))
    return out


def stale() -> list[Path]:
    return [p for p, text in expected().items() if not p.is_file() or p.read_text() != text]


def sync() -> list[Path]:
    written = []
    for p, text in expected().items():
        if not p.is_file() or p.read_text() != text:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            written.append(p)
    return written


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["sync"]:
        written = sync()
        for p in written:
            print(f"wrote {p.relative_to(ROOT)}")
        print(f"{len(expected())} student notebooks: {len(written)} rewritten, the rest already up to date")
        return 0
    if argv == ["check"]:
        bad = stale()
        for p in bad:
            print(f"stale: {p.relative_to(ROOT)} (run: python -m grader.classroom.notebooks sync)")
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
