"""g++ builds for the emulator: the runner (once per runtime version) and kernel modules
(once per source/options/prelude version), cached on disk."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from grader.emu.load_time import load_time_code
from grader.emu.translate import Translation, translate
from grader.runtime.errors import CompileError, Diagnostic, Unsupported

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
RUNTIME = HERE / "runtime"
CXX = os.environ.get("TC_EMU_CXX", "g++")
COMPILE_TIMEOUT = 120.0  # seconds for g++ on one kernel (template bombs end here)
MODULE_FLAGS = ["-std=gnu++17", "-O2", "-g", "-fPIC", "-shared", "-fno-omit-frame-pointer",
                "-fno-strict-aliasing", "-fno-finite-loops", "-fno-exceptions", "-fvisibility=default",
                "-fstack-usage"]


def cache_root() -> Path:
    base = os.environ.get("TC_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tensorcore-course")
    p = Path(base) / "emu"
    p.mkdir(parents=True, exist_ok=True)
    if stat.S_IMODE(p.stat().st_mode) != 0o311:
        # lookup only: an entry is found by its key, a hash of the very source it was built from,
        # and nobody (its owner, or a sandbox shown it) can list the others: a submission that
        # sees this cache learns nothing it did not already know (grader/runtime/sandbox.py)
        os.chmod(p, 0o311)
    return p


def shared_cache() -> Path | None:
    """A read-only cache of the course's own builds (the runner, the header stand-ins) that the
    grader prepared before sandboxing (TC_SHARED_CACHE): found there, they are not rebuilt in
    the sandbox's private cache, which holds no one else's kernels."""
    p = os.environ.get("TC_SHARED_CACHE")
    return Path(p) / "emu" if p else None


def prepare_shared() -> Path:
    """Build the course's own entries here (trusted code only) and return the folder to pass as
    TC_SHARED_CACHE: this process's cache, which sandboxes may look entries up in but not list."""
    runner_path()
    _scan_include_dir()
    return cache_root().parent


def _cached(name: str, probe: str = "") -> Path:
    """`name` in the shared cache when it is there (and readable here), else in this process's own."""
    shared = shared_cache()
    if shared is not None:
        try:
            if (shared / name / probe).exists() and os.access(shared / name, os.R_OK | os.X_OK):
                return shared / name
        except OSError:
            pass
    return cache_root() / name


def _sandboxed(cmd: list[str], workdir: Path, **kw) -> subprocess.CompletedProcess:
    """g++ on a student's source, sandboxed under grading (TC_SANDBOX): an #include of any file
    of the machine would otherwise print it in the compile error."""
    from grader.runtime import sandbox

    box = sandbox.maybe_box(writable=[str(workdir)], readable=[str(INCLUDE)] + [str(p) for p in _readable()])
    try:
        return subprocess.run(box.argv(cmd) if box else cmd, capture_output=True, text=True, **kw)
    finally:
        if box is not None:
            box.close()


def _readable() -> list[Path]:
    shared = shared_cache()
    return [shared] if shared is not None and shared.exists() else []


def _files_digest(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(HERE)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


_compiler_id: str | None = None


def compiler_id() -> str:
    global _compiler_id
    if _compiler_id is None:
        try:
            _compiler_id = subprocess.run([CXX, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            _compiler_id = "unknown"
    return _compiler_id


def prelude_digest() -> str:
    # the headers and the translator: a module built by an older translate.py or inline_ptx.py
    # (a rule since made stricter) must not be found by the same source's key
    return _files_digest([p for p in INCLUDE.rglob("*") if p.is_file()]
                         + [HERE / "translate.py", HERE / "inline_ptx.py"])


def _atomic_install(tmpdir: Path, final: Path) -> None:
    # readable by a sandbox's uid that knows the entry's key (mkdtemp made it its owner's only)
    for dirpath, dirnames, filenames in os.walk(tmpdir):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            q = os.path.join(dirpath, f)
            os.chmod(q, 0o755 if os.access(q, os.X_OK) else 0o644)
    try:
        os.replace(tmpdir, final)
    except OSError:  # another process won the race: theirs is as good as ours
        shutil.rmtree(tmpdir, ignore_errors=True)


def runner_path() -> Path:
    """Build (once) and return the emu_runner executable."""
    key = hashlib.sha256((_files_digest([RUNTIME / "runner.cpp", RUNTIME / "traffic.h", INCLUDE / "emu_abi.h"]) + compiler_id())
                         .encode()).hexdigest()[:16]
    final = _cached(f"runner-{key}")
    exe = final / "emu_runner"
    if exe.exists():
        return exe
    final = cache_root() / f"runner-{key}"
    tmp = Path(tempfile.mkdtemp(prefix="runner-tmp-", dir=cache_root()))
    cmd = [CXX, "-std=gnu++17", "-O2", "-g", "-fno-omit-frame-pointer", "-rdynamic", f"-I{INCLUDE}", f"-I{RUNTIME}",
           str(RUNTIME / "runner.cpp"), "-o", str(tmp / "emu_runner"), "-ldl"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"building the emulator runner failed:\n{r.stderr}")
    _atomic_install(tmp, final)
    return exe


_ARCH_OPT = re.compile(r"^(?:-arch|--gpu-architecture)=(?:compute|sm)_(?P<arch>\d+)$")


def filter_options(options: Sequence[str]) -> tuple[list[str], str]:
    """Keep the options that mean something to g++ (-D, -U, -I); map -std; drop NVRTC-only."""
    keep: list[str] = []
    std = "gnu++17"
    it = iter(options)
    for o in it:
        if o in ("-D", "-U", "-I", "--define-macro", "--include-path"):
            val = next(it, "")
            flag = {"--define-macro": "-D", "--include-path": "-I"}.get(o, o)
            keep.append(flag + val)
        elif o.startswith(("-D", "-U", "-I")):
            keep.append(o)
        elif o.startswith("--define-macro="):
            keep.append("-D" + o.split("=", 1)[1])
        elif o.startswith("--include-path="):
            keep.append("-I" + o.split("=", 1)[1])
        elif o in ("-arch", "--gpu-architecture") or _ARCH_OPT.match(o):
            # the target arch decides the WMMA fragment layout (Volta's differs) and which
            # fragment types exist: it becomes __CUDA_ARCH__, as in NVRTC's device pass
            m = _ARCH_OPT.match(o if "=" in o else f"-arch={next(it, '')}")
            if m:
                keep.append(f"-D__CUDA_ARCH__={int(m['arch']) * 10}")
        elif re.match(r"^--?std=", o):
            v = o.split("=", 1)[1]
            if v in ("c++20", "gnu++20"):
                std = "gnu++20"
        # everything else (-lineinfo, --use_fast_math, -G, ...) is NVRTC-only
    return keep, std


_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<sev>error|warning|fatal error|note):\s*(?P<msg>.*)$")


def parse_diagnostics(log: str, filename: str, user_lines: list[str]) -> list[Diagnostic]:
    """g++ messages about the user's file, in the user's line numbers. An error inside the
    prelude is attributed to the last user line mentioned before it (the call site)."""
    diags: list[Diagnostic] = []
    last_user_line: int | None = None
    for raw in log.splitlines():
        m = _DIAG.match(raw.strip())
        if not m:
            m2 = re.search(re.escape(filename) + r":(\d+):", raw)
            if m2:
                last_user_line = int(m2.group(1))
            continue
        sev = m.group("sev")
        f = os.path.basename(m.group("file"))
        line = int(m.group("line"))
        if f == filename:
            last_user_line = line
        if sev == "note":
            continue
        sev = "error" if sev.startswith(("error", "fatal")) else "warning"
        msg = m.group("msg").strip()
        if f != filename:
            if sev == "warning":
                continue
            line = last_user_line
            if line is None:
                continue
            msg = f"{msg} (inside the emulator's CUDA headers: {f})"
        src_line = user_lines[line - 1] if line and 0 < line <= len(user_lines) else None
        diags.append(Diagnostic(sev, msg, line, src_line))
    return diags


class Built:
    def __init__(self, directory: Path, meta: dict):
        self.dir = directory
        self.meta = meta
        self.so = directory / "kernel.so"


def _scan_include_dir() -> Path:
    """Empty stand-ins for the CUDA headers, so `g++ -E` can expand the user's macros."""
    d = _cached(f"scan-include-{prelude_digest()[:12]}")
    if not d.exists():
        d = cache_root() / d.name
        tmp = Path(tempfile.mkdtemp(prefix="scan-tmp-", dir=cache_root()))
        for p in INCLUDE.rglob("*.h*"):
            q = tmp / p.relative_to(INCLUDE)
            q.parent.mkdir(parents=True, exist_ok=True)
            q.write_text("")
        _atomic_install(tmp, d)
    return d


def scan_kernels(source: str, flags: list[str]) -> dict | None:
    """The __global__ kernels after macro expansion (kernels may be stamped out by macros),
    or None when the preprocessor fails (the real compile will report why)."""
    arch = [] if any(f.startswith("-D__CUDA_ARCH__=") for f in flags) else ["-D__CUDA_ARCH__=900"]
    cmd = [CXX, "-E", "-P", "-x", "c++", "-std=gnu++17", "-D__CUDACC__", "-D__CUDACC_RTC__", *arch,
           f"-I{_scan_include_dir()}", *flags, "-"]
    try:
        r = _sandboxed(cmd, cache_root(), input=source, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    from grader.emu.translate import code_view, find_kernels
    try:
        kernels, _ = find_kernels(code_view(r.stdout))
    except Exception:  # noqa: BLE001 - fall back to scanning the raw source
        return None
    return kernels


# A source that uses vector types, or casts a pointer (four fp8 codes loaded as one unsigned), gets
# g++'s alignment checks: a misaligned float4 or 32-bit load faults on a GPU, and the runner reports it
# (__ubsan_handle_type_mismatch_v1) with the user's line.
_VECTOR_TYPES = re.compile(r"\b(?:float|int|uint|double|short|ushort|char|uchar|longlong|ulonglong)[234]\b|\b__?half2\b")
_POINTER_CASTS = re.compile(r"\breinterpret_cast\s*<|\(\s*(?:const\s+|volatile\s+)*[A-Za-z_][\w:]*"
                            r"(?:\s+[A-Za-z_][\w:]*)*\s*(?:const\s*)?\*+\s*(?:const\s*)?\)")


def _sanitize_flags(source: str) -> list[str]:
    return ["-fsanitize=alignment"] if _VECTOR_TYPES.search(source) or _POINTER_CASTS.search(source) else []


def _build(tr: Translation, flags: list[str], std: str, filename: str) -> tuple[Path | None, str]:
    tmp = Path(tempfile.mkdtemp(prefix="mod-tmp-", dir=cache_root()))
    (tmp / "kernel.cpp").write_text(tr.source)
    cmd = [CXX, *[f if not f.startswith("-std=") else f"-std={std}" for f in MODULE_FLAGS],
           f"-I{INCLUDE}", *flags, "-fdiagnostics-color=never", "-o", str(tmp / "kernel.so"), str(tmp / "kernel.cpp")]
    try:
        r = _sandboxed(cmd, tmp, timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        return None, f"kernel.cpp:1:1: error: the compiler did not finish within {COMPILE_TIMEOUT:g} s"
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return None, r.stderr
    return tmp, r.stderr


def _user_stack_bytes(directory: Path, filename: str) -> int:
    """Stack bytes the user's own functions can take at once (the sum of their frames, from
    g++ -fstack-usage): the runner fills at least this much of every thread's stack with
    0xFF, so uninitialised locals read as NaN however large the kernel's frame."""
    total = 0
    for su in directory.glob("*.su"):
        for ln in su.read_text(errors="replace").splitlines():
            m = re.match(r"^(?P<file>.*):\d+:\d+:.*\t(?P<bytes>\d+)\t\S+$", ln)
            if m and os.path.basename(m.group("file")) in (filename, "<emu-launch-stubs>"):
                total += int(m.group("bytes"))
        su.unlink()
    return total


# A traffic build (grader/emu/traffic.py): every load and store calls the runner
# (__asan_loadN_noabort ...), which counts sectors and bank wavefronts per warp request.
TRAFFIC_FLAGS = ["-fsanitize=kernel-address", "--param", "asan-instrumentation-with-call-threshold=0",
                 "--param", "asan-stack=0", "--param", "asan-globals=0", "-fno-sanitize-address-use-after-scope"]


# g++'s word for a name it does not know; one that starts with "__" is CUDA's (C++ reserves such names for
# the implementation): a device function NVRTC has and the emulator's headers lack, not the student's mistake
_MISSING = re.compile(r"[‘'`](__\w+)[’'] was not declared in this scope")


def build_module(source: str, options: Sequence[str], name: str, traffic: bool = False) -> Built:
    filename = f"{name}.cu"
    flags, std = filter_options(options)
    flags = flags + _sanitize_flags(source) + (TRAFFIC_FLAGS if traffic else [])
    # load_time.py's text: a build is reused only if the check of what it runs on load passed on it
    # (with the flags the source decides, so a build from before a change of _sanitize_flags is not reused)
    key = hashlib.sha256(json.dumps([source, list(options), name, prelude_digest(), compiler_id(),
                                     MODULE_FLAGS, _files_digest([HERE / "load_time.py"]), flags]
                                    + (["traffic"] if traffic else [])).encode()).hexdigest()[:24]
    final = _cached(f"mod-{key}", "meta.json")
    if (final / "meta.json").exists() and (final / "kernel.so").exists():
        return Built(final, json.loads((final / "meta.json").read_text()))
    kernels = scan_kernels(source, flags)
    tr = translate(source, filename=filename, checked=True, kernels=kernels)
    tmp, log = _build(tr, flags, std, filename)
    if tmp is None and re.search(r"emu::(ElemRef|SharedArray|View)", log):
        # the checked __shared__ wrappers do not fit this code: plain arrays still work
        tr2 = translate(source, filename=filename, checked=False, kernels=kernels)
        tmp2, log2 = _build(tr2, flags, std, filename)
        if tmp2 is not None:
            tr, tmp, log = tr2, tmp2, log2
        else:
            log = log2
    loaded = load_time_code(tmp / "kernel.so") if tmp is not None else []
    if loaded:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CompileError(f"your source has code that would run when the module is loaded or unloaded, not when "
                           f"a kernel calls it ({', '.join(loaded[:3])}): a constructor or destructor attribute, an "
                           "ifunc or a loader section, which NVRTC leaves out and no GPU runs; remove it",
                           log=log, diagnostics=[], hint="Write code that your kernel calls; nothing else runs on a GPU.")
    if tmp is None:
        diags = parse_diagnostics(log, filename, source.replace("\r\n", "\n").split("\n"))
        errors = [d for d in diags if d.severity == "error"]
        first = errors[0] if errors else None
        msg = "compilation failed"
        if first:
            missing = _MISSING.search(first.message)
            if missing:
                raise Unsupported(
                    f"{missing[1]} (line {first.line}) is not known to the CPU emulator: a CUDA function it does not "
                    f"have (NVRTC, which compiles for the GPU, knows every one; check its spelling there). Run this "
                    f"kernel on a GPU, or write what {missing[1]} does with plain C++ operators.")
            msg = f"compilation failed: {first}"
        raise CompileError(msg, log=log, diagnostics=diags)
    meta = {
        "kernels": {k: [p.__dict__ for p in v] for k, v in tr.kernels.items()},
        "kernel_lines": tr.kernel_lines,
        "checked": tr.checked,
        "device_globals": tr.device_globals,
        "filename": filename,
        "stack_bytes": _user_stack_bytes(tmp, filename),
        "warnings": [str(d) for d in parse_diagnostics(log, filename, source.split("\n")) if d.severity == "warning"],
    }
    (tmp / "meta.json").write_text(json.dumps(meta))
    _atomic_install(tmp, final)
    if not (final / "kernel.so").exists():
        raise RuntimeError("emulator cache install failed")
    return Built(final, meta)
