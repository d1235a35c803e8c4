"""Drive nbgrader for a class: the same commands an instructor runs (course/README.md), as
functions the tests use to prove the workflow end to end.

    python -m grader.classroom dry-run [ASSIGNMENT ...]

runs release -> autograde (the solution as one student, the untouched release as another)
-> feedback -> export in a temporary course and prints the scores.
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
CONFIG = ROOT / "course" / "nbgrader_config.py"


def assignments() -> list[str]:
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def new_course(where: Path, source: Path = SOLUTIONS) -> Path:
    """A fresh nbgrader course folder using the repository's config and solutions/."""
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(CONFIG, where / "nbgrader_config.py")
    (where / ".source").write_text(str(source))
    return where


def nbgrader(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in `course` with this interpreter's tools on PATH (nbgrader calls
    the `alembic` executable of its own environment)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    src = course / ".source"
    if src.exists():
        env["TC_SOURCE_DIR"] = src.read_text()
    env.setdefault("PYTHONUNBUFFERED", "1")
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-6000:]}")
    return proc


def release(course: Path, assignment: str) -> Path:
    nbgrader(course, "generate_assignment", assignment, "--force")
    return course / "release" / assignment


def release_all(course: Path) -> None:
    """Release every assignment in one nbgrader run (its start-up costs seconds)."""
    nbgrader(course, "generate_assignment", "*", "--force")


def submit(course: Path, student: str, assignment: str, notebooks: list[Path]) -> Path:
    """Put notebooks where `nbgrader collect` would: submitted/<student>/<assignment>/."""
    dest = course / "submitted" / student / assignment
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb, dest / nb.name)
    (dest / "timestamp.txt").write_text("2026-11-22 12:00:00.000000 UTC")
    return dest


def autograde(course: Path, assignment: str, student: str) -> None:
    """Autograde one submission (`assignment` and `student` may be globs, e.g. "*")."""
    nbgrader(course, "autograde", assignment, "--student", student, "--force", "--create")


def scores(course: Path, assignment: str) -> dict[str, tuple[float, float]]:
    """student -> (score, max score) from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        out = {}
        for sub in gb.assignment_submissions(assignment):
            out[sub.student_id] = (float(sub.score), float(sub.max_score))
        return out


def cell_scores(course: Path, assignment: str, student: str) -> dict[str, float]:
    """grade_id -> awarded points of one submission."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission(assignment, student)
        return {g.name: float(g.score) for nb in sub.notebooks for g in nb.grades}


def cpu_max_score(solution: Path) -> float:
    """What grading on a CPU can award for a solution notebook: every Python test cell in full,
    kernel cells (`grade("ID", ...)`) their correctness share only: speed needs a GPU."""
    from . import exercises

    total = 0.0
    for cell in nbformat.read(solution, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade"):
            continue
        points = float(meta.get("points", 0))
        ids = [e for e in exercises.EXERCISES if f'grade("{e}"' in cell.source]
        if ids:
            ex = exercises.get(ids[0])
            points *= ex.points_correct / ex.points
        total += points
    return total


def export(course: Path) -> list[dict]:
    nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv") as f:
        return list(csv.DictReader(f))


def dry_run(names: list[str]) -> str:
    """Release, autograde (solution and untouched release), feedback and export each assignment
    in a temporary course; return a markdown table of scores and autograde times."""
    import time

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        course = new_course(Path(tmp) / "course")
        for a in names:
            rel = release(course, a)
            submit(course, "solution", a, sorted((SOLUTIONS / a).glob("*.ipynb")))
            submit(course, "untouched", a, sorted(rel.glob("*.ipynb")))
            t0 = time.perf_counter()
            autograde(course, a, "solution")
            seconds = time.perf_counter() - t0
            autograde(course, a, "untouched")
            nbgrader(course, "generate_feedback", a, "--force")
            got = scores(course, a)
            (s, m), (u, _) = got["solution"], got["untouched"]
            rows.append(f"| {a} | {s:g} / {m:g} | {u:g} | {seconds:.0f} s |")
            print(rows[-1], flush=True)
        exported = export(course)
    return ("| assignment | solution score | untouched release | autograde time (solution) |\n"
            "|---|---|---|---|\n" + "\n".join(rows) + f"\n\nexport: {len(exported)} rows\n")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "dry-run":
        print(dry_run(sys.argv[2:] or assignments()))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
