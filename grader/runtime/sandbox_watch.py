"""What a running sandbox holds, watched while it runs: bytes and files written in its folders,
its processes' memory and what they keep open without a name; past a limit it is stopped and
the reason kept (grader.runtime.sandbox.Box, which mixes this in).

Its sized /tmp and /dev/shm are read through descriptors its first process handed out
(grader.runtime.sandbox_launch): they stay readable after the sandbox has ended, so `look()`
once a run is over names a /tmp it filled however short the run was, where a poll (four a
second) can miss a run that fills it and ends in between (ENOSPC met, no limit named)."""
from __future__ import annotations

import os
import socket
import threading
from stat import S_ISREG as stat_isreg
from typing import Callable


class Watch:
    """For a Box: reads its `root`, `writable`, `bind`, `in_memory`, `limits`, `_handoff` (the
    socket its launcher sends each run's /tmp and /dev/shm to); keeps `pid`, `peak`, `exceeded`,
    those descriptors (`_tmpfs`) and the watching thread (`_stop`, `_thread`)."""

    def tmpfs(self) -> tuple[dict[int, int], dict[int, int]]:
        """Bytes used in each sized filesystem of this sandbox, by device: its own /tmp and
        /dev/shm, handed over open (readable during and after the run); and apart, the /tmp of
        the sandbox this one runs in when its folders lie there (the trusted grader's sandbox,
        whose sized /tmp holds the answers' sandbox's scratch: the same submission's)."""
        while self._handoff is not None:
            try:
                _, fds, _, _ = socket.recv_fds(self._handoff, 16, 4)
            except OSError:  # nothing (more) handed over
                break
            self._tmpfs += fds
        own, around = {}, {}
        for fd in self._tmpfs:
            try:
                st, dev = os.fstatvfs(fd), os.fstat(fd).st_dev
            except OSError:
                continue
            own[dev] = (st.f_blocks - st.f_bfree) * st.f_frsize
        if os.environ.get("TC_INSIDE_SANDBOX"):
            try:
                dev = os.stat("/tmp").st_dev
                if any(os.stat(w).st_dev == dev for w in [*self.writable, *self.bind]):
                    st = os.statvfs("/tmp")
                    around[dev] = (st.f_blocks - st.f_bfree) * st.f_frsize
            except OSError:
                pass
        return own, around

    def look(self, quick: bool = False) -> str | None:
        """Every limit read now, once, as a poll reads them: for the end of a run (its /tmp is
        still readable) or just before it is stopped (what its processes still hold); `quick`:
        its sized filesystems only (microseconds, for a caller that looks often). The reason
        kept in .exceeded (the watch's, if it stopped the sandbox first), or None."""
        why = self.over(quick)
        if why and not self.exceeded:
            self.exceeded = why
        return self.exceeded

    def usage(self) -> tuple[int, int]:
        """Bytes and entries under the folders it may write."""
        size = count = 0
        stack = [self.root, *self.writable, *self.bind]
        while stack:
            try:
                with os.scandir(stack.pop()) as it:
                    for e in it:
                        count += 1
                        try:
                            st = e.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        size += st.st_blocks * 512 if st.st_blocks else st.st_size
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
            except OSError:
                continue
        return size, count

    def members(self) -> list[int]:
        """The sandbox's processes: `pid` (Box.watch) and everything below it."""
        if self.pid is None:
            return []
        kids: dict[int, list[int]] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat", "rb") as f:
                        ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                kids.setdefault(ppid, []).append(int(d))
        out, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo += kids.get(p, [])
        return out

    def held(self, procs: list[int], tmpfs: set[int] = frozenset()) -> tuple[int, int]:
        """(bytes of memory, bytes on disk) its processes hold beyond what usage() and tmpfs()
        see: proportional resident, shared and swapped memory of each process (smaps_rollup),
        files open without a name (deleted while open, memfd_create: memory) outside the
        filesystems of `tmpfs` (devices), whose use counts them already."""
        mem = disk = 0
        seen: set[tuple[int, int]] = set()
        for p in procs:
            try:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith(("Pss_Anon:", "Pss_Shmem:", "SwapPss:")):
                            mem += int(line.split()[1]) << 10
            except (OSError, ValueError):
                pass
            try:
                fds = os.listdir(f"/proc/{p}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    st = os.stat(f"/proc/{p}/fd/{fd}")
                except OSError:
                    continue
                if st.st_nlink or not stat_isreg(st.st_mode) or (st.st_dev, st.st_ino) in seen or st.st_dev in tmpfs:
                    continue
                seen.add((st.st_dev, st.st_ino))
                size = st.st_blocks * 512 if st.st_blocks else st.st_size
                if os.readlink(f"/proc/{p}/fd/{fd}").startswith("/memfd:"):
                    mem += size
                else:
                    disk += size
        return mem, disk

    def over(self, quick: bool = False) -> str | None:
        own, around = self.tmpfs()
        size = count = mem = held = 0
        if not quick:  # folders scanned, every process read: milliseconds
            size, count = self.usage()
            mem, held = self.held(self.members(), {*own, *around})
        # its own /tmp and /dev/shm count with what it wrote elsewhere; the /tmp of the sandbox
        # around it (already the whole submission's) on its own
        disk = max(size + held + sum(own.values()), *around.values(), 0)
        self.peak = (max(self.peak[0], mem), max(self.peak[1], disk), max(self.peak[2], count))
        # a sized /tmp (bwrap --size) refuses writes AT the limit (the program sees "No space left on
        # device"), so reaching it, within a MB, is what the feedback names
        if disk >= (self.limits.disk_mb - 1) << 20:
            return f"it wrote more than {self.limits.disk_mb - 1} MB, reaching {self.limits.disk_mb} MB (the limit for one submission)"
        if count > self.limits.files:
            return f"it created more than {self.limits.files} files (the limit for one submission)"
        if mem > self.limits.total_memory_mb << 20:
            return (f"its processes held more than {self.limits.total_memory_mb} MB of memory together "
                    "(the limit for one submission)")
        return None

    def watch(self, kill: Callable[[], None], every: float = 0.25, pid: int | None = None) -> None:
        """Poll what it wrote and, given the `pid` it runs under, what its processes hold; past a
        limit, call `kill` once and keep the reason in .exceeded."""
        self.pid = pid

        def loop():
            while not self._stop.wait(every):
                why = self.over()
                if why:
                    self.exceeded = why
                    try:
                        kill()
                    except Exception:  # noqa: BLE001 - already gone
                        pass
                    return
        self._thread = threading.Thread(target=loop, name="tc-sandbox-watch", daemon=True)
        self._thread.start()
