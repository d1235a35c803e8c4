"""Notebooks: every derived file (solution kernel cells, student copies, the course tables) is up
to date, notebooks are written as Jupyter writes them, and every notebook runs top to bottom here.

On a CPU-only machine the notebooks take their CPU paths (emulator, "needs a GPU" timing).
"""
import os
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.classroom import notebook_file, notebooks

ALL = notebooks.sources() + [notebooks.STUDENT / p.relative_to(notebooks.SOLUTIONS)
                             for p in notebooks.sources()]


def test_derived_files_are_fresh():
    assert notebooks.sources(), "no notebooks in solutions/"
    stale = [str(p.relative_to(notebooks.ROOT)) for p in notebooks.stale()]
    assert stale == [], f"stale {stale} (run: python -m grader.classroom.notebooks sync)"


def test_stale_copy_is_detected(tmp_path, monkeypatch):
    monkeypatch.setattr(notebooks, "STUDENT", tmp_path)
    assert len(notebooks.stale()) == len(notebooks.sources())
    notebooks.sync()
    assert notebooks.stale() == []
    first = sorted(tmp_path.glob("*/*.ipynb"))[0]
    first.write_text(first.read_text().replace("grader", "grader ", 1))
    assert notebooks.stale() == [first]


@pytest.mark.slow
@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(notebooks.ROOT)))
def test_notebook_runs_top_to_bottom(path: Path):
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # IPC sockets: parallel notebook runs on one machine cannot race for a TCP port.
    km = KernelManager(kernel_name="python3", transport="ipc",
                       ip=os.path.join(tempfile.gettempdir(), f"tc-kernel-{os.getpid()}"))
    client = NotebookClient(nb, km=km, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()  # raises CellExecutionError naming the cell on any error
    finally:
        if os.environ.get("NB_OUT"):  # keep the executed notebook, failed or not (GPU runs)
            out = Path(os.environ["NB_OUT"]) / f"{path.parent.parent.name}-{path.name}"
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out)
    errors = [o for c in nb.cells if c.cell_type == "code"
              and "raises-exception" not in c.metadata.get("tags", [])  # "not yet" cells of copies
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[0].get("ename")
    if path.stem.startswith("00"):
        last = nb.cells[-1].outputs[0]["text"]
        assert last.startswith("READY"), last


@pytest.mark.parametrize("path", notebooks.sources(), ids=lambda p: p.name)
def test_kernel_cells_are_written_from_their_kernels_file(path):
    """A solution's kernel cell is kernels/NAME.cu after its header comment, solution markers
    and all (one home: the .cu file; sync writes the cell)."""
    from grader.classroom import graded_cells
    from grader.runtime import kernels

    cells = graded_cells.kernel_cells(notebook_file.read(path))
    for name, _var, cell in cells:
        code = graded_cells.kernel_text(cell)
        assert kernels.source(name).endswith(code.lstrip("\n")), f"{path.name}: cell for {name} differs"
    if graded_cells.graded_kernels(notebook_file.read(path)):
        assert cells and all("// BEGIN SOLUTION" in kernels.source(n) for n, _, _ in cells), path.name


def _copy_course(tmp_path, monkeypatch):
    """solutions/, notebooks/, kernels/ and the two READMEs copied under tmp_path, which
    the module then treats as the repository."""
    import shutil

    for d in ("solutions", "notebooks", "kernels"):
        shutil.copytree(notebooks.ROOT / d, tmp_path / d)
    (tmp_path / "course").mkdir()
    shutil.copy(notebooks.ROOT / "README.md", tmp_path / "README.md")
    shutil.copy(notebooks.ROOT / "course" / "README.md", tmp_path / "course" / "README.md")
    for name, sub in (("ROOT", ""), ("SOLUTIONS", "solutions"), ("STUDENT", "notebooks"), ("KERNELS", "kernels")):
        monkeypatch.setattr(notebooks, name, tmp_path / sub if sub else tmp_path)
    return tmp_path


def test_an_edited_kernel_file_makes_its_solution_and_student_copy_stale(tmp_path, monkeypatch):
    root = _copy_course(tmp_path, monkeypatch)
    cu = root / "kernels" / "sgemm_naive.cu"
    cu.write_text(cu.read_text().replace("float acc = 0.0f;", "float acc = 0.0f;  // sum here"))
    nb = "03-cuda-core-gemm/03-cuda-core-gemm.ipynb"
    assert notebooks.stale() == [root / "solutions" / nb]  # the student copy keeps only the stub
    assert notebooks.main(["check"]) == 1
    notebooks.sync()
    assert notebooks.stale() == []
    assert "float acc = 0.0f;  // sum here" in (root / "solutions" / nb).read_text()
    # the student copy changes when the part outside the solution region does
    cu.write_text(cu.read_text().replace("extern \"C\" __global__", "// the kernel\nextern \"C\" __global__"))
    assert notebooks.stale() == [root / "solutions" / nb, root / "notebooks" / nb]


def test_check_names_each_stale_file_and_says_run_sync(tmp_path, monkeypatch, capsys):
    root = _copy_course(tmp_path, monkeypatch)
    guide, readme = root / "course" / "README.md", root / "README.md"
    text = guide.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `03-cuda-core-gemm` |"))
    guide.write_text(text.replace(row, row.replace(" | ", " | 99", 1)))  # its points: 3 -> 993
    text = readme.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| 03 "))
    readme.write_text(text.replace(row, row.replace("`sgemm-naive`, ", "")))  # an exercise left out
    assert notebooks.main(["check"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"stale: {p} (run: python -m grader.classroom.notebooks sync)" for p in ("README.md", "course/README.md")]
    notebooks.sync()
    assert notebooks.main(["check"]) == 0
    assert row in readme.read_text()


def test_a_new_graded_cell_appears_in_the_course_table(tmp_path, monkeypatch):
    """The README lists what the notebook's own test cells grade: a grade() cell added to 04
    shows up there after sync, and a Python test cell without a label is refused, saying why.
    (What 04 grades already is read, not written here: an exercise added by the recipe keeps this true.)"""
    from grader.classroom import graded_cells

    root = _copy_course(tmp_path, monkeypatch)
    path = root / "solutions" / "04-wmma-basics" / "04-wmma-basics.ipynb"
    nb = notebook_file.read(path)
    before = graded_cells.graded_items(nb)
    guide_row = next(line for line in (root / "course" / "README.md").read_text().splitlines()
                     if line.startswith("| `04-wmma-basics` |"))
    points, gpu = (cell.strip() for cell in guide_row.split("|")[2:4])
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "wmma-gemm-test")
    extra = nbformat.from_dict(test)
    extra.id = "extra-test"
    extra.metadata["nbgrader"] = dict(test.metadata["nbgrader"], grade_id="not-an-exercise-test", points=1)
    extra.source = 'grade("not-an-exercise", SRC_WMMA, points=1)'
    nb.cells.insert(nb.cells.index(test) + 1, extra)
    notebook_file.write(nb, path)
    notebooks.sync()
    graded = [what for what, _, _ in before]
    at = graded.index("`wmma-gemm`") + 1
    row = next(l for l in (root / "README.md").read_text().splitlines() if l.startswith("| 04 "))
    assert "| " + ", ".join(graded[:at] + ["`not-an-exercise`"] + graded[at:]) + " |" in row
    total = sum(p for _, p, _ in before) + 1
    for book in (path, root / "notebooks" / "04-wmma-basics" / "04-wmma-basics.ipynb"):  # and the intros
        intro = next(c for c in notebook_file.read(book).cells if c.cell_type == "markdown").source
        assert f"**Graded here** ({total:g} points): " in intro and "`not-an-exercise` (section 2, 1 point)" in intro
    got, out_of = (float(x) for x in gpu.split(" / "))
    assert f"| `04-wmma-basics` | {float(points) + 1:g} | {got + 1:g} / {out_of + 1:g} |" in (
        root / "course" / "README.md").read_text()
    extra.source = "assert True\n1.0"
    notebook_file.write(nb, path)
    with pytest.raises(ValueError, match="not-an-exercise-test grades Python"):
        notebooks.stale()


def test_every_notebook_is_written_as_jupyter_saves_it():
    """Saving a synced notebook in Jupyter (nbformat.write) rewrites no byte of it."""
    import io

    for path in ALL:
        buf = io.StringIO()
        nbformat.write(nbformat.read(path, as_version=4), buf)
        assert buf.getvalue() == path.read_text(), path


def test_the_notebook_tools_import_no_circle():
    """notebooks, nbgrader_ext, colab and the derived tables: imports one way only."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("layering", Path(__file__).parents[1] / "test_layering.py")
    layering = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layering)
    mine = {"classroom.notebooks", "classroom.nbgrader_ext", "classroom.colab", "classroom.course_tables",
            "classroom.graded_cells", "classroom.notebook_file"}
    graph = {n: {t[len("grader."):] for t in layering._imports(n, p)} for n, p in layering._modules()}

    def reaches(a, b, seen=()):
        return any(t == b or (t not in seen and reaches(t, b, (*seen, t))) for t in graph.get(a, ()))

    circles = [m for m in sorted(mine) if reaches(m, m)]
    assert not circles, f"import circles through {circles}"


@pytest.mark.parametrize("path", notebooks.sources(), ids=lambda p: p.name)
def test_the_intro_ends_with_what_the_notebook_grades(path):
    """The introduction's last lines are derived from the test cells (sync writes them), and its
    prose names no exercise that the notebook does not grade."""
    import re

    from grader.checking import exercises
    from grader.classroom import course_tables, graded_cells

    nb = notebook_file.read(path)
    intro = next(c for c in nb.cells if c.cell_type == "markdown").source
    graded = {ex for c in nb.cells if graded_cells.is_test(c) for ex, _ in graded_cells.grade_calls(c.source)}
    line = course_tables.intro_list(nb, path.parent.name)
    assert (line is not None) == bool(graded or graded_cells.graded_items(nb))
    if line:
        assert intro.rstrip().endswith(f"{line}\n<!-- end derived -->"), "run: python -m grader.classroom.notebooks sync"
        assert all(f"`{ex}`" in line for ex in graded)
    named = set(re.findall(r"`([\w-]+)`", intro.split("<!-- derived: graded")[0])) & set(exercises.EXERCISES)
    assert named <= graded, f"the intro names {sorted(named - graded)}, which {path.name} does not grade"


def test_a_kernel_cell_sync_cannot_rewrite_whole_is_refused(tmp_path, monkeypatch, capsys):
    """A kernel cell with more than its kernel (a line after the string) would lose it: sync and
    check refuse in one line naming the kernel, and write nothing."""
    root = _copy_course(tmp_path, monkeypatch)
    path = root / "solutions" / "03-cuda-core-gemm" / "03-cuda-core-gemm.ipynb"
    nb = notebook_file.read(path)
    cell = next(c for c in nb.cells if c.source.startswith("# kernel: sgemm_naive"))
    cell.source += "\nprint(len(SRC_NAIVE))"
    notebook_file.write(nb, path)
    before = path.read_text()
    assert notebooks.main(["sync"]) == 1
    err = capsys.readouterr().err
    assert "sgemm_naive.cu" in err and "would lose anything else" in err and "Traceback" not in err
    assert path.read_text() == before


def _grader_names_used(nb) -> list[tuple[int, str, str, str | None, str | None]]:
    """(cell, alias, module, imported name, attribute) for every name a code cell imports from grader
    (and each attribute later cells read of it), tracked across cells as the kernel keeps them."""
    import ast

    names, out = {}, []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        tree = ast.parse(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("grader"):
                for a in node.names:
                    names[a.asname or a.name] = (node.module, a.name)
                    out.append((i, a.asname or a.name, node.module, a.name, None))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
                out.append((i, node.value.id, *names[node.value.id], node.attr))
    return out


@pytest.mark.parametrize("path", notebooks.sources(), ids=lambda p: p.name)
def test_every_grader_name_a_notebook_uses_exists(path):
    """A renamed or moved function breaks a notebook only where its cell runs, and many run on a
    GPU alone (notebook 00's first WMMA run, 03's ladder of your kernels): every name a cell imports
    from grader, and every attribute it reads of an imported module, must exist."""
    import importlib
    import types

    missing = []
    for cell, alias, module, name, attr in _grader_names_used(nbformat.read(path, as_version=4)):
        mod = importlib.import_module(module)
        obj = getattr(mod, name) if hasattr(mod, name) else importlib.import_module(f"{module}.{name}")
        if attr is not None and isinstance(obj, types.ModuleType) and not hasattr(obj, attr):
            missing.append(f"cell {cell}: {alias}.{attr} ({obj.__name__} has no {attr})")
    assert not missing, "\n".join(missing)
