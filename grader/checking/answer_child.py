"""The child of grader.checking.answers: runs a student's answer cells and answers calls with
JSON. It imports no course code and is run as a copy, from a scratch folder (`python -I`), so
the course's package (the answer key) is not on its path; the import of it is refused too, and
under autograde the sandbox hides the package's folder, which is what holds against a student
who undoes the refusal.
"""
import json
import os
import sys

PACKAGE = "grader"


class _NoCourse:
    """A meta-path finder that refuses the course's package."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            raise ImportError(f"the course's package ({PACKAGE}) is not available to answers: it holds the "
                              "expected answers")
        return None


def plain(value, depth=0):
    """`value` as JSON-able plain data, or TypeError naming what is not plain."""
    import numbers

    if depth > 20:
        raise TypeError("data nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):  # arrays and scalars
        return plain(value.tolist(), depth + 1)
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"a dict key {k!r} that is not a string")
            out[k] = plain(v, depth + 1)
        return out
    raise TypeError(f"a {type(value).__name__}, not plain data (int, float, str, list, dict)")


def main(fd):
    sys.meta_path.insert(0, _NoCourse)
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    out = os.fdopen(fd, "w", buffering=1)
    sys.stdout = sys.stderr  # the student's prints go to stderr, never into the answer pipe
    ns = {"__name__": "__main__"}

    def reply(obj):
        try:
            line = json.dumps(obj, allow_nan=True)
        except (TypeError, ValueError) as e:
            line = json.dumps({"error": f"TypeError: {e}"})
        out.write(line + "\n")
        out.flush()

    first = json.loads(sys.stdin.readline())
    sys.path[:0] = [p for p in first.get("path", []) if p not in sys.path]
    try:
        for src in first["preamble"]:
            exec(compile(src, "<course>", "exec"), ns)
    except BaseException as e:  # the course's own imports: the grading machine lacks something
        reply({"error": f"the course's imports failed where your answers run ({type(e).__name__}: {e}): "
                        "not your code; your instructor must fix the grading machine and grade again"})
        return
    try:
        for i, src in enumerate(first["cells"]):
            exec(compile(src, f"<your answer cell {i + 1}>", "exec"), ns)
    except BaseException as e:  # SystemExit too: it ends nothing here but this answer
        reply({"error": f"running your answer cell raised {type(e).__name__}: {e}"})
        return
    reply({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        name = req.get("call", req.get("map"))
        fn = ns.get(name)
        if not callable(fn):
            reply({"error": f"NameError: name '{name}' is not defined as a function"})
            continue
        # a map: the calls one after another, an answer each, none after the first error
        for args in ([req["args"]] if "call" in req else ([i] for i in range(*req["range"]))):
            try:
                reply({"ok": plain(fn(*args))})
            except BaseException as e:
                reply({"error": f"{type(e).__name__}: {e}", "type": type(e).__name__, "message": str(e)})
                break


if __name__ == "__main__":
    main(int(sys.argv[1]))
