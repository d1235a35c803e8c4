"""Python answers (index functions, fp16 decoding, predictions, owner maps) evaluated where they
can do no harm: a separate interpreter, sandboxed under autograde, that runs the student's
answer cells and answers calls with plain JSON. The comparison with the expected answers
happens in the trusted process; nothing but data comes back from here.

    parent                                   child (python -I answer_child.py, a copy)
    {"preamble": [...], "cells": [...]}  ->  runs them        <- {"ready": true} | {"error": ...}
    {"call": "f", "args": [...]}         ->  f(*args)         <- {"ok": value}   | {"error": ...}
    {"map": "f", "range": [0, 9, 1]}     ->  f(i) for each i  <- one line each, as for a call; none after an error
One JSON document per line, on a pipe of its own (fd 3 in the child), so nothing the student
prints can be mistaken for an answer.

No answer key in reach: the course's package (grader.*) holds the answers' references, so an
answer that imports or calls it earns nothing (`package_use` says where, before anything runs),
and the child cannot load it either: it is a copy of `answer_child.py` (which imports no course
code) run from a scratch folder, with the package's folder hidden by the sandbox and its import
refused, and the course's own imports of the package left out of the preamble it runs.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time

import ast
import shutil
from pathlib import Path

from grader.checking import static
from grader.checking.answer_child import plain  # one definition, the child's (it imports nothing of ours)
from grader.runtime import proctree, sandbox

PACKAGE = Path(__file__).resolve().parents[1]  # grader/
CHILD = Path(__file__).with_name("answer_child.py")

CALL_TIMEOUT = 10.0  # seconds for one call of a student function
START_TIMEOUT = 60.0  # seconds to run the answer cells (imports of NumPy etc. included)
# seconds for all calls of one test cell (a slow answer costs that cell only); TC_LIMIT_TEST_S
TEST_BUDGET = float(os.environ.get("TC_LIMIT_TEST_S") or 60.0)
MAX_MESSAGE = 1 << 24  # bytes of one answer line


class AnswerError(Exception):
    """A student function failed: raised inside the trusted test as that function's error."""


# ------------------------------------------------------------------------------ the parent
def _as_exception(msg: dict) -> Exception:
    """The student's exception, rebuilt from its name when it is a built-in one (the test's own
    `except NotImplementedError:` then says "not yet" as in the notebook), else AnswerError."""
    import builtins

    cls = getattr(builtins, str(msg.get("type", "")), None)
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, (OSError, UnicodeError)):
        try:
            return cls(str(msg.get("message", "")))
        except Exception:
            pass
    return AnswerError(str(msg["error"]))


def _is_course(module: str | None) -> bool:
    return bool(module) and (module == PACKAGE.name or module.startswith(PACKAGE.name + "."))


def course_imports(preamble: list[str]) -> dict[str, str]:
    """Names the course's own cells import from its package: name -> module."""
    names = {}
    for src in preamble:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _is_course(node.module):
                for a in node.names:
                    names[a.asname or a.name] = node.module
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if _is_course(a.name):
                        names[a.asname or a.name.split(".")[0]] = a.name
    return names


def package_use(cells: list[str], preamble: list[str]) -> str | None:
    """Why the answer cells reach for the course's package (its references are the answer key),
    or None. Imports of it, names the course imported from it, and strings naming it count."""
    course = course_imports(preamble)
    for i, src in enumerate(cells, 1):
        tree = static.parse_cell(src)  # bounded in size; None: the child cannot run it either
        if tree is None:
            continue
        for node in ast.walk(tree):
            what = None
            if isinstance(node, ast.ImportFrom) and _is_course(node.module):
                what = f"imports {node.module}"
            elif isinstance(node, ast.Import) and any(_is_course(a.name) for a in node.names):
                what = f"imports {', '.join(a.name for a in node.names)}"
            elif isinstance(node, ast.Name) and node.id in course and isinstance(node.ctx, ast.Load):
                what = f"uses the course's `{node.id}` (from {course[node.id]})"
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    _is_course(node.value.strip()) or f"{PACKAGE.name}/" in node.value or f"{PACKAGE.name}." in node.value):
                what = f"names the course's package ({node.value.strip()[:40]!r})"
            if what:
                line = getattr(node, "lineno", 0)
                return (f"your answer cell {i} (line {line}) {what}: the course's package holds the expected "
                        "answers, so an answer that imports or calls it earns no points. Compute the result "
                        "yourself, with plain Python (and NumPy).")
    return None


class Answers:
    """The student's answer cells, running in a sandboxed child; call(name, *args) -> data.

    Every read has a deadline that a partial line cannot defeat (the pipe is read raw, not by
    line), and `budget()` sets one more for all calls of a test cell together."""

    def __init__(self, preamble: list[str], cells: list[str]):
        self.cells = cells
        # the course's imports of its own package stay out of the child: nothing there needs them
        self.preamble = [src for src in preamble if not (course_imports([src]) or "grader" in src)]
        self.proc = None
        self.box = None
        self.dead: str | None = package_use(cells, preamble)
        self.scratch = tempfile.mkdtemp(prefix="tc-answers-")
        self._buf = b""
        self._fresh = False  # bytes read since the last look at the sandbox's limits
        self._deadline: float | None = None
        self._budget = 0.0
        self._streaming = None  # a map() left before its end (its answers still on their way)

    def budget(self, end: float | None, seconds: float = 0.0) -> None:
        """Every call ends by `end` (time.monotonic(); None: no shared limit): a test cell's
        budget of `seconds` for all its calls."""
        self._deadline, self._budget = end, seconds

    def _start(self):
        r, w = os.pipe()
        child = os.path.join(self.scratch, "answer_child.py")
        shutil.copyfile(CHILD, child)
        cmd = [sys.executable, "-I", child, str(w)]
        env = {"PATH": os.environ.get("PATH", ""), "HOME": self.scratch, "MPLBACKEND": "Agg",
               "MPLCONFIGDIR": self.scratch, "TC_HEADLESS": "1"}
        # the package's folder reads as empty in there (answers may not call the course's code)
        if sandbox.wanted():
            self.box = sandbox.Box(writable=[self.scratch], hide=[*sandbox.hidden_from_env(), str(PACKAGE)],
                                   env={"HOME": self.scratch, "MPLCONFIGDIR": self.scratch})
            cmd = self.box.argv(cmd)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, pass_fds=(w,), env=env, cwd=self.scratch,
                                     text=True, start_new_session=True)
        os.close(w)
        if self.box is not None:
            self.box.watch(self.close, pid=self.proc.pid)
        self.reader = r
        # the package folders this process uses (never the course's repository): the course's
        # imports find what they find here, also where only PYTHONPATH named a folder (`-I` ignores it)
        self._send({"preamble": self.preamble, "cells": self.cells, "path": sandbox.python_dirs()})
        first = self._read(START_TIMEOUT, "running your answer cells", full=True)
        if "error" in first:
            self.dead = first["error"]

    def _send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def _line(self, end: float) -> bytes | None:
        """One line from the child, or None at `end`; b"" when the child closed the pipe."""
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.reader], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self.reader, 1 << 16)
                if not chunk:
                    return b""
                self._buf += chunk
                self._fresh = True
                if len(self._buf) > MAX_MESSAGE:
                    return b"\0"  # not an answer: far too long
        line, self._buf = self._buf.split(b"\n", 1)
        return line + b"\n"

    def _read(self, timeout: float, doing: str, full: bool = False) -> dict:
        """The child's next message; its sandbox's limits read once it came (`full`: every
        limit, what its processes hold included, else its sized filesystems only)."""
        end = time.monotonic() + timeout
        shared = self._deadline is not None and self._deadline < end
        if shared:
            end = self._deadline
        line = self._line(end)
        if line is None:
            self.close()
            if self.box is not None and self.box.exceeded:
                self.dead = f"stopped while {doing}: {self.box.exceeded}"
            elif shared:
                self.dead = (f"your functions used up this test's {self._budget:.0f} s while {doing}: stopped "
                             f"(each test cell has {self._budget:.0f} s for all its calls)")
            else:
                self.dead = f"no answer after {timeout:.0f} s while {doing}: stopped"
            raise AnswerError(self.dead)
        if not line:
            code = self.proc.wait(5)
            why = f": {self.box.exceeded}" if self.box is not None and self.box.exceeded else ""
            self.dead = f"the process running your code ended (exit code {code}) while {doing}{why}"
            raise AnswerError(self.dead)
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested past what any answer needs
            msg = None
        if not isinstance(msg, dict):
            self.close()
            self.dead = f"the process running your code sent something that is not an answer while {doing}"
            raise AnswerError(self.dead)
        # a limit it reached meanwhile (a /tmp it filled, say), whether or not a poll saw it: looked
        # at once per read from the pipe (the messages of one read came at the same time)
        looked, self._fresh = self._fresh or full, False
        if looked and self.box is not None and self.box.look(quick=not full):
            self.close()
            self.dead = f"stopped while {doing}: {self.box.exceeded}"
            raise AnswerError(self.dead)
        return msg

    def _settle(self):
        """Before a new request: a map() left unfinished is ended (its child stopped)."""
        if self._streaming is not None:
            self._streaming.close()

    def call(self, name: str, *args):
        self._settle()
        if self.proc is None and self.dead is None:
            self._start()
        if self.dead:
            raise AnswerError(self.dead)
        try:
            self._send({"call": name, "args": plain(list(args))})
        except (BrokenPipeError, OSError):
            self.dead = "the process running your code is gone"
            raise AnswerError(self.dead) from None
        msg = self._read(CALL_TIMEOUT, f"calling {name}{tuple(args)!r}")
        if "error" in msg:
            raise _as_exception(msg)
        return msg.get("ok")

    def map(self, name: str, over: range):
        """name(i) for each i of the range, in order, as call() would give them one by one, raising the
        first error where it came. The child answers them all without waiting for each to be asked
        for (one request, its answers streamed back: no round trip per call, which for 65,536 calls
        cost seconds), each within the same limits as a call. Left before the end, the child is
        stopped and the next call starts it afresh (nothing it sends later is taken for an answer)."""
        self._settle()
        gen = self._map(name, over)
        self._streaming = gen
        return gen

    def _map(self, name: str, over: range):
        if self.proc is None and self.dead is None:
            self._start()
        if self.dead:
            raise AnswerError(self.dead)
        try:
            self._send({"map": name, "range": [over.start, over.stop, over.step]})  # a short line, however long the range
        except (BrokenPipeError, OSError):
            self.dead = "the process running your code is gone"
            raise AnswerError(self.dead) from None
        done = False
        try:
            for i in over:
                msg = self._read(CALL_TIMEOUT, f"calling {name}({i!r},)")
                if "error" in msg:
                    done = True  # the child answers nothing after an error
                    raise _as_exception(msg)
                yield msg.get("ok")
            done = True
        finally:
            self._streaming = None
            if not done and not self.dead:
                self._forget()

    def _forget(self):
        """Stop the child (answers still on their way would be read as the next call's); the
        next call starts a new one."""
        self.close()
        if self.box is not None:
            self.box.close()
        os.close(self.reader)
        self.proc = self.box = None
        self._buf, self._fresh = b"", False

    def proxy(self, name: str):
        def call(*args):
            return self.call(name, *args)

        call.__name__ = name
        return call

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            proctree.stop(self.proc, wait=5)  # the whole tree, reaped

    def release(self):
        """Stop the child and remove its folders."""
        self._settle()
        self.close()
        if self.box is not None:
            self.box.close()
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)

