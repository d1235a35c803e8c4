"""A copy of the course to give students, without the answer key.

    python -m grader.classroom.handout OUT [--zip] [--keep-lesson-rungs]

copies the repository's tracked files (`git ls-files`) into OUT, leaving out what would hand
students the answers: the instructor's notebooks (`solutions/`), the git history (which holds
them too), the instructor's course folder and tests (they carry reference solutions and hidden
cases), the reference kernel of every graded exercise (`kernels/<reference>.cu`), and every
other kernel of the lessons that is a near-copy of a graded answer by the course's own
similarity measure (grader/classroom/similarity.py: winnowing with names set aside, so a renamed
or re-indented copy counts; `NEAR_COPY`), or holds half or more of an answer's lines. A left-out
kernel is replaced by a file whose `#error` says why, so a lesson cell that loads it says so
instead of failing obscurely. `--keep-lesson-rungs` keeps those lesson kernels (and names them).
The student notebooks, the grader package (for `check()` in the notebook) and every other kernel
stay. OUT/HANDOUT.md lists what was left out, with each near-copy's score; OUT/HANDOUT (`MARKER`)
marks the folder as a handout: the Colab setup cell clones only a repository that has it, and
releasing checks the copy named by it (grader/classroom/colab.py, `release_problem`).

`leaks(OUT)` is the check the test runs: left-out paths, any file holding half or more of the
lines of one answer (a solution region or hidden test of `solutions/`), and any kernel that is a
near-copy of a graded answer.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# whole folders and files that are the instructor's
LEFT_OUT = ("solutions/", "tests/", "course/", ".ci/", ".git")
TEXT = (".cu", ".ipynb", ".py", ".md", ".h", ".txt", ".cpp", ".json")


def graded_references() -> list[str]:
    """kernels/<file>.cu of every graded exercise's reference."""
    from grader.checking import exercises

    return sorted({f"kernels/{ex.reference}.cu" for ex in exercises.EXERCISES.values()})


def answers(root: Path = ROOT) -> dict[str, list[str]]:
    """{"<notebook>:<grade id>": distinctive lines} of every solution region and hidden test of
    the instructor's notebooks: what a student copy must not hold."""
    out = {}
    for p in sorted((root / "solutions").glob("*/*.ipynb")):
        nb = json.loads(p.read_text())
        for c in nb["cells"]:
            keep, inside = [], False
            for ln in "".join(c["source"]).splitlines():
                s = ln.strip()
                if re.search(r"BEGIN (SOLUTION|HIDDEN TESTS)", s):
                    inside = True
                elif re.search(r"END (SOLUTION|HIDDEN TESTS)", s):
                    inside = False
                elif inside and len(s) > 25 and not s.startswith(("//", "#")):
                    keep.append(s)
            if keep:
                out[f"{p.name}:{c['metadata'].get('nbgrader', {}).get('grade_id')}"] = keep
    return out


def _text(path: Path) -> str:
    text = path.read_text(errors="replace")
    if path.suffix == ".ipynb":  # the cells' sources, unescaped
        try:
            nb = json.loads(text)
            return "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []))
        except ValueError:
            pass
    return text


def held(text: str, key: dict[str, list[str]]) -> list[str]:
    """The answers `text` holds half or more of (at least 3 lines)."""
    return [f"{k} ({n} of {len(lines)} lines)" for k, lines in key.items()
            if (n := sum(ln in text for ln in lines)) >= max(3, (len(lines) + 1) // 2)]


def tracked_files(root: Path = ROOT) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p]


# A lesson kernel holding this share or more of a graded answer (that answer's code, less the
# release's stub, found in the kernel by the course's similarity measure) is left out. 0.5 is
# where the instructor's similarity report starts showing a pair in full: a kernel the report would
# flag if a student handed it in is no lesson to give them. Measured on the course's kernels
# (2026-11-27): the lesson kernels kept score at most 0.45 (wmma_gemm_fragdb against 06's answer),
# the near-copies 0.54 to 0.98. The share OF THE ANSWER, not the larger of the two shares the report
# ranks by: a short lesson kernel lying whole inside a long answer (wmma_one_tile in 05's probe,
# 0.62 of it, 0.27 of the answer) gives away a quarter of that answer, not a near-copy of it.
NEAR_COPY = 0.5


def near_copies(code: str, key: dict[str, object]) -> list[str]:
    """The graded answers `code` is a near-copy of, as "<answer> (similarity S)"."""
    from grader.classroom.similarity import answer_share

    return [f"{k} (similarity {v:.2f})" for k, v in answer_share(code, key) if v >= NEAR_COPY]


def graded_answers(root: Path = ROOT) -> dict[str, object]:
    from grader.classroom.similarity import graded_answers as fingerprints

    return fingerprints(root / "solutions", root / "notebooks")


def selection(files: list[str], *, root: Path = ROOT, keep_rungs: bool = False) -> tuple[list[str], dict[str, str]]:
    """(kept, {left-out kernel: why}) of the repository's files (left-out folders are just gone)."""
    refs = set(graded_references())
    key, similar = answers(root), graded_answers(root)
    kept, stubbed = [], {}
    for f in files:
        if f.startswith(LEFT_OUT):
            continue
        if f in refs:
            stubbed[f] = "the reference of a graded exercise"
            continue
        if f.startswith("kernels/") and f.endswith(".cu"):
            text = (root / f).read_text(errors="replace")
            why = near_copies(text, similar) + held(text, key)
            if why and not keep_rungs:
                stubbed[f] = "a lesson's kernel holding a graded exercise's answer: " + "; ".join(why)
                continue
        kept.append(f)
    return kept, stubbed


# The last handout built from this repository, for the release check (git-ignored: a path of
# this machine). Its copy may be deleted once pushed: the record says it was built and checked.
RECORD = Path(os.environ.get("TC_HANDOUT_RECORD") or ROOT / "course" / ".handout.json")


def digest(folder: Path) -> str:
    """sha256 of a copy's files (names and bytes), its marker and any .git left aside."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_file() and rel != _marker_name() and not rel.startswith(".git/"):
            h.update(rel.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _marker_name() -> str:
    from grader.classroom.colab import MARKER

    return MARKER


def marker_problem(folder: Path) -> str | None:
    """Why `folder` is not a student handout as the handout command wrote it, or None."""
    mark = folder / _marker_name()
    if (folder / "solutions").exists():
        return f"{folder} holds solutions/"
    try:
        info = json.loads(mark.read_text())
    except (OSError, ValueError):
        return f"{folder} has no {_marker_name()} marker: it is not a handout built by python -m grader.classroom.handout"
    if info.get("digest") != digest(folder):
        return f"{folder} changed since the handout command built it ({mark.name}'s digest differs): build it again"
    return None


def check_published(url: str) -> str | None:
    """Why the handout repository `url` cannot be trusted offline to be a handout, or None: a
    local folder (or file:// address) must carry a valid marker; a remote one must be the
    repository the last handout built here was built for, and that copy, while it exists, still
    valid."""
    from grader.classroom.colab import same_repository

    local = url[len("file://"):] if url.startswith("file://") else url
    if os.path.isdir(local):
        return marker_problem(Path(local))
    how = (f"build it (python -m grader.classroom.handout OUT), push OUT to {url}, then release again "
           "(course/README.md, 'Colab without the answer key')")
    try:
        rec = json.loads(RECORD.read_text())
    except (OSError, ValueError):
        return f"no handout has been built here for {url}, the repository the Colab setup cell clones: {how}"
    if not same_repository(rec.get("repository", ""), url):
        return f"the last handout was built for {rec.get('repository')}, but the Colab setup cell clones {url}: {how}"
    copy = Path(rec.get("path", ""))
    return marker_problem(copy) if copy.is_dir() else None


def colab_cells_problem(out: Path) -> str | None:
    """The copy's notebooks must open the handout repository that is set now (else their Colab
    cell clones what the setting named when they were last synced)."""
    from grader.classroom.colab import COLAB_CELL_ID, colab_cell

    want = colab_cell().source
    stale = []
    for p in sorted((out / "notebooks").glob("*/*.ipynb")):
        cells = json.loads(p.read_text()).get("cells", [])
        first = cells[0] if cells else {}
        if first.get("id") == COLAB_CELL_ID and "".join(first.get("source", "")) != want:
            stale.append(p.relative_to(out).as_posix())
    if stale:
        return (f"the Colab cell of {len(stale)} notebooks ({stale[0]} ...) is not the one for the handout repository "
                "set now: run python -m grader.classroom.notebooks sync (and commit), then build again")
    return None


NOTE = """# This copy of the course

It is the course without its answer key: the instructor's notebooks, the tests, the git
history and the kernels that hold a graded exercise's answer are not in it. Work in
`notebooks/` (`./course.sh lab`); `check()` in each notebook gives instant feedback. A lesson
cell that loads one of the kernels below stops with a message saying it is not in this copy;
the lessons' recorded results still show.

Left out:
"""


def build(out: Path, *, root: Path = ROOT, keep_rungs: bool = False) -> Path:
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    kept, stubbed = selection(tracked_files(root), root=root, keep_rungs=keep_rungs)
    for f in kept:
        dst = out / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, dst)
    for f, why in stubbed.items():
        (out / f).parent.mkdir(parents=True, exist_ok=True)
        (out / f).write_text(f'#error "{f} is not in the student copy of the course: {why.split(":")[0]}"\n')
    folders = ["solutions/ (the instructor's notebooks)", ".git (history)", "tests/", "course/ (instructor)"]
    (out / "HANDOUT.md").write_text(NOTE + "".join(f"- `{x}`\n" for x in folders)
                                    + "".join(f"- `{f}`: {why}\n" for f, why in sorted(stubbed.items())))
    write_marker(out, root)
    return out


def write_marker(out: Path, root: Path = ROOT) -> None:
    """OUT/HANDOUT: what the Colab cell looks for before it keeps a clone, and what releasing checks."""
    from grader.classroom.colab import HANDOUT_REPOSITORY

    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    info = {"handout": "a student copy of the course, without its answer key (python -m grader.classroom.handout)",
            "repository": HANDOUT_REPOSITORY, "built_from": head.stdout.strip(), "digest": digest(out)}
    (out / _marker_name()).write_text(json.dumps(info, indent=1) + "\n")


def record(out: Path) -> None:
    from grader.classroom.colab import HANDOUT_REPOSITORY

    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps({"path": str(out), "repository": HANDOUT_REPOSITORY, "digest": digest(out)}) + "\n")


def leaks(out: Path, *, root: Path = ROOT) -> list[str]:
    """What of the answer key a copy holds: left-out paths, and any file holding half or more of
    an answer's lines."""
    found = [p for p in ("solutions", "tests", "course", ".git") if (out / p).exists()]
    key, similar = answers(root), graded_answers(root)
    for p in sorted(out.rglob("*")):
        if p.is_file() and p.suffix in TEXT:
            text = _text(p)
            found += [f"{p.relative_to(out)} holds {h}" for h in held(text, key)]
            if p.suffix == ".cu" and not text.startswith("#error"):
                found += [f"{p.relative_to(out)} is a near-copy of {h}" for h in near_copies(text, similar)]
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.classroom.handout", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="an empty or new folder")
    ap.add_argument("--zip", action="store_true", help="also write OUT.zip")
    ap.add_argument("--keep-lesson-rungs", action="store_true",
                    help="keep the lessons' kernels that hold a graded exercise's answer (they are named)")
    args = ap.parse_args(argv)
    out = build(args.out.resolve(), keep_rungs=args.keep_lesson_rungs)
    found = leaks(out)
    if found:
        print("the copy holds part of the answer key:\n  " + "\n  ".join(found), file=sys.stderr)
        if not args.keep_lesson_rungs:
            return 1
    stale = colab_cells_problem(out)
    if stale:
        print(f"handout: {stale}", file=sys.stderr)
        return 1
    from grader.classroom.colab import HANDOUT_REPOSITORY, PLACEHOLDER

    if PLACEHOLDER in HANDOUT_REPOSITORY:
        print("handout: its notebooks' Colab cell names no repository yet (handout-repository in pyproject.toml "
              "[tool.tensorcore-course]): fine for a folder or a .zip, not for Colab", file=sys.stderr)
    record(out)
    if args.zip:
        print(shutil.make_archive(str(out), "zip", out))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
