"""Regrades that never lose a result, and feedback that a stray file cannot stop: two changes
to nbgrader 0.9.6's converters, installed by course/nbgrader_config.py (`install()`), so the
guide's plain commands get them.

- `nbgrader autograde --force` (or a newer submission) removes a student's autograded folder
  BEFORE grading it again, and removes the half-written one when grading fails (a missing
  sandbox, a crash, Ctrl-C): the earlier result and its feedback were lost. Here the earlier
  folder is kept aside (autograded/.regrade/<student>/<assignment>, hidden from nbgrader's
  globs and from every sandbox, like the rest of autograded/) and put back unless the new
  grading succeeded. A run killed outright (SIGKILL) leaves the copy, and the next run of any
  autograde puts it back first.
- `nbgrader generate_feedback` fails a student whose autograded folder holds a notebook that is
  not part of the assignment (a stray copy); such notebooks are skipped, with a warning.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

KEEP = ".regrade"  # under autograded/: nbgrader's `*` globs skip dot-names


def _aside(coursedir, assignment: str, student: str) -> Path:
    return Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")) / KEEP / student / assignment


def _put_back(kept: Path, dest: Path, log) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(kept, dest)
    log.warning("kept the earlier result of %s: the new grading did not finish", dest)


def restore_all(coursedir, log) -> None:
    """Every copy kept aside is from a grading that never finished: put each back."""
    base = Path(coursedir.format_path(coursedir.autograded_directory, ".", ".")) / KEEP
    for kept in sorted(base.glob("*/*")) if base.is_dir() else []:
        _put_back(kept, Path(coursedir.format_path(coursedir.autograded_directory, kept.parent.name, kept.name)), log)


def install() -> None:
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import Autograde, GenerateFeedback

    if getattr(Autograde, "_course_regrade", False):
        return
    init_destination, convert_notebooks = Autograde.init_destination, Autograde.convert_notebooks
    post_hook = Autograde.run_post_convert_hook

    def safe_init_destination(self, assignment_id, student_id):
        dest = Path(os.path.normpath(self._format_dest(assignment_id, student_id)))
        kept = _aside(self.coursedir, assignment_id, student_id)
        if dest.is_dir():
            if kept.exists():
                shutil.rmtree(kept)
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(dest, kept, symlinks=True)
        go = init_destination(self, assignment_id, student_id)
        if not go and kept.exists():
            shutil.rmtree(kept)  # skipped: the folder was not touched
        self._course_current = kept if go else None
        return go

    def finished(self):
        kept = getattr(self, "_course_current", None)
        if kept is not None and kept.exists():
            shutil.rmtree(kept)  # graded: the new result replaces the old one
        self._course_current = None
        return post_hook(self)

    def safe_convert_notebooks(self):
        restore_all(self.coursedir, self.log)
        try:
            return convert_notebooks(self)
        finally:
            restore_all(self.coursedir, self.log)

    Autograde.init_destination = safe_init_destination
    Autograde.run_post_convert_hook = finished
    Autograde.convert_notebooks = safe_convert_notebooks

    init_notebooks = GenerateFeedback.init_notebooks

    def known_notebooks(self):
        init_notebooks(self)
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            for folder, books in self.assignments.items():
                m = Path(folder)
                try:
                    names = {nb.name for nb in gb.find_assignment(m.name).notebooks}
                except MissingEntry:
                    continue
                stray = [b for b in books if Path(b).stem not in names]
                for b in stray:
                    self.log.warning("Skipping %s: not a notebook of assignment %s", b, m.name)
                self.assignments[folder] = [b for b in books if Path(b).stem in names]

    GenerateFeedback.init_notebooks = known_notebooks
    Autograde._course_regrade = True
