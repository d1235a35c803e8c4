"""Run untrusted code under bubblewrap: the whole file system read-only, nothing written but
the folders named, chosen paths hidden, no network, its own process and IPC namespaces.

Why bubblewrap: a maintained, setuid-free sandbox packaged by Debian/Ubuntu/Fedora (the tool
Flatpak is built on), one small binary, no daemon, and it keeps /dev/nvidia* usable, so the
same wrapper serves CPU and GPU machines (checked on the lent H100 with `--dev-bind /dev /dev`).
Containers (otter-grader's route) would need a daemon and GPU passthrough on every grading
machine; seccomp-only tools cannot hide the gradebook from reads.

Policy, from the environment so every child of a sandboxed grader inherits it:
  TC_SANDBOX=1        wrap untrusted children (the emulator's runner, Python answers);
                      set by the trusted grader and in nbgrader autograde
  TC_SANDBOX_HIDE     os.pathsep-separated paths made unreadable inside (gradebook, other
                      students' folders, the instructor's sources)
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Sequence

from grader.runtime.errors import CourseError

PACKAGE = "bubblewrap"  # Debian/Ubuntu/Fedora package name: what to install


class SandboxUnavailable(CourseError):
    pass


def tool() -> str | None:
    return shutil.which("bwrap")


def wanted() -> bool:
    return os.environ.get("TC_SANDBOX", "") not in ("", "0")


def hidden_from_env() -> list[str]:
    return [p for p in os.environ.get("TC_SANDBOX_HIDE", "").split(os.pathsep) if p]


def require() -> str:
    exe = tool()
    if exe is None:
        raise SandboxUnavailable(
            f"grading untrusted code needs the sandbox tool bwrap, which is not installed here",
            hint=f"Install the '{PACKAGE}' package (Debian/Ubuntu: sudo apt-get install {PACKAGE}), "
                 "or, knowing every student's code then runs with your rights, opt out: "
                 "TC_NO_SANDBOX=1 (course/README.md, 'What is trusted').")
    return exe


_EMPTY: str | None = None


def _empty_file() -> str:
    global _EMPTY
    if _EMPTY is None or not os.path.isfile(_EMPTY):
        import tempfile

        fd, _EMPTY = tempfile.mkstemp(prefix="tc-hidden-")
        os.close(fd)
        os.chmod(_EMPTY, 0o444)
    return _EMPTY


def _python_roots() -> list[str]:
    """Where this Python finds its packages (and the course's package, and bwrap), when they lie
    in a folder the sandbox replaces: /tmp holds them on machines with carried wheels."""
    import grader

    roots = [p for p in sys.path if p and os.path.isdir(p)] + [os.path.dirname(os.path.dirname(grader.__file__))]
    if tool():  # a sandboxed grader starts sandboxed children: bwrap itself must stay visible
        roots.append(os.path.dirname(os.path.realpath(tool())))
    out = []
    for p in roots:
        p = os.path.realpath(p)
        if p.startswith(("/tmp/", "/dev/shm/")) and p not in out:
            out.append(p)
    return out


def python_command(module: str) -> list[str]:
    """`python -I -m module` (no PYTHON* variables, no user site, no current folder on the
    path) that still finds the packages this process finds: their folders are named explicitly."""
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    boot = f"import sys, runpy; sys.path[:0] = {paths!r}; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    return [sys.executable, "-I", "-c", boot]


def wrap(cmd: Sequence[str], *, writable: Sequence[str | os.PathLike] = (), hide: Sequence[str] = (),
         env: dict[str, str] | None = None, unset: Sequence[str] = (), dirs: Sequence[str] = (),
         readable: Sequence[str] = (), network: bool = False) -> list[str]:
    """The argv that runs `cmd` inside the sandbox. `writable` folders stay writable (they must
    exist); `hide` paths (files or folders) read as empty; /tmp is a private, empty tmpfs in
    which `dirs` are created and `readable` paths (and Python's own package folders) are shown
    read-only; `env` is set and `unset` removed inside."""
    # /dev stays (GPU device files) but /dev/shm, shared by every process, becomes private
    args = [require(), "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--tmpfs", "/dev/shm",
            "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
            "--new-session"]
    if not network:
        args.append("--unshare-net")
    # order matters, later mounts cover earlier ones: shown, then hidden, then writable
    for r in [*_python_roots(), *(os.fspath(r) for r in readable)]:
        if os.path.exists(r):
            args += ["--ro-bind", r, r]
    for p in hide:
        q = Path(p)
        if q.is_dir():
            args += ["--tmpfs", str(q)]
        elif q.exists():  # an empty regular file (/dev/null would not open on a nodev mount)
            args += ["--ro-bind", _empty_file(), str(q)]
    for w in writable:
        w = os.fspath(w)
        args += ["--bind", w, w]
    for d in dirs:
        args += ["--dir", d]
    for k, v in (env or {}).items():
        args += ["--setenv", k, v]
    for k in unset:
        args += ["--unsetenv", k]
    return args + ["--", *cmd]


def maybe_wrap(cmd: Sequence[str], *, writable: Sequence[str | os.PathLike] = (),
               readable: Sequence[str | os.PathLike] = ()) -> list[str]:
    """`cmd` wrapped when the policy asks for it (TC_SANDBOX=1), else unchanged."""
    if not wanted():
        return list(cmd)
    return wrap(cmd, writable=writable, readable=readable, hide=hidden_from_env())
