"""The before/after verdict table (grader/bench/verdicts.py, issue #34): its pairs come from the
registry, one pair runs through the real check on the emulator, and compare names a verdict that
changed."""
import json
import shutil

import pytest

from grader.bench import verdicts
from grader.checking import exercises
from grader.runtime import kernels

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the CPU emulator needs g++")


def test_pairs_come_from_the_registry():
    chosen = verdicts.pairs()
    refs = {p.exercise for p in chosen if p.name.startswith("reference/")}
    assert refs == set(exercises.EXERCISES)
    # an earlier rung of an exercise (its entry point, another file) is in, graded as that exercise
    assert any(p.name == "kernels/sgemm_naive.cu as sgemm-tiled" for p in chosen)
    names = [p.name for p in chosen]
    assert len(names) == len(set(names)), "two pairs share a name: the table would lose one"
    for prefix in ("adversarial/", "mistake/", "correct/", "coach/", "ladder/"):
        assert any(n.startswith(prefix) for n in names), f"no {prefix} pairs collected from tests/"


def test_masks_what_changes_between_runs_but_keeps_integers():
    said = verdicts.mask("3 of 561 wrong; first C[0, 1]: expected 0.25, got -1.5e-03 at 0x7ffd12345678 "
                         "in /tmp/tc-emu-x1/k.cu; valid indices 0..560")
    assert said == ("3 of 561 wrong; first C[0, 1]: expected <num>, got <num> at 0x<addr> "
                    "in /tmp/<path>; valid indices 0..560")


@needs_gxx
def test_one_pair_runs_and_compare_names_a_changed_verdict(tmp_path, capsys):
    out = tmp_path / "before.json"
    assert verdicts.main(["--only", "reference/sgemm-naive", "--out", str(out)]) == 0
    before = json.loads(out.read_text())
    row = before["verdicts"]["reference/sgemm-naive"]
    assert row["score"] == row["max_score"] == exercises.get("sgemm-naive").points
    assert any(i["name"].startswith("correct") and i["status"] == "pass" for i in row["items"])
    # its inputs came from the pair's own seeds (else two runs would not give the same table)
    assert row["seeds_drawn"] >= len(exercises.get("sgemm-naive").cpu_sizes)

    assert verdicts.compare(before, before) == 0
    # the same pair, now graded on a kernel with a bug: the compare must say so
    wrong = kernels.source("sgemm_naive").replace("B[k * N + col]", "B[k * N + row % N]")
    pair = verdicts.Pair("reference/sgemm-naive", "sgemm-naive", lambda: wrong)
    after = dict(before, verdicts={pair.name: verdicts.verdict_row(pair)})
    capsys.readouterr()
    assert verdicts.compare(before, after) == 1
    said = capsys.readouterr().out
    assert "CHANGED reference/sgemm-naive (its source changed too)" in said
    assert "+[fail] correct: " in said and "(wrong-result)" in said
    # a pair that is no longer collected counts as a difference too
    assert verdicts.compare(before, dict(before, verdicts={})) == 1
    assert "MISSING reference/sgemm-naive" in capsys.readouterr().out


def test_compare_says_when_the_inputs_were_no_longer_seeded():
    row = dict(exercise="sgemm-naive", launch={}, source_sha="s", score=0.0, max_score=1.0, coach=[], seeds_drawn=3,
               items=[dict(name="correct: M=1", status="fail", kind="precision", message="5 of 9 wrong", hint="")])
    later = dict(row, seeds_drawn=0, items=[dict(row["items"][0], message="6 of 9 wrong")])
    said = []
    assert verdicts.compare(dict(verdicts={"p": row}), dict(verdicts={"p": later}), out=said.append) == 1
    assert "CHANGED p" in said[0] and "inputs were random" in said[0]
    assert verdicts.compare(dict(verdicts={"p": row}), dict(verdicts={"p": dict(row, seconds=9)}), out=said.append) == 0
