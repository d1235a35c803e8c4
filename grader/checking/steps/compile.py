"""Compile here (NVRTC, no GPU needed): errors on the student's own line, PTX for honesty.
First the includes: an included file may be anything (a reference kernel of the repository,
/dev/zero) and may declare the kernel the signature step wants, so it is read before any compiler."""
from __future__ import annotations

import re

from grader.checking import evidence, same_source
from grader.checking.cells import SourceCell
from grader.checking.steps.context import Stop, Submission
from grader.checking.verdict import FAIL, PASS, Item
from grader.runtime.compile import hint_for, nvrtc_compile
from grader.runtime.errors import CompileError

MAX_WARNINGS = 5


def includes(sub: Submission) -> list[Item]:
    """CUDA and C++ standard headers only (grader.checking.same_source.include_check)."""
    included = same_source.include_check(sub.source, sub.options, sub.arch)
    return [] if included is None else Stop([included])


def compile_source(sub: Submission) -> list[Item]:
    try:
        sub.compiled = nvrtc_compile(sub.source, arch=sub.arch, options=sub.options, resources=False)
    except CompileError as e:
        return Stop([compile_item(e, source=sub.source, launch=sub.launch, ex=sub.ex, cell=sub.cell,
                                  arch=sub.arch)])
    return [compiled_item(sub.compiled.warnings, sub.cell)]


def compile_item(e: CompileError, *, source: str = "", launch: dict | None = None, ex=None,
                 cell: SourceCell | None = None, arch: int | None = None) -> Item:
    for d in e.diagnostics:  # lines as the student sees them numbered
        d.cell = cell
    first = next((d for d in e.diagnostics if d.severity == "error"), None)
    where = {"line": first.line, "source_line": first.source_line} if first else {}
    if first and first.likely_line:
        where["likely_line"] = first.likely_line
    if first and first.line and cell is not None:
        where.update(cell=cell.name, cell_line=cell.line(first.line))
    msg = str(first) if first else e.message
    hint = e.hint
    if first is not None:
        hint = (static_assert_hint(first, source, launch or {}, ex) or evidence.const_write_hint(first, source)
                or hint_for(first, arch) or e.hint)
    return Item("compile", FAIL, msg, hint=hint, kind="compile-error", where=where)


_STATIC_ASSERT = re.compile(r'static assertion failed(?: with "(.*)")?')
_DEFINE = re.compile(r"^-D(\w+)=(.*)$")


def static_assert_hint(d, source: str, launch: dict, ex) -> str:
    """A static_assert that fails because of the launch parameters (they reach the kernel as
    -D macros): name the parameter, its macro and the assert's own message."""
    m = _STATIC_ASSERT.search(d.message)
    if not m or not d.line:
        return ""
    said = f': "{m[1]}"' if m[1] else ""
    line = d.shown(d.line)
    # the whole assert, which may span lines
    lines = source.splitlines()[d.line - 1:d.line + 5] if source else [d.source_line or ""]
    text = " ".join(lines)
    text = text[:text.find(";") + 1] if ";" in text else text
    macros = {}  # launch key -> (macro, value)
    if ex is not None:
        for opt in ex.problem.options(launch):
            dm = _DEFINE.match(opt)
            if dm and dm[1].lower() in launch:
                macros[dm[1].lower()] = (dm[1], dm[2])
    defaults = ex.launch_defaults if ex is not None else {}
    changed = [k for k in macros if launch.get(k) != defaults.get(k)]
    named = [k for k in macros if re.search(rf"\b{macros[k][0]}\b", text)]
    keys = [k for k in named if k in changed] or changed or named
    if not keys:
        return (f"The static_assert on line {line} failed{said}. Its condition is false for the "
                "constants it checks: change them (or the assert) so it holds.")
    params = ", ".join(f"{k}={launch[k]}" for k in keys)
    flags = ", ".join(f"-D{macros[k][0]}={macros[k][1]}" for k in keys)
    one = len(keys) == 1
    return (f"Your launch parameter{'' if one else 's'} {params} reach{'es' if one else ''} the kernel as "
            f"{flags}; the static_assert on line {line} says what {'it' if one else 'they'} must "
            f"satisfy{said}. Change the launch parameter{'' if one else 's'} (or the #defines "
            f"{'it has' if one else 'they have'} to agree with).")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def compiled_item(warnings, cell: SourceCell | None = None) -> Item:
    """compile PASS, listing the compiler's warnings (one may be the very bug)."""
    if not warnings:
        return Item("compile", PASS, "compiled")
    for d in warnings:
        d.cell = cell
    lines = [f"compiled with {_plural(len(warnings), 'warning')}:"]
    for d in warnings[:MAX_WARNINGS]:
        lines.append(f"    {d.where() + ': ' if d.where() else ''}{d.message}")
    if len(warnings) > MAX_WARNINGS:
        lines.append(f"    and {len(warnings) - MAX_WARNINGS} more")
    return Item("compile", PASS, "\n".join(lines),
                where={"warnings": [dict(line=d.line, message=d.message,
                                         **({"cell_line": cell.line(d.line)} if cell and d.line else {}))
                                    for d in warnings]})
