"""Stop a process and everything it started, and reap them all (Linux; elsewhere the process only).

A check that is stopped must not leave anything behind: not a child that runs on (the emulator's
forked workers, the program ncu profiles, a sandbox's processes in their own session), and not a
zombie. A process that held a CUDA context is gone only once it has been reaped: until then the
driver may still be tearing its context down and the kernel it launched may still hold the SMs.
Killing a process group is not enough (a child in a session of its own escapes it), and an
orphan is handed to pid 1, which on some machines never reaps it (a GPU machine's minimal init
was seen keeping <defunct> processes for good, 2026-11-27).

`stop(root)`: freeze the whole tree (SIGSTOP, again until nothing new appears, so nothing forks
past us), kill every process of it (SIGKILL), and, with this process a child subreaper meanwhile
(prctl PR_SET_CHILD_SUBREAPER) so every orphan of the tree comes here instead of to pid 1, reap
each one; returns the seconds until all were gone, or None when some were still there after
`wait` seconds (then a thread reaps them when they end).
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def _prctl():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _subreaper(on: bool | None = None) -> bool:
    """Whether this process is a child subreaper; with `on`, set it first. False where unknown."""
    prctl = _prctl()
    if prctl is None:
        return False
    import ctypes

    if on is not None:
        prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
    flag = ctypes.c_int(0)
    prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return bool(flag.value)


def _parents() -> dict[int, int]:
    """pid -> parent pid, of every process this machine shows."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for d in names:
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", "rb") as f:
                    s = f.read()
            except OSError:
                continue
            out[int(d)] = int(s[s.rfind(b")") + 2:].split()[1])
    return out


def descendants(pid: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every process below `pid` (children first)."""
    parents = _parents() if parents is None else parents
    kids: dict[int, list[int]] = {}
    for p, pp in parents.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _exists(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def stop(root: int | subprocess.Popen, *, wait: float = 60.0) -> float | None:
    """Kill `root` (a pid or a Popen) and every process below it; reap them. Seconds until every
    one was gone (reaped), or None if some were not after `wait` s."""
    proc = root if isinstance(root, subprocess.Popen) else None
    pid = proc.pid if proc is not None else int(root)
    t0 = time.monotonic()
    if not os.path.isdir("/proc"):  # not Linux: the process (and its group) only
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError, OSError):
                pass
        if proc is not None:
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                return None
        return time.monotonic() - t0
    was_subreaper = _subreaper()
    if not was_subreaper:
        _subreaper(True)
    try:
        tree = [pid]
        frozen: set[int] = set()
        for _ in range(50):  # freeze until the tree stops growing (a fork racing the scan)
            _signal(pid, signal.SIGSTOP)
            parents = _parents()
            tree = [pid] + [p for p in descendants(pid, parents) if p != os.getpid()]
            new = [p for p in tree if p not in frozen]
            if not new:
                break
            for p in new:
                _signal(p, signal.SIGSTOP)
            frozen.update(new)
        everyone = set(tree) | frozen
        for p in everyone:
            _signal(p, signal.SIGKILL)
        return _reap(proc, pid, everyone, t0, wait)
    finally:
        if not was_subreaper:
            _subreaper(False)


def _reap(proc, pid: int, everyone: set[int], t0: float, wait: float) -> float | None:
    me = os.getpid()
    left = set(everyone)
    while left and time.monotonic() - t0 < wait:
        parents = _parents()
        for p in sorted(left):
            if p not in parents:  # gone (reaped by us, or by its own parent in the tree)
                left.discard(p)
            elif parents[p] == me:  # ours (the root, or an orphan this subreaper adopted)
                if proc is not None and p == pid:
                    if proc.poll() is not None:
                        left.discard(p)
                else:
                    try:
                        if os.waitpid(p, os.WNOHANG)[0] == p:
                            left.discard(p)
                    except ChildProcessError:
                        left.discard(p)
        if left:
            time.sleep(0.05)
    if not left:
        return time.monotonic() - t0
    # Still exiting (a GPU context being torn down can take long): reaped when they end.
    for p in left:
        threading.Thread(target=_reap_later, args=(proc if p == pid else None, p), daemon=True).start()
    return None


def _reap_later(proc, pid: int) -> None:
    try:
        if proc is not None:
            proc.wait()
        else:
            os.waitpid(pid, 0)
    except (ChildProcessError, OSError):
        pass


def run(cmd: list[str], timeout: float) -> int:
    """Run `cmd` with a wall-clock limit, this process a child subreaper: at the limit, or when
    it ends, every process it left behind (in sessions of their own too) is ended and reaped.
    Its exit status, or 124 at the limit (as GNU timeout, which kills one process group only)."""
    _subreaper(True)
    proc = subprocess.Popen(cmd)
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        code = 124
    for p in descendants(os.getpid()):  # orphans it left, handed here
        if p in _parents():
            stop(p, wait=30)
    while True:  # this process has no other children: reap whatever is left
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    return code


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m grader.runtime.proctree",
                                 description="run a command with a time limit; nothing of it outlives it")
    ap.add_argument("--timeout", type=float, required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    code = run(cmd, a.timeout)
    if code == 124:
        print(f"!! stopped at its {a.timeout:g} s limit, with everything it started", file=sys.stderr)
    sys.exit(code)
