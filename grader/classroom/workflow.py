"""Drive nbgrader for a class: the same commands an instructor runs (course/README.md), as
functions the tests use to prove the workflow end to end.

    python -m grader.classroom dry-run [--keep DIR] [ASSIGNMENT ...]

runs release -> autograde (the solution as one student, the untouched release as another)
-> feedback -> export in a temporary course (or in DIR, kept for a look at feedback/ and
grades.csv) and prints the scores next to what they should be, with any cell that raised
where it should not (a solution: anywhere; a release: outside its test and "not yet" cells). An ASSIGNMENT may be a unique
prefix ("03"); none means every assignment. Exit 0 when every score is as expected, 1 when
one is not or nbgrader failed, 2 for an unknown assignment.
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
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
    if os.environ.get("TC_NBGRADER_FORK") == "1":
        proc = _forked(course, list(args), env)
    else:
        proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                              capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-6000:]}")
    return proc


_FORKS: dict = {}  # PYTHONPATH -> this process's warm nbgrader (grader.classroom.cohort_job.ForkServer)
_FORK_LOCK = threading.Lock()


def _forked(course: Path, args: list[str], env: dict) -> subprocess.CompletedProcess:
    """`nbgrader ARGS` as a fork of a process that imported nbgrader and the course's pipeline once
    (TC_NBGRADER_FORK=1; the test suite's): nbgrader's own start-up is about 2 s of CPU per command,
    and the suite runs hundreds. The command itself is nbgrader's entry point in a fresh fork, as the
    cohort runs it; a server per PYTHONPATH, since what it imported is what the fork runs."""
    from grader.classroom.cohort_job import ForkServer

    key = env.get("PYTHONPATH", "")
    with _FORK_LOCK:  # one request at a time on a server's pipe (a test's threads may share it)
        server = _FORKS.get(key)
        if server is None or not server.alive():
            server = _FORKS[key] = ForkServer(env)
        with tempfile.TemporaryDirectory(prefix="tc-nbgrader-") as tmp:
            out, err = Path(tmp) / "out", Path(tmp) / "err"
            rc = server.run(args, cwd=course, env=env, log=out, err=err, timeout=3600, pidfile=Path(tmp) / "pid")
            read = lambda p: p.read_text(errors="replace") if p.exists() else ""  # noqa: E731
            return subprocess.CompletedProcess(["nbgrader", *args], 1 if rc is None else rc, read(out), read(err))


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
    return max_score_here(solution, gpu=False)


def max_score_here(solution: Path, *, gpu: bool) -> float:
    """What grading here can award for a solution notebook: on a CPU, kernel cells their
    correctness share only (speed needs a GPU); on a GPU, every cell in full but the kernel cells
    of exercises this GPU (or TC_ARCH) is too old for, which award nothing (Exercise.min_arch)."""
    from grader.checking import exercises
    from grader.classroom.graded_cells import exercise_of
    from grader.runtime.device import needs

    total = 0.0
    for cell in nbformat.read(solution, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade"):
            continue
        points = float(meta.get("points", 0))
        if exercise_of(cell) in exercises.EXERCISES:
            ex = exercises.get(exercise_of(cell))
            points = (0.0 if needs(ex.min_arch) else points) if gpu else points * ex.points_correct / ex.points
        total += points
    return total


def cell_errors(course: Path, assignment: str, student: str, *, in_tests: bool) -> list[str]:
    """Error outputs in the autograded notebooks of one submission, as "notebook cell N: Name".

    A solution must run without any; an untouched release may fail only in its test cells and
    in cells tagged raises-exception (its "not yet" cells), so `in_tests=False` skips those.
    nbgrader records such errors and carries on, so a broken demo cell would otherwise pass
    unnoticed as long as the test cells still award their points."""
    out = []
    for path in sorted((course / "autograded" / student / assignment).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            graded = cell.metadata.get("nbgrader", {}).get("grade", False)
            if not in_tests and (graded or "raises-exception" in cell.metadata.get("tags", [])):
                continue
            for o in cell.get("outputs", []):
                if o.get("output_type") == "error":
                    out.append(f"{path.stem} cell {i}: {o.get('ename')}: {str(o.get('evalue', ''))[:80]}")
    return out


def export(course: Path) -> list[dict]:
    nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv") as f:
        return list(csv.DictReader(f))


def resolve(names: list[str]) -> list[str]:
    """Assignment folder names from exact names or unique prefixes ("03" -> "03-cuda-core-gemm")."""
    known = assignments()
    out = []
    for name in names:
        name = name.rstrip("/")
        hits = [name] if name in known else [a for a in known if a.startswith(name)]
        if len(hits) != 1:
            why = "matches " + ", ".join(hits) if hits else "is not in solutions/"
            raise ValueError(f"assignment '{name}' {why}; the assignments are: {', '.join(known)}")
        out.append(hits[0])
    return out


def dry_run(names: list[str], keep: Path | None = None) -> tuple[str, bool]:
    """Release, autograde (solution and untouched release), feedback and export each assignment
    in a temporary course (or in `keep`); print a markdown table of the scores as it goes and
    return it, with whether every score is what it should be: the untouched release 0, the
    solution everything this machine can award (without a GPU, speed points cannot be)."""
    import time

    from grader.runtime.device import has_gpu

    gpu = has_gpu()
    head = ("| assignment | solution score | expected | untouched release | autograde time (solution) "
            "| cell errors |\n|---|---|---|---|---|---|")
    print(head, flush=True)
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        course = new_course(keep if keep is not None else Path(tmp) / "course")
        for a in names:
            rel = release(course, a)
            solutions = sorted((SOLUTIONS / a).glob("*.ipynb"))
            submit(course, "solution", a, solutions)
            submit(course, "untouched", a, sorted(rel.glob("*.ipynb")))
            t0 = time.perf_counter()
            autograde(course, a, "solution")
            seconds = time.perf_counter() - t0
            autograde(course, a, "untouched")
            nbgrader(course, "generate_feedback", a, "--force")
            got = scores(course, a)
            (s, m), (u, _) = got["solution"], got["untouched"]
            expected = sum(max_score_here(p, gpu=gpu) for p in solutions)
            errors = (cell_errors(course, a, "solution", in_tests=True)
                      + cell_errors(course, a, "untouched", in_tests=False))
            good = abs(s - expected) < 1e-6 and u == 0 and not errors
            ok &= good
            rows.append(f"| {a} | {s:g} / {m:g} | {expected:g} | {u:g} | {seconds:.0f} s | "
                        + ("; ".join(errors) or "none") + " |" + ("" if good else " <- not as expected"))
            print(rows[-1], flush=True)
        exported = export(course)
        notes = [f"export: {len(exported)} rows (grades.csv)"]
        if not gpu:
            notes.append("No GPU here: speed points need one, so 'expected' is what CPU grading can award.")
        else:
            from grader.checking import exercises
            from grader.runtime.device import device_info, needs

            old = sorted(e.id for e in exercises.EXERCISES.values() if needs(e.min_arch))
            if old:
                notes.append(f"This GPU acts as sm_{device_info().cc}: {', '.join(old)} need a newer GPU and award "
                             "nothing here, so 'expected' leaves them out.")
        if keep is not None:
            notes.append(f"Kept: {course} (feedback/<student>/<assignment>/*.html, grades.csv, gradebook.db)")
        print("\n" + "\n".join(notes), flush=True)
    return head + "\n" + "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n", ok


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m grader.classroom",
                                 description="Dry run of the class workflow (course/README.md).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    dr = sub.add_parser("dry-run", help="release, autograde the solution and the untouched release, "
                                        "feedback and export, in a temporary course")
    dr.add_argument("assignments", nargs="*", metavar="ASSIGNMENT",
                    help="folder names in solutions/ or unique prefixes (default: all)")
    dr.add_argument("--keep", metavar="DIR", type=Path,
                    help="build the course in DIR and keep it, to open its feedback and grades.csv")
    args = ap.parse_args(argv)
    try:
        names = resolve(args.assignments) if args.assignments else assignments()
    except ValueError as e:
        print(f"dry-run: {e}", file=sys.stderr)
        return 2
    try:
        _, ok = dry_run(names, keep=args.keep.resolve() if args.keep else None)
    except RuntimeError as e:  # an nbgrader command failed: its own output says why
        print(f"dry-run: {e}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
