"""A hand-in's notebooks checked, and repaired or refused, one student at a time, before nbgrader
reads them (installed beside the link removal of grader/classroom/hardening.py).

nbgrader trusts a submission's nbgrader metadata: a test or answer cell copied and pasted in
JupyterLab (it keeps its metadata), a `schema_version` it does not know, a grade id moved onto
another cell, a field missing or of the wrong type, or a file it cannot read make it raise,
and some of those errors (SchemaTooNewError, SchemaTooOldError) end `nbgrader autograde` for
every student after that one, telling the instructor to run `nbgrader update`. Here:

- the gradebook says which cells exist (ids, kinds, points); each notebook cell that claims one
  of them gets exactly the gradebook's metadata, and only the first claim of the right kind
  does; any other nbgrader metadata (a second copy, an unknown id, a malformed value) is taken
  off, so the cell is graded as an ordinary one (the trusted grader reads every code cell's text
  anyway, and puts every test back from the gradebook). Each repair is named in nbgrader's log
  and on the student's feedback page; the student's file as handed in is kept beside it
  (`NAME.ipynb.handed-in`);
- what cannot be repaired (not JSON, nested past what a notebook needs, an nbformat other than 3
  or 4, a cell that is no notebook cell, more cells or files than the limits, a file larger than
  the limit) refuses that one student: nbgrader's log says why and what to do, `grades.csv`
  says `NOT GRADED: why` and the student's feedback page says the same (`rejection()`); every
  other student is graded.

Limits (raise them with the variables): TC_LIMIT_NOTEBOOK_MB (512) per notebook file,
TC_LIMIT_CELLS (2,000) per notebook, TC_LIMIT_HANDIN_FILES (1,000) and TC_LIMIT_HANDIN_MB (1,024)
per hand-in folder. The course's own notebooks have at most 47 cells and a hand-in needs one file.
The folder's limits are checked before nbgrader copies anything of it (`check_before_copy`): it
copies every file to autograded/ and the sandbox copies them again, so a hand-in of 100 GB (a
sparse file costs its maker nothing) would fill the instructor's disk.
"""
from __future__ import annotations

import html
import json
import os
import re
import warnings
from pathlib import Path

CELL_ID = re.compile(r"[a-zA-Z0-9-_]{1,64}")  # nbformat 4.5's cell id
PASSED = ("checksum", "cell_type")  # nbgrader's own record of the released cell, kept as handed in
KEPT = ".handed-in"  # suffix of the student's own file, kept beside a repaired notebook
NOT_GRADED = ".not-graded"  # under autograded/ (hidden from nbgrader's globs and every sandbox)
# what a repaired notebook's notes are, per (assignment, student, notebook), for TrustedGrade's feedback
NOTES: dict[tuple[str, str, str], list[str]] = {}

WHAT_TO_DO = ("Ask the student to hand in the notebook again, saved by JupyterLab or Jupyter Notebook from the "
              "released copy with their answers in it")


def _limit(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


def notebook_mb() -> int:
    return _limit("TC_LIMIT_NOTEBOOK_MB", 512)


def max_cells() -> int:
    return _limit("TC_LIMIT_CELLS", 2000)


def max_files() -> int:
    return _limit("TC_LIMIT_HANDIN_FILES", 1000)


def handin_mb() -> int:
    return _limit("TC_LIMIT_HANDIN_MB", 1024)


class Rejected(Exception):
    """A hand-in nothing can grade: the message says why."""


# ----------------------------------------------------------------------- what the gradebook says
def expected_cells(gb_notebook) -> dict[str, dict]:
    """grade_id -> the nbgrader metadata the release gave that cell, plus its cell type, from the
    gradebook's record of the notebook (nbgrader.api.Notebook)."""
    grades = {c.name: float(c.max_score) for c in gb_notebook.grade_cells}
    tasks = {c.name: float(c.max_score) for c in gb_notebook.task_cells}
    solutions = {c.name for c in gb_notebook.solution_cells}
    out = {}
    for c in gb_notebook.source_cells:
        meta = dict(grade=c.name in grades, solution=c.name in solutions, locked=bool(c.locked), grade_id=c.name,
                    schema_version=3)
        if c.name in grades:
            meta["points"] = grades[c.name]
        if c.name in tasks:
            meta.update(task=True, points=tasks[c.name])
        out[c.name] = dict(meta=meta, cell_type=c.cell_type)
    return out


# ----------------------------------------------------------------------------- one notebook
def _read(raw: bytes) -> dict:
    try:
        data = json.loads(raw)
    except RecursionError:
        raise Rejected("the notebook file is nested deeper than any notebook (not a notebook JupyterLab saved)")
    except (ValueError, UnicodeDecodeError) as e:
        raise Rejected(f"the file is not a notebook (not valid JSON: {str(e)[:120]})")
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise Rejected("the file is not a notebook (no list of cells)")
    major = data.get("nbformat")
    if major not in (3, 4) or isinstance(major, bool):
        raise Rejected(f"the notebook's format is nbformat {str(major)[:20]}; the course reads nbformat 4 "
                       "(what JupyterLab and Jupyter Notebook save)")
    if major == 3:
        import nbformat

        try:
            data = nbformat.convert(nbformat.from_dict(data), 4)
        except Exception as e:  # noqa: BLE001 (whatever nbformat makes of it, this one student stops)
            raise Rejected(f"the notebook (nbformat 3) could not be read: {str(e)[:120]}")
    return data


def _claim(meta) -> tuple[str | None, tuple]:
    """The grade id a cell's nbgrader metadata claims, and the kind it claims (grade, solution, task)."""
    if not isinstance(meta, dict):
        return None, ()
    gid = meta.get("grade_id")
    kind = tuple(meta.get(k, False) if isinstance(meta.get(k, False), bool) else None
                 for k in ("grade", "solution", "task"))
    return (gid if isinstance(gid, str) and gid else None), kind


def repair(data: dict, expected: dict[str, dict]) -> list[str]:
    """Make every cell's nbgrader metadata the gradebook's or none (in place); returns what was
    changed, one line per cell. Raises Rejected for what is not a notebook cell."""
    cells = data["cells"]
    if len(cells) > max_cells():
        raise Rejected(f"the notebook has {len(cells):,} cells; the limit is {max_cells():,} (TC_LIMIT_CELLS)")
    fixes: list[str] = []
    placed: set[str] = set()
    ids: set[str] = set()
    for i, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise Rejected(f"cell {i} is not a notebook cell")
        if "id" in cell:  # a pasted cell keeps its id too: nbformat wants them unique
            if not (isinstance(cell["id"], str) and CELL_ID.fullmatch(cell["id"])) or cell["id"] in ids:
                cell["id"] = f"tc-{i}"
            ids.add(cell["id"])
        src = cell.get("source", "")
        if not (isinstance(src, str) or (isinstance(src, list) and all(isinstance(s, str) for s in src))):
            raise Rejected(f"cell {i}'s source is not text")
        if not isinstance(cell.get("metadata", {}), dict):
            cell["metadata"] = {}
            fixes.append(f"cell {i}: its metadata was not a mapping; cleared")
        if cell["cell_type"] == "code" and not isinstance(cell.get("outputs", []), list):
            cell["outputs"] = []
            fixes.append(f"cell {i}: its outputs were not a list; cleared")
        meta = cell.get("metadata", {})
        if "nbgrader" not in meta:
            continue
        claimed = meta["nbgrader"]
        gid, kind = _claim(claimed)
        want = expected.get(gid) if gid else None
        same_kind = want is not None and kind == tuple(bool(want["meta"].get(k)) for k in ("grade", "solution", "task"))
        if want is not None and gid not in placed and same_kind and cell["cell_type"] == want["cell_type"]:
            placed.add(gid)
            # the release's values; its checksum and cell type kept as nbgrader's tamper check reads them
            fixed = dict(want["meta"], **{k: claimed[k] for k in PASSED if isinstance(claimed.get(k), str)})
            if claimed != fixed:
                fixes.append(f"cell {i} ({gid}): its nbgrader metadata differed from the release "
                             f"({_short({k: v for k, v in claimed.items() if k not in PASSED})}); the release's "
                             "restored")
                meta["nbgrader"] = fixed
            continue
        del meta["nbgrader"]
        if not claimed:
            continue  # an empty mapping: nothing was claimed
        if want is not None and gid in placed:
            why = f"a second copy of cell '{gid}' (copied and pasted?)"
        elif want is not None:
            why = f"it claims cell '{gid}' but is not that kind of cell"
        elif gid:
            why = f"it names a cell '{gid[:60]}' the assignment does not have"
        else:
            why = f"its nbgrader metadata is not valid ({_short(claimed)})"
        fixes.append(f"cell {i}: {why}; graded as an ordinary cell")
    return fixes


def _short(value) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 100 else text[:100] + "..."


def _prove_readable(data: dict) -> None:
    """What nbgrader will do with it must work: nbformat reads it, nbgrader's validator accepts it."""
    import nbformat
    from nbgrader.nbgraderformat import MetadataValidator

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat's own notes; what matters is whether it reads
            nb = nbformat.reads(json.dumps(data), as_version=4)
        MetadataValidator().validate_nb(nb)
    except Exception as e:  # noqa: BLE001 (anything left that nbgrader would raise on)
        raise Rejected(f"the notebook could not be read after repair: {type(e).__name__}: {str(e)[:160]}")


def read_notebook(path: Path, max_mb: int | None = None) -> tuple[bytes, dict]:
    """A hand-in's notebook file read within bounds: its bytes and its JSON as nbformat 4 (a
    nbformat 3 file converted). Raises Rejected saying why it cannot be read."""
    max_mb = max_mb or notebook_mb()
    try:
        size = os.lstat(path).st_size
        with open(path, "rb") as f:
            raw = f.read((max_mb << 20) + 1)
    except OSError as e:
        raise Rejected(f"the file cannot be read ({e.strerror})") from None
    if len(raw) > max_mb << 20:
        raise Rejected(f"{path.name} is {size >> 20} MB; the limit is {max_mb} MB (TC_LIMIT_NOTEBOOK_MB): "
                       "clear its outputs before handing it in")
    return raw, _read(raw)


def check_notebook(path: Path, expected: dict[str, dict]) -> list[str]:
    """Check one notebook file; write it back repaired (the original kept beside it as
    NAME.ipynb.handed-in) when a repair was needed. Returns the repairs; raises Rejected."""
    raw, data = read_notebook(path)
    fixes = repair(data, expected)
    if type(data) is not dict:  # nbformat's NotebookNode: _read converted it from nbformat 3
        fixes.append("converted from nbformat 3 to nbformat 4")
    _prove_readable(data)
    if fixes:
        from grader.classroom import notebook_file

        try:
            text = notebook_file.dumps(data)  # Jupyter's style, as every notebook the course writes
        except Exception as e:  # noqa: BLE001 (the repaired hand-in is still the student's data)
            raise Rejected(f"the notebook could not be written after repair: {type(e).__name__}: {str(e)[:160]}")
        # the repair is the course's, not the student's: both files keep the hand-in's times, which
        # are the collection's record of when it was written (grader/classroom/handin_time.py)
        times = os.stat(path)
        kept = path.with_name(path.name + KEPT)
        kept.write_bytes(raw)
        notebook_file.write_text(text, path)  # whole or not at all
        for p in (kept, path):
            os.utime(p, ns=(times.st_atime_ns, times.st_mtime_ns))
    return fixes


# ----------------------------------------------------------------------------- one hand-in
def measure(folder: Path, limit: int) -> tuple[int, int]:
    """Files and folders under `folder`, and the bytes its files say they hold (a sparse file
    counts whole: a copy writes it whole); counting stops at limit + 1 entries (never follows a link)."""
    n, size = 0, 0
    stack = [str(folder)]
    while stack and n <= limit:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for e in entries:
            n += 1
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    size += e.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return n, size


def check_folder(folder: Path) -> None:
    """Raises Rejected for a hand-in folder past the limits on files or bytes."""
    n, size = measure(folder, max_files())
    if n > max_files():
        raise Rejected(f"the hand-in holds more than {max_files():,} files (TC_LIMIT_HANDIN_FILES); a hand-in needs "
                       "its notebook and the files it reads")
    if size > handin_mb() << 20:
        raise Rejected(f"the hand-in's files hold {size >> 20:,} MB; the limit is {handin_mb():,} MB "
                       "(TC_LIMIT_HANDIN_MB): a hand-in needs its notebook and the files it reads")


def refuse_oversized(converter, assignment: str, student: str, folder: Path) -> str | None:
    """A hand-in folder past the limits on files or bytes, refused for this student alone (recorded in
    the gradebook, grades.csv and a feedback page as any refused hand-in): why, or None."""
    from nbgrader.api import Gradebook

    try:
        check_folder(folder)
    except Rejected as e:
        with Gradebook(converter.coursedir.db_url, converter.coursedir.course_id) as gb:
            known = submission_rows(converter, gb, assignment, student)
        if known:
            refuse(converter, assignment, student, str(e))
        return str(e)
    return None


def check_before_copy(converter, assignment: str, student: str) -> None:
    """In nbgrader's Autograde.init_assignment, before it copies the hand-in's files anywhere: a
    folder past the limits is refused (refuse_oversized) and raised, stopping this student only."""
    why = refuse_oversized(converter, assignment, student, Path(converter._format_source(assignment, student)))
    if why:
        raise Rejected(why)


def submission_rows(converter, gb, assignment: str, student: str) -> bool:
    """The gradebook's student and submission rows for a hand-in refused before nbgrader made them;
    False for a student nbgrader itself refuses (unknown, and autograde without --create)."""
    from nbgrader.api import MissingEntry

    try:
        gb.find_student(student)
    except MissingEntry:
        if not converter.create_student:
            return False
        gb.update_or_create_student(student)
    try:
        gb.find_submission(assignment, student)
    except MissingEntry:
        gb.add_submission(assignment, student)
    return True


def check_handin(folder: Path, notebooks: dict[str, dict], log=None, who: str = "") -> dict[str, list[str]]:
    """Check the hand-in in `folder` (its size: check_before_copy); `notebooks` maps each notebook
    name the gradebook knows to its expected cells. Returns the repairs per notebook; raises
    Rejected naming the file."""
    if notebooks and not any((folder / f"{name}.ipynb").is_file() for name in notebooks):
        # e.g. links to someone else's notebook, which are removed and never followed: without this
        # the student would silently drop out of the grades
        raise Rejected(f"the hand-in holds none of the assignment's notebooks ({', '.join(sorted(notebooks))}.ipynb); "
                       "a link in a notebook's place is removed, never followed: hand in the notebook file itself")
    out = {}
    for name, expected in notebooks.items():
        path = folder / f"{name}.ipynb"
        if not path.is_file():
            continue
        try:
            out[name] = check_notebook(path, expected)
        except Rejected as e:
            raise Rejected(f"{name}.ipynb: {e}") from None
        for fix in out[name]:
            if log is not None:
                log.warning("%s, %s.ipynb repaired: %s (the student's file is kept as %s)", who, name, fix,
                            path.name + KEPT)
    return out


def refuse(converter, assignment: str, student: str, why: str) -> None:
    """Record this student's hand-in as NOT GRADED (grades.csv and the feedback page say why) and
    tell the instructor what to do; every other student is graded."""
    record_rejection(converter.coursedir, assignment, student, why)
    converter.log.error("NOT GRADED: %s's hand-in of %s: %s. %s (into submitted/%s/%s/), then run "
                        "`nbgrader autograde %s --student %s`. Every other student is graded.",
                        student, assignment, why, WHAT_TO_DO, student, assignment, assignment, student)


def check_submission(converter, assignment: str, student: str) -> None:
    """In nbgrader's Autograde.init_assignment, once the gradebook has the submission and before
    any notebook is read: check this student's hand-in; a refused one is recorded (grades.csv
    and the feedback say why) and raised, so nbgrader stops this student only."""
    from nbgrader.api import Gradebook, MissingEntry

    folder = Path(converter._format_source(assignment, student))
    expected = {}
    with Gradebook(converter.coursedir.db_url, converter.coursedir.course_id) as gb:
        for nb in converter.notebooks:
            name = Path(nb).stem
            try:
                expected[name] = expected_cells(gb.find_notebook(name, assignment))
            except MissingEntry:
                continue
    clear_rejection(converter.coursedir, assignment, student)
    try:
        repairs = check_handin(folder, expected, converter.log, who=f"{student} ({assignment})")
    except Rejected as e:
        refuse(converter, assignment, student, str(e))
        raise
    for name, fixes in repairs.items():
        NOTES[(assignment, student, name)] = [
            f"your notebook's nbgrader cell data was repaired before grading: {fix}" for fix in fixes]


def refuse_empty_handins(converter) -> None:
    """In `nbgrader autograde`, after links and special files are removed from the hand-ins: a
    student's folder that holds none of the assignment's notebooks (a hand-in that was only a link
    to someone else's notebook, say) would be skipped by nbgrader without a word and drop out of
    the grades; it is NOT GRADED instead, with its reason, in the gradebook, grades.csv and a
    feedback page, as any refused hand-in."""
    import glob

    from nbgrader.api import Gradebook, MissingEntry

    cd = converter.coursedir
    pattern = cd.format_path(cd.submitted_directory, cd.student_id or "*", cd.assignment_id or "*")
    with Gradebook(cd.db_url, cd.course_id) as gb:
        for folder in sorted(Path(p) for p in glob.glob(pattern) if os.path.isdir(p)):
            student, assignment = folder.parent.name, folder.name
            try:
                names = [nb.name for nb in gb.find_assignment(assignment).notebooks]
            except MissingEntry:
                continue
            if not names or any((folder / f"{n}.ipynb").is_file() for n in names):
                continue
            if not submission_rows(converter, gb, assignment, student):
                continue  # nbgrader refuses an unknown student with its own message
            why = (f"the hand-in holds none of the assignment's notebooks ({', '.join(f'{n}.ipynb' for n in names)}); "
                   "a link in a notebook's place is removed, never followed: hand in the notebook file itself")
            refuse(converter, assignment, student, why)


def notes(assignment: str, student: str, notebook: str) -> list[str]:
    return NOTES.get((assignment, student, notebook), [])


# ------------------------------------------------------------- what the instructor and student see
def _record(coursedir, assignment: str, student: str) -> Path:
    base = Path(coursedir.format_path(coursedir.autograded_directory, ".", "."))
    return base / NOT_GRADED / student / f"{assignment}.txt"


def record_rejection(coursedir, assignment: str, student: str, reason: str) -> None:
    p = _record(coursedir, assignment, student)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(reason)


def clear_rejection(coursedir, assignment: str, student: str) -> None:
    _record(coursedir, assignment, student).unlink(missing_ok=True)


def rejection(coursedir, assignment: str, student: str) -> str | None:
    """Why this student's latest hand-in of `assignment` was refused, or None."""
    try:
        return _record(coursedir, assignment, student).read_text()
    except OSError:
        return None


def rejections(coursedir) -> list[tuple[str, str, str]]:
    """(assignment, student, reason) of every refused hand-in."""
    base = _record(coursedir, "x", "x").parent.parent
    out = []
    for p in sorted(base.glob("*/*.txt")) if base.is_dir() else []:
        out.append((p.stem, p.parent.name, p.read_text()))
    return out


def feedback_page(assignment: str, student: str, reason: str) -> str:
    msg = html.escape(reason)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(assignment)}: NOT GRADED"
            f"</title></head>\n<body>\n<h1>{html.escape(assignment)}: NOT GRADED</h1>\n"
            f"<p>Your hand-in could not be graded: {msg}.</p>\n"
            "<p>Hand the notebook in again: open the released notebook in JupyterLab or Jupyter Notebook, put your "
            "answers in it, save it, and hand in that file.</p>\n</body></html>\n")


def write_feedback_pages(converter) -> None:
    """After `nbgrader generate_feedback`: a page for each refused hand-in of the assignments and
    students it was asked for, saying why, where no autograded notebook exists (never over a
    graded page)."""
    import fnmatch

    from nbgrader.api import Gradebook, MissingEntry

    cd = converter.coursedir
    want_a, want_s = cd.assignment_id or "*", cd.student_id or "*"
    todo = [(a, s, r) for a, s, r in rejections(cd) if fnmatch.fnmatch(a, want_a) and fnmatch.fnmatch(s, want_s)]
    if not todo:
        return
    with Gradebook(cd.db_url, cd.course_id) as gb:
        for assignment, student, reason in todo:
            try:
                names = [nb.name for nb in gb.find_assignment(assignment).notebooks]
            except MissingEntry:
                continue
            graded = Path(cd.format_path(cd.autograded_directory, student, assignment))
            dest = Path(cd.format_path(cd.feedback_directory, student, assignment))
            for name in names:
                if (graded / f"{name}.ipynb").exists():
                    continue
                dest.mkdir(parents=True, exist_ok=True)
                (dest / f"{name}.html").write_text(feedback_page(assignment, student, reason))
                converter.log.warning("%s's hand-in of %s was not graded: its feedback page says why", student,
                                      assignment)
