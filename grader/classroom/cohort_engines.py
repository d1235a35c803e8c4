"""Where a cohort's jobs run (grader.classroom.cohort): the GPUs named by --gpus, a Dask cluster
started on this host (one worker per GPU, or emulator workers), or an existing scheduler."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from grader.checking import compile_cache
from grader.runtime.sandbox import THREAD_VARS


def gpu_ids(spec: str) -> list[str]:
    """'all' -> every visible GPU (CUDA_VISIBLE_DEVICES if set, else nvidia-smi -L); 'N' -> the
    first N of those; '0,2' -> exactly those."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() not in ("", "-1"):
        found = [v.strip() for v in visible.split(",") if v.strip()]
    elif visible is not None:
        found = []
    else:
        try:
            r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
            found = [str(i) for i, ln in enumerate(r.stdout.splitlines()) if ln.startswith("GPU ")]
        except (OSError, subprocess.SubprocessError):
            found = []
    if spec == "all":
        return found
    if spec.isdigit():
        n = int(spec)
        if n > len(found):
            raise SystemExit(f"cohort: --gpus {n} but {len(found)} GPU(s) found ({', '.join(found) or 'none'})")
        return found[:n]
    return [s.strip() for s in spec.split(",") if s.strip()]


class LocalEngine:
    """A Dask cluster on this host: one single-threaded worker per GPU (CUDA_VISIBLE_DEVICES=that
    GPU, resource GPU=1) or N emulator workers (no GPU visible). Listens on 127.0.0.1 only."""

    groups: dict[str, list[str]] = {}  # GPU -> its workers' labels (none: emulator workers)
    compile_cache: str | None = None  # this run's trusted compile cache (removed at the end)
    auto = False
    share_threads = False

    def __init__(self, gpus: list[str] | None, workers: int, jobs_per_gpu: int = 1, auto: bool = False):
        import dask
        from distributed import Client, Nanny, Scheduler, SpecCluster

        # a task whose worker died (killed, out of memory) is tried once more, elsewhere
        dask.config.set({"distributed.scheduler.allowed-failures": 1})
        quiet = {"DASK_LOGGING__DISTRIBUTED": "error", "PYTHONUNBUFFERED": "1"}
        n = len(gpus) * jobs_per_gpu if gpus else workers
        # each job's BLAS and OpenMP threads get their share of the cores, not all of them each;
        # with `auto` a job is told its share when it is sent (threads(), below), as the jobs per
        # GPU are known only then
        self.share_threads = not any(os.environ.get(k) for k in THREAD_VARS)
        if n > 1 and self.share_threads:
            quiet.update({k: str(max(1, (os.cpu_count() or 1) // n)) for k in THREAD_VARS})
        if gpus:
            # jobs_per_gpu workers per GPU, each one job at a time; their timed runs hold the GPU
            # alone (grader.runtime.gpulock: a lock file per GPU in this folder)
            locks = str(Path("/tmp") / f"tc-cohort-{os.getuid()}" / "locks")
            self.labels = [f"gpu{g}" if jobs_per_gpu == 1 else f"gpu{g}.{j + 1}" for g in gpus
                           for j in range(jobs_per_gpu)]
            envs = [dict(quiet, CUDA_VISIBLE_DEVICES=g, TC_GPU_LOCK_DIR=locks) for g in gpus for _ in range(jobs_per_gpu)]
            # the course's own GPU code compiled once for this run, not once per submission
            # (grader.checking.compile_cache; the instructor's TC_COMPILE_CACHE, if set, instead)
            if not os.environ.get(compile_cache.ENV):
                self.compile_cache = str(Path("/tmp") / f"tc-cohort-{os.getuid()}" / f"compile-cache-{os.getpid()}")
                for env in envs:
                    env[compile_cache.ENV] = self.compile_cache
            self.resources = {"GPU": 1}
            # per GPU, its workers in order: with `auto` (--jobs-per-gpu auto) the cohort grades its
            # first submissions on each GPU's first worker alone, then uses as many as it measured
            # to pay (grader.classroom.cohort_concurrency); the rest stay idle
            self.groups = {g: self.labels[i * jobs_per_gpu:(i + 1) * jobs_per_gpu] for i, g in enumerate(gpus)}
            self.auto = auto
        else:
            self.labels = [f"cpu{i}" for i in range(workers)]
            envs = [dict(quiet, CUDA_VISIBLE_DEVICES="") for _ in range(workers)]  # the emulator
            self.resources = {}
        spec = {label: {"cls": Nanny, "options": dict(nthreads=1, name=label, env=env, memory_limit=0,
                                                      resources=dict(self.resources) or None, host="127.0.0.1",
                                                      dashboard=False, silence_logs=40)}
                for label, env in zip(self.labels, envs)}
        self.cluster = SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": dict(
            host="127.0.0.1", dashboard_address=None)}, silence_logs=40)
        self.client = Client(self.cluster)

    def threads(self, jobs_per_gpu: int) -> int | None:
        """BLAS/OpenMP threads per job with this many jobs per GPU (None: the instructor set them)."""
        if not (self.share_threads and self.groups):
            return None
        return max(1, (os.cpu_count() or 1) // (len(self.groups) * jobs_per_gpu))

    def addresses(self, labels: list[str]) -> list[str]:
        """The Dask addresses of these workers (by name), to pin jobs to them."""
        self.client.wait_for_workers(len(self.labels), timeout=120)
        by_name = {str(w.get("name")): a for a, w in _workers(self.client).items()}
        return [by_name[label] for label in labels if label in by_name]

    def close(self):
        self.client.close()
        self.cluster.close()
        if self.compile_cache:
            shutil.rmtree(self.compile_cache, ignore_errors=True)


def _workers(client) -> dict:
    try:
        return client.scheduler_info(n_workers=-1)["workers"]  # newer Dask lists only a few by default
    except TypeError:
        return client.scheduler_info()["workers"]


class RemoteEngine:
    """An existing Dask scheduler, by address or scheduler file (a Slurm allocation, course/README.md):
    jobs ask for GPU=1 when its workers offer that resource (`dask worker --resources GPU=1`).
    Its jobs per GPU are the workers it was started with per GPU (no `auto` here)."""

    groups: dict[str, list[str]] = {}
    auto = False

    def __init__(self, address: str, min_workers: int = 1):
        from distributed import Client

        self.client = Client(scheduler_file=address) if os.path.isfile(address) else Client(address)
        self.client.wait_for_workers(min_workers, timeout=600)  # workers of a batch job start late
        workers = _workers(self.client).values()
        self.labels = sorted(str(w.get("name")) for w in workers)
        self.resources = {"GPU": 1} if any("GPU" in (w.get("resources") or {}) for w in workers) else {}

    def close(self):
        self.client.close()
