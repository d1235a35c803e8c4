"""The course's two steps in nbgrader's Autograde pipeline (course/nbgrader_config.py):

CourseExecute   runs the submission as nbgrader's Execute does, in a sandboxed kernel
                (grader.classroom.sandbox_kernel); a kernel that dies (os._exit, a crash) or a
                cell that runs past its limit (timeout_plain / timeout_graded) ends the execution
                of that notebook but not its grading; the stopped cell says why.
TrustedGrade    after execution, before SaveAutoGrades: replaces every graded cell's output by
                the verdict of the trusted grader (python -I -m grader.checking.trusted, in the
                sandbox, fed the submission's text and the course's own test cells), so what the
                notebook computed never becomes a grade. Graded cells are restored from the
                gradebook (points, id, source); a deleted one is put back; a cell claiming a grade
                it does not have loses the claim.

Opt-out (no bubblewrap, knowingly): TC_NO_SANDBOX=1. Every feedback page then says so.
"""
from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_code_cell, new_output
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Float, Integer, List, Unicode

from grader.classroom import handin_check, phases
from grader.classroom.sandbox_kernel import private_paths
from grader.runtime import gpulock, sandbox

VERDICTS = "tc_verdicts"  # a graded cell's metadata: grader.checking.trusted.record of each kernel it graded
BANNER_UNSANDBOXED = ("WARNING: this notebook was autograded WITHOUT the sandbox (TC_NO_SANDBOX=1): student code "
                      "ran with the grader's rights. Scores still come from the trusted grader.")


def sandbox_opted_out() -> bool:
    return os.environ.get("TC_NO_SANDBOX", "") not in ("", "0")


class CourseExecute(Execute):
    """nbgrader's Execute with the course's sandboxed kernel; survives a dead kernel and a cell
    that runs too long (the grade never depends on the execution: TrustedGrade reads the text)."""

    # A cell that awards no points needs seconds (autograde skips the notebook's own kernel
    # checks), so a short limit stops a forgotten loop early; a graded cell runs the student's
    # Python answers (the kernel checks happen in the trusted pass), so it gets more.
    timeout_plain = Integer(60, help="seconds a cell that awards no points may run").tag(config=True)
    timeout_graded = Integer(120, help="seconds a graded cell may run").tag(config=True)

    def __init__(self, *args, **kwargs):
        if not sandbox_opted_out():
            from grader.classroom.sandbox_kernel import SandboxedKernelManager

            sandbox.require()  # stops autograde here, naming the package, if bwrap is missing
            sandbox.self_test()  # ... or saying why the sandbox cannot start on this machine
            kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)
        if self.timeout_func is None:
            self.timeout_func = self.cell_timeout

    def cell_timeout(self, cell) -> int:
        limit = self.timeout_graded if cell.metadata.get("nbgrader", {}).get("grade") else self.timeout_plain
        return min(limit, self.timeout) if self.timeout and self.timeout > 0 else limit

    async def _async_handle_timeout(self, timeout, cell=None):
        # Said in the cell itself, so the feedback page shows which cell was stopped and why.
        why = stopped_message(cell, timeout)
        self.log.warning("%s", why)
        if cell is not None:
            stopped_cells(cell_meta=cell.metadata, why=why)
        self.error_on_timeout = dict(ename="CellTimeoutError", evalue=why, traceback=[f"CellTimeoutError: {why}"])
        return await super()._async_handle_timeout(timeout, cell)

    def output(self, outs, msg, display_id, cell_index):
        # a cell's output is capped as it arrives (SafeOutputs' limits): a 200 MB print never
        # sits in nbgrader's memory; what is cut is noted in the cell
        if not self._output_budget.admit(self.nb.cells[cell_index], cell_index, msg.get("content", {})):
            return None
        return super().output(outs, msg, display_id, cell_index)

    def _update_display_id(self, display_id, msg):
        # an update replaces outputs kept earlier, in any cell, without passing output(): counted
        # against the notebook's budget as new output, dropped past it
        if display_id in self._display_id_map and not self._output_budget.admit_update(msg.get("content", {})):
            return None
        return super()._update_display_id(display_id, msg)

    def handle_comm_msg(self, outs, msg, cell_index):
        # Widget messages are ignored: no one turns a dial while autograding (widgets render
        # statically, grader/classroom/headless.py). nbclient would keep every widget's state in
        # this process (the instructor's, outside the sandbox: memory without a limit) and stop
        # grading the notebook on a message it cannot read (KeyError: a NOT GRADED hand-in).
        return None

    def clear_output(self, outs, msg, cell_index):
        self._output_budget.forget(cell_index)  # a progress display that redraws itself is not cut
        return super().clear_output(outs, msg, cell_index)

    def preprocess(self, nb, resources=None, km=None):
        from grader.classroom.safe_outputs import SafeOutputs

        self._output_budget = SafeOutputs(config=self.config).budget()
        info = (resources or {}).get("nbgrader", {})
        t0, waited = time.time(), 0.0
        try:
            # Under a cohort sharing this GPU (TC_GPU_LOCK): the notebook may use the GPU at any
            # time, so its execution holds the GPU's lock shared; another job's timed rounds wait.
            with gpulock.held(exclusive=False) as waited:
                return self._preprocess(nb, resources, km)
        finally:
            phases.record(phases.EXECUTE, time.time() - t0 - waited, student=info.get("student"),
                          notebook=info.get("notebook"))
            if waited:
                phases.record("GPU lock wait (before execution)", waited, student=info.get("student"),
                              notebook=info.get("notebook"))

    def _preprocess(self, nb, resources=None, km=None):
        from grader.classroom.sandbox_kernel import SandboxedKernelManager

        SandboxedKernelManager.stopped.clear()
        try:
            return super().preprocess(nb, resources, km=km)
        except DeadKernelError as e:
            # The grade does not depend on the execution (TrustedGrade): grading goes on.
            self.log.warning("the notebook's kernel died (%s); grading continues with the trusted grader", e)
            return nb, resources
        except CellTimeoutError as e:
            # The kernel did not answer the interrupt (a loop in C, or a sandboxed kernel that
            # signals cannot reach): the rest is not run, the grading goes on all the same.
            cell = next((c for c in nb.cells if c.metadata.get("course", {}).get("stopped")), None)
            why = cell.metadata["course"]["stopped"] if cell is not None else str(e).splitlines()[0]
            if cell is not None and not any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                cell.outputs.append(new_output("error", ename="CellTimeoutError", evalue=why,
                                               traceback=[f"CellTimeoutError: {why}"]))
            self.log.warning("execution stopped (%s); the cells after it did not run; grading continues with the "
                             "trusted grader", why)
            return nb, resources

        finally:
            info = (resources or {}).get("nbgrader", {})
            for why in SandboxedKernelManager.stopped:
                note = (f"Your notebook was stopped while it ran: {why}. Its graded cells were still graded "
                        "from what you wrote.")
                self.log.warning("%s, %s: %s", info.get("student"), info.get("notebook"), note)
                (resources if resources is not None else {}).setdefault("course_notes", []).append(note)


def grader_errors(results: dict) -> list[str]:
    """'<cell>: <message>' for each kernel verdict the grader itself failed to reach (its student
    sees 'the grader itself failed, not your kernel'; the instructor must hear it too)."""
    return [f"{g.get('grade_id')}: {v['record']['grader_error']}" for g in results.get("grades", [])
            for v in g.get("verdicts", []) if (v.get("record") or {}).get("grader_error")]


def stopped_message(cell, timeout) -> str:
    graded = bool(cell is not None and cell.metadata.get("nbgrader", {}).get("grade"))
    kind = "a graded cell" if graded else "a cell that awards no points"
    gid = cell.metadata.get("nbgrader", {}).get("grade_id") if cell is not None else None
    name = f" ({gid})" if gid else ""
    return (f"the autograder stopped this cell{name}: it ran longer than {timeout} s, the limit for {kind} "
            "(a loop that never ends?). Your grade does not depend on it: the course's trusted grader reads "
            "your answers and kernels as text.")


def stopped_cells(cell_meta, why: str) -> None:
    cell_meta.setdefault("course", {})["stopped"] = why


class TrustedGrade(NbGraderPreprocessor):
    timeout = Float(3600.0, help="seconds for the trusted grading of one notebook").tag(config=True)
    extra_hidden = List(Unicode(), help="more paths to hide from graded code").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        with Gradebook(info["db_url"]) as gb:
            cells = gb.find_notebook(info["notebook"], info["assignment"])
            graded = {c.name: float(c.max_score) for c in cells.grade_cells}
            sources = {c.name: c.source for c in cells.source_cells}
        source_nb = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"])) / (
            info["notebook"] + ".ipynb")
        release = self._release(source_nb, graded, sources)
        submission = [c.source for c in nb.cells if c.cell_type == "code"]
        t0 = time.monotonic()
        results = self._run(dict(release=release, submission=submission, launched_at=time.time()), coursedir)
        self.log.info("trusted grading of %s: %.1f s", info["notebook"], time.monotonic() - t0)
        where = dict(student=info.get("student"), notebook=info.get("notebook"))
        phases.record(phases.TRUSTED, time.monotonic() - t0, **where)
        for name, seconds in (results.get("phases") or {}).items():
            phases.record(f"trusted: {name}", float(seconds), **where)
        if results.get("failed"):  # a limit it reached among them: the instructor hears which
            self.log.warning("%s, %s: %s", info.get("student"), info["notebook"], results["failed"])
        for line in grader_errors(results):
            self.log.error("%s, %s: %s; regrade this submission once the grader is fixed", info.get("student"),
                           info["notebook"], line)
        notes = handin_check.notes(info["assignment"], info.get("student"), info["notebook"])
        self._apply(nb, release, results, notes + resources.get("course_notes", []))
        return nb, resources

    # -------------------------------------------------------------- what the course says
    def _release(self, path: Path, graded: dict, sources: dict) -> list[dict]:
        """The course's cells in order: tests (source and points from the gradebook, what was
        released), locked cells, answers. A graded cell the source no longer has is kept."""
        from nbformat import read

        out, seen = [], set()
        src = read(str(path), as_version=4)
        for c in src.cells:
            if c.cell_type != "code":
                continue
            meta = c.metadata.get("nbgrader", {})
            gid = meta.get("grade_id")
            if gid in graded and not meta.get("solution"):
                out.append(dict(kind="test", grade_id=gid, points=graded[gid], source=sources.get(gid, c.source)))
                seen.add(gid)
            elif meta.get("solution"):
                out.append(dict(kind="answer", grade_id=gid, points=0, source=c.source))
            else:
                out.append(dict(kind="locked" if meta.get("locked") else "plain", grade_id=gid, points=0,
                                source=c.source))
        for gid, pts in graded.items():
            if gid not in seen and gid in sources:
                out.append(dict(kind="test", grade_id=gid, points=pts, source=sources[gid]))
        return out

    # -------------------------------------------------------------- the trusted process
    def _run(self, request: dict, coursedir) -> dict:
        scratch = tempfile.mkdtemp(prefix="tc-trusted-")
        t_cache = time.monotonic()
        cached = self._compile_cache(request, os.path.join(scratch, "cupy"))
        t_cache = time.monotonic() - t_cache
        cmd = sandbox.python_command("grader.checking.trusted")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": scratch, "MPLBACKEND": "Agg", "MPLCONFIGDIR": scratch,
               "TC_HEADLESS": "1", "CUPY_CACHE_DIR": os.path.join(scratch, "cupy"),
               "LANG": os.environ.get("LANG", "C.UTF-8")}
        for k in os.environ:
            if k in ("TC_ARCH", "TC_CPU_ONLY", "TC_CACHE_DIR", "CUDA_VISIBLE_DEVICES", "CUDA_PATH", "LD_LIBRARY_PATH",
                     "TC_NVRTC", "TC_BWRAP", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS") \
                    or k.startswith("TC_LIMIT_"):
                env[k] = os.environ[k]
        lock = gpulock.path()  # a cohort's lock of this GPU (grader.runtime.gpulock); None in plain autograde
        if lock:
            env[gpulock.ENV] = lock
        box = None
        if not sandbox_opted_out():
            from grader.emu.compiler import prepare_shared
            from grader.runtime.kernels import KERNELS_DIR

            hidden = private_paths(coursedir) + list(self.extra_hidden)
            # its children are sandboxed again; the emulator's compile cache is its own (no
            # classmate's kernel in it), the course's own builds shared read-only
            shared = str(prepare_shared())
            env.update(TC_SANDBOX="1", TC_SANDBOX_HIDE=os.pathsep.join(hidden), TC_CACHE_DIR=os.path.join(scratch, "cache"),
                       TC_SHARED_CACHE=shared)
            box = sandbox.Box(writable=[scratch], readable=[str(KERNELS_DIR), os.path.join(shared, "emu")]
                              + ([lock] if lock else []), hide=hidden)
        try:
            code, out, err, stopped = sandbox.run(cmd, timeout=self.timeout, box=box, input=json.dumps(request).encode(),
                                                  env=env, cwd=scratch)
        finally:
            if box is not None:
                box.close()
            shutil.rmtree(scratch, ignore_errors=True)
        if stopped:
            return dict(failed=f"the trusted grader was stopped: {stopped}")
        if code != 0:
            self.log.error("trusted grader failed:\n%s", err[-4000:])
            return dict(failed=f"the trusted grader failed (exit {code}): {err.strip()[-500:]}")
        try:
            result = json.loads(out)
        except (ValueError, RecursionError):
            return dict(failed="the trusted grader's answer could not be read")
        if cached is not None and isinstance(result.get("phases"), dict):
            from grader.checking import compile_cache

            result["phases"][compile_cache.PHASE] = t_cache
        return result

    def _compile_cache(self, request: dict, dest: str) -> int | None:
        """The course's own GPU code compiled once (grader.checking.compile_cache, TC_COMPILE_CACHE):
        filled for this notebook's kernel exercises if not yet, then copied into this grading's own
        CuPy cache. None where it is off; a failure costs only the time it would have saved."""
        from grader.checking import compile_cache
        from grader.classroom.graded_cells import grade_calls

        if compile_cache.folder() is None:
            return None
        exercises = [ex for c in request["release"] if c["kind"] == "test" for ex, _ in grade_calls(c["source"])]
        if not exercises:
            return None
        try:
            said = compile_cache.ensure(exercises)
            if said not in ("ready", "off"):
                self.log.info("compile cache for %s: %s", ", ".join(exercises), said)
            return compile_cache.seed(dest)
        except OSError as e:
            self.log.warning("compile cache not used (%s)", e)
            return None

    # -------------------------------------------------------------- into the notebook
    def _apply(self, nb, release: list[dict], results: dict, notes: list[str] = ()):
        tests = {c["grade_id"]: c for c in release if c["kind"] == "test"}
        by_id = {g["grade_id"]: g for g in results.get("grades", [])}
        placed = set()
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader")
            if not meta:
                continue
            gid = meta.get("grade_id")
            if gid in tests and gid not in placed and cell.cell_type == "code" and meta.get("grade"):
                self._fill(cell, tests[gid], by_id.get(gid), results.get("failed"), notes)
                placed.add(gid)
            elif meta.get("grade") and not (meta.get("solution") and gid not in tests):
                meta["grade"] = False  # a second copy, or a grade the gradebook never gave
        for gid, test in tests.items():
            if gid not in placed:  # deleted or renamed by the student: graded all the same
                cell = new_code_cell()
                self._fill(cell, test, by_id.get(gid), results.get("failed"), notes)
                nb.cells.append(cell)

    def _fill(self, cell, test: dict, result: dict | None, failed: str | None, notes: list[str] = ()):
        cell.source = test["source"]
        cell.metadata["nbgrader"] = dict(grade=True, solution=False, locked=True, grade_id=test["grade_id"],
                                         points=test["points"], schema_version=3)
        cell.metadata["editable"], cell.metadata["deletable"] = False, False
        # the verdicts as data, for the class leaderboard: written here, on the cells this step
        # fills, so what a student's notebook put in any cell's metadata is never read as one
        cell.metadata[VERDICTS] = [v["record"] for v in (result or {}).get("verdicts", []) if v.get("record")]
        score, parts, text = 0.0, [], []
        if sandbox_opted_out():
            parts.append(f'<p style="color:#b00;font-weight:bold">{html.escape(BANNER_UNSANDBOXED)}</p>')
            text.append(BANNER_UNSANDBOXED)
        for note in notes:
            parts.append(f"<p><b>NOTE</b>: {html.escape(note)}</p>")
            text.append(f"NOTE: {note}")
        if result is None:
            msg = failed or "the trusted grader returned no result for this cell"
            parts.append(f"<p><b>FAIL</b>: {html.escape(msg)}</p>")
            text.append(f"FAIL: {msg}")
        else:
            score = float(min(max(result["score"], 0.0), test["points"]))
            for v in result["verdicts"]:
                parts.append(v["html"])
                text.append(v["text"])
            if result["printed"].strip():
                parts.append(f"<pre>{html.escape(result['printed'])}</pre>")
                text.append(result["printed"])
            if result["error"]:
                parts.append(f"<p><b>FAIL</b>: {html.escape(result['error'])}</p>")
                text.append(f"FAIL: {result['error']}")
        parts.append(f"<p><i>Graded by the course's trusted grader: {score:g} of {test['points']:g} points.</i></p>")
        cell.outputs = [new_output("display_data", data={"text/html": "\n".join(parts), "text/plain": "\n".join(text)}),
                        new_output("execute_result", data={"text/plain": repr(score)}, execution_count=1)]
        cell.execution_count = 1
