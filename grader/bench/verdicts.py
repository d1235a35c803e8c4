"""Every verdict the course gives on the CPU emulator, as one JSON table to compare before and
after a refactor (issue #34: "every verdict of every kernel in kernels/ and in the tests is
unchanged").

    python -m grader.bench.verdicts [--out FILE] [--compare FILE] [--only TEXT ...] [--list]

The (exercise, kernel source) pairs come from the registry (grader.checking.exercises):
  - reference/<id>:        each exercise's reference kernel at its launch defaults;
  - kernels/<file> as <id>: every other kernels/*.cu that defines the exercise's entry point
                            (the earlier rungs), at the exercise's launch defaults;
  - ladder/<rung> as <id>: the bench ladders' rungs (grader.bench.coach.subjects) at their own launch;
  - coach/<file> as <id>:  tests/coach_kernels (files and variants.json), for every exercise whose
                            entry point and launch keys fit the fixture's LAUNCH header;
  - adversarial/<name>:    tests/adversarial/cases.py's CASES;
  - mistake/<id>, correct/<id>[ launch]#<n>: tests/checking/test_student_mistakes.py's MISTAKES and CORRECT.
Each pair goes through `check(..., backend="emu")`; the table keeps every item's name, status,
kind, message and hint, and the coach panel's lines. Inputs are drawn from seeds fixed per pair
and the emulator runs one worker, so two runs give the same table; what still changes from run to
run (floats, addresses, temporary paths) is masked. `--compare FILE` runs the sweep and prints
each pair whose verdict differs from FILE's (a diff of its lines), each pair FILE has and this run
did not collect, and each new one: exit 1 when one differs or is missing, 0 when all are the same.
~110 pairs, 1-2.5 minutes on 2 CPU cores with a warm emulator build cache (kernels/RESULTS-verdicts.md).
"""
from __future__ import annotations

import argparse
import datetime
import difflib
import hashlib
import importlib.util
import json
import os
import platform
import random
import re
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from unittest import mock

from grader.checking import exercises
from grader.runtime import kernels
from grader.runtime.signature import parse_kernels

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


@dataclass(frozen=True)
class Pair:
    name: str  # stable key of the table
    exercise: str
    source: Callable[[], str]
    launch: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------ the pairs
def _launch_header(src: str) -> dict | None:
    """A fixture's `LAUNCH {...}` comment (tests/coach_kernels): the launch it is meant for."""
    m = re.search(r"LAUNCH (\{.*\})", src)
    return json.loads(m.group(1)) if m else None


def _fits(ex: exercises.Exercise, src: str, launch: dict | None) -> bool:
    """`src` defines the exercise's entry point and takes its launch parameters."""
    return ex.kernel in parse_kernels(src) and set(launch or {}) <= set(ex.launch_defaults)


def _kernel_pairs() -> list[Pair]:
    out = []
    for ex in exercises.EXERCISES.values():
        out.append(Pair(f"reference/{ex.id}", ex.id, (lambda n=ex.reference: kernels.source(n))))
    for path in kernels.all_files():
        src = path.read_text()
        for ex in exercises.EXERCISES.values():
            if path.stem != ex.reference and _fits(ex, src, None):
                out.append(Pair(f"kernels/{path.name} as {ex.id}", ex.id, (lambda p=path: p.read_text())))
    return out


def _load(path: Path, name: str):
    """A test file's module, loaded by path (tests/ is no package); None where it is absent."""
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(TESTS))  # test modules import their neighbours by plain name
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(TESTS))
    return mod


def _coach_pairs() -> list[Pair]:
    if not (TESTS / "coach_kernels").is_dir():
        return []
    from grader.bench import coach

    out = []
    for name in coach.fixture_names():
        src = coach.fixture_source(name)
        launch = _launch_header(src)
        for ex in exercises.EXERCISES.values():
            if _fits(ex, src, launch):
                out.append(Pair(f"coach/{name} as {ex.id}", ex.id, (lambda n=name: coach.fixture_source(n)),
                                dict(launch or {})))
    return out


def _ladder_pairs() -> list[Pair]:
    """The bench ladders' rungs (notebooks 06 and 10) at the launch each is built for."""
    from grader.bench import coach

    return [Pair(f"ladder/{name} as {ex_id}", ex_id, (lambda s=src: s), dict(launch))
            for name, ex_id, src, launch, opts in coach.subjects()
            if not name.endswith(".cu") and not opts and ex_id in exercises.EXERCISES]


def _adversarial_pairs() -> list[Pair]:
    mod = _load(TESTS / "adversarial" / "cases.py", "_verdicts_adversarial_cases")
    return [Pair(f"adversarial/{b.name}", b.exercise, b.source) for b in (mod.CASES if mod else [])]


def _mistake_pairs() -> list[Pair]:
    mod = _load(TESTS / "checking" / "test_student_mistakes.py", "_verdicts_student_mistakes")
    if mod is None:
        return []
    out = [Pair(f"mistake/{mid}", ex, (lambda s=src: s), dict(launch))
           for mid, ex, src, launch, _names in mod.MISTAKES]
    seen: dict[str, int] = {}
    for ex, src, launch in mod.CORRECT:  # named by exercise and launch, numbered within those
        key = ex + "".join(f" {k}={v}" for k, v in sorted(launch.items()))
        seen[key] = seen.get(key, 0) + 1
        out.append(Pair(f"correct/{key}#{seen[key]}", ex, (lambda s=src: s), dict(launch)))
    return out


def pairs(only=()) -> list[Pair]:
    every = []
    for collect in (_kernel_pairs, _ladder_pairs, _coach_pairs, _adversarial_pairs, _mistake_pairs):
        try:
            every += collect()
        except Exception as e:  # noqa: BLE001 - a source moved: its pairs show as MISSING in a compare
            print(f"verdicts: {collect.__name__[1:]} not collected ({type(e).__name__}: {e})", file=sys.stderr)
    return [p for p in every if not only or any(o in p.name for o in only)]


# ------------------------------------------------------------------------------ one verdict
# what differs between two runs of the same kernel: values computed from random inputs, timings,
# addresses and temporary paths. Integers (sizes, lines, counts, positions) stay.
_MASKS = [
    (re.compile(r"/tmp/[^\s:;'\"),]+"), "/tmp/<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<addr>"),
    # floats (1.5, -2.3e-05, 1e-06); not an integer range such as 0..560
    (re.compile(r"[-+]?\d+\.\d+(?:[eE][-+]?\d+)?|[-+]?\b\d+[eE][-+]?\d+\b|\b(?:nan|inf)\b"), "<num>"),
]


def mask(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


class _Seeds:
    """check() draws its input seeds from `secrets` (unpredictable for a student). Here they come
    from the pair's name instead, so two runs of the sweep grade the same inputs and a count of wrong
    elements, or the first wrong one, is the same unless the grading changed."""

    def __init__(self, name: str):
        self._rng = random.Random(hashlib.sha256(name.encode()).digest())
        self.drawn = 0

    def randbits(self, k: int) -> int:
        self.drawn += 1
        return self._rng.getrandbits(k)


def verdict_row(pair: Pair) -> dict:
    from grader.checking.check import check

    src = pair.source()
    t0 = time.perf_counter()
    seeds = _Seeds(pair.name)
    row = dict(exercise=pair.exercise, launch=pair.launch, source_sha=hashlib.sha256(src.encode()).hexdigest()[:16])
    try:
        with mock.patch.object(secrets, "randbits", seeds.randbits):
            v = check(pair.exercise, src, backend="emu", **pair.launch)
    except Exception as e:  # noqa: BLE001 - a grader that raises is a changed verdict, not the end of the sweep
        row.update(score=0.0, max_score=0.0, coach=[], items=[dict(
            name="check raised", status="error", kind=type(e).__name__, message=mask(str(e)), hint="")])
    else:
        row.update(score=v.score, max_score=v.max_score,
                   items=[dict(name=mask(i.name), status=i.status, kind=i.kind, message=mask(i.message),
                               hint=mask(i.hint)) for i in v.items],
                   coach=[mask(line) for line in v.coach.text().splitlines()] if v.coach is not None else [])
    return dict(row, seconds=round(time.perf_counter() - t0, 1), seeds_drawn=seeds.drawn)


def sweep(chosen: list[Pair], log=print) -> dict:
    rows, t0 = {}, time.perf_counter()
    for n, p in enumerate(chosen, 1):
        rows[p.name] = verdict_row(p)
        r = rows[p.name]
        fails = [i["name"] for i in r["items"] if i["status"] == "fail"]
        log(f"[{n}/{len(chosen)}] {p.name}: {r['score']:g}/{r['max_score']:g}"
            f"{' FAIL ' + ', '.join(fails) if fails else ''} ({r['seconds']:.1f} s)")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return dict(about=dict(date=now, machine=f"{platform.node()} {platform.machine()}", backend="emu",
                           pairs=len(rows), seconds=round(time.perf_counter() - t0)),
                verdicts=rows)


# ------------------------------------------------------------------------------ compare
_SAME = ("exercise", "launch", "score", "max_score", "items", "coach")  # what a verdict is; not seconds


def _lines(row: dict) -> list[str]:
    out = [f"score {row['score']:g}/{row['max_score']:g}"]
    for i in row["items"]:
        out.append(f"[{i['status']}] {i['name']} ({i['kind']}): {i['message']}")
        if i["hint"]:
            out.append(f"    hint: {i['hint']}")
    out += [f"  coach: {line}" for line in row["coach"]]
    return out


def compare(before: dict, after: dict, out=print, only=()) -> int:
    """Print every pair whose verdict differs; 1 when one differs or is missing after, else 0."""
    b, a = before["verdicts"], after["verdicts"]
    if only:
        b = {k: v for k, v in b.items() if any(o in k for o in only)}
    changed = [k for k in b if k in a and any(b[k][f] != a[k][f] for f in _SAME)]
    missing = [k for k in b if k not in a]
    new = [k for k in a if k not in b]
    for k in changed:
        note = " (its source changed too)" if b[k]["source_sha"] != a[k]["source_sha"] else ""
        if b[k].get("seeds_drawn") and not a[k].get("seeds_drawn"):  # check() no longer draws through secrets.randbits
            note += (" (its inputs were random this time: check() drew no seed through secrets.randbits, "
                     "so counts of wrong elements may differ by chance; teach verdicts._Seeds the new source)")
        out(f"CHANGED {k}{note}")
        for line in difflib.unified_diff(_lines(b[k]), _lines(a[k]), "before", "after", lineterm="", n=1):
            out("    " + line)
    for k in missing:
        out(f"MISSING {k} (in the 'before' table, not collected now)")
    for k in new:
        out(f"NEW {k} (not in the 'before' table)")
    out(f"{len(b)} pairs before, {len(a)} now: {len(b) - len(changed) - len(missing)} the same, "
        f"{len(changed)} changed, {len(missing)} missing, {len(new)} new")
    return 1 if changed or missing else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.verdicts", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the table (JSON) here")
    ap.add_argument("--compare", metavar="FILE", help="a table written before: print what differs now")
    ap.add_argument("--only", nargs="*", default=(), help="only pairs whose name contains one of these")
    ap.add_argument("--list", action="store_true", help="list the pairs and stop")
    args = ap.parse_args(argv)
    # one emulator worker: blocks run in one order, so the first faulting block is the same every run
    os.environ.setdefault("TC_EMU_WORKERS", "1")
    chosen = pairs(args.only)
    if args.list:
        print("\n".join(f"{p.name}  [{p.exercise}]" for p in chosen))
        print(f"{len(chosen)} pairs")
        return 0
    if not chosen:
        print(f"no pair's name contains {' or '.join(args.only)} (--list shows them)", file=sys.stderr)
        return 2
    table = sweep(chosen, log=lambda s: print(s, file=sys.stderr, flush=True))
    if args.out:
        Path(args.out).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{table['about']['pairs']} pairs in {table['about']['seconds']} s", file=sys.stderr)
    if args.compare:
        return compare(json.loads(Path(args.compare).read_text()), table, only=args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
