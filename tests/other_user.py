"""Running the grader as an ordinary user where this Python lies in root's home.

Root's interpreter is often a pyenv under /root (0700), which no other uid can reach: the tests that
grade as an ordinary user skipped there, CI included, so that mode was checked only on a GPU
machine. `prefix(uid)` runs a command as `uid` in a mount namespace of its own in which the folders
it needs (this interpreter, this venv, this checkout) are reachable: each one is bind-mounted aside,
a 0755 tmpfs covers the closed folder above it (/root), and the folder is mounted back in its place.
Nothing outside that namespace changes. Without unshare (or where it is refused) it gives None."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _closed_above(path: Path) -> Path | None:
    """The highest folder on the way to `path` that other users cannot pass (no o+x), or None."""
    for a in [*reversed(path.parents), path]:
        try:
            if not os.stat(a).st_mode & 0o001:
                return a
        except OSError:
            return None
    return None


def _needed() -> list[Path]:
    return [Path(p).resolve() for p in {sys.base_prefix, sys.prefix, str(ROOT)}]


def prefix(uid: int) -> list[str] | None:
    """`setpriv` as `uid`, inside a namespace where this Python and checkout are reachable; or None
    when that cannot be done here (not root, no setpriv or unshare, or it does not start)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    shown = [(p, _closed_above(p)) for p in _needed()]
    shown = [(p, a) for p, a in shown if a is not None]
    if not shown:
        return drop
    if not shutil.which("unshare"):
        return None
    stage = Path(tempfile.mkdtemp(prefix="tc-other-user-"))
    lines = ["set -e"]
    for i, (p, _) in enumerate(shown):
        lines += [f"mkdir -p {stage}/{i}", f"mount --bind {shlex.quote(str(p))} {stage}/{i}"]
    for a in sorted({a for _, a in shown}, key=lambda a: len(a.parts)):
        lines.append(f"mount -t tmpfs -o mode=755 tc-other-user {shlex.quote(str(a))}")
    for i, (p, _) in enumerate(shown):
        lines += [f"mkdir -p {shlex.quote(str(p))}", f"mount --bind {stage}/{i} {shlex.quote(str(p))}"]
    lines.append('exec "$@"')
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh", *drop]
    r = subprocess.run([*cmd, sys.executable, "-c", "import sys"], capture_output=True, cwd="/")
    return cmd if r.returncode == 0 else None
