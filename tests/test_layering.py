"""The package's rooms and the one direction imports run (grader/__init__.py):

    lessons -> bench, classroom -> checking -> coach -> problems, emu -> runtime

A module may import its own room and any room below it, never one above or beside it at the
same level. The one sanctioned arrow out of runtime is backend.load's lazy import of the CPU
backend (grader.emu), asked for by name. Every import statement counts, also those inside
functions: a lazy upward import is still an upward import. Within a room, no module imports
itself back through others (no import circles, lazy imports included).
And no module is over 600 lines.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "grader"

LEVEL = {"runtime": 0, "problems": 1, "emu": 1, "coach": 1.5, "checking": 2, "bench": 3, "classroom": 3, "lessons": 4}
ALLOWED = {("runtime.backend", "emu")}  # backend.load(source, "emu") loads the CPU backend


def _modules():
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if "include" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), p


def _imports(name: str, path: Path):
    """Every grader module `path` imports, as dotted names under grader (relative resolved)."""
    is_pkg = path.name == "__init__.py"
    package = ["grader", *name.split(".")] if is_pkg else ["grader", *name.split(".")[:-1]]
    package = [p for p in package if p]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "grader" or mod.startswith("grader."):
                subs = [s for s in (f"{mod}.{a.name}" for a in node.names) if _is_module(s)]
                yield from subs or ([mod] if mod != "grader" else [])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("grader."):
                    yield a.name


def _is_module(dotted: str) -> bool:
    p = PKG.joinpath(*dotted.split(".")[1:])
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _room(dotted: str) -> str | None:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LEVEL else None


MAX_LINES = 600  # a module longer than this holds more than one thing: split it by what it holds


def _too_long():
    out = []
    for _, path in _modules():
        n = len(path.read_text().splitlines())
        if n > MAX_LINES:
            out.append(f"{path.relative_to(PKG.parent)}: {n} lines")
    return out


def test_no_module_is_over_600_lines():
    long = _too_long()
    assert not long, f"modules over {MAX_LINES} lines (split each by what it holds):\n  " + "\n  ".join(long)


def test_the_length_check_can_fail(tmp_path, monkeypatch):
    fake = tmp_path / "grader"
    (fake / "lessons").mkdir(parents=True)
    (fake / "lessons" / "short.py").write_text("x = 1\n" * MAX_LINES)
    (fake / "lessons" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    assert _too_long() == [f"grader/lessons/long.py: {MAX_LINES + 1} lines"]


def test_every_module_lives_in_a_room():
    loose = [n for n, p in _modules() if n and "." not in n and n not in LEVEL and n not in ("__main__",)]
    assert not loose, f"modules outside the rooms: {loose} (see grader/__init__.py)"


def test_every_room_says_what_it_holds_and_may_import():
    for room in LEVEL:
        doc = ast.get_docstring(ast.parse((PKG / room / "__init__.py").read_text())) or ""
        assert "import" in doc, f"grader/{room}/__init__.py should say what it may import"


def _violations():
    out = []
    for name, path in _modules():
        here = _room(f"grader.{name}")
        if here is None:
            continue  # the package face (grader/__init__.py, grader/__main__.py) may import anything
        for target in _imports(name, path):
            there = _room(target)
            if there is None or there == here:
                continue
            key = (".".join(name.split(".")[:2]), there)
            if LEVEL[there] >= LEVEL[here] and key not in ALLOWED:
                out.append(f"grader.{name} imports {target} ({here} may not import {there})")
    return out


def test_imports_run_down_the_rooms():
    bad = _violations()
    assert not bad, "upward or sideways imports:\n  " + "\n  ".join(bad)


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The rule above can fail: a runtime module importing checking is reported."""
    fake = tmp_path / "grader"
    for room in LEVEL:
        (fake / room).mkdir(parents=True)
        (fake / room / "__init__.py").write_text(f'"""{room}: may import nothing."""\n')
    (fake / "runtime" / "timing.py").write_text("def f():\n    from grader.checking import verdict\n")
    (fake / "checking" / "verdict.py").write_text("from ..runtime import timing\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    assert _violations() == ["grader.runtime.timing imports grader.checking.verdict "
                             "(runtime may not import checking)"]


def _graph() -> dict[str, set[str]]:
    """module -> the grader modules it imports anywhere in its text (functions included)."""
    graph = {}
    for name, path in _modules():
        here = f"grader.{name}" if name else "grader"
        graph[here] = {t for t in _imports(name, path) if t != here}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each as a path that
    returns to its start: a -> b -> ... -> a."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(set(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_round(graph, g) for g in groups]


def _path_round(graph, group: set[str]) -> list[str]:
    """One circle through the group, from its first module back to it (breadth-first)."""
    start = min(group)
    came = {w: start for w in graph[start] & group}
    todo = sorted(came)
    while start not in came:
        v = todo.pop(0)
        for w in sorted(graph[v] & group):
            if w not in came:
                came[w] = v
                todo.append(w)
    path, v = [start], came[start]
    while v != start:
        path.append(v)
        v = came[v]
    return [start, *reversed(path[1:]), start]


def test_no_import_circles():
    circles = [" -> ".join(c) for c in _circles(_graph())]
    assert not circles, ("modules that import each other (move what both need into one of them, or "
                         "below both):\n  " + "\n  ".join(circles))


def test_the_check_catches_a_circle_through_a_function(tmp_path, monkeypatch):
    """The rule above can fail: a circle closed by an import inside a function is reported, and a
    chain without a circle is not."""
    fake = tmp_path / "grader"
    (fake / "problems").mkdir(parents=True)
    (fake / "problems" / "__init__.py").write_text('"""problems: may import runtime."""\n')
    (fake / "problems" / "a.py").write_text("from grader.problems import b\n")
    (fake / "problems" / "b.py").write_text("from . import c\n")
    (fake / "problems" / "c.py").write_text("def f():\n    from grader.problems.a import x\n")
    (fake / "problems" / "d.py").write_text("import grader.problems.a\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    assert _circles(_graph()) == [["grader.problems.a", "grader.problems.b", "grader.problems.c",
                                   "grader.problems.a"]]
    (fake / "problems" / "c.py").write_text("def f():\n    return 1\n")
    assert _circles(_graph()) == []


@pytest.mark.parametrize("face", ["check", "grade"])
def test_the_face_for_notebooks(face):
    import grader
    from grader.checking import check as check_module

    assert getattr(grader, face) is getattr(check_module, face)


# What spans the project is tested at the top of tests/; everything else in the folder of the room
# it tests (tests/<room>/ for grader/<room>/), so a contributor finds a module's tests by its room.
PROJECT_WIDE = {"test_layering.py", "test_packaging.py", "test_readme_commands.py", "test_add_exercise.py"}
SHARED = {"adversarial", "coach_kernels", "__pycache__"}  # data and helpers several rooms use


def test_tests_mirror_the_rooms():
    tests = Path(__file__).resolve().parent
    rooms = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(LEVEL), f"grader's rooms {sorted(rooms)} and LEVEL {sorted(LEVEL)} differ"
    folders = {p.name for p in tests.iterdir() if p.is_dir()} - SHARED
    assert folders <= rooms, f"tests/{sorted(folders - rooms)} is no room of grader/ (tests/<room>/ tests grader/<room>/)"
    top = {p.name for p in tests.glob("test_*.py")}
    assert top <= PROJECT_WIDE, (f"{sorted(top - PROJECT_WIDE)}: a test of one room goes in tests/<room>/; only what "
                                 "spans the project stays at the top of tests/")


# ------------------------------------------------------------------- names
# No function in grader/ takes a parameter named as a module its file imports and then reads an
# attribute of it: inside, the name is the argument, not the module. 2026-11-27: time_conv's flag
# `cudnn` hid `grader.bench.cudnn`, and `cudnn.conv` failed on a bool, on GPUs only (the CPU never
# reaches cuDNN), stopping notebooks 08 and 09 on every GPU.
def shadowed(tree: ast.Module) -> list[str]:
    imported = {(a.asname or a.name).split(".")[0] for node in tree.body
                if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = fn.args
        for p in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} & imported:
            if any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == p
                   for n in ast.walk(fn)):
                out.append(f"{fn.name}({p}) at line {fn.lineno}")
    return out


def test_the_rule_finds_the_fault_it_was_written_for():
    src = "from grader.bench import cudnn\ndef time_conv(shape, cudnn=True):\n    return cudnn.conv(shape)\n"
    assert shadowed(ast.parse(src)) == ["time_conv(cudnn) at line 2"]
    assert shadowed(ast.parse(src.replace("cudnn=True", "use_cudnn=True"))) == []


def test_no_parameter_hides_an_imported_module():
    bad = {str(p.relative_to(PKG)): s for p in sorted(PKG.rglob("*.py"))
           if (s := shadowed(ast.parse(p.read_text())))}
    assert not bad, bad
