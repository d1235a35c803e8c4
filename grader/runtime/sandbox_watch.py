"""What a running sandbox holds, watched while it runs: bytes and files written in its folders,
its processes' memory and what they keep open without a name; past a limit it is stopped and
the reason kept (grader.runtime.sandbox.Box, which mixes this in)."""
from __future__ import annotations

import os
import threading
from stat import S_ISREG as stat_isreg
from typing import Callable


class Watch:
    """For a Box: reads its `root`, `writable`, `bind`, `in_memory`, `limits`; keeps `pid`,
    `peak`, `exceeded` and the watching thread (`_stop`, `_thread`)."""

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

    def held(self, procs: list[int]) -> tuple[int, int]:
        """(bytes of memory, bytes on disk) its processes hold beyond what usage() sees:
        proportional resident, shared and swapped memory of each process (smaps_rollup), files
        open without a name (deleted while open, memfd_create: memory) and what its private
        /tmp and /dev/shm hold (tmpfs, counted as disk)."""
        mem = disk = 0
        seen: set[tuple[int, int]] = set()
        tmpfs: set[int] = set()
        try:
            mine = os.readlink("/proc/self/ns/mnt")
            inside = [p for p in procs if os.readlink(f"/proc/{p}/ns/mnt") != mine][:1]  # bwrap's child
        except OSError:
            inside = []
        for p in inside:
            for where in ("tmp", "dev/shm"):
                try:
                    st = os.statvfs(f"/proc/{p}/root/{where}")
                    dev = os.stat(f"/proc/{p}/root/{where}").st_dev
                except OSError:
                    continue
                if self.in_memory:
                    tmpfs.add(dev)
                    disk += (st.f_blocks - st.f_bfree) * st.f_frsize
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

    def over(self) -> str | None:
        size, count = self.usage()
        mem, held = self.held(self.members())
        self.peak = (max(self.peak[0], mem), max(self.peak[1], size + held), max(self.peak[2], count))
        # a sized /tmp (bwrap --size) refuses writes AT the limit (the program sees "No space left on
        # device"), so reaching it, within a MB, is what the feedback names
        if size + held >= (self.limits.disk_mb - 1) << 20:
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
