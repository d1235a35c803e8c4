""".ci/gpu-accept's summary (the dated section of kernels/RESULTS-accept.md) from stand-in step folders:
the CPU can't run the steps, but it can check what the section says of what they left behind."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


def _summary_script(tmp_path) -> Path:
    """The summary's Python, as gpu-accept runs it (the heredoc after ACCEPT_PAR=...)."""
    text = (ROOT / ".ci" / "gpu-accept").read_text()
    body = re.search(r"^ACCEPT_PAR=.*?<<'EOF'\n(.*?)^EOF$", text, re.S | re.M)
    assert body, "gpu-accept's summary heredoc not found"
    p = tmp_path / "summary.py"
    p.write_text(body.group(1))
    return p


def _rows(tmp_path, work, *steps, env=None) -> dict[str, str]:
    dest = tmp_path / "ACCEPT.md"
    subprocess.run([sys.executable, str(_summary_script(tmp_path)), str(work), str(dest), "10", *steps],
                   cwd=ROOT, check=True, capture_output=True, env={"PATH": "/usr/bin:/bin", **(env or {})})
    return {m[0]: m[1] for m in re.findall(r"^\| (\S+) \| (PASS|FAIL) \|", dest.read_text(), re.M)}


def _table(rows):
    return "| assignment | solution score | expected |\n|---|---|---|\n" + "".join(
        f"| {a} | 1 / 1 | 1 |{' not as expected |' if bad else ''}\n" for a, bad in rows)


def test_native_notebooks_in_parts_add_up_and_a_missing_part_fails(tmp_path):
    work = tmp_path / "work"
    half = len(SOLUTIONS) // 2
    for k, n in ((1, half), (2, len(SOLUTIONS) - half)):
        (work / f"nb.{k}").mkdir(parents=True)
        (work / f"nb.{k}" / "notebooks.log").write_text(f"{n} passed, 60 deselected in {100 * k}.0s\n")
    assert _rows(tmp_path, work, "nb") == {"nb": "PASS"}
    (work / "nb.2" / "notebooks.log").write_text("")  # part 2 stopped before its summary
    assert _rows(tmp_path, work, "nb") == {"nb": "FAIL"}
    (work / "nb.2" / "notebooks.log").write_text(f"{len(SOLUTIONS) - half - 1} passed, 1 failed in 9.0s\n"
                                                 "FAILED tests/x.py::test_notebook_runs_top_to_bottom[a]\n")
    assert _rows(tmp_path, work, "nb") == {"nb": "FAIL"}


@pytest.mark.parametrize("bad_in", ["ag", "ag75"])
def test_each_ag_step_reads_its_own_folders_only(tmp_path, bad_in):
    work = tmp_path / "work"
    for step, name in (("ag.1", "AUTOGRADE.md"), ("ag75.1", "AUTOGRADE-sm75.md")):
        (work / step).mkdir(parents=True)
        (work / step / name).write_text(_table([(a, step.startswith(bad_in + ".")) for a in SOLUTIONS]))
    rows = _rows(tmp_path, work, "ag", "ag75")
    assert rows == {"ag": "FAIL" if bad_in == "ag" else "PASS", "ag75": "FAIL" if bad_in == "ag75" else "PASS"}


def test_an_assignment_without_its_row_fails(tmp_path):
    work = tmp_path / "work"
    (work / "ag").mkdir(parents=True)
    (work / "ag" / "AUTOGRADE.md").write_text(_table([(a, False) for a in SOLUTIONS[:-1]]))
    assert _rows(tmp_path, work, "ag") == {"ag": "FAIL"}


def test_a_record_summary_line_is_said_once(tmp_path):
    """A record's summary line that its .md and its log both print is said once in the row."""
    work = tmp_path / "work"
    (work / "conv-tma").mkdir(parents=True)
    (work / "conv-tma.rc").write_text("0\n")
    for name in ("CONV-TMA.md", "conv-tma.log"):
        (work / "conv-tma" / name).write_text("some table\nTVM layer: 1.03x cuDNN\n")
    _rows(tmp_path, work, "conv-tma")
    row = next(l for l in (tmp_path / "ACCEPT.md").read_text().splitlines() if l.startswith("| conv-tma |"))
    assert "| PASS |" in row and row.count("TVM layer: 1.03x cuDNN") == 1, row


def _stand_in_repo(tmp_path) -> Path:
    """gpu-accept beside a stand-in gpu-record that says what its job was given, and three
    assignments: the CPU runs the real script's job building, no GPU needed."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / ".ci" / "gpu-accept").write_text((ROOT / ".ci" / "gpu-accept").read_text())
    (repo / ".ci" / "site.sh").write_text("site_wheels() { return 1; }\nsite_cu12() { return 1; }\n")
    (repo / ".ci" / "gpu-record").write_text('#!/bin/sh\nmkdir -p "$1"\n'
                                             'echo "job $2 NOTEBOOKS=[$NOTEBOOKS] PART=[$TC_GPU_PART]"\n')
    for f in ("gpu-accept", "gpu-record"):
        (repo / ".ci" / f).chmod(0o755)
    for a in ("00-a", "01-b", "02-c"):
        (repo / "solutions" / a).mkdir(parents=True)
    for d in (".whl", ".whl-nbgrader"):  # what `carry` brings (stand-ins: gpu-record is one too)
        (repo / d).mkdir()
        (repo / d / "stand_in-1.0-py3-none-any.whl").write_bytes(b"")
    return repo


def test_a_call_that_carried_no_wheels_stops_at_once(tmp_path):
    """A new session's checkout has no wheel folders until .ci/gpu-wheels runs: its first call
    carried none and ran 578 s on 2 H200s with nothing back (2026-11-28)."""
    import shutil

    repo = _stand_in_repo(tmp_path)
    shutil.rmtree(repo / ".whl-nbgrader")
    r = subprocess.run([".ci/gpu-accept", str(tmp_path / "out"), "nb"], cwd=repo, capture_output=True, text=True,
                       timeout=60, env={"PATH": "/usr/bin:/bin", "GPUS": "1"})
    assert r.returncode == 2 and ".ci/gpu-wheels" in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "out").exists()  # no job started


@pytest.mark.parametrize("env, want", [
    ({"NB_PARTS": "2"}, {"solutions and (00-a or 02-c)", "solutions and (01-b)"}),
    ({}, {"solutions and (00-a 01-b 02-c)".replace(" 01", " or 01").replace(" 02", " or 02")}),
    ({"ASSIGNMENTS": "02-c"}, {"solutions and (02-c)"})])
def test_native_notebook_jobs_are_given_their_notebooks(tmp_path, env, want):
    """An nb job's notebooks reach gpu-record as NOTEBOOKS, never as a part of the GPU tests: on 4
    H200s (2026-11-28) every nb job got an empty -k expression and ran nothing."""
    import tarfile

    repo = _stand_in_repo(tmp_path)
    out = tmp_path / "out"
    r = subprocess.run([".ci/gpu-accept", str(out), "nb"], cwd=repo, capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "GPUS": "1", **env})
    assert (out / "record.tgz").exists(), r.stdout[-2000:] + r.stderr[-2000:]
    with tarfile.open(out / "record.tgz") as t:
        said = [t.extractfile(m).read().decode() for m in t.getmembers() if m.name.endswith(".out")]
    jobs = [re.search(r"NOTEBOOKS=\[(.*)\] PART=\[(.*)\]", s) for s in said]
    assert all(jobs) and all(j[2] == "" for j in jobs), said
    assert {j[1] for j in jobs} == want, said


def test_a_tree_that_differs_from_the_commit_it_names_says_so(tmp_path):
    """On the device the work tree is the current one but .git may be the session start's: a record
    must not name that old commit as what ran. A copy of this repository with one tracked file edited
    stands in for the device's copy."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(repo)], check=True)
    work = tmp_path / "work"
    work.mkdir()

    def commit_line(env):
        dest = tmp_path / "ACCEPT.md"
        subprocess.run([sys.executable, str(_summary_script(tmp_path)), str(work), str(dest), "10"], cwd=repo,
                       check=True, capture_output=True, env={"PATH": "/usr/bin:/bin", **env})
        return next(l for l in dest.read_text().splitlines() if l.startswith("Commit: "))

    assert "NOT the tree that ran" not in commit_line({})
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\nedited after the commit\n")
    assert "NOT the tree that ran" in commit_line({})
    assert "NOT the tree" not in commit_line({"ACCEPT_COMMIT": "abc1234 what the lead ran"})
