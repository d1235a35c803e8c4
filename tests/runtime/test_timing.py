"""grader.runtime.timing.paired: kernel/baseline ratios that survive a drifting GPU clock (CPU test
with a simulated clock; the real one is exercised by every GPU speed check)."""
import numpy as np

from grader.runtime.timing import Timing, paired


class DriftingGpu:
    """Each call of `bench` advances a clock; work gets slower as the 'GPU' heats up."""

    def __init__(self, slowdown_per_call=0.05):
        self.calls = 0
        self.slowdown = slowdown_per_call
        self.order = []

    def bench(self, fn, max_seconds, **kwargs):
        factor = 1 + self.slowdown * self.calls
        self.calls += 1
        name, base_ms = fn()
        self.order.append(name)
        return Timing(np.full(5, base_ms * factor), flushed=bool(kwargs.get("working_set_bytes")))


def test_paired_ratio_is_immune_to_drift():
    gpu = DriftingGpu()
    kernel = lambda: ("kernel", 2.0)  # noqa: E731 - true ratio: baseline 1 ms / kernel 2 ms
    lib = lambda: ("lib", 1.0)  # noqa: E731
    p = paired(kernel, lib, rounds=4, bench=gpu.bench, working_set_bytes=1)
    assert gpu.order == ["kernel", "lib", "lib", "kernel"] * 2  # A B, B A, ...
    assert abs(p.ratio - 0.5) < 0.5 * 0.06  # within one step of drift
    assert len(p.kernel.times_ms) == 20 and p.kernel.flushed
    # timing the baseline once and the kernel 4 calls later (what a cached baseline did)
    sequential = 1.0 / (2.0 * (1 + 0.05 * 4))
    assert abs(sequential - 0.5) > 2 * abs(p.ratio - 0.5)


def test_paired_ratio_is_a_median_of_rounds():
    times = iter([2.0, 1.0, 1.0, 2.0, 2.0, 1.0, 50.0, 2.0, 2.0, 1.0])  # one round disturbed
    bench = lambda fn, max_seconds, **kw: Timing(np.array([next(times)]), False)  # noqa: E731
    p = paired(lambda: None, lambda: None, rounds=5, bench=bench)
    assert p.ratio == 0.5 and p.round_ratios.max() == 25.0
    # each round's two medians, kernel first whatever the order: the disturbed round names its side
    assert p.round_ms.tolist() == [[2.0, 1.0], [2.0, 1.0], [2.0, 1.0], [2.0, 50.0], [2.0, 1.0]]
