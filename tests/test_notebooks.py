"""Notebooks: student copies are up to date, and every notebook runs top to bottom here.

On a CPU-only machine the notebooks take their CPU paths (emulator, "needs a GPU" timing).
"""
import os
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.classroom import notebooks

ALL = notebooks.sources() + [notebooks.STUDENT / p.relative_to(notebooks.SOLUTIONS)
                             for p in notebooks.sources()]


def test_student_copies_are_generated_and_fresh():
    assert notebooks.sources(), "no notebooks in solutions/"
    assert notebooks.stale() == [], "run: python -m grader.classroom.notebooks sync"


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


def _kernel_cells(path):
    """(kernel name, cell source) for every code cell that starts with `# kernel: NAME`."""
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code" and c.source.startswith("# kernel: "):
            yield c.source.split("\n", 1)[0][len("# kernel: "):].strip(), c.source


def _code_of(text: str) -> str:
    """Kernel text without its leading /* ... */ comment and without solution markers."""
    import re

    text = re.sub(r"^\s*/\*.*?\*/\s*", "", text, flags=re.S)
    lines = [l for l in text.splitlines() if "BEGIN SOLUTION" not in l and "END SOLUTION" not in l]
    return "\n".join(lines).strip()


@pytest.mark.parametrize("path", notebooks.sources(), ids=lambda p: p.name)
def test_kernel_cells_equal_their_kernels_file(path):
    """A solution cell that shows a reference kernel is a copy of kernels/NAME.cu (one home)."""
    from grader.runtime import kernels

    for name, source in _kernel_cells(path):
        body = source.split('r"""', 1)[1].rsplit('"""', 1)[0]
        assert _code_of(body) == _code_of(kernels.source(name)), f"{path.name}: cell for {name} differs"
