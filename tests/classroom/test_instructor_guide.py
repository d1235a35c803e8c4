"""course/README.md, followed literally on this machine: the commands of its "Each assignment"
block (no exchange), run as written with the `nbgrader` of the active environment in a course
folder laid out like the repository's (course/ beside solutions/, no environment variables).

One student hands in the reference solution, another the untouched release; the test checks
the scores the guide promises, the feedback pages, grades.csv, and that no command prints a
traceback or SQLAlchemy's warnings. tests/classroom/test_class_workflow.py covers every assignment and
adversarial submissions through grader.classroom; this one covers the guide's own words.
"""
import csv
import json
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
                    "submitted", "autograded", "feedback", ".nbgrader.log", ".tc-integrity.json"}, made


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


def test_expected_scores_table_is_derived_from_the_solutions():
    """The table is written by `notebooks sync` from the solutions (course_tables.expected_scores):
    it lists every assignment in order, and what the guide shows is what the writer gives now."""
    from grader.classroom import course_tables, notebook_file

    books = {a: notebook_file.read(classroom.SOLUTIONS / a / f"{a}.ipynb") for a in classroom.assignments()}
    table = course_tables.expected_scores(books, classroom.SOLUTIONS)
    assert table in GUIDE.read_text(), "stale expected scores (run: python -m grader.classroom.notebooks sync)"
    rows = re.findall(r"^\| `([\w-]+)` \| (.+) \|$", table, re.M)
    assert [a for a, _ in rows] == classroom.assignments(), "the table must list every assignment, in order"
    for a, rest in rows:  # the row's own arithmetic: GPU = every point, CPU-only = what a CPU awards
        total, gpu, cpu, cpu_only, untouched = [c.strip() for c in rest.split("|")]
        assert gpu == f"{total} / {total}" and cpu.endswith(f" / {total}") and untouched == "0", a
        assert cpu_only == f"{cpu.split(' / ')[0]} / {cpu.split(' / ')[0]}", a
        assert float(cpu.split(" / ")[0]) == sum(classroom.cpu_max_score(p) for p in (classroom.SOLUTIONS / a).glob("*.ipynb"))


def test_cpu_only_switch_worth_matches_cpu_max_score(monkeypatch):
    """The switch (TC_CPU_ONLY) scales a kernel cell the way the table's CPU-only column says."""
    import nbformat

    from grader.classroom.nbgrader_ext import SpeedPoints

    monkeypatch.setenv("TC_CPU_ONLY", "1")
    for a in classroom.assignments():
        for sol in sorted((classroom.SOLUTIONS / a).glob("*.ipynb")):
            nb, _ = SpeedPoints().preprocess(nbformat.read(sol, as_version=4), {})
            worth = sum(float(c.metadata["nbgrader"].get("points", 0)) for c in nb.cells
                        if c.metadata.get("nbgrader", {}).get("grade"))
            assert worth == pytest.approx(classroom.cpu_max_score(sol)), a
    monkeypatch.setenv("TC_CPU_ONLY", "0")
    nb, _ = SpeedPoints().preprocess(nbformat.read(classroom.SOLUTIONS / "01-memory-layout" / "01-memory-layout.ipynb",
                                                   as_version=4), {})
    assert sum(float(c.metadata["nbgrader"].get("points", 0)) for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade")) == 4


def test_the_guides_counts_are_true():
    import importlib.util

    spec = importlib.util.spec_from_file_location("cheats", classroom.ROOT / "tests" / "checking" / "test_cheats.py")
    cheats = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cheats)
    n = len(cheats.CHEATS)
    text = GUIDE.read_text() + (classroom.ROOT / "README.md").read_text()
    counts = re.findall(r"(?:holds|autogrades) (\w+) cheat", text)
    assert counts and all(c == str(n) for c in counts), (counts, n)
    assert "twenty" not in text and "about 7 min" not in text
    assert "H200 so far" not in text and "not yet all of them" not in text
    # every "N s" time the guide quotes for an autograde on an H100 is in the record
    record = (classroom.ROOT / "kernels" / "RESULTS-grader.md").read_text()
    for t in re.findall(r"(\d+) s (?:for 03|\(09\))", GUIDE.read_text()):
        assert re.search(rf"\| {t} s\b", record), t


def test_course_sh_grade_opens_the_formgrader_on_the_course_and_lab_has_none(tmp_path):
    from grader.classroom import lab

    script = (classroom.ROOT / "course.sh").read_text()
    assert re.search(r"^\s*lab\|grade\).*-m grader\.classroom\.lab", script, re.M), "course.sh: lab/grade not through lab.py"
    grade = lab.grade_args(tmp_path)
    assert f"--ServerApp.root_dir={tmp_path / 'course'}" in grade and "--ServerApp.default_url=/formgrader" in grade
    folder = lab.lab_config_dir(tmp_path)
    server = json.loads((folder / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    assert server["nbgrader.server_extensions.formgrader"] is False
    page = json.loads((folder / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"] == {"@jupyter/nbgrader": True}
    grading = json.loads((lab.grade_config_dir(tmp_path) / "jupyter_server_config.json").read_text())["ServerApp"]
    assert grading["terminals_enabled"] is False and grading["jpserver_extensions"]["jupyter_server_terminals"] is False
    ignored = subprocess.run(["git", "check-ignore", "gradebook.db", "notebooks/gradebook.db", "x/y/gradebook.db"],
                             cwd=classroom.ROOT, capture_output=True, text=True)
    assert len(ignored.stdout.split()) == 3, "a gradebook.db outside course/ is not git-ignored"


@pytest.mark.slow
def test_formgrader_opens_on_the_course_with_every_assignment(tmp_path):
    """`./course.sh grade`'s JupyterLab command, run in a course folder: the formgrader's API lists
    every assignment of solutions/, and the only gradebook.db is the course's."""
    import time
    import urllib.request

    import browser
    from grader.classroom import lab

    args = lab.grade_args(tmp_path)
    course = classroom.new_course(tmp_path / "course")
    port = browser.free_port()
    env = dict(os.environ, TC_SOURCE_DIR=str(classroom.SOLUTIONS), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter"), "lab", *args, "--no-browser",
                             f"--port={port}", "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=t",
                             *(["--allow-root"] if os.geteuid() == 0 else [])],
                            cwd=course, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        names, deadline = None, time.monotonic() + 120
        while names is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/formgrader/api/assignments?token=t",
                                            timeout=30) as r:
                    names = {a["name"] for a in json.loads(r.read())}
            except OSError:
                time.sleep(1)
    finally:
        proc.terminate()
        proc.wait(30)
    assert names is not None, "the formgrader did not answer"
    assert set(classroom.assignments()) <= names
    assert (course / "gradebook.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "rt") == ["course"]
