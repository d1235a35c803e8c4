"""The kernel the grader launches, with the parameters it passes (read from the source)."""
from __future__ import annotations

from grader.checking import exercises
from grader.checking.steps.context import Stop, Submission
from grader.checking.verdict import FAIL, PASS, Item
from grader.runtime.signature import parse_kernels, same_type


def signature(sub: Submission) -> list[Item]:
    item = signature_item(sub.ex, sub.source)
    return Stop([item]) if item.status == FAIL else [item]


def signature_item(ex: exercises.Exercise, source: str) -> Item:
    kernels = parse_kernels(source)
    if ex.kernel not in kernels:
        found = ", ".join(kernels) or "none"
        return Item("signature", FAIL, f"no kernel named {ex.kernel} (found: {found})", kind="signature",
                    hint=f"The grader launches exactly: {ex.signature}. Keep extern \"C\" so the name "
                         "is not mangled.")
    params = kernels[ex.kernel]
    want = ex.problem.params
    if len(params) != len(want):
        return Item("signature", FAIL, f"{ex.kernel} has {len(params)} parameters; the grader passes "
                                       f"{len(want)}", kind="signature", hint=f"Use exactly: {ex.signature}")
    for pos, (p, (name, ctype)) in enumerate(zip(params, want), 1):
        base = ctype.replace("const ", "").replace("*", "").strip()
        if not same_type(p.base, base) or p.is_pointer != ctype.endswith("*"):
            return Item("signature", FAIL,
                        f"parameter {pos} is `{p.ctype} {p.name}`, but the grader passes `{ctype}` ({name})",
                        kind="signature", hint=f"Use exactly: {ex.signature}")
    return Item("signature", PASS, ex.signature)
