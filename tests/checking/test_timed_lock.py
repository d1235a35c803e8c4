"""Issue #37: under a cohort sharing a GPU, only the timed rounds hold it alone.

The speed step (grader.checking.isolate._perf) runs here on the CPU against a NumPy stand-in for
CuPy (arrays with .get(), CUDA events from the host clock) and a stand-in for the GPU's lock that
records who held it when. What must hold, as on a GPU:
- every timed launch (between its CUDA events) and every library run in the rounds happens while
  the GPU is held alone, and the span held alone covers the rounds and nothing of the set-up
  (inputs, buffers, the library built, the first launch of each side, the flush buffer);
- every launch of the kernel, the warm-up outside the lock included, is framed (poisoned output,
  scaled input before; kept after) and judged by the parent (grader.checking.steps.timed): an
  honest kernel passes every one, a kernel that does less once it has been launched a few times
  fails, as the GPU tests in tests/checking/test_cheats_runtime.py show on a GPU.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
import types

import numpy as np
import pytest

from grader.checking import exercises, isolate
from grader.checking.steps import timed as timed_step
from grader.problems import baselines
from grader.runtime import timing

EXERCISE = "sgemm-tiled"  # notebook 03's speed exercise, the cohort record's assignment


class _Array(np.ndarray):
    def get(self):
        return np.array(self)


def _fake_cupy(log: list, state: dict):
    class Event:
        def record(self):
            self.t = time.perf_counter()
            log.append(("event", state["alone"]))

        def synchronize(self):
            pass

    def dev(a):
        return np.array(a).view(_Array)

    return types.SimpleNamespace(
        asarray=dev, empty=lambda shape, dtype=np.float32: np.empty(shape, dtype).view(_Array),
        zeros=lambda shape, dtype=np.float32: np.zeros(shape, dtype).view(_Array),
        multiply=np.multiply, bitwise_xor=np.bitwise_xor, count_nonzero=np.count_nonzero, isfinite=np.isfinite,
        array_equal=lambda a, b: np.array_equal(a, b), matmul=np.matmul, int64=np.int64, float32=np.float32,
        cuda=types.SimpleNamespace(Event=Event, runtime=types.SimpleNamespace(deviceSynchronize=lambda: None),
                                   get_elapsed_time=lambda s, e: 1e3 * (e.t - s.t)))


class _Module:
    """The kernel: C = A B for the case's arrays; after `lazy_after` launches, it computes half the rows
    and copies the rest from its last whole answer (a kernel keeping state between launches)."""

    def __init__(self, log, state, lazy_after=None):
        self.log, self.state, self.lazy_after, self.launches = log, state, lazy_after, 0

    def bind(self, kernel, grid, block, args, shared_mem):
        A, B, C = (a for a in args if isinstance(a, np.ndarray))

        def launch():
            self.launches += 1
            self.log.append(("kernel", self.state["alone"]))
            if self.lazy_after is not None and self.launches > self.lazy_after:  # half of it kept from before
                half = C.shape[0] // 2
                C[:half] = np.asarray(A)[:half] @ np.asarray(B)
                C[half:] = kept[half:]
                return
            C[...] = np.asarray(A) @ np.asarray(B)
            kept[...] = C
        kept = np.zeros(C.shape, C.dtype)
        return launch


def _speed_step(monkeypatch, lazy_after=None):
    """Run the speed step with the stand-ins; returns (result, log, spans, exercise, job, module)."""
    log, state, spans = [], dict(alone=False), []
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(log, state))
    ex = exercises.get(EXERCISE)
    small = dataclasses.replace(ex, perf_size={k: 64 for k in ex.perf_size})  # a CPU-sized timed case
    monkeypatch.setattr(exercises, "get", lambda i: small if i == EXERCISE else ex)
    monkeypatch.setattr(timing, "flush_l2", lambda: log.append(("flush", state["alone"])))

    def make_baseline(kind, args, dims):
        log.append(("library built", state["alone"]))
        A, B = np.asarray(args[0]), np.asarray(args[1])

        def run():
            log.append(("library", state["alone"]))
            return A @ B
        return run
    monkeypatch.setattr(baselines, "make", make_baseline)

    @contextlib.contextmanager
    def stand_in_lock(conn, exclusive):  # the GPU's lock, recording the spans held alone
        if not exclusive:
            yield 0.0
            return
        assert not state["alone"], "held alone twice"
        state["alone"], t0 = True, time.monotonic()
        log.append(("held", True))
        try:
            yield 0.0
        finally:
            spans.append(time.monotonic() - t0)
            state["alone"] = False
            log.append(("released", False))
    monkeypatch.setattr(isolate, "_locked", stand_in_lock)
    seed = 12345
    job = dict(exercise=EXERCISE, launch=dict(small.launch_defaults), perf_seed=seed,
               perf_samples=timed_step.perf_samples(small, dict(small.launch_defaults), seed))
    module = _Module(log, state, lazy_after)
    t0 = time.monotonic()
    res = isolate._perf(module, job, conn=object())
    res["whole_s"] = time.monotonic() - t0
    return res, log, spans, small, job, module


def test_only_the_timed_rounds_hold_the_gpu_alone(monkeypatch):
    res, log, spans, ex, job, module = _speed_step(monkeypatch)
    assert len(spans) == 1 and res["held_s"] == pytest.approx(spans[0], abs=0.05)
    # the set-up and warm-up of both sides ran with the GPU shared, before it was held alone
    held_at = log.index(("held", True))
    before = log[:held_at]
    for step in (("library built", False), ("kernel", False), ("library", False), ("flush", False)):
        assert step in before, (step, before)
    assert not any(e[0] == "event" for e in before)  # nothing was timed before it
    # every timed launch's events, every launch in the rounds, every library run there: held alone
    rounds = log[held_at + 1:log.index(("released", False))]
    assert all(alone for what, alone in log if what == "event")
    assert sum(e[0] == "event" for e in rounds) >= 2 * 2 * 4  # 4 rounds, both sides, start and end
    assert all(alone for what, alone in rounds if what in ("kernel", "library"))
    assert not any(alone for what, alone in log[log.index(("released", False)):])
    # the span held alone is the rounds' (timed_s) and not the whole step: before issue #37 it was
    assert res["timed_s"] <= res["held_s"] < res["whole_s"]
    # every launch of the kernel, the warm-up included, was kept and is judged
    assert res["launches"] == module.launches
    item = timed_step.timed_output_item(ex, job["launch"], job["perf_seed"], job["perf_samples"], res)
    assert item.status == "pass" and f"every one of the {module.launches} timed launches" in item.message, item


def test_a_kernel_that_does_less_once_warmed_up_fails_the_timed_check(monkeypatch):
    # the warm-up launch (outside the lock) right, the timed ones lazy: still caught
    res, log, spans, ex, job, module = _speed_step(monkeypatch, lazy_after=1)
    item = timed_step.timed_output_item(ex, job["launch"], job["perf_seed"], job["perf_samples"], res)
    assert item.status == "fail" and item.kind == "wrong-when-timed", item
