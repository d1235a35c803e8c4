"""Thresholds from ONE measured ratio (grader.checking.calibration): the reference beats the target
by the course's 1.3x, a bench's ratio is first discounted to what `check` measures, the floor is
half the target; every record that states its ratio has exactly the floor and target it gives and
cites when, where and how it was measured (or says it is provisional); `python -m
grader.bench.calibrate` prints, for such a record, the floor and target its own run would give."""
from __future__ import annotations

import re

import pytest

from grader.bench import calibrate
from grader.checking import calibration as C
from grader.checking import exercises

CALIBRATED = [e for e in exercises.EXERCISES.values() if e.calibration is not None]


@pytest.mark.parametrize("ratio", [0.0137, 0.05, 0.41, 1.0, 1.97, 12.3])
def test_the_rule(ratio):
    floor, target = C.thresholds(C.Measured(ratio, "2026-11-27, H100, test", by="check"))
    assert target * C.MARGIN <= ratio < target * C.MARGIN / 0.9  # rounded down, to 2 figures
    assert target == float(f"{target:.2g}")
    assert floor <= C.FLOOR_SHARE * target < floor / 0.9
    bench_floor, bench_target = C.thresholds(C.Measured(ratio, "2026-11-27, H100, test", by="bench"))
    assert bench_target * C.MARGIN <= ratio * C.BENCH_TO_CHECK and bench_target < target


def test_nonsense_is_refused():
    with pytest.raises(ValueError):
        C.thresholds(C.Measured(0.0, "x"))
    with pytest.raises(ValueError):
        C.thresholds(C.Measured(0.5, "x", by="guess"))
    assert C.Measured(0.5, "PROVISIONAL: why").provisional and not C.Measured(0.5, "2026-11-27, H100").provisional


@pytest.mark.parametrize("ex", CALIBRATED, ids=lambda e: e.id)
def test_a_record_that_states_its_ratio_has_the_thresholds_it_gives_and_cites_it(ex):
    assert (ex.floor, ex.target) == C.thresholds(ex.calibration)
    assert ex.points_speed > 0 and ex.perf_size
    m = ex.calibration
    if not m.provisional:  # a measured number says when, on which GPU and by what
        assert re.search(r"\d{4}-\d{2}-\d{2}", m.where) and re.search(r"H100|H200|L4|L40|RTX|NVIDIA|sm_\d+", m.where), \
            f"{ex.id}: its measured ratio must cite its date and GPU: {m.where!r}"


def test_fp8_gemm_thresholds_follow_from_its_one_number():
    ex = exercises.get("fp8-gemm")
    assert ex.calibration is exercises.FP8_GEMM_SPEED


def test_calibrate_prints_the_number_to_put_in_the_record():
    ex = CALIBRATED[0]
    rows = [dict(id=ex.id, speed=dict(ratio=0.0531, floor=ex.floor, target=ex.target)),
            dict(id="sgemm-tiled", speed=dict(ratio=1.7, floor=1.05, target=1.25))]
    text = "\n".join(calibrate.derived(rows))
    floor, target = C.thresholds(C.Measured(0.0531, "", by="check"))
    assert ex.id in text and f"follow from {ex.calibration.ratio:g}x" in text
    assert f"0.0531x through check would give floor {floor:g}, target {target:g}" in text
    assert "sgemm-tiled" not in text  # floor and target written by hand: nothing derived
    assert calibrate.derived(rows[1:]) == []


def test_calibrate_says_when_a_margin_is_below_the_rule():
    row = dict(id="x", reference="k", score=1, points=2, seconds=1.0, previous=None,
               speed=dict(ratio=0.5, floor=0.2, target=0.45))
    assert "below the rule's 1.3x" in calibrate._line(row)
    row["speed"]["ratio"] = 0.6
    assert "below" not in calibrate._line(row)
