"""Read a notebook's answers without running them: the last top-level binding of a name, and
the value of a constant expression (a kernel's source string, a launch dict).

The trusted grader grades what a submission *says*, never what its code computed while the
notebook ran (student code shared that process). So a kernel must be written as one string
literal, `SRC = r\"\"\"...\"\"\"`, and launch parameters as a literal dict; anything built at run
time cannot be read here and earns nothing, with a message saying how to write it instead.
"""
from __future__ import annotations

import ast
import functools
import operator
from dataclasses import dataclass

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
           ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


class NotConstant(ValueError):
    pass


# What a student writes is folded here, outside any sandbox, so its cost is bounded: an integer
# result of at most MAX_INT_BITS bits (the check comes before the arithmetic: `1 << (1 << 33)` or
# a tower of powers is refused, never computed), nesting no deeper than MAX_DEPTH, and a cell of
# at most MAX_CELL_CHARS characters is parsed at all. A launch dict needs a few small numbers.
MAX_INT_BITS = 4096
MAX_DEPTH = 100
MAX_CELL_CHARS = 1_000_000


def _int_bits(v) -> int:
    return v.bit_length() if isinstance(v, int) else 0


def _too_big(op, left, right) -> bool:
    """Would `left op right` be an integer past MAX_INT_BITS? (Judged from sizes alone.)"""
    if not (isinstance(left, int) and isinstance(right, int)):
        return False  # a float result is bounded in size (overflow raises)
    if isinstance(op, ast.Pow):
        return right > 0 and _int_bits(left) > 1 and _int_bits(left) * right > MAX_INT_BITS
    if isinstance(op, ast.LShift):
        return right > 0 and left != 0 and _int_bits(left) + right > MAX_INT_BITS
    if isinstance(op, ast.Mult):
        return _int_bits(left) + _int_bits(right) > MAX_INT_BITS
    return False


def constant(node: ast.AST, depth: int = 0):
    """The value of a constant expression: literals, containers of them, arithmetic on numbers,
    and dict(key=constant, ...). Anything naming a variable or calling code is refused, and so is
    anything past the bounds above (it is then "computed when the cell runs", i.e. not read)."""
    if depth > MAX_DEPTH:
        raise NotConstant("nested too deeply")
    depth += 1
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [constant(e, depth) for e in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotConstant("a ** inside a dict literal")
        try:
            return {constant(k, depth): constant(v, depth) for k, v in zip(node.keys, node.values)}
        except TypeError:  # an unhashable key
            raise NotConstant("a key that cannot be a dict key") from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        if any(k.arg is None for k in node.keywords):
            raise NotConstant("dict(**...)")
        return {k.arg: constant(k.value, depth) for k in node.keywords}
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = constant(node.left, depth), constant(node.right, depth)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            raise NotConstant("arithmetic on something other than numbers")
        if isinstance(node.op, ast.Pow) and abs(right) > 4096 or _too_big(node.op, left, right):
            raise NotConstant("a number too large to be a constant")
        try:
            return _BINOPS[type(node.op)](left, right)
        except (ArithmeticError, ValueError) as e:  # 1/0, a negative shift, a float overflow
            raise NotConstant(f"arithmetic that fails ({type(e).__name__})") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        v = constant(node.operand, depth)
        if not isinstance(v, (int, float)):
            raise NotConstant("a sign on something other than a number")
        return _UNOPS[type(node.op)](v)
    raise NotConstant(type(node).__name__)


@dataclass
class Binding:
    cell: int  # index in the list of cells given
    kind: str  # "def" | "constant" | "other"
    node: ast.AST
    value: object = None
    why: str = ""  # for "other": what the binding is


def _targets(t: ast.AST):
    if isinstance(t, ast.Name):
        yield t.id
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            yield from _targets(e)
    elif isinstance(t, ast.Starred):
        yield from _targets(t.value)


def _bindings_of(stmt: ast.stmt):
    """(name, kind, value, why) for every name a top-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield stmt.name, "def", None, ""
    elif isinstance(stmt, ast.ClassDef):
        yield stmt.name, "other", None, "a class"
    elif isinstance(stmt, ast.Assign):
        try:
            value, kind, why = constant(stmt.value), "constant", ""
        except NotConstant as e:
            value, kind, why = None, "other", f"computed when the cell runs ({e})"
        for t in stmt.targets:
            names = list(_targets(t))
            if not isinstance(t, ast.Name):  # unpacking: no single literal per name
                kind, why = "other", "assigned by unpacking"
            for n in names:
                yield n, kind, value, why
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        if stmt.value is None:
            return
        try:
            yield stmt.target.id, "constant", constant(stmt.value), ""
        except NotConstant as e:
            yield stmt.target.id, "other", None, f"computed when the cell runs ({e})"
    elif isinstance(stmt, (ast.AugAssign,)):
        for n in _targets(stmt.target):
            yield n, "other", None, "changed by an augmented assignment (+= ...)"
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            yield (a.asname or a.name.split(".")[0]), "other", None, "an import"
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        for n in _targets(stmt.target):
            yield n, "other", None, "a loop variable"
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            if item.optional_vars is not None:
                for n in _targets(item.optional_vars):
                    yield n, "other", None, "bound by a with statement"
    # Bindings inside if/try/while blocks or via globals() are not read: only the plain
    # top-level assignment counts (the message says so).
    for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) else ():
        if isinstance(node, ast.NamedExpr):
            for n in _targets(node.target):
                yield n, "other", None, "an assignment expression (:=)"


@functools.lru_cache(maxsize=512)  # a test cell looks up several names in every cell of a notebook
def parse_cell(source: str) -> ast.Module | None:
    """A code cell as Python, with IPython's line magics and shell escapes blanked out; None for
    one that does not parse, or that is past what a parse may cost here (MAX_CELL_CHARS, nesting
    the parser refuses). The tree is shared: never change it."""
    if not isinstance(source, str) or len(source) > MAX_CELL_CHARS:
        return None
    lines = [("" if ln.lstrip().startswith(("%", "!")) else ln) for ln in source.split("\n")]
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        return None


def last_binding(name: str, cells: list[str]) -> Binding | None:
    """The last top-level binding of `name` in `cells` (notebook order), or None."""
    found = None
    for i, src in enumerate(cells):
        tree = parse_cell(src)
        if tree is None:
            continue
        for stmt in tree.body:
            for n, kind, value, why in _bindings_of(stmt):
                if n == name:
                    found = Binding(i, kind, stmt, value, why)
    return found


HOW_TO_WRITE = ("Write it as one literal in its answer cell, e.g. SRC = r\"\"\" ...your kernel... \"\"\" "
                "(launch parameters: LAUNCH = dict(block_m=128, ...) with plain numbers). The grade is read "
                "from the text of your notebook, not from what its code computed.")


def describe_unreadable(name: str, b: Binding | None) -> str:
    if b is None:
        return f"`{name}` is not defined at the top level of any code cell of your notebook."
    return f"`{name}` is {b.why or 'not a literal'}, so it cannot be read without running your code."
