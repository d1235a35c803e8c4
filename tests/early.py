"""Module fixtures that mostly wait, started early by pytest-xdist's controller.

Under xdist (.ci/run: -n 2) the controller process runs no test: it sits idle while its workers
do. A fixture whose time is mostly waiting is started there instead, in a thread, as soon as a
worker has collected a test that needs it, so that its waiting overlaps the workers' tests. The
machine-safety course is one (tests/classroom/test_machine_safety.py): its cheats sleep, fork and
run into time limits, so about 3/4 of its 220 s on the 2-core CI machine is waiting. The fixture
then takes what the controller made (its value, its error, or its skip) instead of making it
again: the same function with the same arguments, only run earlier and in another process.
Without xdist, or where the controller did not start it, the fixture makes it itself.
"""
from __future__ import annotations

import importlib.util
import os
import pickle
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKERINPUT = "tc_early"  # the folder where the controller leaves what it made
# name: (test file, its function making the value, the argument, the fixture's param in a test id).
# The function is called as fn(argument, tmp_path_factory, addfinalizer).
JOBS = {
    f"machine-{who}": ("tests/classroom/test_machine_safety.py", "graded_term", who, f"[{who}") for who in ("root", "user")
}
WAIT_S = 3600.0  # the controller's job's own steps have their timeouts; this only ends a lost wait


def needed(job: str, ids) -> bool:
    path, _, _, param = JOBS[job]
    return any(i.startswith(path + "::") and param in i for i in ids)


def take(request, job: str, make: Callable[[], object]):
    """The fixture's value: what the controller made for `job`, waited for, or make()."""
    folder = getattr(request.config, "workerinput", {}).get(WORKERINPUT)
    if not folder or not (Path(folder) / f"{job}.started").exists():
        return make()
    done = Path(folder) / f"{job}.done"
    deadline = time.monotonic() + WAIT_S
    while not done.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the xdist controller's {job} did not finish in {WAIT_S:.0f} s (tests/early.py)")
        time.sleep(1.0)
    kind, value = pickle.loads(done.read_bytes())
    if kind == "skip":
        pytest.skip(value)
    if kind == "error":
        raise RuntimeError(f"{job}, made by the xdist controller (tests/early.py), failed:\n{value}")
    return value


class Controller:
    """The controller's side (a plugin registered by tests/conftest.py outside xdist's workers)."""

    def __init__(self, config):
        self.config = config
        self.folder: Path | None = None
        self.threads: dict[str, threading.Thread] = {}
        self.finalizers: list[Callable[[], object]] = []
        self.one_at_a_time = threading.Lock()  # as one worker would have made them: no more load than that

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        if self.folder is None:
            self.folder = self.config._tmp_path_factory.mktemp("early")
        node.workerinput[WORKERINPUT] = str(self.folder)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        for job in JOBS:
            if job not in self.threads and self.folder is not None and needed(job, ids):
                (self.folder / f"{job}.started").touch()  # before any test can ask for it
                self.threads[job] = threading.Thread(target=self._run, args=(job,), name=f"early-{job}", daemon=True)
                self.threads[job].start()

    def _run(self, job: str) -> None:
        path, fn, arg, _ = JOBS[job]
        with self.one_at_a_time:
            try:
                spec = importlib.util.spec_from_file_location(f"early_{Path(path).stem}", ROOT / path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                out = ("ok", getattr(module, fn)(arg, self.config._tmp_path_factory, self.finalizers.append))
            except pytest.skip.Exception as e:
                out = ("skip", str(e.msg))
            except BaseException:
                out = ("error", traceback.format_exc())
        tmp = self.folder / f"{job}.tmp"
        tmp.write_bytes(pickle.dumps(out))
        os.replace(tmp, self.folder / f"{job}.done")

    def pytest_sessionfinish(self):
        for t in self.threads.values():  # a run stopped early still leaves nothing running
            t.join()
        for f in reversed(self.finalizers):
            f()
