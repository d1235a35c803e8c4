"""The adversarial suite: kernels that must each fail with their own diagnosis.

Each case is a mistake an exercise's record lists (Exercise.mistakes, grader.checking.exercises):
most are one deliberate bug applied to the exercise's reference kernel in kernels/ (so the
reference text keeps one home), the edit in the record or, where quoting it there would hand students
part of the answer, in <name>.edit beside this file; the others are whole files beside this one. `expect` lists the
failure kinds (Item.kind) that count as the right diagnosis; several where GPU and emulator see
the same bug differently (an illegal address on a GPU is a named out-of-bounds on the emulator).
"""
from dataclasses import dataclass
from pathlib import Path

from grader.checking import exercises
from grader.runtime import kernels

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Bad:
    name: str
    exercise: str
    expect: tuple[str, ...]
    why: str
    base: str = ""  # reference kernel the bug is applied to
    old: str = ""
    new: str = ""
    gpu: bool = True  # the GPU shows it too (Mistake.gpu)

    def source(self) -> str:
        if not self.base:
            return (HERE / f"{self.name}.cu").read_text()
        src = kernels.source(self.base)
        assert self.old in src, f"{self.name}: the reference kernel {self.base} changed; update the case"
        return src.replace(self.old, self.new)


def edit_of(name: str) -> tuple[str, str] | None:
    """(old, new) of tests/adversarial/<name>.edit, or None: an edit of the reference too long to quote in
    the record, which the student handout copies (a few of its lines there would hand out the answer).
    The file: `#` comment lines, then `--- old`, the reference's text, `--- new`, what replaces it."""
    path = HERE / f"{name}.edit"
    if not path.is_file():
        return None
    text = path.read_text().removesuffix("\n")
    _, rest = text.split("\n--- old\n", 1)
    old, new = rest.split("\n--- new\n", 1)
    return old, new


def _case(ex, m) -> Bad:
    old, new = (m.old, m.new) if m.old else edit_of(m.name) or ("", "")
    return Bad(m.name, ex.id, m.expect, m.why, ex.reference if old else "", old, new, m.gpu)


CASES = [_case(ex, m) for ex in exercises.EXERCISES.values() for m in ex.mistakes]
