"""Every command README.md, course/README.md and CONTRIBUTING.md show, run on a fresh clone as they say.

The commands are READ from the three files (their ```bash blocks and the inline `...` spans that
start like a command), never listed by hand: `test_every_readme_command_has_a_test` fails for a
command no test runs. COVERED says which test runs each: most run here, in one fresh clone of the
working tree set up by `./course.sh` itself (its own .venv, as a newcomer gets it); the nbgrader
term, the cohort at scale and the similarity report at class size have tests of their own that
follow the guide literally (named in COVERED). Where a command needs a GPU, its CPU form runs and
its answer is checked ("needs a GPU", exit status).

`./course.sh lab` and `./course.sh grade` are started for real: their servers answer, a headless
Chromium (tests/browser.py) runs notebook 00 top to bottom in JupyterLab and loads the formgrader.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import browser

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", ROOT / "course" / "README.md", ROOT / "CONTRIBUTING.md"]
THIS = "tests/test_readme_commands.py"

# What runs each README command (its key, see command_key). A value names a test (file::function,
# checked to exist) or says why nothing runs it.
COVERED = {
    "./course.sh lab": f"{THIS}::test_lab_runs_notebook_00_in_a_browser",
    "./course.sh grade": f"{THIS}::test_grade_opens_the_formgrader_in_a_browser",
    "./course.sh test": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "./course.sh stack": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python grader/runtime/stack.py": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader doctor": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader list": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader check": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader inspect": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.bench": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.bench.mma": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.bench.crosscheck": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.bench.arch_proof": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.bench.calibrate": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.classroom.notebooks sync": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.classroom.notebooks check": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.bench.wmma": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.bench.verdicts": "tests/bench/test_verdicts_table.py::test_one_pair_runs_and_compare_names_a_changed_verdict",
    "python -m grader.classroom.colab readme": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "python -m grader.classroom.handout": "tests/classroom/test_handout.py::test_the_copy_holds_no_answer_key",
    "python -m grader.classroom dry-run": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "python -m grader.classroom.term schedule": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "python -m grader.classroom.term refresh": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "python -m grader.classroom.term extend":
        "tests/classroom/test_term_actions.py::test_an_extension_for_one_student_counts_everywhere",
    "python -m grader.classroom.cohort autograde": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "python -m grader.classroom.similarity": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "python -m grader.classroom.leaderboard":
        "tests/classroom/test_leaderboard.py::test_the_command_writes_the_page_and_says_what_is_wrong",
    "nbgrader db student add": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "nbgrader db student import": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "nbgrader db student remove": "tests/classroom/test_term_actions.py::"
                                  "test_a_student_removed_and_added_back_is_graded_by_the_command_the_export_names",
    "nbgrader db assignment add": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "nbgrader db assignment remove": "tests/classroom/test_term_actions.py::"
                                     "test_an_assignment_removed_and_released_again_keeps_its_due_date",
    "nbgrader generate_assignment": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "nbgrader autograde": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "nbgrader generate_feedback": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "nbgrader export": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "nbgrader release_assignment": "tests/classroom/test_term_exchange.py::test_release_and_fetch_hand_every_student_the_release",
    "nbgrader fetch_assignment": "tests/classroom/test_term_exchange.py::test_release_and_fetch_hand_every_student_the_release",
    "nbgrader submit": "tests/classroom/test_term_exchange.py::test_collect_takes_every_hand_in_and_the_resubmission",
    "nbgrader collect": "tests/classroom/test_term_exchange.py::test_collect_takes_every_hand_in_and_the_resubmission",
    "nbgrader release_feedback": "tests/classroom/test_term_exchange.py::test_release_feedback_releases_every_page",
    "nbgrader fetch_feedback": "tests/classroom/test_term_exchange.py::test_every_student_fetches_their_own_verdicts_and_score",
    # publishing the handout: git's own commands on the copy tests/classroom/test_handout.py builds and checks
    "git": "tests/classroom/test_handout.py::test_the_copy_holds_no_answer_key",
    "python -m pytest": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "jupyter lab": f"{THIS}::test_lab_runs_notebook_00_in_a_browser",
    "python -m grader.classroom.lab lab": f"{THIS}::test_lab_runs_notebook_00_in_a_browser",  # what course.sh runs
    "pip install": "tests/test_packaging.py::test_environment_yml_matches_pyproject",
    "conda env": "tests/test_packaging.py::test_environment_yml_matches_pyproject",
    "./course.sh": f"{THIS}::test_cli_commands_on_the_fresh_clone",
    "dask scheduler": f"{THIS}::test_instructor_commands_on_a_tiny_course",
    "srun bash": f"{THIS}::test_instructor_commands_on_a_tiny_course",  # its `dask worker`, without Slurm
    "python -m nbgrader": f"{THIS}::test_instructor_commands_on_a_tiny_course",  # TC_COHORT_FORK=0
    ".ci/gpu-wheels": "GPU machine only: the device tool's scripts, never run by CI",
    ".ci/gpu-record": "GPU machine only: the device tool's scripts, never run by CI",
    ".ci/gpu-cuda12": "GPU machine only: the device tool's scripts, never run by CI",
    ".ci/gpu-mma-sweep": "GPU machine only: the device tool's scripts, never run by CI",
}
# Shell words that are no course command.
SHELL = {"cd", "source", "mkdir", "cp", "export", "set", "conda activate", "A", "SCHED"}


def readme_commands() -> dict[str, set[str]]:
    """{command key: the lines it appears in}, from the READMEs and CONTRIBUTING.md."""
    found: dict[str, set[str]] = {}
    for path in READMES:
        text = path.read_text()
        lines = []
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():  # continuation lines joined
                line = re.sub(r"(^|\s+)#.*$", "", line).strip()
                if line:
                    lines += [part.strip() for part in re.split(r"&&|;", line) if part.strip()]
        starts = r"(?:\./course\.sh|python3? -m|\.venv/bin/python|nbgrader |TC_\w+=\S+ \w|python3? grader/|jupyter )"
        lines += [m for m in re.findall(r"`([^`\n]+)`", text) if re.match(starts, m)]
        for line in lines:
            key = command_key(line)
            if key:
                found.setdefault(key, set()).add(f"{path.relative_to(ROOT)}: {line}")
    return found


def command_key(line: str) -> str | None:
    """`TC_ARCH=75 .venv/bin/python -m grader check x.cu --tile 32` -> 'python -m grader check'."""
    words = line.split()
    while words and re.fullmatch(r"\w+=\S*", words[0]):  # environment assignments
        words = words[1:]
    if not words or words[0] in SHELL or f"{words[0]} {words[1] if len(words) > 1 else ''}" in SHELL:
        return None
    words = [re.sub(r"^(\.venv/bin/|\$venv/bin/)", "", w) for w in words]
    words[0] = re.sub(r"^python3$", "python", words[0])
    if words[:2] == ["python", "-m"] and len(words) > 2:
        key, rest = words[:3], words[3:]
    elif words[0] == "python" and len(words) > 1:  # a script: `python3 grader/runtime/stack.py explain`
        key, rest = words[:2], []
    elif words[0] == "nbgrader" and len(words) > 1:
        key, rest = words[:2], words[2:]
        if words[1] == "db":
            key, rest = words[:4], []
    else:
        key, rest = words[:1], words[1:]
    if rest and re.fullmatch(r"[a-z][a-z_-]*", rest[0]) and key[0] != "nbgrader":
        key.append(rest[0])  # a subcommand (`doctor`, `dry-run`, `schedule`), not a path or a value
    return " ".join(key)


def _covering(key: str) -> str | None:
    """The COVERED entry of a key, or of its longest prefix that has one (`python -m grader.bench
    --out F` and `python -m grader.bench.mma ...` have their own)."""
    words = key.split()
    for n in range(len(words), 0, -1):
        if " ".join(words[:n]) in COVERED:
            return COVERED[" ".join(words[:n])]
    return None


def test_every_readme_command_has_a_test():
    commands = readme_commands()
    assert "./course.sh lab" in commands and "nbgrader autograde" in commands, sorted(commands)
    missing = {k: sorted(v)[0] for k, v in commands.items() if _covering(k) is None}
    assert not missing, f"README commands no test runs (add them to COVERED): {missing}"
    for key in commands:
        target = _covering(key)
        if "::" in target:
            file, name = target.split("::")
            assert re.search(rf"^def {name}\(", (ROOT / file).read_text(), re.M), f"{key}: no test {target}"


def test_command_keys():
    assert command_key("TC_ARCH=75 jupyter lab") == "jupyter lab"
    assert command_key(".venv/bin/python -m grader doctor") == "python -m grader doctor"
    assert command_key("python -m grader check sgemm-tiled my_kernel.cu --tile 32") == "python -m grader check"
    assert command_key("python -m grader.classroom.similarity 04-wmma-basics") == "python -m grader.classroom.similarity"
    assert command_key("nbgrader db student add alice --first-name Alice") == "nbgrader db student add"
    assert command_key("nbgrader autograde $A --force") == "nbgrader autograde"
    assert command_key("cd course") is None and command_key("A=03-cuda-core-gemm") is None


# ---- the fresh clone ---------------------------------------------------------------------------

def _fresh_clone(dest: Path) -> Path:
    """A clone of this repository with the working tree's uncommitted changes on top (so a local
    run tests what is here; in CI the two are the same), no .venv: `./course.sh` makes one."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)], check=True)
    changed = subprocess.run(["git", "ls-files", "-z", "-m", "-o", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, changed):
        src, dst = ROOT / rel, dest / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    deleted = subprocess.run(["git", "ls-files", "-z", "-d"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split("\0")
    for rel in filter(None, deleted):
        (dest / rel).unlink(missing_ok=True)
    return dest


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    return _fresh_clone(tmp_path_factory.mktemp("fresh") / "tensorcore-course")


def _env(clone: Path, tmp: Path) -> dict:
    env = browser.jupyter_env(tmp)
    for k in [k for k in env if k.startswith(("TC_", "VIRTUAL_ENV", "PYTHONPATH", "JUPYTER_PATH"))]:
        if k not in ("TC_HEADLESS",):
            env.pop(k)
    env.pop("COURSE_VENV", None)
    # a newcomer's PATH: no virtual environment active (ours is first on the test run's PATH)
    venv_bin = str(Path(os.sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    return env


def _start(clone: Path, tmp: Path, which: str, port: int, token: str) -> subprocess.Popen:
    return subprocess.Popen(["./course.sh", which, "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
                             f"--IdentityProvider.token={token}"],
                            cwd=clone, env=_env(clone, tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


@pytest.fixture(scope="module")
def lab(clone, tmp_path_factory):
    """`./course.sh lab` on the fresh clone: the first command of the README, so it sets up .venv."""
    tmp = tmp_path_factory.mktemp("lab")
    port, token = browser.free_port(), "readme-lab"
    proc = _start(clone, tmp, "lab", port, token)
    try:
        status = browser.wait_http(f"http://127.0.0.1:{port}/api/status?token={token}", proc, timeout=900)
        assert status == 200
        yield dict(url=f"http://127.0.0.1:{port}", token=token, proc=proc)
    finally:
        out = browser.stop(proc)
        (tmp / "server.log").write_text(out)


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, ""


@pytest.mark.slow
def test_lab_serves_the_notebooks_without_instructor_pages(lab, clone):
    assert (clone / ".venv" / "bin" / "python").exists(), "./course.sh lab did not set up .venv"
    status, body = _get(f"{lab['url']}/api/contents/00-setup?token={lab['token']}")
    assert status == 200 and "00-setup.ipynb" in body, (status, body[:500])
    assert _get(f"{lab['url']}/formgrader?token={lab['token']}")[0] == 404, "the student's lab serves the formgrader"
    assert _get(f"{lab['url']}/formgrader/api/assignments?token={lab['token']}")[0] == 404
    assert not list((clone / "notebooks").rglob("gradebook.db"))


def _code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.slow
def test_lab_runs_notebook_00_in_a_browser(lab, clone):
    """JupyterLab in headless Chromium: open notebook 00, Run > Run All Cells, save; every code
    cell ran, none raised, and its last line is the doctor's READY."""
    nb = clone / "notebooks" / "00-setup" / "00-setup.ipynb"
    original = nb.read_bytes()  # put back afterwards: the clone's other commands expect it unchanged
    before = nb.stat().st_mtime
    try:
        _run_all_in_browser(lab, nb, before)
    finally:
        nb.write_bytes(original)


def _kernel_idle(lab, dialog, timeout: float = 180) -> None:
    """Until the notebook's kernel has started and is idle (the server's sessions API)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if dialog.count():
            dialog.first.click()
        status, body = _get(f"{lab['url']}/api/sessions?token={lab['token']}")
        sessions = json.loads(body) if status == 200 and body else []
        if any(s.get("kernel", {}).get("execution_state") == "idle" for s in sessions):
            return
        time.sleep(1)
    raise AssertionError(f"no idle kernel for notebook 00 in {timeout:.0f} s: {sessions}")


def _run_all_in_browser(lab, nb: Path, before: float):
    with browser.open_page() as page:
        page.goto(f"{lab['url']}/lab/tree/00-setup/00-setup.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        dialog = page.locator(".jp-Dialog button.jp-mod-accept")  # a kernel picker, if it asks
        _kernel_idle(lab, dialog)
        menus = page.locator(".lm-MenuBar-item")
        names = [menus.nth(i).inner_text().strip() for i in range(menus.count())]
        assert "Run" in names and "Nbgrader" not in names, f"the student's lab menus: {names}"

        def run_all():
            menus.nth(names.index("Run")).click()
            page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()

        run_all()
        cells, deadline, again = [], time.monotonic() + 420, time.monotonic() + 90
        while time.monotonic() < deadline:
            time.sleep(5)
            if dialog.count():
                dialog.first.click()
            if again and time.monotonic() > again and not any(c.get("execution_count") for c in cells):
                run_all()  # a busy machine: the first request can come before the kernel took it
                again = None
            page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
            page.keyboard.press("Control+s")
            time.sleep(1)
            if nb.stat().st_mtime == before:
                continue
            cells = _code_cells(nb)
            errors = [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"]
            assert not errors, f"a cell raised: {errors[0]['ename']}: {errors[0]['evalue']}"
            if all(c.get("execution_count") for c in cells):
                break
        console = [m for m in page.console_log if m.startswith(("pageerror",))]
    assert cells and all(c.get("execution_count") for c in cells), \
        f"{sum(1 for c in cells if c.get('execution_count'))} of {len(cells)} cells ran in 420 s"
    text = "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
                   for o in cells[-1]["outputs"])
    assert "READY" in text, text[-500:]
    assert not console, console


@pytest.mark.slow
def test_a_lab_that_cannot_start_says_why_in_one_line(lab, clone, tmp_path):
    """After set-up (the `lab` fixture did it): a setting Jupyter refuses ends in one line naming
    it, no traceback; so does a clone without notebooks/."""
    proc = subprocess.run(["./course.sh", "lab", "--no-browser", "--ServerApp.port=notaport"], cwd=clone,
                          env=_env(clone, tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("course.sh lab: JupyterLab stopped:") and "port" in last, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_grade_opens_the_formgrader_in_a_browser(lab, clone, tmp_path):
    """`./course.sh grade` (after set-up): the formgrader's page, in Chromium, lists every
    assignment of solutions/; the only gradebook.db is course/'s."""
    from grader.classroom import workflow

    port, token = browser.free_port(), "readme-grade"
    proc = _start(clone, tmp_path, "grade", port, token)
    try:
        base = f"http://127.0.0.1:{port}"
        browser.wait_http(f"{base}/api/status?token={token}", proc, timeout=300)
        # the pages show students' hand-ins: nothing a script there could reach beyond grading
        for api in ("api/terminals", "lsp/status", "assignments"):
            assert _get(f"{base}/{api}?token={token}")[0] == 404, f"the formgrader's server serves /{api}"
        with browser.open_page() as page:
            page.goto(f"http://127.0.0.1:{port}/formgrader?token={token}")
            for a in workflow.assignments():
                page.wait_for_selector(f"text={a}", timeout=60_000)
            assert "Manage Assignments" in page.content()
            errors = [m for m in page.console_log if m.startswith("pageerror")]
        assert not errors, errors
    finally:
        log = browser.stop(proc)
    assert "Traceback" not in log, log[-3000:]
    assert (clone / "course" / "gradebook.db").exists()
    assert [p for p in clone.rglob("gradebook.db") if ".venv" not in p.parts] == [clone / "course" / "gradebook.db"]


def _sh(clone: Path, env: dict, command: str, cwd: Path | None = None, timeout: int = 600):
    proc = subprocess.run(["bash", "-c", command], cwd=cwd or clone, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_cli_commands_on_the_fresh_clone(lab, clone, tmp_path):
    """The README's commands in the clone's own environment, each answer checked."""
    from grader.checking import exercises

    env = _env(clone, tmp_path)
    py = ".venv/bin/python"
    shutil.copy(clone / "kernels" / "sgemm_tiled.cu", clone / "my_kernel.cu")
    expect = [  # (command, exit status, what its output must hold)
        ("./course.sh", 2, r"usage: ./course.sh lab"),
        ("./course.sh stack", 0, r"CUDA 1[23] stack"),
        ("./course.sh test --version", 0, r"pytest \d"),
        (f"python3 grader/runtime/stack.py explain", 0, r"CUDA 1[23] stack"),
        (f"{py} -m grader doctor", 0, r"\nREADY"),
        (f"{py} -m grader list", 0, "(?s)" + "".join(f"(?=.*{re.escape(e)}\\b)" for e in exercises.EXERCISES)),
        (f"{py} -m grader check sgemm-tiled my_kernel.cu --tile 32", 0, r"correct|PASS|pass"),
        (f"{py} -m grader check sgemm-tiled kernels/sgemm_naive.cu --tile 32", None, r"."),
        (f"{py} -m grader inspect kernels/sgemm_tiled.cu -D TILE=16 --arch 80", 0, r"registers"),
        (f"{py} -m grader.bench --out {tmp_path}/R.md", 2, r"needs a GPU"),
        (f"{py} -m grader.bench.mma --out {tmp_path}/R.md --sweep", 2, r"needs a GPU"),
        (f"{py} -m grader.bench.crosscheck --out {tmp_path}/R.md", 2, r"needs a GPU"),
        (f"{py} -m grader.bench.arch_proof --out {tmp_path}/R.md", 2, r"needs a GPU \(or --backend emu\)"),
        (f"{py} -m grader.bench.calibrate --out {tmp_path}/R.md", 2, r"needs a GPU"),
        (f"{py} -m grader.classroom.notebooks sync", 0, r"\d+ derived files: 0 rewritten"),
        (f"{py} -m grader.classroom.notebooks check", 0, r""),
        (f"{py} -m grader.bench.wmma --only smem", 2, r"needs a GPU"),
        (f"{py} -m grader.classroom.colab readme", 0, r"already point at"),
        (f"{py} -m pytest -q tests/runtime/test_stack.py", 0, r"passed"),
    ]
    for command, status, pattern in expect:
        rc, out = _sh(clone, env, command)
        if status is not None:
            assert rc == status, f"{command}: exit {rc}\n{out[-3000:]}"
        assert re.search(pattern, out), f"{command}: no /{pattern}/ in:\n{out[-3000:]}"
        assert "Traceback" not in out, f"{command}:\n{out[-3000:]}"
    # `check` of every exercise id `list` printed is a known exercise; sync and readme changed nothing
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "notebooks", "solutions", "README.md",
                            "course/README.md"], cwd=clone,
                           capture_output=True, text=True).stdout
    assert not dirty.strip(), f"notebooks sync / colab readme changed the committed files:\n{dirty}"


@pytest.mark.slow
def test_instructor_commands_on_a_tiny_course(lab, clone, tmp_path):
    """course/README.md's instructor commands, from course/ with the environment activated, on a
    class of three: the roster, two releases, due dates, hand-ins, the cohort command on the
    emulator, feedback, export, the similarity report, and the dry run."""
    env = _env(clone, tmp_path)
    env["PATH"] = str(clone / ".venv" / "bin") + os.pathsep + env["PATH"]  # `source .venv/bin/activate`
    course = clone / "course"

    def ok(command, pattern=r"", timeout=600):
        rc, out = _sh(clone, env, command, cwd=course, timeout=timeout)
        assert rc == 0 and re.search(pattern, out), f"{command}: exit {rc}\n{out[-3000:]}"
        assert "Traceback" not in out, f"{command}:\n{out[-3000:]}"
        return out

    (course / "students.csv").write_text("id,first_name,last_name,email\nbob,Bob,B,bob@example.org\n"
                                         "carol,Carol,C,carol@example.org\n")
    ok("nbgrader db student add alice --first-name Alice --last-name Liddell --email alice@example.org")
    ok("nbgrader db student import students.csv")
    for a in ("00-setup", "01-memory-layout"):
        ok(f"nbgrader generate_assignment {a}")
    ok("python -m grader.classroom.term schedule 00=2026-12-01T23:59Z 01=2026-12-08T23:59Z")
    ok("python -m grader.classroom.term schedule", r"01-memory-layout.*2026-12-08")
    ok("nbgrader db assignment add 00-setup --duedate=2026-12-01T23:59Z")
    release = course / "release" / "00-setup" / "00-setup.ipynb"
    solution = clone / "solutions" / "01-memory-layout" / "01-memory-layout.ipynb"
    for student in ("alice", "bob"):
        (course / "submitted" / student / "00-setup").mkdir(parents=True)
        shutil.copy(release, course / "submitted" / student / "00-setup")
    for student in ("alice", "carol"):
        (course / "submitted" / student / "01-memory-layout").mkdir(parents=True)
        shutil.copy(solution, course / "submitted" / student / "01-memory-layout")
    # carol's is a day late: "A timestamp.txt beside the notebook sets the submission time"
    (course / "submitted" / "carol" / "01-memory-layout" / "timestamp.txt").write_text("2026-12-09 12:00:00 UTC\n")
    out = ok("python -m grader.classroom.cohort autograde 00-setup --workers 2", r"graded", timeout=900)
    assert (course / "autograded" / "alice" / "00-setup" / "00-setup.ipynb").exists(), out[-2000:]
    ok("nbgrader autograde 01-memory-layout --student carol", timeout=900)
    # the cluster route (the Slurm script's commands, one worker here, no srun), with each job a
    # fresh `python -m nbgrader` (TC_COHORT_FORK=0)
    sched = tmp_path / "sched.json"
    daemons = [subprocess.Popen(cmd, cwd=course, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True) for cmd in (
        ["dask", "scheduler", "--scheduler-file", str(sched), "--no-dashboard", "--host", "127.0.0.1"],
        ["bash", "-c", f"while [ ! -s {sched} ]; do sleep 0.2; done; exec dask worker --scheduler-file {sched} "
                       "--nthreads 1 --resources GPU=1 --memory-limit 0 --no-dashboard --name w-gpu0"])]
    try:
        ok(f"TC_COHORT_FORK=0 python -m grader.classroom.cohort autograde 01-memory-layout --scheduler {sched} "
           "--min-workers 1 --student alice", r"graded", timeout=900)
    finally:
        for d in daemons:
            browser.stop(d)
    ok("nbgrader generate_feedback 00-setup")
    ok("nbgrader export --to grades.csv")
    with open(course / "grades.csv") as f:
        rows = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(f)}
    assert rows[("00-setup", "alice")]["status"] == "graded", rows[("00-setup", "alice")]
    carol = rows[("01-memory-layout", "carol")]
    assert carol["status"] == "late" and 0 < float(carol["score"]) < float(carol["raw_score"]), carol
    # the due date moves after grading: the schedule recomputes, refresh finds nothing left to do
    ok("python -m grader.classroom.term schedule 01=2026-12-10T23:59Z", r"01-memory-layout.*2026-12-10")
    ok("python -m grader.classroom.term refresh", r"0 change\(s\)")
    ok("nbgrader export --to grades.csv")
    with open(course / "grades.csv") as f:
        carol = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(f)}[("01-memory-layout", "carol")]
    assert carol["status"] == "graded" and float(carol["score"]) == float(carol["raw_score"]) > 0, carol
    assert (course / "feedback" / "bob" / "00-setup" / "00-setup.html").exists()
    out = ok("python -m grader.classroom.similarity 01-memory-layout", r"similarity-01-memory-layout\.html")
    page = course / "similarity-01-memory-layout.html"
    assert page.exists() and "alice" in page.read_text() and "carol" in page.read_text(), out
    ok("python -m grader.classroom dry-run 00", r"00-setup", timeout=900)
