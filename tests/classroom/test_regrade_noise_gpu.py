"""On a GPU: the premise of the regrade rule (grader.classroom.scores.what_changed). The previous
lesson's kernel of each exercise (correct, below the target: its speed points sit between floor
and target) checked twice, as two `autograde --force` runs of one unchanged hand-in would: the two
results must differ by no more than the timing noise their own verdicts record, so a manual
grade on that cell survives the second run. Skips cleanly without a GPU."""
import pytest

from grader.bench.calibrate import PREVIOUS, previous_source
from grader.checking.check import check
from grader.checking.trusted import record
from grader.classroom import scores


@pytest.mark.gpu
@pytest.mark.parametrize("exercise_id", sorted(PREVIOUS))
def test_two_runs_of_an_unchanged_kernel_differ_by_timing_noise_only(exercise_id):
    _, launch = PREVIOUS[exercise_id]
    src = previous_source(exercise_id)
    runs = []
    for _ in range(2):
        v = check(exercise_id, src, backend="gpu", **launch)
        print(v.text())
        assert v.speed and {"kernel_spread", "baseline_spread"} <= set(v.speed), v.speed  # recorded for the rule
        runs.append(dict(handin="same", test="same", verdicts=[record(v)], score=v.points(v.max_score)))
    a, b = (r["verdicts"][0]["speed"] for r in runs)
    allow = scores.speed_noise(a, b)
    print(f"{exercise_id}: ratio {a['ratio']:.4f} then {b['ratio']:.4f}, allowed +-{allow:.4f} "
          f"(spreads {a['kernel_spread']:.3f}+{a['baseline_spread']:.3f}, {b['kernel_spread']:.3f}+"
          f"{b['baseline_spread']:.3f}); score {runs[0]['score']:.4f} then {runs[1]['score']:.4f}")
    assert abs(a["ratio"] - b["ratio"]) <= allow  # the premise, also where both sit below the floor
    assert scores.what_changed(runs[0], runs[1], runs[0]["verdicts"][0]["max_score"]) is None
