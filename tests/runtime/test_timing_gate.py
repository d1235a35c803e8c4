"""The host's time to queue a timed run is not GPU time (grader.runtime.timing._Frame).

Events alone (`start.record(); fn(); end.record()`) time whatever the host spends between the
start event and fn's launch whenever the GPU is idle there: a 0.2 ms cuBLAS call read 10% slower
for seconds while other jobs loaded the host (kernels/RESULTS-accept.md, session 17). Here the
host is made slow on purpose, a sleep before each launch, far longer than the kernel."""
import time

import pytest

from grader.runtime import timing



@pytest.fixture
def gate_on(monkeypatch):
    monkeypatch.setenv("TC_TIMING_GATE", "1")  # off by default until the GPU tests here have passed on a GPU

SLEEP_S = 0.004  # 4 ms of host time before each launch; the kernel takes microseconds


def _fill():
    import cupy

    x = cupy.zeros(1 << 20, cupy.float32)
    return lambda: x.fill(1.0)


def _slow_host(fn):
    def run():
        time.sleep(SLEEP_S)
        fn()
    return run


@pytest.mark.gpu
@pytest.mark.parametrize("working_set_bytes", [None, 4 << 20], ids=["unflushed", "l2-flushed"])
def test_benchmark_leaves_out_the_hosts_queueing(working_set_bytes, gate_on):
    fill = _fill()
    assert timing.host_gate() is not None, "no gate on this GPU: the host's queueing would be timed"
    alone = timing.benchmark(fill, max_seconds=1.0, working_set_bytes=working_set_bytes)
    slow = timing.benchmark(_slow_host(fill), max_seconds=1.0, min_repeat=10, working_set_bytes=working_set_bytes)
    print(f"alone {alone}; with {SLEEP_S * 1e3:.0f} ms of host time before each launch {slow}")
    assert slow.median_ms < 0.5 * SLEEP_S * 1e3, f"the host's sleep was timed: {slow}"
    assert slow.median_ms < 2 * alone.median_ms + 0.02, (alone, slow)


@pytest.mark.gpu
def test_checked_benchmark_leaves_out_the_hosts_queueing(gate_on):
    fill = _fill()
    t = timing.checked_benchmark(_slow_host(fill), max_seconds=1.0, min_repeat=10)
    print(t)
    assert t.median_ms < 0.5 * SLEEP_S * 1e3, f"the host's sleep was timed: {t}"


@pytest.mark.gpu
def test_paired_ratio_is_one_when_only_the_host_is_slower(gate_on):
    fill = _fill()
    p = timing.paired(fill, _slow_host(fill), rounds=4, max_seconds=2.0)
    print(p.ratio, p.round_ms)
    assert 0.7 < p.ratio < 1.4, p.round_ms


@pytest.mark.gpu
def test_a_run_that_waits_for_the_gpu_is_still_timed_and_does_not_hang(gate_on):
    """fn that synchronises inside cannot be gated (the GPU waits for the host, which waits for the
    GPU): the gate gives up once, after its limit, and the rest of the measurement runs ungated."""
    import cupy

    fill = _fill()

    def synced():
        fill()
        cupy.cuda.Device().synchronize()

    t0 = time.perf_counter()
    t = timing.benchmark(synced, max_seconds=1.0, min_repeat=10)
    wall = time.perf_counter() - t0
    print(t, f"{wall:.2f} s")
    assert len(t.times_ms) >= 10 and t.median_ms < 5.0 and wall < 1.0 + 2 * timing._GATE_LIMIT_NS / 1e9 + 1.0


# ---- the frame's control flow, on any machine (a stand-in gate and events; the GPU half is above)
class _Gate:
    def __init__(self, gives_up=False):
        self.calls, self.gives_up = [], gives_up

    def close(self):
        self.calls.append("close")

    def open(self):
        self.calls.append("open")

    def held(self):
        return not self.gives_up


@pytest.fixture
def frame_parts(monkeypatch):
    import cupy

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

    monkeypatch.setattr(cupy.cuda, "Event", Event)
    monkeypatch.setattr(cupy.cuda, "get_elapsed_time", lambda a, b: 1.0)

    def use(gate):
        monkeypatch.setattr(timing, "host_gate", lambda: gate)
        return timing._Frame()
    return use


def test_the_gate_opens_after_fn_is_queued_and_before_after_runs(frame_parts):
    gate = _Gate()
    frame = frame_parts(gate)
    seen = []
    frame.time(lambda: seen.append(list(gate.calls)), after=lambda: seen.append(list(gate.calls)))
    assert seen == [["close"], ["close", "open"]] and frame.gate is gate


def test_a_launch_that_raises_opens_the_gate(frame_parts):
    gate = _Gate()
    frame = frame_parts(gate)

    def boom():
        raise RuntimeError("launch failed")
    with pytest.raises(RuntimeError):
        frame.time(boom)
    assert gate.calls == ["close", "open"]


def test_a_gate_that_gave_up_is_left_off_for_the_rest_of_the_measurement(frame_parts):
    gate = _Gate(gives_up=True)
    frame = frame_parts(gate)
    assert frame.time(lambda: None) == 1.0 and frame.gate is None
    frame.time(lambda: None)
    assert gate.calls == ["close", "open"]  # the second run was not gated


def test_the_gate_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv("TC_TIMING_GATE", raising=False)
    assert timing.host_gate() is None
