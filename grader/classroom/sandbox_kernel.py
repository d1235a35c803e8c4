"""The notebook kernel of `nbgrader autograde`, started inside the sandbox (grader.runtime.sandbox).

Student code runs in that kernel before the test cells, as the instructor's user. Inside the
sandbox it reads what it needs (Python, the course package, CUDA) but writes only its own
folder (autograded/<student>/<assignment>/) and a private /tmp; the gradebook, the course's
sources, other students' folders and the course config are hidden; there is no network.
Children it starts (the kernel checks of notebook cells) inherit all of that.

Configured in course/nbgrader_config.py through the course's Execute (grader.classroom.autograde):
the guide's plain `nbgrader autograde` starts every kernel this way.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import List, Unicode

from grader.runtime import sandbox


def private_paths(coursedir) -> list[str]:
    """What no student code may read or write: the gradebook, the instructor's sources, every
    student's submitted/autograded/feedback folder, the course config and its secrets."""
    root = Path(coursedir.root)
    source = Path(coursedir.source_directory)
    paths = [root / "gradebook.db", root / ".skip_tag", root / "nbgrader_config.py",
             source if source.is_absolute() else root / source,
             root / coursedir.submitted_directory, root / coursedir.autograded_directory,
             root / coursedir.feedback_directory]
    if coursedir.db_url.startswith("sqlite:///"):
        paths.append(Path(coursedir.db_url[len("sqlite:///"):]))
    return sorted({str(p.resolve()) for p in paths if p.exists()})


class SandboxedKernelManager(AsyncKernelManager):
    hidden = List(Unicode(), help="more paths unreadable inside the sandbox (files or folders); the "
                                  "course's private paths are always hidden").tag(config=True)

    async def _async_pre_start_kernel(self, **kw):
        if self.transport == "ipc":  # a fresh socket folder per kernel: no kernel sees another's
            self.ip = os.path.join(tempfile.mkdtemp(prefix="tc-kernel-"), "k")
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        cwd = os.path.realpath(self._launch_args.get("cwd") or os.getcwd())
        writable = [cwd]
        if self.transport == "ipc":  # the kernel creates its sockets next to this path prefix
            writable.append(os.path.dirname(os.path.realpath(self.ip)))
        scratch = "/tmp/tc-scratch"  # inside the sandbox's private /tmp
        env = {"HOME": scratch, "IPYTHONDIR": f"{scratch}/ipython", "MPLCONFIGDIR": f"{scratch}/mpl",
               "TC_CACHE_DIR": f"{scratch}/cache", "CUPY_CACHE_DIR": f"{scratch}/cupy",
               "XDG_CACHE_HOME": f"{scratch}/xdg", "JUPYTER_RUNTIME_DIR": f"{scratch}/runtime",
               # the kernel checks still run their own children; a second sandbox is not needed
               # inside this one, and the hidden paths are already hidden
               "TC_SANDBOX": "0"}
        from nbgrader.coursedir import CourseDirectory

        hide = private_paths(CourseDirectory(config=self.config)) + list(self.hidden)
        # hidden first, then the writable folders bound back (the own folder lies inside autograded/)
        # JPY_PARENT_PID names the grader's process, which the kernel's own process namespace
        # cannot see: ipykernel would take it for gone and exit (bwrap ends the kernel with
        # its parent anyway, --die-with-parent)
        # (the connection file may lie in /tmp, which the sandbox replaces: shown read-only)
        return sandbox.wrap(cmd, writable=writable, hide=hide, env=env, unset=["JPY_PARENT_PID"],
                            dirs=[scratch], readable=[os.path.realpath(self.connection_file)])
