"""Everything derived from the course's sources, written by one command.

    python -m grader.classroom.notebooks sync     write every derived file that is stale
    python -m grader.classroom.notebooks check    exit 1 naming each stale file

What is derived, from what (a test fails, saying to run sync, when any is stale):
- each kernel cell of solutions/ (a code cell `# kernel: NAME` / `VAR = r\"\"\"...\"\"\"`) from
  kernels/NAME.cu, the kernel's one home, `// BEGIN SOLUTION` ... `// END SOLUTION` markers
  included: the cell keeps its first two lines and takes the file's text after its header comment;
- notebooks/, the student copies: what nbgrader would release (solutions and hidden tests
  removed, outputs cleared, by nbgrader's own preprocessors run without a gradebook), with the
  Colab setup cell first (grader/classroom/colab.py: it does nothing outside Colab);
- the line each solution's introduction ends with, saying what it grades (section, points), and
  README.md's course table and course/README.md's assignment list and expected scores
  (grader/classroom/course_tables.py), from the solution notebooks' own cells.
Every notebook is written in Jupyter's own style (grader/classroom/notebook_file.py), so a
solution saved in JupyterLab and a synced one differ only where the text does.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from grader.classroom import course_tables, graded_cells, notebook_file

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
STUDENT = ROOT / "notebooks"
KERNELS = ROOT / "kernels"
SYNC = "python -m grader.classroom.notebooks sync"

_HEADER_COMMENT = re.compile(r"^\s*/\*.*?\*/\s*", re.S)
_VAR_LINE = re.compile(r'^\w+ = r"""$')


def sources() -> list[Path]:
    return sorted(SOLUTIONS.glob("*/*.ipynb"))


def kernel_cell_text(cell_source: str, kernel_file: Path) -> str:
    """A kernel cell's text with its kernel written from `kernel_file` (the header comment left
    to the file: the notebook's markdown teaches what it says)."""
    if not kernel_file.is_file():
        raise FileNotFoundError(f"a kernel cell names {kernel_file.name}, which is not in {kernel_file.parent}")
    code = kernel_file.read_text()
    code = code[_HEADER_COMMENT.match(code).end():] if _HEADER_COMMENT.match(code) else code
    if '"""' in code:
        raise ValueError(f'{kernel_file.name} holds """, which would end the notebook\'s string early')
    lines = cell_source.split("\n", 2)
    if len(lines) < 2 or not _VAR_LINE.match(lines[1]) or cell_source.count('"""') != 2 \
            or not cell_source.endswith('"""'):
        raise ValueError(f"the kernel cell for {kernel_file.name} is not `# kernel: NAME`, `VAR = r\"\"\"`, the kernel, "
                         '`"""` (sync writes the kernel into that shape, and would lose anything else)')
    return f'{lines[0]}\n{lines[1]}\n{code}"""'


def solution(path: Path) -> nbformat.NotebookNode:
    """The solution notebook at `path` with every kernel cell written from its kernels/ file."""
    nb = notebook_file.read(path)
    for name, _var, cell in graded_cells.kernel_cells(nb):
        cell.source = kernel_cell_text(cell.source, KERNELS / f"{name}.cu")
    course_tables.with_intro_list(nb, path.parent.name)
    return nb


def student_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, ClearOutput

    from grader.classroom.colab import colab_cell
    from grader.classroom.nbgrader_ext import CudaClearSolutions

    nb = nbformat.from_dict(nb)
    for pre in (CudaClearSolutions(), ClearHiddenTests(), ClearMarkScheme(), ClearOutput()):
        nb, _ = pre.preprocess(nb, {})
    nb.cells.insert(0, colab_cell())
    return nb


def expected() -> dict[Path, str]:
    """Every derived file -> the text it should have."""
    out, books = {}, {}
    for src in sources():
        nb = solution(src)
        books[src.parent.name] = nb
        out[src] = notebook_file.dumps(nb)
        out[STUDENT / src.relative_to(SOLUTIONS)] = notebook_file.dumps(student_copy(nb))
    out.update(course_tables.expected(books, ROOT))
    return out


def stale() -> list[Path]:
    return [p for p, text in expected().items() if not p.is_file() or p.read_text() != text]


def sync() -> list[Path]:
    written = []
    for p, text in expected().items():
        if not p.is_file() or p.read_text() != text:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_text(text)
            tmp.replace(p)
            written.append(p)
    return written


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    except (ValueError, FileNotFoundError) as e:  # a source the derived files cannot be written from
        print(f"{' '.join(argv)}: {e}", file=sys.stderr)
        return 1


def _main(argv: list[str]) -> int:
    if argv == ["sync"]:
        written = sync()
        for p in written:
            print(f"wrote {p.relative_to(ROOT)}")
        print(f"{len(expected())} derived files: {len(written)} rewritten, the rest already up to date")
        return 0
    if argv == ["check"]:
        bad = stale()
        for p in bad:
            print(f"stale: {p.relative_to(ROOT)} (run: {SYNC})")
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
