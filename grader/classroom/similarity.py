"""A similarity report for the instructor: submitted kernels close to each other, or to the
course's own kernels (the references the exercises are graded against, the lessons' ladders).

    python -m grader.classroom.similarity ASSIGNMENT [--course DIR] [--out FILE] [--threshold 0.5]

reads every `submitted/<student>/ASSIGNMENT/*.ipynb` of the course (as text: a kernel is a string
literal holding a `__global__`, the same one the trusted grader grades), compares each kernel with
the same answer of every other student and with every `kernels/*.cu`, and writes
`similarity-ASSIGNMENT.html` beside the course's grades (the course folder, where
`nbgrader export` writes grades.csv): pairs above the threshold first, with the shared code marked.

The comparison is copydetect's (MOSS-style winnowing over tokens with identifiers and literals
abstracted away, so renaming variables changes nothing). The release's own code (the stub a
student starts from) is boilerplate: sharing it is not similarity. A similarity is a lead for a
human to read, never a grade.
"""
from __future__ import annotations

import argparse
import html
import io
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader.checking import static

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
K, WIN = 20, 1  # noise threshold (tokens) and winnowing window: copydetect's defaults for short code


@dataclass
class Kernel:
    owner: str  # student id, or "course: kernels/<file>.cu"
    name: str  # the answer it is (the variable it is bound to), or the file name
    code: str


def kernels_in(notebook: Path) -> dict[str, str]:
    """{variable: kernel source} for every top-level string literal holding a __global__ kernel,
    the last binding of each name winning (what the trusted grader reads)."""
    nb = nbformat.read(notebook, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    found: dict[str, str] = {}
    for src in cells:
        tree = static.parse_cell(src)
        if tree is None:
            continue
        for stmt in tree.body:
            for name, kind, value, _ in static._bindings_of(stmt):
                if kind == "constant" and isinstance(value, str) and "__global__" in value:
                    found[name] = value
    return found


def _fingerprint(code: str, boilerplate=None):
    from copydetect import CodeFingerprint

    return CodeFingerprint("kernel.cu", K, WIN, boilerplate=boilerplate, language="cuda", fp=io.StringIO(code))


@dataclass
class Pair:
    a: Kernel
    b: Kernel
    score: float  # the larger share of either kernel found in the other
    slices: tuple


def compare(submitted: list[Kernel], references: list[Kernel], boilerplate: dict[str, str]) -> list[Pair]:
    """Every pair of submissions of the same answer, and every submission with every reference."""
    from copydetect import compare_files

    bp_hashes = {}
    for name, code in boilerplate.items():
        try:
            bp_hashes[name] = list(_fingerprint(code).hashes)
        except Exception:  # noqa: BLE001 - a stub copydetect cannot read is no boilerplate
            bp_hashes[name] = []
    fps = {}
    for k in submitted + references:
        bp = bp_hashes.get(k.name, []) if not k.owner.startswith("course:") else []
        fps[id(k)] = _fingerprint(k.code, bp)
    pairs = []
    same_answer = [(a, b) for a, b in itertools.combinations(submitted, 2) if a.name == b.name and a.owner != b.owner]
    for a, b in same_answer + [(s, r) for s in submitted for r in references]:
        overlap, sims, slices = compare_files(fps[id(a)], fps[id(b)])
        if overlap:
            pairs.append(Pair(a, b, float(max(sims)), slices))
    pairs.sort(key=lambda p: -p.score)
    return pairs


def collect(course: Path, assignment: str) -> tuple[list[Kernel], dict[str, str]]:
    subs = []
    for nb in sorted((course / "submitted").glob(f"*/{assignment}/*.ipynb")):
        student = nb.parent.parent.name
        for name, code in kernels_in(nb).items():
            subs.append(Kernel(student, name, code))
    boiler: dict[str, str] = {}
    for nb in sorted((course / "release" / assignment).glob("*.ipynb")):
        boiler.update(kernels_in(nb))
    return subs, boiler


def references() -> list[Kernel]:
    return [Kernel(f"course: kernels/{p.name}", p.stem, p.read_text()) for p in sorted(KERNELS.glob("*.cu"))]


def _marked(code: str, slices) -> str:
    out, last = [], 0
    for s, e in sorted(zip(*slices)) if len(slices) and len(slices[0]) else []:
        s, e = int(max(s, last)), int(e)
        if e <= s:
            continue
        out += [html.escape(code[last:s]), f"<mark>{html.escape(code[s:e])}</mark>"]
        last = e
    out.append(html.escape(code[last:]))
    return "".join(out)


def render(assignment: str, pairs: list[Pair], threshold: float, n_students: int, seconds: float) -> str:
    top = [p for p in pairs if p.score >= threshold]
    rows = "".join(
        f"<tr class='{'hi' if p.score >= threshold else ''}'><td>{p.score:.2f}</td><td>{html.escape(p.a.owner)}</td>"
        f"<td>{html.escape(p.b.owner)}</td><td><code>{html.escape(p.a.name)}</code></td>"
        f"<td>{'<a href=#p%d>code</a>' % i if p.score >= threshold else ''}</td></tr>"
        for i, p in enumerate(pairs[:500]))
    details = "".join(
        f"<h3 id=p{i}>{p.score:.2f}: {html.escape(p.a.owner)} / {html.escape(p.b.owner)} "
        f"(<code>{html.escape(p.a.name)}</code>)</h3><div class=two><pre>{_marked(p.a.code, p.slices[0])}</pre>"
        f"<pre>{_marked(p.b.code, p.slices[1])}</pre></div>"
        for i, p in enumerate(pairs) if p.score >= threshold)
    return f"""<!doctype html><meta charset=utf-8><title>Similarity: {html.escape(assignment)}</title>
<style>body{{font-family:sans-serif;margin:2em}} td,th{{padding:2px 8px;text-align:left}} tr.hi{{background:#fde2e2}}
.two{{display:flex;gap:1em}} pre{{flex:1;background:#f6f8fa;padding:8px;overflow:auto;font-size:12px}} mark{{background:#ffd54f}}</style>
<h1>Similarity of submitted kernels: {html.escape(assignment)}</h1>
<p>{n_students} submissions; {len(top)} pairs at or above {threshold:.2f} (the share of one kernel's code,
identifiers and literals set aside, found in the other). Compared with each other (the same answer)
and with the course's kernels (kernels/*.cu). The release's stub is ignored. A high score is a lead to
read, not a verdict. Made by copydetect in {seconds:.1f} s.</p>
<table><tr><th>similarity</th><th>submission</th><th>compared with</th><th>answer</th><th></th></tr>{rows}</table>
{details}
"""


def report(course: Path, assignment: str, *, out: Path | None = None, threshold: float = 0.5) -> Path:
    t0 = time.perf_counter()
    subs, boiler = collect(course, assignment)
    pairs = compare(subs, references(), boiler)
    out = out or course / f"similarity-{assignment}.html"
    n = len({k.owner for k in subs})
    out.write_text(render(assignment, pairs, threshold, n, time.perf_counter() - t0))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.classroom.similarity", description=__doc__.split("\n\n")[0])
    ap.add_argument("assignment")
    ap.add_argument("--course", type=Path, default=Path.cwd(), help="the nbgrader course folder (default: here)")
    ap.add_argument("--out", type=Path, help="the HTML page (default: COURSE/similarity-ASSIGNMENT.html)")
    ap.add_argument("--threshold", type=float, default=0.5, help="pairs at or above it are shown in full")
    args = ap.parse_args(argv)
    if not (args.course / "submitted").is_dir():
        print(f"{args.course} has no submitted/ folder: run this in the course folder or pass --course",
              file=sys.stderr)
        return 2
    course = args.course.resolve()
    handed = sorted({p.parent.name for p in (course / "submitted").glob("*/*/*.ipynb")})
    if args.assignment not in handed:
        known = ", ".join(handed) or "none yet"
        print(f"similarity: no hand-in of '{args.assignment}' under {course / 'submitted'} (assignments with "
              f"hand-ins: {known}); no report written", file=sys.stderr)
        return 2
    path = report(course, args.assignment, out=args.out, threshold=args.threshold)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
