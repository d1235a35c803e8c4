"""The notebook kernel of `nbgrader autograde`, started inside the sandbox (grader.runtime.sandbox).

Student code runs in that kernel before the test cells. Inside the sandbox it reads what it
needs (Python, the course package and kernels/, CUDA) and works in a private copy of its own
folder: the submission's regular files, bound where the notebook expects them. Nothing it
writes reaches autograded/ (no link or file it leaves behind is ever read by nbgrader), and
what it writes is watched against the disk limit; the copy is removed when the kernel ends.
Children it starts (the kernel checks of notebook cells) inherit all of that.

Configured in course/nbgrader_config.py through the course's Execute (grader.classroom.autograde):
the guide's plain `nbgrader autograde` starts every kernel this way.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import List, Unicode

from grader.runtime import proctree, sandbox


def private_paths(coursedir) -> list[str]:
    """What no student code may read or write: the gradebook, the instructor's sources, every
    student's submitted/autograded/feedback folder, the course config and its secrets."""
    root = Path(coursedir.root)
    source = Path(coursedir.source_directory)
    paths = [root / "gradebook.db", root / ".skip_tag", root / "nbgrader_config.py", root / ".tc-integrity.json",
             source if source.is_absolute() else root / source,
             root / coursedir.submitted_directory, root / coursedir.autograded_directory,
             root / coursedir.feedback_directory]
    if coursedir.db_url.startswith("sqlite:///"):
        paths.append(Path(coursedir.db_url[len("sqlite:///"):]))
    return sorted({str(p.resolve()) for p in paths if p.exists()})


def copy_regular(src: str, dest: str) -> None:
    """The regular files and folders under `src` into `dest`; links, devices, FIFOs and
    sockets are left out (nothing of the machine comes in through a submission's link)."""
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        os.makedirs(os.path.join(dest, rel), exist_ok=True)
        dirnames[:] = [d for d in dirnames if stat.S_ISDIR(os.lstat(os.path.join(dirpath, d)).st_mode)]
        for f in filenames:
            p = os.path.join(dirpath, f)
            if stat.S_ISREG(os.lstat(p).st_mode):
                shutil.copyfile(p, os.path.join(dest, rel, f), follow_symlinks=False)



# A notebook's share of its GPU's memory while cohort jobs share the GPU (TC_GPU_LOCK): CuPy's pool
# stops there (CUPY_GPU_MEMORY_LIMIT), so one careless notebook (a 65536^2 matrix) cannot take the
# memory a neighbour's trusted pass needs for its checks; that pass would then say the GPU was full
# (grader.checking.isolate._no_gpu_memory) and the instructor regrade. Two notebooks at 40% leave a
# fifth of the GPU for the grading itself.
NOTEBOOK_GPU_MEMORY = "40%"


def notebook_env(scratch: str, shared: str) -> dict[str, str]:
    """The sandboxed notebook kernel's environment: every cache and config in its scratch folder."""
    env = {"HOME": scratch, "IPYTHONDIR": f"{scratch}/ipython", "MPLCONFIGDIR": f"{scratch}/mpl",
           "TC_CACHE_DIR": f"{scratch}/cache", "CUPY_CACHE_DIR": f"{scratch}/cupy", "TC_SHARED_CACHE": shared,
           "XDG_CACHE_HOME": f"{scratch}/xdg", "JUPYTER_RUNTIME_DIR": f"{scratch}/runtime",
           # the kernel checks still run their own children; a second sandbox is not needed
           # inside this one, and the hidden paths are already hidden
           "TC_SANDBOX": "0"}
    if os.environ.get("TC_GPU_LOCK"):
        env["CUPY_GPU_MEMORY_LIMIT"] = os.environ.get("TC_NOTEBOOK_GPU_MEMORY") or NOTEBOOK_GPU_MEMORY
    return env

class SandboxedKernelManager(AsyncKernelManager):
    hidden = List(Unicode(), help="more paths unreadable inside the sandbox (files or folders); the "
                                  "course's private paths are always hidden").tag(config=True)
    stopped: list[str] = []  # why kernels were stopped by a limit, for the feedback (CourseExecute)

    _box: sandbox.Box | None = None
    _work: str | None = None
    _named = False  # this kernel's limit is in `stopped` already
    _naming = threading.Lock()  # the watch's thread and the shutdown both name it: once

    def _name(self, why: str) -> None:
        with self._naming:
            if self._named:
                return
            self._named = True
        SandboxedKernelManager.stopped.append(why)

    def _name_limit(self) -> None:
        """The limit its sandbox reached, read once more (sandbox.Box.look: its /tmp stays
        readable), into `stopped` for the feedback: a notebook that filled its /tmp and went on
        is named however its timing fell between the watch's polls."""
        box = self._box
        if box is not None and not self._named and box.look():
            self._name(box.exceeded)

    async def _async_pre_start_kernel(self, **kw):
        if self.transport == "ipc":  # a fresh socket folder per kernel: no kernel sees another's
            self.ip = os.path.join(tempfile.mkdtemp(prefix="tc-kernel-"), "k")
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments=None):
        from nbgrader.coursedir import CourseDirectory

        from grader.emu.compiler import prepare_shared
        from grader.runtime.kernels import KERNELS_DIR

        cmd = super().format_kernel_cmd(extra_arguments)
        cwd = os.path.realpath(self._launch_args.get("cwd") or os.getcwd())
        self._work = tempfile.mkdtemp(prefix="tc-work-")
        copy_regular(cwd, self._work)
        writable = []
        if self.transport == "ipc":  # the kernel creates its sockets next to this path prefix
            writable.append(os.path.dirname(os.path.realpath(self.ip)))
        scratch = "/tmp/tc-scratch"  # inside the sandbox's private /tmp
        shared = str(prepare_shared())  # the course's own emulator builds, read-only
        env = notebook_env(scratch, shared)
        hide = private_paths(CourseDirectory(config=self.config)) + list(self.hidden)
        # (TC_GPU_LOCK: the cohort's GPU lock is the grader's, held around the whole execution,
        # grader.runtime.gpulock; the notebook never sees it.)
        # JPY_PARENT_PID names the grader's process, which the kernel's own process namespace
        # cannot see: ipykernel would take it for gone and exit (bwrap ends the kernel with
        # its parent anyway, --die-with-parent)
        conn = os.path.realpath(self.connection_file)
        self._named = False
        self._box = sandbox.Box(bind={self._work: cwd}, writable=writable, hide=hide, env=env,
                                unset=["JPY_PARENT_PID", "TC_GPU_LOCK"], dirs=[scratch],
                                readable=[conn, str(KERNELS_DIR), os.path.join(shared, "emu")])
        if self._box.uid is not None:  # written by jupyter for its owner only
            os.chown(conn, self._box.uid, self._box.uid)
        return self._box.argv(cmd)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        await super()._async_launch_kernel(kernel_cmd, **kw)
        proc = getattr(self.provisioner, "process", None)
        box = self._box
        if proc is not None and box is not None:
            def stop():
                self._name(box.exceeded or "a limit was reached")
                proctree.stop(proc)  # the launcher, bwrap and the sandbox: every process ended and reaped

            box.watch(stop, pid=proc.pid)

    async def shutdown_kernel(self, now: bool = False, restart: bool = False):
        # (AsyncKernelManager binds shutdown_kernel to the base class's method, not by name)
        self._name_limit()  # while it still runs: what its processes hold counts too
        await super().shutdown_kernel(now=now, restart=restart)

    async def _async_kill_kernel(self, restart: bool = False):
        # The kernel's whole tree (the launcher, bwrap, the sandbox, the kernel checks it started,
        # a GPU context among them), ended and reaped before Jupyter's own kill of the launcher,
        # which would orphan the rest (grader.runtime.proctree).
        proc = getattr(self.provisioner, "process", None)
        if proc is not None and proc.poll() is None:
            import asyncio

            await asyncio.get_running_loop().run_in_executor(None, proctree.stop, proc)
        await super()._async_kill_kernel(restart=restart)

    async def _async_cleanup_resources(self, restart: bool = False):
        await super()._async_cleanup_resources(restart=restart)
        if self._box is not None:  # the kernel has ended (shut down, killed or dead): its number
            self._box.pid = None  # may be another process's by now; its /tmp is still readable
        self._name_limit()  # a kernel that died on its own: what it left in its /tmp
        if self._box is not None:
            self._box.close()
            self._box = None
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None
