"""The grade nbgrader records, computed where no student code has run.

    python -I -m grader.checking.trusted < request.json > result.json

A fresh interpreter (no notebook state, no PYTHONPATH, no user site) reads the submission's
cells as text and runs the instructor's test cells (from the course's source, hidden tests
included) in its own namespace:
- names a test uses that the course's locked cells define (imports, constant tables) come
  from the course, never from the submission;
- a kernel source or launch dict is read statically: the last top-level `NAME = literal` of
  the submission (grader.checking.static), never executed;
- a Python answer (a function) runs in a sandboxed child (grader.checking.answers) and only
  plain data comes back; the comparison is the test's own, here;
- `grade(...)` is the same check path as in the notebook (grader.checking.check), whose
  kernel runs in its own sandboxed child.
The result per test cell: the points (a plain float, capped), the feedback as text and HTML,
and each kernel verdict as plain data (`record`: correctness, speed, the coach's first finding).

Request: {"release": [{"source", "grade_id", "points", "kind"}...], "submission": ["source"...]}
where kind is "test" (a graded cell), "locked" (a locked course cell) or "answer".
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import html
import io
import json
import os
import sys
import time
import traceback

from grader.checking import static
from grader.checking.answers import TEST_BUDGET, AnswerError, Answers

NOTE_UNTRUSTED = ("Graded without the sandbox (the instructor opted out): student code ran with the "
                  "grader's rights while this notebook executed.")


class Unreadable:
    """Stands for an answer that cannot be read without running the student's code."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why

    def __repr__(self):
        return f"<{self.name}: unreadable>"


class _Fail(Exception):
    pass


def _preamble(release: list[dict]) -> tuple[list[str], dict]:
    """From the course's cells: import statements of every cell but the answers (as source, also
    for the answers child), and constant assignments of the locked cells (values, here only;
    an unlocked cell's constants are the student's to change, read from the submission)."""
    imports, consts = [], {}
    for cell in release:
        if cell["kind"] in ("answer", "test"):
            continue
        tree = static.parse_cell(cell["source"])
        if tree is None:
            continue
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                imports.append(ast.unparse(stmt))
            elif cell["kind"] == "locked" and isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                try:
                    value = static.constant(stmt.value)
                except static.NotConstant:
                    continue
                for t in stmt.targets:
                    consts[t.id] = value
    return imports, consts


def _free_names(tree: ast.AST) -> set[str]:
    """Names a cell reads that it never binds anywhere (globals it expects to find)."""
    loads, stores = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else stores).add(n.id)
        elif isinstance(n, ast.arg):
            stores.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            stores.update(a.asname or a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            stores.add(n.name)
    return loads - stores


def _last_value(tree: ast.Module, ns: dict, filename: str):
    """Run a cell like IPython: statements, then the value of a final expression."""
    body, last = tree.body, None
    if body and isinstance(body[-1], ast.Expr):
        body, last = body[:-1], body[-1]
    exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), ns)
    if last is not None:
        return eval(compile(ast.Expression(last.value), filename, "eval"), ns)
    return None


class Grader:
    def __init__(self, release: list[dict], submission: list[str]):
        self.release, self.submission = release, submission
        imports, consts = _preamble(release)
        self.ns: dict = {"__name__": "__trusted__"}
        for src in imports:
            exec(compile(src, "<course imports>", "exec"), self.ns)
        self.ns.update(consts)
        self.course_names = set(self.ns)
        self.displayed: list = []
        self.ns["display"] = lambda *objs, **kw: self.displayed.extend(objs)
        self.ns["grade"] = self._grade
        self.ns["map"] = self._map
        self.imports = imports
        self._answers: Answers | None = None
        self._test_end: float | None = None
        self._answer_cells: dict[int, str] = {}

    # ------------------------------------------------------------------ student names
    def _bind_student_names(self, tree: ast.AST) -> list[Unreadable]:
        unreadable = []
        for name in sorted(_free_names(tree)):
            if name in self.course_names or hasattr(builtins, name) or name in self.ns and not isinstance(
                    self.ns[name], Unreadable):
                continue
            b = static.last_binding(name, self.submission)
            if b is not None and b.kind == "constant":
                self.ns[name] = b.value
            elif b is not None and b.kind == "def":
                self._answer_cells[b.cell] = self.submission[b.cell]
                self.ns[name] = self._proxy(name)
            else:
                u = Unreadable(name, static.describe_unreadable(name, b))
                self.ns[name] = u
                unreadable.append(u)
        return unreadable

    def _answers_now(self) -> Answers:
        """The child running the answer cells the tests so far named, within this test's budget."""
        cells = [self._answer_cells[i] for i in sorted(self._answer_cells)]
        if self._answers is None or self._answers.cells != cells:  # a later test needs more cells
            self.close()
            self._answers = Answers(self.imports, cells)
        self._answers.budget(self._test_end, TEST_BUDGET)
        return self._answers

    def _proxy(self, name: str):
        def call(*args):
            t0 = time.monotonic()
            try:
                return self._answers_now().call(name, *args)
            finally:
                _phase("Python answers (sandboxed child)", time.monotonic() - t0)

        call.__name__ = name
        call.answer_name = name  # what map() below recognizes
        return call

    def _map(self, fn, *iterables):
        """The tests' map(): a student's function over a range is asked of its child in one request
        (Answers.map: the same calls, answered without a round trip each); anything else as the
        built-in map does it."""
        name = getattr(fn, "answer_name", None)
        if name is None or len(iterables) != 1 or not isinstance(iterables[0], range):
            return map(fn, *iterables)

        def answers():
            it = None
            try:
                while True:
                    t0 = time.monotonic()
                    try:
                        it = it or self._answers_now().map(name, iterables[0])
                        value = next(it)
                    except StopIteration:
                        return
                    finally:
                        _phase("Python answers (sandboxed child)", time.monotonic() - t0)
                    yield value
            finally:
                if it is not None:
                    it.close()  # left early: its child stops (Answers.map)

        return answers()

    # ------------------------------------------------------------------ kernels
    def _grade(self, exercise_id, source, points=None, **launch):
        from grader.checking.check import check

        for value in (source, *launch.values()):
            if isinstance(value, Unreadable):
                raise _Fail(f"{value.why} {static.HOW_TO_WRITE}")
        if not isinstance(source, str):
            raise _Fail(f"the kernel source must be a string literal, not a {type(source).__name__}. "
                        f"{static.HOW_TO_WRITE}")
        # only the exercise's own launch parameters come from the submission: never the grader's
        # settings (backend, case_timeout, speed), whatever name a LAUNCH dict gives them
        from grader.checking import exercises

        allowed = set(exercises.get(exercise_id).launch_defaults)
        extra = sorted(set(launch) - allowed)
        if extra:
            raise _Fail(f"{', '.join(extra)} {'is not a launch parameter' if len(extra) == 1 else 'are not launch parameters'}"
                        f" of {exercise_id}" + (f" (it takes {', '.join(sorted(allowed))})" if allowed else
                                                " (it takes none)"))
        from grader.checking import isolate

        t0, inner = time.monotonic(), sum(isolate.PHASES.values())
        try:
            v = check(exercise_id, source, **launch)
        finally:  # the check's own work here (inputs, float64 references, verdict), its kernel runs apart
            _phase("kernel checks: references and verdicts (CPU)",
                   time.monotonic() - t0 - (sum(isolate.PHASES.values()) - inner))
        self.displayed.append(v)
        return v.points(points)

    # ------------------------------------------------------------------ one test cell
    def run_test(self, cell: dict) -> dict:
        points = float(cell["points"])
        self.displayed = []
        self._test_end = time.monotonic() + TEST_BUDGET
        printed = io.StringIO()
        tree = static.parse_cell(cell["source"])
        score, error = 0.0, None
        try:
            if tree is None:
                raise _Fail("the course's test cell does not parse (report this to your instructor)")
            unreadable = self._bind_student_names(tree)
            with contextlib.redirect_stdout(printed):
                value = _last_value(tree, self.ns, f"<test {cell['grade_id']}>")
            if value is None:  # nbgrader gives full points to a cell without a value: we never do
                raise _Fail("the test produced no score")
            score = float(value)
            if not score == score:  # NaN
                raise _Fail("the test produced no score")
        except _Fail as e:
            error = str(e)
        except AnswerError as e:
            error = f"your code failed: {e}"
        except Exception as e:
            tb = traceback.format_exception_only(type(e), e)[-1].strip()
            why = [u.why for u in self.ns.values() if isinstance(u, Unreadable) and u.name in str(e)]
            error = (why[0] + " " + static.HOW_TO_WRITE) if why else f"the test stopped: {tb}"
        score = min(max(score, 0.0), points)
        return dict(grade_id=cell["grade_id"], score=score, points=points, printed=printed.getvalue(),
                    error=error, verdicts=[_render(v) for v in self.displayed])

    def close(self):
        if self._answers is not None:
            self._answers.release()


def _render(obj) -> dict:
    text = obj.text() if hasattr(obj, "text") else str(obj)
    markup = obj._repr_html_() if hasattr(obj, "_repr_html_") else f"<pre>{html.escape(text)}</pre>"
    return dict(text=text, html=markup, record=record(obj))


def record(v) -> dict | None:
    """What a class-wide view needs of one kernel's verdict, as plain data (autograde keeps it in
    the graded cell's metadata; grader.classroom.leaderboard reads it): correctness, the speed
    measured (None where it was not: no GPU, not correct) and the coach's first finding."""
    from grader.checking.verdict import Verdict

    if not isinstance(v, Verdict):
        return None
    import numbers

    # the spreads and points: what grader.classroom.scores needs to tell a regrade's timing noise
    keys = ("ratio", "floor", "target", "kernel_ms", "baseline_ms", "fraction", "points", "kernel_spread",
            "baseline_spread")
    speed = {k: float(v.speed[k]) for k in keys
             if isinstance((v.speed or {}).get(k), numbers.Real)} or None  # NumPy's scalars too
    first = getattr(v.coach, "first", None)
    skipped = next((i.message for i in v.items if i.name == "speed" and i.status != "pass" and not speed), "")
    # correct: every check but speed passed (a correct kernel below its target fails only speed)
    correct = v.ran and all(i.status != "fail" for i in v.items if i.name != "speed") and \
        any(i.name.startswith("correct") and i.status == "pass" for i in v.items)
    # a fault of the grader's own (grader.checking.isolate._grader_fault): the instructor is told
    grader_error = next((i.message for i in v.items if i.kind == "grader-error"), "")
    return dict(exercise=v.exercise, backend=v.backend, correct=bool(correct), score=float(v.score),
                max_score=float(v.max_score), speed=speed, speed_note=skipped,
                coach=getattr(first, "sentence", "") or "", grader_error=grader_error)


_PHASES: dict[str, float] = {}


def _phase(name: str, seconds: float) -> None:
    _PHASES[name] = _PHASES.get(name, 0.0) + max(seconds, 0.0)


def grade_notebook(request: dict) -> dict:
    from grader.checking import isolate

    if request.get("launched_at"):  # the sandbox, the interpreter and the imports, before any test
        _phase("trusted process start-up", time.time() - float(request["launched_at"]))
    g = Grader(request["release"], request["submission"])
    try:
        return {"grades": [g.run_test(c) for c in request["release"] if c["kind"] == "test"]}
    finally:
        g.close()
        _PHASES.update({k: _PHASES.get(k, 0.0) + v for k, v in isolate.PHASES.items()})


def phases() -> dict[str, float]:
    """Seconds spent in each step of this process's grading so far (see course/README.md)."""
    return dict(_PHASES)


def main() -> int:
    request = json.load(sys.stdin)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # only the result goes to stdout
    os.environ.pop("NBGRADER_EXECUTION", None)  # this is the real check, not the notebook's copy
    os.environ["TC_HANDIN"] = "1"  # its hints speak of a hand-in (grader.checking.check.handed_in)
    result = grade_notebook(request)
    result["phases"] = phases()
    real_stdout.write(json.dumps(result))
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
