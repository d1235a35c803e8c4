"""A test double of a GPU's timing for autograde on a machine without one (the CPU backend
measures no speed: grader.checking.steps.speed). A test course's config puts `GpuTiming` right
after TrustedGrade: for each correct kernel verdict that TrustedGrade wrote into a graded cell, it
adds the speed measurement a GPU would have made, from `.gpu-timing.json` in the course folder
({student: {"ratio", "kernel_spread", "baseline_spread"}}, or {student: {"no_memory": true}}: the
GPU's memory was held by another process, so the grader failed the check as
grader.checking.isolate._no_gpu_memory does), through the speed step's own
`speed_item` and the trusted grader's own `record`, and the points that speed earns to the cell's
score. Everything after it (SaveAutoGrades, ReconcileManualScores, export, feedback) is the course's.
"""
import json
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor

FILE = ".gpu-timing.json"


def config_lines(here: Path) -> str:
    """What a test appends to a course's nbgrader_config.py."""
    return ("\n# test double: a GPU's timing (tests/classroom/gpu_timing_double.py)\n"
            f"import sys as _sys\n_sys.path.insert(0, {str(here)!r})\n"
            "from gpu_timing_double import GpuTiming\n"
            "_pre = c.Autograde.autograde_preprocessors\n"
            "_pre.insert(_pre.index(TrustedGrade) + 1, GpuTiming)\n")


class GpuTiming(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        from grader.checking.exercises import get
        from grader.checking.steps.speed import speed_item
        from grader.checking.trusted import record
        from grader.checking.verdict import Verdict
        from grader.classroom.autograde import VERDICTS

        info = resources["nbgrader"]
        path = Path(info["db_url"][len("sqlite:///"):]).parent / FILE
        timing = json.loads(path.read_text()).get(info["student"]) if path.exists() else None
        if not timing:
            return nb, resources
        for cell in nb.cells:
            for rec in cell.metadata.get(VERDICTS) or []:
                ex = get(rec["exercise"])
                if ex.target is None or not rec["correct"] or rec.get("speed"):
                    continue
                if timing.get("no_memory"):  # the GPU's memory held by another process: the check failed
                    out_of = float(cell.metadata["nbgrader"]["points"])
                    lost, rec["score"], rec["correct"] = rec["score"], 0.0, False
                    rec["grader_error"] = ("the GPU had no free memory for this check's arrays (OutOfMemoryError: "
                                           "out of memory allocating 4,194,304 bytes), not your kernel's doing")
                    result = next(o for o in cell.outputs if o.output_type == "execute_result")
                    result.data["text/plain"] = repr(float(result.data["text/plain"]) - lost / rec["max_score"] * out_of)
                    continue
                v = Verdict(ex.id, "gpu", max_score=rec["max_score"])
                perf = dict(ratio=timing["ratio"], kernel_ms=1.0, baseline_ms=timing["ratio"],
                            kernel_spread=timing["kernel_spread"], baseline_spread=timing["baseline_spread"])
                speed_item(ex, perf, v)
                rec["speed"] = record(v)["speed"]
                gained = v.speed["fraction"] * ex.points_speed
                rec["score"] += gained
                out_of = float(cell.metadata["nbgrader"]["points"])
                result = next(o for o in cell.outputs if o.output_type == "execute_result")
                result.data["text/plain"] = repr(float(result.data["text/plain"]) + gained / rec["max_score"] * out_of)
        return nb, resources
