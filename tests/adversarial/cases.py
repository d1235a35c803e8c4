"""The adversarial suite: kernels that must each fail with their own diagnosis.

Each case is a mistake an exercise's record lists (Exercise.mistakes, grader.checking.exercises):
most are one deliberate bug applied to the exercise's reference kernel in kernels/ (so the
reference text keeps one home); the others are whole files beside this one. `expect` lists the
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


CASES = [Bad(m.name, ex.id, m.expect, m.why, ex.reference if m.old else "", m.old, m.new, m.gpu)
         for ex in exercises.EXERCISES.values() for m in ex.mistakes]
