"""The errors every backend raises, so the grader can explain each failure the same way.

Each carries enough to say *what*, *where* and *what to try*: the verdict renderer reads
these fields, never the message text.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class CourseError(Exception):
    """Base of every error the course raises on purpose (never a bug of ours)."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = ""):
        super().__init__(message)
        self.message = message
        if hint:
            self.hint = hint

    def __str__(self) -> str:
        return self.message + (f"\nHint: {self.hint}" if self.hint else "")


class HeadersNotFound(CourseError):
    """The CUDA headers a kernel needs (cuda_fp16.h, mma.h, crt/mma.h ...) are not installed."""


@dataclass
class Diagnostic:
    """One compiler message, with its line in the source the user wrote (1-based) or None.
    `likely_line` is where the mistake probably is when the compiler only noticed it on a
    later line (a missing `;` is reported at the next token). `arguments` is the compiler's
    "argument types are: (...)" line of a call that matches no overload. `cell` (a
    grader.checking.cells.SourceCell) is the notebook cell the source came from: lines are then shown
    as the cell's own line numbers."""

    severity: str  # "error" | "warning"
    message: str
    line: int | None = None
    source_line: str | None = None
    likely_line: int | None = None
    likely_source: str | None = None
    arguments: str | None = None
    cell: object | None = None

    def shown(self, n: int) -> int:
        """Line `n` of the kernel as the student sees it numbered (the cell's line)."""
        return self.cell.line(n) if self.cell is not None else n

    def where(self) -> str:
        if not self.line:
            return ""
        if self.cell is not None:
            text = self.cell.where(self.line)
            if self.likely_line:
                text += f", probably the end of line {self.shown(self.likely_line)} of the cell"
            return text
        text = f"line {self.line} of your kernel source"
        if self.likely_line:
            text += f" (probably the end of line {self.likely_line})"
        return text

    def __str__(self) -> str:
        where = self.where()
        text = f"{where + ': ' if where else ''}{self.severity}: {self.message}"
        if self.likely_line and self.likely_source is not None:
            text += f"\n    {self.shown(self.likely_line)}: {self.likely_source.strip()}"
            if self.source_line is not None:
                text += f"\n    {self.shown(self.line)}: {self.source_line.strip()}"
        elif self.source_line is not None:
            text += f"\n    {self.source_line.strip()}"
        return text


class CompileError(CourseError):
    """The kernel source did not compile. `diagnostics[0]` is the first error, mapped to the
    user's own line numbers; `log` is the raw compiler output."""

    hint = "Fix the first error first: later ones are often caused by it."

    def __init__(self, message: str, *, log: str = "", diagnostics: list[Diagnostic] | None = None,
                 hint: str = ""):
        super().__init__(message, hint=hint)
        self.log = log
        self.diagnostics = diagnostics or []

    @property
    def line(self) -> int | None:
        errors = [d for d in self.diagnostics if d.severity == "error"]
        return errors[0].line if errors else None


class LaunchArgumentError(CourseError, ValueError):
    """A kernel was launched with arguments that cannot work (wrong dtype, count, grid ...).
    `argument` names the offending parameter as the kernel's signature spells it."""

    def __init__(self, message: str, *, argument: str | None = None, hint: str = ""):
        super().__init__(message, hint=hint)
        self.argument = argument


@dataclass
class FaultLocation:
    """Where a running kernel went wrong. Any field may be unknown (None)."""

    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    line: int | None = None
    argument: str | None = None  # which kernel parameter / shared array
    index: int | None = None  # element index that was touched
    size: int | None = None  # number of elements the buffer has
    extra: dict = field(default_factory=dict)


class KernelFault(CourseError):
    """The kernel crashed or broke a rule while running: `kind` is one of
    out-of-bounds, shared-out-of-bounds, illegal-address, divergent-barrier,
    partial-warp-collective, race, uninitialized-shared, assert, trap, crash, unsupported."""

    def __init__(self, kind: str, message: str, *, where: FaultLocation | None = None,
                 hint: str = ""):
        super().__init__(message, hint=hint)
        self.kind = kind
        self.where = where or FaultLocation()


class KernelTimeout(CourseError):
    """The kernel (or its child process) ran past its wall-clock limit."""

    hint = ("Look for a loop whose bound never changes (a `for` over the wrong variable), "
            "or a __syncthreads() that some threads of the block never reach.")

    def __init__(self, message: str, *, seconds: float, hint: str = ""):
        super().__init__(message, hint=hint)
        self.seconds = seconds


class Unsupported(CourseError):
    """The backend cannot run this construct (e.g. inline PTX on the emulator). Never a wrong answer."""


class NoGPU(CourseError):
    """Something needs a CUDA GPU and there is none."""

    hint = "Run this on a machine with an NVIDIA GPU, or use backend='emu' for correctness."


def to_dict(e: CourseError) -> dict:
    """A picklable description of a course error (exceptions with extra constructor
    arguments do not survive pickling across processes)."""
    return dict(type=type(e).__name__, args=list(e.args), state=dict(vars(e)))


def from_dict(d: dict) -> CourseError:
    cls = {c.__name__: c for c in (CourseError, HeadersNotFound, CompileError, LaunchArgumentError,
                                    KernelFault, KernelTimeout, Unsupported, NoGPU)}.get(d["type"], CourseError)
    e = cls.__new__(cls)
    Exception.__init__(e, *d["args"])
    e.__dict__.update(d["state"])
    return e
