"""How many grading jobs share one GPU (`--jobs-per-gpu auto`, the default; issue #37): chosen
from a measurement on the machine in hand, not a constant.

The measurement costs nothing: the cohort grades its first submissions one per GPU, alone on it
(real submissions, merged like every other), and reads from each job's own records
(grader.classroom.cohort_job: its TC_PHASES step times, its CPU seconds, its peak memory)
  T  the seconds one submission takes alone (nbgrader's whole run, from its fork),
  E  the seconds of it that hold the GPU exclusively (the trusted grader's timed rounds:
     grader.runtime.timing.paired, grader.checking.isolate; every other job waits then),
  C  the CPU seconds its processes used (nbgrader, the sandboxed kernel, the trusted grader),
  M  the peak memory of its processes together.

The rule. One GPU grades at most 1/E submissions a second (its exclusive time cannot overlap), and
its share of the host's cores K (cores / GPUs) at most K/C; N jobs at a time grade about N/T. So
N = the smallest whole number of jobs that reaches the tighter of the two bounds:

    N = ceil(T x min(1/E, K/C) - 0.1)      (0.1: a job that would add under 10% is not started)

then capped by the cores per GPU (N <= K: each job runs at least one process), by memory
(N x M <= 80% of the host's available memory per GPU) and by MOST (the workers started before
the measurement). A GPU-bound submission (E close to T) gives 1; a CPU-light one on a host with
many cores per GPU gives more. If no submission could be measured (the first ones all failed,
or none finished within PROBE_WAIT seconds), FALLBACK jobs per GPU, and the summary says why.
Speed verdicts do not depend on N: every timed run holds its GPU alone (grader.runtime.gpulock).
"""
from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass

from grader.checking import compile_cache, isolate
from grader.classroom import phases

# the step that holds the GPU's lock exclusively (the trusted grader's name, as TC_PHASES records it):
# the timed rounds alone, their set-up runs with the GPU shared (issue #37)
EXCLUSIVE = ("trusted: " + isolate.HELD_ALONE,)
MOST = 8  # workers per GPU started before the measurement; more were never measured to help
FALLBACK = 2  # jobs per GPU when nothing could be measured (issue #28's measured default)
PROBE_WAIT = 120.0  # seconds to wait for a first measured submission before taking FALLBACK
MEMORY_SHARE = 0.8  # of the available memory, what the jobs may take together
GiB = 2 ** 30


@dataclass
class Figures:
    seconds: float  # T: one submission alone on its GPU
    exclusive: float  # E: of which its GPU was held alone (timed runs)
    cpu: float | None  # C: CPU seconds of its processes (None: not measured)
    memory: float | None  # M: peak bytes of its processes together (None: not measured)
    submissions: int  # how many submissions the medians are of


def figures(results: list[dict]) -> Figures | None:
    """Medians over the jobs graded alone on their GPU (their result dicts, as grade_job returns
    them); None when none of them was graded with step times."""
    got = []
    for r in results:
        rows = r.get("phases") or []  # the job's own records: one submission's
        if r.get("status") != "graded" or not rows:
            continue
        whole = [float(p["seconds"]) for p in rows if p.get("phase") == phases.WHOLE]
        seconds = whole[-1] if whole else float(r["seconds"])
        # filling the run's compile cache happens once (the first submissions wait for it): not a
        # submission's steady cost
        seconds -= sum(float(p["seconds"]) for p in rows if p.get("phase") == "trusted: " + compile_cache.PHASE)
        exclusive = sum(float(p["seconds"]) for p in rows if p.get("phase") in EXCLUSIVE)
        got.append((seconds, exclusive, r.get("cpu_seconds"), r.get("peak_memory")))
    if not got:
        return None

    def med(i):
        vals = [g[i] for g in got if g[i] is not None]
        return statistics.median(vals) if vals else None

    return Figures(seconds=med(0), exclusive=med(1), cpu=med(2), memory=med(3), submissions=len(got))


def host(gpus: int) -> tuple[float, float | None]:
    """This host's CPU cores per GPU (those this process may run on) and available memory per GPU
    in bytes (None where psutil cannot tell)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    try:
        import psutil

        memory = psutil.virtual_memory().available / max(gpus, 1)
    except Exception:
        memory = None
    return cores / max(gpus, 1), memory


def most(cores_per_gpu: float) -> int:
    """The workers per GPU started before the measurement: the choice is at most this."""
    return max(1, min(MOST, int(cores_per_gpu)))


def choose(fig: Figures | None, cores_per_gpu: float, memory_per_gpu: float | None, upper: int = MOST,
           why_none: str = "no submission could be measured") -> dict:
    """The jobs per GPU and what they came from (see the module's rule): {"n", "rule", figures...}."""
    upper = max(1, upper)
    if fig is None:
        n = min(FALLBACK, upper)
        return dict(n=n, measured=False, why=f"not measured: {why_none}; {n}, the default",
                    cores_per_gpu=cores_per_gpu, upper=upper)
    bounds = {}
    if fig.exclusive > 0:
        bounds["GPU"] = fig.seconds / fig.exclusive
    if fig.cpu:
        bounds["CPU"] = cores_per_gpu * fig.seconds / fig.cpu
    need = min(bounds.values()) if bounds else float(upper)
    limit = "GPU" if bounds and need == bounds.get("GPU") else ("CPU" if bounds else "workers started")
    n = max(1, math.ceil(need - 0.1))
    caps = {"cores per GPU": max(1, int(cores_per_gpu)), "workers started": upper}
    if fig.memory and memory_per_gpu:
        caps["memory"] = max(1, int(MEMORY_SHARE * memory_per_gpu // fig.memory))
    for name, cap in caps.items():
        if cap < n:
            n, limit = cap, name
    return dict(n=n, measured=True, limit=limit, bounds=bounds, seconds=fig.seconds, exclusive=fig.exclusive, cpu=fig.cpu,
                memory=fig.memory, submissions=fig.submissions, cores_per_gpu=cores_per_gpu,
                memory_per_gpu=memory_per_gpu, upper=upper)


def describe(choice: dict) -> str:
    """One line for the summary and the phases section, e.g. "3 (measured on 2 submissions graded
    alone: GPU held 29% of a 37.5 s submission; 9.8 CPU-s of 16 cores per GPU; ... limited by: GPU)"."""
    if choice.get("given"):
        return f"{choice['n']} (--jobs-per-gpu {choice['n']})"
    if not choice.get("measured"):
        return f"{choice['n']} ({choice.get('why', 'not measured')})"
    parts = [f"GPU held {100 * choice['exclusive'] / choice['seconds']:.0f}% of a {choice['seconds']:.1f} s submission"]
    if choice.get("cpu") is not None:
        parts.append(f"{choice['cpu']:.1f} CPU-s of it ({choice['cpu'] / choice['seconds']:.1f} cores busy), "
                     f"{choice['cores_per_gpu']:g} cores per GPU")
    else:
        parts.append(f"{choice['cores_per_gpu']:g} cores per GPU")
    if choice.get("memory"):
        free = f" of {choice['memory_per_gpu'] / GiB:.0f} GiB available per GPU" if choice.get("memory_per_gpu") else ""
        parts.append(f"{choice['memory'] / GiB:.1f} GiB per job{free}")
    # what each bound alone would allow, so a cap below them (4 H200s, 2026-11-28: 8 workers started,
    # the GPU's bound 10) reads as room left, not as the GPU's limit
    allow = ", ".join(f"{k} {v:.1f}" for k, v in (choice.get("bounds") or {}).items())
    return (f"{choice['n']} (measured on {choice['submissions']} submission(s) graded alone on a GPU: "
            f"{'; '.join(parts)}; limited by: {choice['limit']}"
            + (f"; jobs per GPU each bound allows: {allow}" if allow else "") + ")")
