"""Parts of the stub still marked YOUR CODE HERE: one message instead of all their symptoms. A
kernel that passes anyway (its author kept a marker) still passes, so it runs unless it cannot."""
from __future__ import annotations

from grader.checking.cells import SourceCell
from grader.checking.scoring import score
from grader.checking.steps.context import Stop, Submission, handed_in
from grader.checking.stubs import MARKER, Stub, unfilled
from grader.checking.verdict import FAIL, PASS, Item, Verdict


def find(sub: Submission) -> list[Item]:
    sub.stubs = unfilled(sub.source)
    return []


def report(sub: Submission) -> list[Item]:
    """After the runs: a stub left unfilled and anything failed -> only the stub's message."""
    v = sub.verdict
    if not (sub.stubs and any(i.status == FAIL for i in v.items)):
        return []
    unfilled_verdict(sub.ex, v, sub.stubs, sub.cell)
    return Stop()


def unfilled_verdict(ex, v: Verdict, stubs: list[Stub], cell: SourceCell | None) -> Verdict:
    """One message for the parts of the stub still empty, instead of all their symptoms:
    compiler warnings held back, no per-case diagnoses, no other hints."""
    parts = [f"{s.part} at line {cell.line(s.line) if cell else s.line}" for s in stubs]
    if cell is not None:
        parts[-1] += f" of {cell.name}"
    one = len(stubs) == 1
    msg = (f"the part{'' if one else 's'} marked YOUR CODE HERE ({', '.join(parts)}) "
           f"{'is' if one else 'are'} still empty")
    if handed_in():  # a feedback page: the student reads it away from the running notebook
        hint = (f"Write {'it' if one else 'them'} (the marker says about how many lines), try "
                f"{'it' if one else 'them'} with the notebook's check cell, then hand the notebook in again. "
                f"If you did write {'it' if one else 'them'}, delete the `{MARKER}` line{'' if one else 's'} "
                "before handing in.")
    else:
        hint = (f"Write {'it' if one else 'them'} (the marker says about how many lines), then run that cell "
                "again; compiler warnings and the other diagnoses wait until then. If you did write "
                f"{'it' if one else 'them'}, delete the `{MARKER}` line{'' if one else 's'} and run the cell "
                "again.")
    kept = []
    for i in v.items:
        if i.name == "compile" and i.status == PASS:
            kept.append(Item("compile", PASS, "compiled", where=i.where))  # warnings held back
        elif i.name == "signature":
            kept.append(i)
    where = dict(stubs=[dict(part=s.part, line=s.line, note=s.note,
                             **({"cell_line": cell.line(s.line)} if cell else {})) for s in stubs])
    kept.append(Item("kernel", FAIL, msg, hint=hint, kind="unfilled-stub", where=where))
    v.items, v.speed = kept, None
    return score(ex, v)
