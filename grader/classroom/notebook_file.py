"""The one writer of notebook files: Jupyter's own JSON style.

Every tool of the course that writes a notebook (solutions/ and notebooks/ by `notebooks sync`,
a hand-in repaired before grading) writes it here, as Jupyter saves it: nbformat's writer
(indent 1, sorted keys, non-ASCII characters as they are, sources split into lines) and a
trailing newline. So saving a solution in JupyterLab rewrites only what was edited, and a
generated file changes only where its source did.
"""
from __future__ import annotations

import os
from pathlib import Path

import nbformat


def dumps(nb) -> str:
    """The text of notebook `nb` (a NotebookNode or plain nbformat-4 dict) as Jupyter writes it."""
    # nbformat.write's own serializer, without its validation pass: what is written was read or
    # built as nbformat 4 (a hand-in proved readable first), and validation only logs
    text = nbformat.v4.nbjson.writes(nbformat.from_dict(nb))
    return text if text.endswith("\n") else text + "\n"


def write(nb, path: Path) -> None:
    """Write `nb` to `path` whole or not at all (a stopped write never leaves half a notebook)."""
    write_text(dumps(nb), path)


def write_text(text: str, path: Path) -> None:
    """Write `text`, from dumps(), to `path` whole or not at all."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(Path(path), as_version=4)
