"""One preprocessor: the code the emulator runs and the code a GPU compiles must be the same.

The grade's evidence (tensor-core work counted by the emulator, correctness at the CPU sizes)
holds for the GPU only if no macro can tell the two apart. So the student's source is run
through the real preprocessor (g++ -E) twice, once under the macros NVRTC defines (asked of
NVRTC itself: a probe kernel stringifies each candidate macro into the PTX) and once under
those the emulator's g++ defines (its prelude, the host's own such as __x86_64__ or linux, the
C++ library's), with every header replaced by a stand-in of its own. If the two token streams
differ anywhere, some macro decides what runs, and the kernel is refused naming the line.
Macros both compilers define alike are given one definition on both sides; the emulator's
stand-ins for CUDA keywords and intrinsics (`__global__`, `__shfl_sync` ...) become opaque
names, so using them is fine while testing them (`#ifdef __shfl_sync`) is a difference.

`#include` reaches only CUDA and C++ standard headers: anything else (a file of the
repository, a relative or absolute path) is refused before the kernel runs.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.checking.verdict import FAIL, Item

# C++ standard library headers, and their C forms, that a kernel may include (NVRTC ships some;
# which ones compile is the compiler's business, which ones are *allowed* is ours)
STD_HEADERS = """algorithm array atomic bit bitset cassert cfloat chrono climits cmath complex cstddef cstdint
cstdio cstdlib cstring ctime functional initializer_list iterator limits memory new numeric optional
ratio tuple type_traits utility variant assert.h float.h limits.h math.h stddef.h stdint.h stdio.h
stdlib.h string.h""".split()
# CUDA headers beyond the emulator's own stand-ins (grader/emu/include)
CUDA_HEADERS = """cuda_fp8.h cuda_fp6.h cuda_fp4.h cooperative_groups.h cooperative_groups/memcpy_async.h
cooperative_groups/reduce.h cuda/pipeline cuda/barrier cuda/std/cstdint cuda/std/type_traits
cuda/std/limits cuda/std/utility cuda/std/array cuda/std/cmath cuda/ptx cuda/annotated_ptr
sm_60_atomic_functions.h sm_61_intrinsics.h sm_70_rt.h sm_90_rt.h math_functions.h
device_atomic_functions.h""".split()
# names the preprocessor itself gives meaning to: never defined from a probe
BUILTINS = {"defined", "__has_include", "__has_include_next", "__has_builtin", "__has_attribute",
            "__has_cpp_attribute", "__has_feature", "__has_extension", "__FILE__", "__LINE__", "__COUNTER__",
            "__DATE__", "__TIME__", "__TIMESTAMP__", "__BASE_FILE__", "__FILE_NAME__", "__INCLUDE_LEVEL__",
            "_Pragma", "__VA_ARGS__", "__VA_OPT__", "__cplusplus", "__STDC__", "__STDC_VERSION__"}
# tests the emulator's g++ and NVRTC answer from different file systems: refused outright
REFUSED_TOKENS = ("__has_include", "__has_include_next", "__has_builtin", "__has_feature", "__has_extension")
# macros NVRTC may define that no g++ dump lists: probed too
KNOWN_NVRTC = """__CUDACC__ __CUDACC_RTC__ __CUDA_ARCH__ __CUDA_ARCH_LIST__ __CUDACC_VER_MAJOR__
__CUDACC_VER_MINOR__ __CUDACC_VER_BUILD__ __CUDACC_RTC_INT128__ __CUDACC_RTC_FLOAT128__ __NVCC__
__NVCC_DIAG_PRAGMA_SUPPORT__ __CUDACC_EWP__ __CUDACC_DEBUG__ __CUDACC_RDC__ __CUDACC_EXTENDED_LAMBDA__
__CUDACC_RELAXED_CONSTEXPR__ __CUDA_ARCH_FEAT_SM90_ALL __CUDA_ARCH_SPECIFIC__ __CUDA_ARCH_FAMILY_SPECIFIC__
__CUDA_FTZ __CUDA_PREC_DIV __CUDA_PREC_SQRT __USE_FAST_MATH__ __CUDA_NO_HALF_CONVERSIONS__
__CUDA_NO_HALF_OPERATORS__ __CUDA_NO_BFLOAT16_CONVERSIONS__ _NVHPC_CUDA __NVCOMPILER""".split()
# both define them, with values that matter (a version, the arch): compared as they are
_VALUE_MATTERS = re.compile(r"^(__CUDA|__CUDACC|__NVCC|CUDART_VERSION)")
# CUDA's built-in variables, which the emulator spells as macros (warpSize 32): opaque names
CUDA_BUILTIN_VARS = {"warpSize", "threadIdx", "blockIdx", "blockDim", "gridDim"}
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z_]\w*|\d[\w.]*(?:[eEpP][+-]\d+)?\w*|\S')


@dataclass
class Macro:
    value: str  # the full expansion, as the compiler stringifies it
    fn: bool = False  # function-like (its expansion is not probed)


def _run(cmd: list[str], text: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=60, cwd=cwd)


def _cxx() -> str:
    from grader.emu.compiler import CXX

    return CXX


def _stub_dir() -> Path:
    """A folder with a stand-in for every allowed header: one line naming the header, so which
    headers a branch includes shows in the token stream too."""
    from grader.emu.compiler import INCLUDE, cache_root

    names = sorted({str(p.relative_to(INCLUDE)) for p in INCLUDE.rglob("*") if p.is_file()}
                   | set(STD_HEADERS) | set(CUDA_HEADERS))
    d = cache_root() / f"pp-stubs-{hashlib.sha256(' '.join(names).encode()).hexdigest()[:12]}"
    if not d.exists():
        tmp = Path(tempfile.mkdtemp(prefix="pp-stubs-", dir=cache_root()))
        for n in names:
            q = tmp / n
            q.parent.mkdir(parents=True, exist_ok=True)
            q.write_text(f"__tc_header_{re.sub(r'[^A-Za-z0-9]', '_', n)}\n")
        try:
            os.rename(tmp, d)
        except OSError:  # another process made it first
            pass
    return d


def _fail(message: str, line: int | None = None, hint: str = "") -> Item:
    where = {"line": line} if line else {}
    return Item("same on every backend", FAIL, message, kind="backend-detection", where=where,
                hint=hint or "Write one kernel for every backend: test only macros you #define yourself, "
                             "the launch parameters, or __CUDA_ARCH__.")


def include_item(source: str, flags: list[str]) -> tuple[Item | None, list[str]]:
    """(a failure, or None; the headers the source includes). Only CUDA and C++ standard
    headers are allowed, by name; anything else is refused before the kernel runs."""
    for m in _INCLUDE_LINE.finditer(source):  # a path is refused unread (it could be /dev/zero)
        arg = m[1].split("//")[0].strip()
        if not arg.startswith("<") or arg[1:2] == "/" or ".." in arg:
            return _include_refused(arg.strip('<>"'), source), []
    stubs = _stub_dir()
    with tempfile.TemporaryDirectory(prefix="tc-pp-") as tmp:
        path = Path(tmp) / "kernel.cu"
        path.write_text(source)
        try:
            r = _run([_cxx(), "-E", "-H", "-nostdinc", "-x", "c++", "-std=gnu++17", f"-I{stubs}", *flags,
                      str(path)], "", cwd=tmp)
        except subprocess.TimeoutExpired:
            return _fail("the preprocessor did not finish with your source within a minute"), []
    found = []
    for ln in r.stderr.splitlines():
        m = re.match(r"^\.+ (.*)$", ln)
        if m:
            p = os.path.realpath(m[1])
            if not p.startswith(str(stubs) + os.sep):
                return _include_refused(m[1], source), []
            found.append(os.path.relpath(p, stubs))
        m = re.search(r"fatal error: (.+?): No such file or directory", ln)
        if m:
            return _include_refused(m[1], source), []
    if r.returncode != 0:  # the compile (NVRTC's or the emulator's) says what is wrong
        return None, found
    return None, found


def _include_refused(name: str, source: str) -> Item:
    base = os.path.basename(name)
    line = next((i for i, ln in enumerate(source.splitlines(), 1) if "include" in ln and base in ln), None)
    return _fail(f"line {line or '?'}: `#include` of {name!r}: a kernel may include only CUDA headers "
                 "(<mma.h>, <cuda_fp16.h>, <cuda_pipeline.h> ...) and C++ standard headers; the grade is "
                 "for code written in your cell, not read from a file", line,
                 hint="Write the kernel in your answer cell; include only <mma.h>, <cuda_fp16.h> and the like.")


def _probe_lines(names: list[str]) -> str:
    out = ["#define __TC_STR(...) #__VA_ARGS__", "#define __TC_XSTR(...) __TC_STR(__VA_ARGS__)"]
    for i, n in enumerate(names):
        out.append(f"#ifdef {n}\n__device__ const char __tc_probe_{i}[] = __TC_XSTR({n});\n#endif")
    return "\n".join(out) + "\n"


def _unquote(s: str) -> str:
    return bytes(s[1:-1], "utf-8").decode("unicode_escape") if len(s) >= 2 else s


def gpu_macros(names: list[str], headers: list[str], arch: int, options: list[str]) -> dict[str, Macro] | None:
    """The macros NVRTC defines among `names` (with `headers` included), asked of NVRTC itself;
    None where NVRTC cannot compile the probe."""
    from grader.runtime.compile import nvrtc_compile
    from grader.runtime.errors import CourseError

    src = "".join(f"#include <{h}>\n" for h in headers) + _probe_lines(names)
    try:
        ptx = nvrtc_compile(src, arch=arch, options=options, resources=False).ptx
    except CourseError:
        return None
    found = {}
    for m in re.finditer(r"__tc_probe_(\d+)\[\d+\](?: = \{([^}]*)\})?", ptx):
        data = bytes(int(x) for x in (m[2] or "").split(",") if x.strip()).rstrip(b"\0")
        found[names[int(m[1])]] = Macro(data.decode(errors="replace"))
    return found


def emu_macros(headers: list[str], flags: list[str], extra: list[str]) -> tuple[dict[str, Macro], set[str]]:
    """The macros the emulator's g++ defines (its prelude, the host's, `headers`'), expanded, and
    the names its own headers define (stand-ins for CUDA's API)."""
    from grader.emu.compiler import INCLUDE, MODULE_FLAGS

    inc = "".join(f"#include <{h}>\n" for h in headers)
    # the emulator's own build flags: -O2 defines __OPTIMIZE__, -fPIC __PIC__, -fno-exceptions
    # leaves out __EXCEPTIONS ... a kernel may test any of them
    real = [f for f in MODULE_FLAGS if f not in ("-shared", "-fstack-usage", "-g")]
    base = [_cxx(), "-x", "c++", *real, f"-I{INCLUDE}", *flags]
    dump = _run([*base, "-dM", "-E", "-"], '#include "emu_prelude.h"\n' + inc).stdout
    host = _run([_cxx(), "-x", "c++", *real, *flags, "-dM", "-E", "-"], "").stdout
    defs = {}
    for m in re.finditer(r"^#define (\w+)(\()?", dump, re.M):
        defs[m[1]] = bool(m[2])
    own = set(defs) - set(re.findall(r"^#define (\w+)", host, re.M))
    names = sorted(n for n in set(defs) | set(extra) if n not in BUILTINS)
    probe = '#include "emu_prelude.h"\n' + inc + "#define __TC_STR(...) #__VA_ARGS__\n#define __TC_XSTR(...) __TC_STR(__VA_ARGS__)\n"
    probe += "".join(f"#ifdef {n}\n@@TC{i}@@ __TC_XSTR({n})\n#endif\n" for i, n in enumerate(names))
    out = _run([*base, "-E", "-P", "-"], probe).stdout
    found = {}
    for m in re.finditer(r"^@@TC(\d+)@@ (.*)$", out, re.M):
        n = names[int(m[1])]
        found[n] = Macro(_unquote(m[2].strip()), defs.get(n, False))
    return found, own


def _same_value(a: str, b: str) -> bool:
    a, b = " ".join(a.split()), " ".join(b.split())
    if a == b:
        return True
    num = re.compile(r"^\(?\s*([-+]?(?:0[xX][0-9a-fA-F]+|\d+))[uUlL]*\s*\)?$")
    ma, mb = num.match(a), num.match(b)
    return bool(ma and mb and int(ma[1], 0) == int(mb[1], 0))


def _opaque(name: str, fn: bool) -> str:
    return f"#define {name}(...) {name}(__VA_ARGS__)" if fn else f"#define {name} {name}"


def macro_files(emu: dict[str, Macro], own: set[str], gpu: dict[str, Macro]) -> tuple[str, str]:
    """The two macro sets as -imacros files: one definition where the compilers agree."""
    g_lines, e_lines = [], []
    for n in sorted(set(emu) | set(gpu)):
        if n in BUILTINS:
            continue
        e, g = emu.get(n), gpu.get(n)
        if e and g:
            if not e.fn and _same_value(e.value, g.value):
                d = f"#define {n} {e.value}"
                g_lines.append(d), e_lines.append(d)
            elif _VALUE_MATTERS.match(n) and not e.fn:
                g_lines.append(f"#define {n} {g.value}"), e_lines.append(f"#define {n} {e.value}")
            else:  # a CUDA keyword or intrinsic each compiler spells its own way
                g_lines.append(_opaque(n, e.fn)), e_lines.append(_opaque(n, e.fn))
        elif e:
            # the emulator's stand-in for a CUDA name: opaque, unless a number (a flag to test)
            plain = re.fullmatch(r"[-+]?\d+[uUlL]*|\(?[-+]?\d+\)?", e.value.strip() or "0") is not None
            opaque = (n in own and not plain) or e.fn or n in CUDA_BUILTIN_VARS
            e_lines.append(_opaque(n, e.fn) if opaque else f"#define {n} {e.value}")
        else:
            g_lines.append(_opaque(n, False) if g.value == n else f"#define {n} {g.value}")
    head = "\n".join(f"#undef {n}" for n in sorted(set(emu) | set(gpu)) if n not in BUILTINS) + "\n"
    return head + "\n".join(g_lines) + "\n", head + "\n".join(e_lines) + "\n"


def _tokens(text: str) -> list[tuple[int, str]]:
    """(line in the student's source, token) for every token g++ -E put out for that file."""
    out, line, ours = [], 0, False
    for ln in text.split("\n"):
        m = re.match(r'^# (\d+) "([^"]*)"', ln)
        if m:
            # the kernel's own lines and the header stand-ins (which headers a branch includes)
            line, ours = int(m[1]), not (m[2].startswith("<") or m[2].endswith("macros.h"))
            continue
        if ours:
            out.extend((line, t) for t in _TOKEN.findall(ln))
        line += 1
    return out


def _expand(source: str, macros: str, folder: str, flags: list[str], stubs: Path) -> str | None:
    os.makedirs(folder, exist_ok=True)
    Path(folder, "kernel.cu").write_text(source)
    Path(folder, "macros.h").write_text(macros)
    # an absolute path: __FILE__ differs between the two runs, so code that looks at it differs
    r = _run([_cxx(), "-E", "-undef", "-nostdinc", "-w", "-x", "c++", "-std=gnu++17", f"-I{stubs}",
              "-imacros", os.path.join(folder, "macros.h"), *flags, os.path.join(folder, "kernel.cu")], "",
             cwd=folder)
    return r.stdout if r.returncode == 0 else None


def include_check(source: str, options: list[str], arch: int) -> Item | None:
    """A failed item when the source includes anything but CUDA and C++ standard headers."""
    from grader.emu.compiler import filter_options

    flags, _ = filter_options([*options, f"-arch=compute_{arch}"])
    try:
        return include_item(source, flags)[0]
    except OSError:  # no g++ here (a GPU machine without the emulator): read the directives
        return _include_lines(source)


_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*(.*)$", re.M)


def _include_lines(source: str) -> Item | None:
    """Without a preprocessor: every #include line must name an allowed header in <...>."""
    from grader.emu.compiler import INCLUDE

    allowed = {str(p.relative_to(INCLUDE)) for p in INCLUDE.rglob("*") if p.is_file()}
    allowed |= set(STD_HEADERS) | set(CUDA_HEADERS)
    for m in _INCLUDE_LINE.finditer(source):
        arg = m[1].split("//")[0].strip()
        name = arg[1:-1] if len(arg) > 2 and arg[0] in "<\"" and arg[-1] in ">\"" else arg
        if name not in allowed:
            return _include_refused(name, source)
    return None


def check_item(source: str, options: list[str], arch: int) -> Item | None:
    """None when the GPU and the emulator see the same code; else a failed item naming the line."""
    from grader.emu.compiler import filter_options

    for tok in REFUSED_TOKENS:
        if re.search(rf"\b{tok}\b", source):
            line = next(i for i, ln in enumerate(source.splitlines(), 1) if tok in ln)
            return _fail(f"line {line}: `{tok}` asks the compiler about its own files and features, which "
                         "differ between the GPU's compiler and the CPU emulator", line)
    flags, _ = filter_options([*options, f"-arch=compute_{arch}"])
    try:
        return _compare(source, options, arch, flags)
    except OSError:  # no g++ here: the emulator cannot run either; the GPU's own count decides
        return None


def _compare(source: str, options: list[str], arch: int, flags: list[str]) -> Item | None:
    refused, headers = include_item(source, flags)
    if refused is not None:
        return refused
    ids = sorted(set(_IDENT.findall(source)) - BUILTINS)
    emu, own = emu_macros(headers, flags, ids + KNOWN_NVRTC)
    names = sorted((set(emu) | set(ids) | set(KNOWN_NVRTC)) - BUILTINS)
    gpu = gpu_macros(names, headers, arch, list(options))
    if gpu is None:  # NVRTC could not answer: the CUDA compiler's macros as the emulator has them
        gpu = {n: m for n, m in emu.items() if _VALUE_MATTERS.match(n)}
    g_file, e_file = macro_files(emu, own, gpu)
    stubs = _stub_dir()
    with tempfile.TemporaryDirectory(prefix="tc-pp-") as tmp:
        # different folders: a kernel that looks at __FILE__ sees a difference too
        g_out = _expand(source, g_file, os.path.join(tmp, "gpu"), flags, stubs)
        e_out = _expand(source, e_file, os.path.join(tmp, "emulator"), flags, stubs)
    if g_out is None or e_out is None:
        return None  # the preprocessor failed: the compilers report why
    gt, et = _tokens(g_out), _tokens(e_out)
    inner = next(((ln, t) for ln, t in gt + et if t.startswith("__emu")), None)
    if inner is not None:
        return _fail(f"line {inner[0]}: `{inner[1]}` is a name of the CPU emulator's own machinery, not of CUDA",
                     inner[0])
    for (gl, g), (el, e) in zip(gt, et):
        if g != e:
            return _differs(source, min(gl, el) or gl, emu, gpu)
    if len(gt) != len(et):
        k = min(len(gt), len(et))
        line = (gt[k][0] if k < len(gt) else et[k][0]) if max(len(gt), len(et)) > k else 0
        return _differs(source, line, emu, gpu)
    return None


def _differs(source: str, line: int, emu: dict, gpu: dict) -> Item:
    def differs(n):
        if n in CUDA_BUILTIN_VARS or n in BUILTINS:
            return n.startswith("__FILE") or n == "__BASE_FILE__"
        if (n in emu) != (n in gpu):
            return True
        return n in emu and _VALUE_MATTERS.match(n) and not _same_value(emu[n].value, gpu[n].value)

    named = sorted(n for n in set(_IDENT.findall(source)) if differs(n))
    which = f" (it uses {', '.join(named[:4])}, which only one of them defines, or each its own way)" if named else ""
    return _fail(f"line {line}: the code the GPU compiles and the code the CPU emulator runs differ here{which}: "
                 "a macro decides what runs, so the grader cannot vouch for what the GPU would do", line)
