"""course/README.md, followed literally on this machine: the commands of its "Each assignment"
block (no exchange), run as written with the `nbgrader` of the active environment in a course
folder laid out like the repository's (course/ beside solutions/, no environment variables).

One student hands in the reference solution, another the untouched release; the test checks
the scores the guide promises, the feedback pages, grades.csv, and that no command prints a
traceback or SQLAlchemy's warnings. tests/test_class_workflow.py covers every assignment and
adversarial submissions through grader.classroom; this one covers the guide's own words.
"""
import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.classroom import workflow as classroom
from grader.runtime.device import has_gpu

GUIDE = classroom.ROOT / "course" / "README.md"


def guide_block(heading: str) -> list[str]:
    """The lines of the first ```bash block under `heading` in the guide (comments stripped)."""
    text = GUIDE.read_text()
    section = text[text.index(heading):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_guide_names_real_assignments():
    text = GUIDE.read_text()
    for a in classroom.assignments():
        assert f"`{a}`" in text, f"course/README.md does not list assignment {a}"
    (assign,) = [line for line in guide_block("## Each assignment") if line.startswith("A=")]
    assert assign[2:] in classroom.assignments()


@pytest.mark.slow
def test_each_assignment_as_the_guide_says(tmp_path):
    lines = guide_block("## Each assignment")
    assignment = next(line[2:] for line in lines if line.startswith("A="))
    commands = [line for line in lines if line.startswith("nbgrader ")]
    assert [c.split()[1] for c in commands] == ["generate_assignment", "autograde", "generate_feedback", "export"]

    # The repository's layout: course/ (with its config) beside solutions/.
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(classroom.CONFIG, course / "nbgrader_config.py")
    (tmp_path / "solutions").symlink_to(classroom.SOLUTIONS, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TC_")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # `source .venv/bin/activate`
    env["A"] = assignment

    def run(command):
        proc = subprocess.run(["bash", "-c", command], cwd=course, env=env, capture_output=True, text=True)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"{command}:\n{out[-4000:]}"
        assert "Traceback" not in out and "SAWarning" not in out, f"{command}:\n{out[-4000:]}"
        return out

    run(commands[0])  # generate_assignment
    release = sorted((course / "release" / assignment).glob("*.ipynb"))
    assert [p.name for p in release] == [f"{assignment}.ipynb"]
    # "each student's returned notebook, under the release's file name, in submitted/<student>/$A/"
    for student, nb in (("alice", classroom.SOLUTIONS / assignment / release[0].name), ("bob", release[0])):
        (course / "submitted" / student / assignment).mkdir(parents=True)
        shutil.copy(nb, course / "submitted" / student / assignment / nb.name)
    for command in commands[1:]:
        run(command)

    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"alice", "bob"}
    expected = classroom.cpu_max_score(classroom.SOLUTIONS / assignment / release[0].name)
    max_score = float(rows["alice"]["max_score"])
    if has_gpu():
        expected = max_score
    assert float(rows["alice"]["score"]) == pytest.approx(expected)
    assert float(rows["bob"]["score"]) == 0
    if not has_gpu():
        m = re.search(r"expect, for `([\w-]+)`: the reference solution (\d+) of (\d+) points", GUIDE.read_text())
        assert m and m.group(1) == assignment, "the guide's CPU expectation names another assignment"
        assert (float(m.group(2)), float(m.group(3))) == (expected, max_score), "the guide's CPU scores are stale"

    for student in ("alice", "bob"):
        pages = list((course / "feedback" / student / assignment).glob("*.html"))
        assert pages, f"no feedback for {student}"
    bob = "".join(p.read_text() for p in (course / "feedback" / "bob" / assignment).glob("*.html"))
    assert "NOT YET" in bob, "the feedback of an untouched release does not show the grader's verdict"

    # Nothing outside the course folder; inside it, only nbgrader's folders and files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["course", "solutions"]
    made = {p.name for p in course.iterdir()}
    assert made <= {"nbgrader_config.py", ".skip_tag", "gradebook.db", "grades.csv", "release",
                    "submitted", "autograded", "feedback", ".nbgrader.log"}, made


def test_dry_run_names_assignments_by_prefix_and_refuses_unknown_ones(capsys):
    assert classroom.resolve(["03", "01-memory-layout/"]) == ["03-cuda-core-gemm", "01-memory-layout"]
    assert classroom.main(["dry-run", "03-gemm"]) == 2
    err = capsys.readouterr().err
    assert "'03-gemm' is not in solutions/" in err and "03-cuda-core-gemm" in err
    assert classroom.main(["dry-run", "0"]) == 2
    assert "matches 00-setup, 01-memory-layout" in capsys.readouterr().err


@pytest.mark.skipif(has_gpu(), reason="checks the message shown without a GPU")
def test_threshold_commands_without_a_gpu_say_so(tmp_path):
    """The guide's "Changing thresholds" commands, from the repository root, on a CPU machine."""
    lines = guide_block("## Changing thresholds")
    assert lines[0] == "cd .."
    calibrate = lines[1].replace("kernels/RESULTS-grader.md", str(tmp_path / "out.md"))
    proc = subprocess.run(calibrate.replace("python", sys.executable, 1).split(), cwd=classroom.ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "needs a GPU" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.md").exists()
    assert (classroom.ROOT / lines[2].split()[-1]).exists(), "the guide's pytest path is not relative to the root"


def test_dry_run_flags_cells_that_raised_outside_the_tests(tmp_path):
    """nbgrader records a cell's error and carries on: the dry run must still flag a demo cell
    that crashed, in a solution anywhere, in a release outside its test and "not yet" cells."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    def cell(tags=(), graded=False, error=None):
        c = new_code_cell("x = 1", metadata={"tags": list(tags)})
        if graded:
            c.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "points": 1}
        if error:
            c.outputs = [new_output("error", ename=error, evalue="boom", traceback=[])]
        return c

    nb = new_notebook(cells=[cell(), cell(error="NameError"), cell(graded=True, error="AssertionError"),
                             cell(tags=["raises-exception"], error="NotImplementedError")])
    for student in ("solution", "untouched"):
        d = tmp_path / "autograded" / student / "01-x"
        d.mkdir(parents=True)
        nbformat.write(nb, d / "lesson.ipynb")
    in_release = classroom.cell_errors(tmp_path, "01-x", "untouched", in_tests=False)
    assert in_release == ["lesson cell 1: NameError: boom"]
    in_solution = classroom.cell_errors(tmp_path, "01-x", "solution", in_tests=True)
    assert [e.split(":")[0] for e in in_solution] == ["lesson cell 1", "lesson cell 2", "lesson cell 3"]
    assert classroom.cell_errors(tmp_path, "02-y", "solution", in_tests=True) == []
