"""A copy of the course to give students, without the answer key.

    python -m grader.classroom.handout OUT [--zip]

copies the repository's tracked files (`git ls-files`) into OUT, leaving out what would hand
students the answers: the instructor's notebooks (`solutions/`), the git history (which holds
them too), the instructor's course folder and tests (they carry reference solutions and hidden
cases), and the reference kernel of every graded exercise (`kernels/<reference>.cu`, the file
an exercise is graded against). The student notebooks (`notebooks/`), the grader package (for
`check()` in the notebook) and every other kernel stay. OUT/HANDOUT.md lists what was left out.
A lesson cell that loads a left-out kernel says the file is not in this copy.

`leaks(OUT)` is the check the test runs: it names anything of the answer key found in a copy.
Not yet done (issue #23): three lessons show most of a graded exercise's reference as a rung of
their ladder (KNOWN_LESSON_OVERLAP); the command names them on every build until the lessons
show those rungs with the graded parts removed.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# whole folders and files that are the instructor's
LEFT_OUT = ("solutions/", "tests/", "course/", ".ci/", ".git")


def graded_references() -> list[str]:
    """kernels/<file>.cu of every graded exercise's reference."""
    from grader.checking import exercises

    return sorted({f"kernels/{ex.reference}.cu" for ex in exercises.EXERCISES.values()})


def tracked_files(root: Path = ROOT) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p]


def selection(files: list[str]) -> tuple[list[str], list[str]]:
    """(kept, left out) of the repository's files."""
    refs = set(graded_references())
    kept, dropped = [], []
    for f in files:
        (dropped if f.startswith(LEFT_OUT) or f in refs else kept).append(f)
    return kept, dropped


NOTE = """# This copy of the course

It is the course without its answer key: the instructor's notebooks, the tests, the git
history and the reference kernels of the graded exercises are not in it. Work in `notebooks/`
(`./course.sh lab`); `check()` in each notebook gives instant feedback. A lesson cell that
loads one of the files below says it is missing: those are the graded exercises' answers.

Left out:
"""


def build(out: Path, *, root: Path = ROOT) -> Path:
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    kept, dropped = selection(tracked_files(root))
    for f in kept:
        dst = out / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, dst)
    folders = sorted({d for d in LEFT_OUT if any(f.startswith(d) for f in dropped)} | {".git (history)"})
    refs = [f for f in dropped if f in set(graded_references())]
    (out / "HANDOUT.md").write_text(NOTE + "".join(f"- `{x}`\n" for x in folders + refs))
    return out


def leaks(out: Path, *, root: Path = ROOT) -> list[str]:
    """What of the answer key a copy holds: left-out paths, and any file holding a reference
    kernel's or an instructor notebook's solution text (checked by distinctive lines)."""
    found = [p for p in ("solutions", "tests", "course", ".git") if (out / p).exists()]
    found += [f for f in graded_references() if (out / f).exists()]
    probes = {}
    for f in graded_references():
        lines = [ln.strip() for ln in (root / f).read_text().splitlines()]
        # lines long enough to be the kernel's own, not an #include or a brace
        probes[f] = [ln for ln in lines if len(ln) > 40 and not ln.startswith(("//", "#", "*", "/*"))][:200]
    for p in out.rglob("*"):
        if not p.is_file() or p.suffix not in (".cu", ".ipynb", ".py", ".md", ".h", ".txt"):
            continue
        text = p.read_text(errors="replace")
        for f, lines in probes.items():
            hits = [ln for ln in lines if ln in text]
            # shared lines (a signature, fragment declarations, the lesson's own teaching of
            # a step) are the contract or the lesson; half of a reference's lines is the answer
            if len(hits) >= max(6, len(lines) // 2):
                found.append(f"{p.relative_to(out)} holds {len(hits)} lines of {f}")
    return found


# (file in the copy, reference it shows): the ladders of notebooks 06, 08 and 10, whose later rungs
# are the graded exercises' references or one step from them
KNOWN_LESSON_OVERLAP = {
    ("notebooks/06-fast-wmma-gemm/06-fast-wmma-gemm.ipynb", "kernels/wmma_gemm_swizzle.cu"),
    ("notebooks/08-convolution/08-convolution.ipynb", "kernels/conv2d_implicit_wmma.cu"),
    ("notebooks/10-beyond-wmma/10-beyond-wmma.ipynb", "kernels/mma_gemm_tuned.cu"),
    ("kernels/wmma_gemm_fragdb.cu", "kernels/wmma_gemm_swizzle.cu"),
    ("kernels/wmma_gemm_async.cu", "kernels/wmma_gemm_swizzle.cu"),
}


def known(leak: str) -> bool:
    return any(leak.startswith(f"{f} holds ") and leak.endswith(f" lines of {r}") for f, r in KNOWN_LESSON_OVERLAP)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.classroom.handout", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="an empty or new folder")
    ap.add_argument("--zip", action="store_true", help="also write OUT.zip")
    args = ap.parse_args(argv)
    out = build(args.out.resolve())
    found = leaks(out)
    shown = [x for x in found if known(x)]
    bad = [x for x in found if not known(x)]
    if shown:
        print("still shown by the lessons' ladders (to be removed from them, issue #23):\n  " + "\n  ".join(shown),
              file=sys.stderr)
    if bad:
        print("the copy holds part of the answer key:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    if args.zip:
        print(shutil.make_archive(str(out), "zip", out))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
