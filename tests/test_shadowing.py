"""No function in grader/ takes a parameter named as a module its file imports and then reads an
attribute of it: inside, the name is the argument, not the module. 2026-11-27: time_conv's flag
`cudnn` hid `grader.bench.cudnn`, and `cudnn.conv` failed on a bool, on GPUs only (the CPU never
reaches cuDNN), stopping notebooks 08 and 09 on every GPU."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "grader"


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
