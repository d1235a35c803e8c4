"""Parts of a kernel that are still the student copy's stubs.

grader.nbgrader_ext turns each `// BEGIN SOLUTION ... // END SOLUTION` region of a kernel into
one comment line, MARKER plus the region's note ("// YOUR CODE HERE (about 15 lines)"), and
keeps the scaffolding around it. A stub that is partly scaffolding compiles and runs, so the
grader would otherwise report every symptom of the missing code (no tensor-core instruction,
unused variables, wrong results). `unfilled` finds the markers whose part is still empty and
names each part (the lambda or function it sits in, the loop, or the main loop).

A marker a student kept above code they wrote is not empty: a function or lambda with code
besides the marker is written; a marker at the kernel's top level or in a loop counts as
written when the next statement after it is code rather than the end of its block (for WMMA
code: when the source calls mma_sync at all, the main loop exists).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = "// YOUR CODE HERE"  # what nbgrader_ext writes where a solution region was
_MARK = re.compile(r"^[ \t]*" + re.escape(MARKER) + r"(?P<note>[^\n]*)$", re.M)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LAMBDA = re.compile(r"(\w+)\s*=\s*\[[^\]]*\]\s*\([^()]*\)[^{};]*$")
_LOOP = re.compile(r"\b(for|while)\s*\(")
_LOOP_VAR = re.compile(r"\bfor\s*\(\s*(?:[\w:<>]+[\s*&]+)*?(\w+)\s*[=:]")
_FUNCTION = re.compile(r"(\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*(?:const\s*)?$")
_MMA_SYNC = re.compile(r"\bmma_sync\s*\(")


@dataclass(frozen=True)
class Stub:
    line: int  # 1-based line of the marker in the kernel source
    part: str  # "load_tile", "the main loop", "the body of the main loop over kt", "dump", ...
    note: str  # the region's note, e.g. "(about 15 lines)"


def _mask(source: str) -> str:
    """Comments blanked to spaces (newlines kept): offsets and line numbers stay valid."""
    return _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), source)


def _scopes(code: str, upto: int) -> list[tuple[int, str]]:
    """The braces open at offset `upto`, outermost first: (offset of '{', header text)."""
    stack: list[tuple[int, str]] = []
    last, parens = 0, 0  # start of the current statement; ( depth (a for header holds ';')
    for i in range(upto):
        ch = code[i]
        if ch == "(":
            parens += 1
        elif ch == ")":
            parens = max(parens - 1, 0)
        elif ch == "{":
            stack.append((i, code[last:i].strip()))
            last, parens = i + 1, 0
        elif ch == "}":
            if stack:
                stack.pop()
            last, parens = i + 1, 0
        elif ch == ";" and parens == 0:
            last = i + 1
    return stack


def _close(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            return i
    return len(code)


def unfilled(source: str) -> list[Stub]:
    """The markers whose part is still empty, in source order."""
    code = _mask(source)
    wmma = "wmma::" in code
    has_mma = bool(_MMA_SYNC.search(code))
    out = []
    for m in _MARK.finditer(source):
        line = source.count("\n", 0, m.start()) + 1
        note = m["note"].strip()
        scopes = _scopes(code, m.start())
        if not scopes:
            continue  # outside any function: nothing to fill
        open_at, header = scopes[-1]
        close_at = _close(code, open_at)
        body = code[open_at + 1:close_at]
        after = code[m.end():close_at].strip()
        lam = _LAMBDA.search(header)
        fn = None if lam or _LOOP.search(header) or len(scopes) > 1 else _FUNCTION.search(header)
        if lam or (fn and "__global__" not in header):  # a lambda or a device function
            if body.strip():
                continue  # code besides the marker: written
            part = (lam or fn)[1]
        elif fn and not body.strip():  # the whole kernel body
            part = f"the body of {fn[1]}"
        else:  # part of a kernel, or a block inside one
            if (has_mma if wmma else bool(after)):
                continue  # the main loop exists (WMMA) / code follows the marker
            loop = _LOOP_VAR.search(header)
            main = "the main loop" if wmma and not has_mma else ""
            if fn:
                part = main or f"the end of {fn[1]}"  # nothing follows the marker
            elif loop:
                part = f"the body of {main or 'the loop'} over {loop[1]}"
            elif _LOOP.search(header):
                part = f"the body of {main or 'the loop'}"
            else:
                part = "the block"
        out.append(Stub(line, part, note))
    return out
