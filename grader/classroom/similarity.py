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

The hand-ins are students' files, read in the instructor's own account: they are read by a child
process under limits (READ_MEMORY_MB of address space, READ_STALL_S per notebook), each within a
size bound (READ_MB per notebook, KERNEL_CHARS per kernel), and a hand-in that cannot be read
within them (nested 100,000 deep, nbformat 99, huge, a kernel copydetect cannot tokenize) is
listed in the report as not compared; the report is made for everyone else.
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

from grader.checking import static

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
K, WIN = 20, 1  # noise threshold (tokens) and winnowing window: copydetect's defaults for short code


@dataclass
class Kernel:
    owner: str  # student id, or "course: kernels/<file>.cu"
    name: str  # the answer it is (the variable it is bound to), or the file name
    code: str


READ_MB = 64  # a notebook larger than this is listed, not read (a kernel cell is kilobytes)
KERNEL_CHARS = 200_000  # a kernel longer than this is listed, not compared
READ_MEMORY_MB = 2048  # address space of the child that reads the hand-ins
READ_STALL_S = 30.0  # seconds the child may spend on one notebook


class Unreadable(Exception):
    """A hand-in the report cannot read within its limits (the message says why)."""


def kernels_in(notebook: Path) -> dict[str, str]:
    """{variable: kernel source} for every top-level string literal holding a __global__ kernel,
    the last binding of each name winning (what the trusted grader reads). Bounded: raises
    Unreadable for a notebook or kernel past the limits above, or one copydetect cannot read.
    Run on students' files only in the limited child (read_all)."""
    from grader.classroom.handin_check import Rejected, read_notebook

    try:
        _, data = read_notebook(notebook, READ_MB)
    except Rejected as e:
        raise Unreadable(str(e)) from None
    cells = []
    for c in data.get("cells", []):
        src = c.get("source", "") if isinstance(c, dict) and c.get("cell_type") == "code" else ""
        cells.append("".join(src) if isinstance(src, list) else src if isinstance(src, str) else "")
    found: dict[str, str] = {}
    for src in cells:
        tree = static.parse_cell(src)
        if tree is None:
            continue
        for stmt in tree.body:
            for name, kind, value, _ in static._bindings_of(stmt):
                if kind == "constant" and isinstance(value, str) and "__global__" in value:
                    found[name] = value
    for name, code in found.items():
        if len(code) > KERNEL_CHARS:
            raise Unreadable(f"its kernel {name} is {len(code):,} characters (more than {KERNEL_CHARS:,})")
        try:
            _fingerprint(code)
        except Exception as e:  # noqa: BLE001 - whatever copydetect makes of it, this one is left out
            raise Unreadable(f"copydetect cannot read its kernel {name} ({type(e).__name__})") from None
    return found


# ------------------------------------------------------------------ reading under limits
def _limit_child() -> None:
    import resource

    mem = READ_MEMORY_MB << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _read_child() -> None:
    """The child: notebook paths (JSON, stdin) -> one JSON line per notebook, in order."""
    import json

    out = sys.stdout
    for path in json.loads(sys.stdin.read()):
        try:
            line = {"path": path, "kernels": kernels_in(Path(path))}
        except Unreadable as e:
            line = {"path": path, "unreadable": str(e)}
        except (MemoryError, RecursionError) as e:
            line = {"path": path, "unreadable": f"reading it needs more than the report allows ({type(e).__name__})"}
        out.write(json.dumps(line) + "\n")
        out.flush()


def read_all(paths: list[Path]) -> tuple[dict[Path, dict[str, str]], dict[Path, str]]:
    """({notebook: kernels}, {notebook: why it was not read}): every notebook read by a child
    process under limits; one that stops the child (memory, time) is listed and the rest read by
    a fresh child."""
    import json
    import os
    import select
    import signal
    import subprocess

    from grader.runtime.sandbox import python_command

    found: dict[Path, dict[str, str]] = {}
    unreadable: dict[Path, str] = {}
    todo = list(paths)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    while todo:
        proc = subprocess.Popen(python_command("grader.classroom.similarity") + ["--read-child"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                preexec_fn=_limit_child, env=env, start_new_session=True)
        proc.stdin.write(json.dumps([str(p) for p in todo]).encode())
        proc.stdin.close()
        buf, fd = b"", proc.stdout.fileno()
        deadline = time.monotonic() + READ_STALL_S + 10  # the child's own start-up included
        while todo:
            if b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                path = todo.pop(0)
                if "kernels" in msg:
                    found[path] = msg["kernels"]
                else:
                    unreadable[path] = msg["unreadable"]
                deadline = time.monotonic() + READ_STALL_S
                continue
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            chunk = os.read(fd, 1 << 20) if ready else b""
            if chunk:
                buf += chunk
                continue
            # the child ended or stalled on todo[0]: that notebook is listed, a fresh child goes on
            why = "it took longer than the report allows" if not ready else "reading it stopped the reader"
            unreadable[todo.pop(0)] = f"{why} ({READ_MEMORY_MB} MB, {READ_STALL_S:g} s per notebook)"
            break
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        proc.stdout.close()
    return found, unreadable


def _fingerprint(code: str, boilerplate=None):
    from copydetect import CodeFingerprint

    return CodeFingerprint("kernel.cu", K, WIN, boilerplate=boilerplate, language="cuda", fp=io.StringIO(code))


def stub_hashes(code: str) -> list:
    """The fingerprints of a release's stub: boilerplate, set aside from what it is compared in."""
    try:
        return list(_fingerprint(code).hashes)
    except Exception:  # noqa: BLE001 - a stub copydetect cannot read is no boilerplate
        return []


def shares(fp_a, fp_b) -> tuple[float, float, tuple]:
    """THE course's measure of two fingerprinted kernels: (share of a's code found in b, share of
    b's found in a, the shared slices). The report ranks a pair by the larger share; the handout
    asks how much of a graded answer a lesson kernel holds (`answer_share`)."""
    from copydetect import compare_files

    overlap, sims, slices = compare_files(fp_a, fp_b)
    return (float(sims[0]), float(sims[1]), slices) if overlap else (0.0, 0.0, slices)


def graded_answers(solutions: Path, student: Path) -> dict[str, object]:
    """{"<notebook>:<variable>": fingerprint} of every graded kernel answer: the solution's
    kernel string (its solution markers dropped), less the release's stub of it (what every
    student is given is no answer), the stub read from the student copy of the same notebook."""
    import re

    out = {}
    for nb in sorted(solutions.glob("*/*.ipynb")):
        stubs = kernels_in(student / nb.relative_to(solutions)) if (student / nb.relative_to(solutions)).is_file() \
            else {}
        for name, code in kernels_in(nb).items():
            if "BEGIN SOLUTION" not in code:
                continue
            code = "\n".join(ln for ln in code.splitlines() if not re.search(r"//\s*(BEGIN|END) SOLUTION", ln))
            out[f"{nb.stem}:{name}"] = _fingerprint(code, stub_hashes(stubs.get(name, "")))
    return out


def answer_share(code: str, answers: dict[str, object]) -> list[tuple[str, float]]:
    """[(answer, share of it found in `code`)], largest first, answers with none left out."""
    try:
        fp = _fingerprint(code)
    except Exception:  # noqa: BLE001 - nothing copydetect can read holds an answer it can find
        return []
    got = [(key, shares(fp, ans)[1]) for key, ans in answers.items()]
    return sorted(((k, v) for k, v in got if v > 0), key=lambda kv: -kv[1])


@dataclass
class Pair:
    a: Kernel
    b: Kernel
    score: float  # the larger share of either kernel found in the other
    slices: tuple


def compare(submitted: list[Kernel], references: list[Kernel], boilerplate: dict[str, str]) -> list[Pair]:
    """Every pair of submissions of the same answer, and every submission with every reference."""
    bp_hashes = {name: stub_hashes(code) for name, code in boilerplate.items()}
    fps = {}
    for k in submitted + references:
        bp = bp_hashes.get(k.name, []) if not k.owner.startswith("course:") else []
        fps[id(k)] = _fingerprint(k.code, bp)
    pairs = []
    same_answer = [(a, b) for a, b in itertools.combinations(submitted, 2) if a.name == b.name and a.owner != b.owner]
    for a, b in same_answer + [(s, r) for s in submitted for r in references]:
        in_b, in_a, slices = shares(fps[id(a)], fps[id(b)])
        if max(in_b, in_a) > 0:
            pairs.append(Pair(a, b, max(in_b, in_a), slices))
    pairs.sort(key=lambda p: -p.score)
    return pairs


def collect(course: Path, assignment: str) -> tuple[list[Kernel], dict[str, str], dict[str, str]]:
    """The submitted kernels, the release's (boilerplate), and {student: why a hand-in was not
    read}: students' notebooks are read under limits (read_all)."""
    books = sorted((course / "submitted").glob(f"*/{assignment}/*.ipynb"))
    found, bad = read_all(books)
    subs = [Kernel(nb.parent.parent.name, name, code) for nb in books for name, code in found.get(nb, {}).items()]
    unreadable = {f"{nb.parent.parent.name} ({nb.name})": why for nb, why in bad.items()}
    boiler: dict[str, str] = {}
    for nb in sorted((course / "release" / assignment).glob("*.ipynb")):
        boiler.update(kernels_in(nb))  # the course's own release
    return subs, boiler, unreadable


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


def render(assignment: str, pairs: list[Pair], threshold: float, n_students: int, seconds: float,
           unreadable: dict[str, str] | None = None) -> str:
    top = [p for p in pairs if p.score >= threshold]
    skipped = "".join(f"<li>{html.escape(who)}: {html.escape(why)}</li>"
                      for who, why in sorted((unreadable or {}).items()))
    skipped = (f"<h2>Not compared ({len(unreadable)})</h2><p>These hand-ins could not be read within the report's "
               f"limits; open them by hand.</p><ul>{skipped}</ul>" if skipped else "")
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
{skipped}
<table><tr><th>similarity</th><th>submission</th><th>compared with</th><th>answer</th><th></th></tr>{rows}</table>
{details}
"""


def report(course: Path, assignment: str, *, out: Path | None = None, threshold: float = 0.5) -> Path:
    t0 = time.perf_counter()
    subs, boiler, unreadable = collect(course, assignment)
    pairs = compare(subs, references(), boiler)
    out = out or course / f"similarity-{assignment}.html"
    n = len({k.owner for k in subs})
    out.write_text(render(assignment, pairs, threshold, n, time.perf_counter() - t0, unreadable))
    for who, why in sorted(unreadable.items()):
        print(f"not compared: {who}: {why}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:] == ["--read-child"]:
        _read_child()
        return 0
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
