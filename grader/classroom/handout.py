"""A copy of the course to give students, without the answer key.

    python -m grader.classroom.handout OUT [--zip] [--keep-lesson-rungs]

copies the repository's tracked files (`git ls-files`) into OUT, leaving out what would hand
students the answers: the instructor's notebooks (`solutions/`), the git history (which holds
them too), the instructor's course folder and tests (they carry reference solutions and hidden
cases), the reference kernel of every graded exercise (`kernels/<reference>.cu`), and every
other kernel of the lessons that holds half or more of a graded exercise's answer (the lines of
its solution regions: a ladder's later rung can be one). A left-out kernel is replaced by a file
whose `#error` says why, so a lesson cell that loads it says so instead of failing obscurely.
`--keep-lesson-rungs` keeps those lesson kernels (and names them). The student notebooks, the
grader package (for `check()` in the notebook) and every other kernel stay. OUT/HANDOUT.md lists
what was left out.

`leaks(OUT)` is the check the test runs: left-out paths, and any file holding half or more of
the lines of one answer (a solution region or hidden test of `solutions/`).
"""
from __future__ import annotations

import argparse
import json
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


def selection(files: list[str], *, root: Path = ROOT, keep_rungs: bool = False) -> tuple[list[str], dict[str, str]]:
    """(kept, {left-out kernel: why}) of the repository's files (left-out folders are just gone)."""
    refs = set(graded_references())
    key = answers(root)
    kept, stubbed = [], {}
    for f in files:
        if f.startswith(LEFT_OUT):
            continue
        if f in refs:
            stubbed[f] = "the reference of a graded exercise"
        elif f.startswith("kernels/") and f.endswith(".cu") and (h := held((root / f).read_text(), key)):
            if keep_rungs:
                kept.append(f)
            else:
                stubbed[f] = "a lesson's kernel holding a graded exercise's answer: " + "; ".join(h)
        else:
            kept.append(f)
    return kept, stubbed


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
    return out


def leaks(out: Path, *, root: Path = ROOT) -> list[str]:
    """What of the answer key a copy holds: left-out paths, and any file holding half or more of
    an answer's lines."""
    found = [p for p in ("solutions", "tests", "course", ".git") if (out / p).exists()]
    key = answers(root)
    for p in sorted(out.rglob("*")):
        if p.is_file() and p.suffix in TEXT:
            found += [f"{p.relative_to(out)} holds {h}" for h in held(_text(p), key)]
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
    if args.zip:
        print(shutil.make_archive(str(out), "zip", out))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
