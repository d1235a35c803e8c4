"""The class leaderboard: every graded kernel's speed against the library, after autograde.

    python -m grader.classroom.leaderboard ASSIGNMENT [--course DIR] [--names] [--out FILE]

writes `leaderboard-ASSIGNMENT.html` in the course folder (beside grades.csv): per speed-graded
exercise of the assignment, the kernels timed on a GPU, fastest first, as a share of the library's
speed (cuBLAS, a device copy, ...), each with the coach's one-liner (what holds it back), and a
plot of the class's ratios against the course's ladder (grader.classroom.ladder). Students who
handed in nothing, whose kernel is not correct, or whose kernel was not timed are counted, never
ranked. Names are pseudonyms (grader.classroom.pseudonyms) unless --names. One page, no network.
In a notebook: `from grader.classroom.leaderboard import show; show("03-cuda-core-gemm")`.

What it reads is what the trusted pass wrote: the gradebook (who, which cells grade which
exercise) and, in each autograded notebook, the metadata autograde's TrustedGrade puts on the
graded cells it fills (grader.classroom.autograde.VERDICTS) and nowhere else. A hand-in's own
outputs, or metadata in any other cell, are never read.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

NOTHING = "handed in nothing"
NOT_CORRECT = "not correct (or no kernel the grader could read)"
NOT_TIMED = "correct, speed not measured"
NOT_GRADED = "handed in, not graded (not yet, or refused: grades.csv says why)"
COUNTED = (NOTHING, NOT_GRADED, NOT_CORRECT, NOT_TIMED)
READ_MB = 64  # an autograded notebook above this is not read (autograde caps outputs far lower)
TEXT = 300  # characters kept of any text a record carries


@dataclass
class Entry:
    student: str  # the real id (never shown unless --names)
    ratio: float  # the kernel's speed / the library's
    kernel_ms: float | None
    baseline_ms: float | None
    coach: str
    shown: str = ""  # the name the page shows
    rank: int = 0


@dataclass
class Board:
    exercise: str
    title: str
    baseline: str  # the library's display name
    rungs: object  # grader.classroom.ladder.Rungs
    ranked: list[Entry] = field(default_factory=list)
    counted: Counter = field(default_factory=Counter)  # COUNTED -> students
    why_not_timed: Counter = field(default_factory=Counter)

    def counts(self) -> list[tuple[str, int, str]]:
        """[(what, students, why)] of those counted, not ranked, in COUNTED's order."""
        why = "; ".join(f"{w} ({n})" for w, n in self.why_not_timed.most_common(3))
        return [(what, self.counted[what], why if what == NOT_TIMED else "") for what in COUNTED if self.counted[what]]


class NoBoard(Exception):
    """Nothing to show, with what to do (the CLI prints it)."""


def _tests(gb, assignment: str) -> dict[str, dict[str, list[str]]]:
    """{notebook: {grade id: [exercise, ...]}} of the assignment's kernel test cells (the gradebook's
    own sources: what was released)."""
    from grader.classroom.graded_cells import grade_calls

    out = {}
    for nb in gb.find_assignment(assignment).notebooks:
        sources = {c.name: c.source for c in nb.source_cells}
        answers = {c.name for c in nb.solution_cells}
        out[nb.name] = {c.name: [ex for ex, _ in grade_calls(sources.get(c.name) or "")]
                        for c in nb.grade_cells if c.name not in answers}
    return out


def trusted_records(path: Path, tests: dict[str, list[str]]) -> list[dict] | None:
    """The verdict records of one autograded notebook: only from code cells graded as the course's
    test cells (TrustedGrade filled exactly those); None where it holds none (graded before they
    were kept, or unreadable)."""
    from grader.classroom.autograde import VERDICTS

    try:
        if path.stat().st_size > READ_MB << 20:
            return None
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return None
    found, any_kept = [], False
    for c in data.get("cells", []) if isinstance(data, dict) else []:
        meta = c.get("metadata") if isinstance(c, dict) else None
        grading = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not (isinstance(grading, dict) and c.get("cell_type") == "code" and grading.get("grade") is True
                and not grading.get("solution") and grading.get("grade_id") in tests):
            continue
        records = meta.get(VERDICTS)
        if isinstance(records, list):
            any_kept = True
            found += [r for r in records if isinstance(r, dict)]
    return found if any_kept else None


def _number(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _text(x) -> str:
    return str(x)[:TEXT] if isinstance(x, str) else ""


def _place(board: Board, student: str, record: dict | None) -> None:
    if record is None:
        board.counted[NOT_GRADED] += 1
        return
    if record.get("correct") is not True:
        board.counted[NOT_CORRECT] += 1
        return
    speed = record.get("speed") if isinstance(record.get("speed"), dict) else {}
    ratio = _number(speed.get("ratio"))
    if ratio is None or ratio <= 0:
        board.counted[NOT_TIMED] += 1
        board.why_not_timed[_text(record.get("speed_note")) or "not measured"] += 1
        return
    board.ranked.append(Entry(student, ratio, _number(speed.get("kernel_ms")), _number(speed.get("baseline_ms")),
                              _text(record.get("coach"))))


def collect(course: Path, assignment: str) -> tuple[list[Board], list[str]]:
    """(a board per speed-graded exercise of the assignment, every student of the course)."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.coursedir import CourseDirectory

    from grader.checking import exercises
    from grader.classroom import ladder, standing
    from grader.problems import baselines

    db = course / "gradebook.db"
    if not db.is_file():
        raise NoBoard(f"{course} has no gradebook.db: run this in the course folder (or pass --course) after "
                      f"`nbgrader autograde {assignment}`")
    coursedir = CourseDirectory(root=str(course))
    with Gradebook(f"sqlite:///{db}") as gb:
        try:
            tests = _tests(gb, assignment)
        except MissingEntry:
            known = ", ".join(sorted(a.name for a in gb.assignments)) or "none yet"
            raise NoBoard(f"no assignment '{assignment}' in the gradebook (the assignments: {known})") from None
        students = standing.everyone(gb, coursedir)
        handed = {s.student.id for s in gb.assignment_submissions(assignment)}
        # an autograded notebook that is not the grading of the hand-in as it is now (handed in again since,
        # replaced, being regraded: grades.csv says pending) ranks nothing: its verdicts are another kernel's
        a = gb.find_assignment(assignment)
        stale = {sid for sid in handed if standing.of(gb, coursedir, a, sid).status.startswith("pending")}
    boards: dict[str, Board] = {}
    for cells in tests.values():
        for ids in cells.values():
            for ex_id in ids:
                ex = exercises.EXERCISES.get(ex_id)
                if ex is not None and ex.target is not None and ex_id not in boards:
                    boards[ex_id] = Board(ex_id, ex.title, baselines.name(ex.problem.baseline), ladder.rungs(ex_id))
    if not boards:
        raise NoBoard(f"{assignment} grades no kernel's speed: there is no leaderboard to make")
    for sid in students:
        if sid not in handed and not (course / "submitted" / sid / assignment).is_dir():
            for b in boards.values():
                b.counted[NOTHING] += 1
            continue
        if sid in stale:
            for b in boards.values():
                b.counted[NOT_GRADED] += 1
            continue
        got: dict[str, dict] = {}
        kept = False
        for nb, cells in tests.items():
            records = trusted_records(course / "autograded" / sid / assignment / f"{nb}.ipynb", cells)
            if records is not None:
                kept = True
                for r in records:
                    got.setdefault(r.get("exercise"), r)
        for ex_id, b in boards.items():
            # graded (records kept) but none for this exercise: its cell earned nothing (an unreadable kernel)
            _place(b, sid, got.get(ex_id, {"correct": False} if kept else None))
    for b in boards.values():
        rank(b.ranked)
    return list(boards.values()), students


def rank(ranked: list[Entry]) -> None:
    """Fastest first; kernels whose speeds the page shows alike share a rank (a finer key put a
    166.2 % row above a 166.3 % one at the same rank: 2 x H200, 2026-11-28)."""
    from grader.classroom.leaderboard_page import pct

    shown = {id(e): float(pct(e.ratio)[:-1]) for e in ranked}
    ranked.sort(key=lambda e: (-shown[id(e)], e.student))
    for i, e in enumerate(ranked):
        same = i and shown[id(e)] == shown[id(ranked[i - 1])]
        e.rank = ranked[i - 1].rank if same else i + 1


def build(course: Path, assignment: str, *, names: bool = False) -> str:
    """The page, as HTML text."""
    from grader.classroom import leaderboard_page, pseudonyms

    course = Path(course).resolve()
    boards, students = collect(course, assignment)
    try:
        shown = {s: s for s in students} if names else pseudonyms.names(pseudonyms.course_key(course), students)
    except (OSError, ValueError) as e:
        raise NoBoard(f"no pseudonyms: {e}") from None
    for b in boards:
        for e in b.ranked:
            e.shown = shown[e.student]
        b.ranked.sort(key=lambda e: (e.rank, e.shown))
    return leaderboard_page.render(assignment, boards, len(students), names=names)


def write(course: Path, assignment: str, *, names: bool = False, out: Path | None = None) -> Path:
    out = Path(out) if out else Path(course) / f"leaderboard-{assignment}.html"
    page = build(course, assignment, names=names)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)  # a page half written never replaces the last one
    return out


class _Inline:
    def __init__(self, page: str):
        self.page = page

    def _repr_html_(self) -> str:
        import html

        # the page in a sandboxed frame: its styles stay its own and nothing in it runs
        return (f"<iframe sandbox srcdoc=\"{html.escape(self.page, quote=True)}\" "
                f"style='width:100%;height:900px;border:1px solid #ccc'></iframe>")


def show(assignment: str, course: str | Path = ".", *, names: bool = False) -> _Inline:
    """The leaderboard for a notebook cell (its last line): `show("03-cuda-core-gemm")`."""
    return _Inline(build(Path(course), assignment, names=names))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.classroom.leaderboard", description=__doc__.split("\n\n")[0])
    ap.add_argument("assignment")
    ap.add_argument("--course", type=Path, default=Path.cwd(), help="the nbgrader course folder (default: here)")
    ap.add_argument("--names", action="store_true", help="show student ids, not pseudonyms")
    ap.add_argument("--out", type=Path, help="the HTML page (default: COURSE/leaderboard-ASSIGNMENT.html)")
    args = ap.parse_args(argv)
    try:
        path = write(args.course, args.assignment, names=args.names, out=args.out)
    except NoBoard as e:
        print(f"leaderboard: {e}; no page written", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
