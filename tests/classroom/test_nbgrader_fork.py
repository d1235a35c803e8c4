"""The test suite's warm nbgrader (grader.classroom.workflow.nbgrader with TC_NBGRADER_FORK=1, used
by the term modules: tests/conftest.py FORKED) answers as a fresh `python -m nbgrader` does: the
same exit status, stdout and stderr apart, the course's config read in the command's own folder."""
from __future__ import annotations

import pytest

from grader.classroom import workflow


@pytest.fixture
def both(tmp_path, monkeypatch):
    def run(forked: bool, course, *args):
        monkeypatch.setenv("TC_NBGRADER_FORK", "1" if forked else "0")
        return workflow.nbgrader(course, *args, check=False)
    return run


def test_a_forked_command_answers_as_a_fresh_one(tmp_path, both):
    a = workflow.new_course(tmp_path / "a")
    b = workflow.new_course(tmp_path / "b")
    for course, forked in ((a, True), (b, False)):
        assert both(forked, course, "db", "student", "add", "ada", "--first-name", "Ada").returncode == 0
    # each command read its own folder's gradebook: ben only in b, added by a fork
    assert both(True, b, "db", "student", "add", "ben").returncode == 0
    seen = {(c.name, f): both(f, c, "db", "student", "list") for c in (a, b) for f in (True, False)}
    for (name, forked), p in seen.items():
        assert p.returncode == 0, (name, forked, p.stderr[-2000:])
        assert ("ben" in p.stdout) == (name == "b") and "ada" in p.stdout, (name, forked, p.stdout)
    assert seen["a", True].stdout == seen["a", False].stdout
    # a failing command: the same status, its complaint on stderr in both
    bad = [both(f, a, "db", "student", "remove", "nobody") for f in (True, False)]
    assert bad[0].returncode == bad[1].returncode != 0
    assert "nobody" in bad[0].stderr + bad[0].stdout and "nobody" in bad[1].stderr + bad[1].stdout
    assert bool(bad[0].stderr.strip()) == bool(bad[1].stderr.strip())
