"""Red team for the grading MACHINE (issue #22): submissions that read the machine's files, write
what they must not, leave links for nbgrader to follow, or use up memory, processes, disk and
time, autograded through the real nbgrader pipeline with the course's config, as root and (where
this machine lets another uid run this Python) as an ordinary user.

Every cheat starts from the untouched release (trimmed to the cells grading reads, as in
tests/redteam.py), so each must score 0; nothing of the machine may
appear in any autograded notebook or feedback page; alice (the honest solution) keeps her
grade, her files and the gradebook stay intact, and the course config and sources too.
"""
from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import early
import other_user
from grader.classroom import workflow as classroom
from grader.runtime import device
from redteam import add_code, answer_cell, require_sandbox, trim, trimmed_solution, write_submission
from redteam import path_digest as digest

pytestmark = pytest.mark.slow

# the submission's memory limit here: small, so the memory cheats reach it quickly, but above what an
# honest check holds. On a GPU a CUDA context's host memory alone took an honest check past 1024 MB
# (4 H200s, 2026-11-28: alice stopped at "more than 1024 MB ... together", 0 points), hence more there;
# the cheats scale with it.
TOTAL_MB = 8192 if device.has_gpu() else 1024

A = "01-memory-layout"  # Python answers (index functions) and a kernel
ROOT = Path(__file__).resolve().parents[2]
# planted in every file no submission may read; the cheats spell every word the checks look for
# in two pieces, so that their own source (in the notebook and its feedback) never matches
MARK = "TC-SECRET-7f3a"

require_sandbox()


def _cheats(course: Path, secrets: dict[str, Path]) -> dict[str, callable]:
    gradebook = course / "gradebook.db"
    alice_nb = course / "submitted" / "alice" / A / f"{A}.ipynb"

    def read_files(nb):
        # every file it should not see, printed into its own notebook (and so its feedback)
        targets = [str(p) for p in secrets.values()] + [
            str(ROOT / ".git" / "config"), str(secrets["sources"]), str(course / "grades.csv"),
            str(course / "nbgrader_config.py"), str(alice_nb), os.path.expanduser("~/.bash_history"),
            "/etc/shadow", "/proc/1/environ"]
        add_code(nb, f"""
import glob, os
for p in {targets!r} + glob.glob(os.path.expanduser("~") + "/*") + glob.glob("/root/*"):
    try:
        print(p, open(p, errors="replace").read()[:2000])
    except Exception as e:
        print("no", p, type(e).__name__)
""")

    def walk_machine(nb):
        # looks everywhere it can for the planted secrets and the answer key
        add_code(nb, f"""
import os
seen = 0
for top in ("/", "/tmp", "/work", "/home", "/root", {str(ROOT)!r}, {str(course.parent)!r}):
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in ("proc", "sys", "dev", "usr")]
        for f in files:
            seen += 1
            if seen > 20000:
                break
            try:
                t = open(os.path.join(d, f), errors="replace").read(4096)
            except Exception:
                continue
            if {MARK[:9]!r} + {MARK[9:]!r} in t:
                print("FOU" + "ND", os.path.join(d, f), t[:300])
""")

    def cache_and_env(nb):
        # the emulator's compile cache (classmates' kernels) and the environment's secrets
        add_code(nb, """
import os, glob
print(dict(os.environ))
for p in glob.glob(os.path.expanduser("~/.cache/tensorcore-course/emu/*/*")) + glob.glob("/root/.cache/**/*.cpp", recursive=True):
    try:
        print(p, open(p, errors="replace").read()[:500])
    except Exception:
        pass
""")

    def remount_and_write(nb):
        add_code(nb, f"""
import os, subprocess
print(open("/proc/self/status").read())
for cmd in (["mount", "-o", "remount,rw", "/"], ["mount", "-t", "tmpfs", "x", "/usr"], ["unshare", "-r", "id"]):
    print(cmd, subprocess.run(cmd, capture_output=True, text=True))
for p in ({str(gradebook)!r}, {str(ROOT / "grader" / "checking" / "check.py")!r}, {str(course / "nbgrader_config.py")!r}):
    try:
        open(p, "a").write("pwned")
        print("WRO" + "TE", p)
    except Exception as e:
        print("refused", p, e)
import sqlite3
try:
    sqlite3.connect({str(gradebook)!r}).execute("UPDATE grade SET manual_score = 1000").connection.commit()
except Exception as e:
    print("db refused", e)
""")

    def links_at_run_time(nb):
        # links (and a hard link, a FIFO) left in its own folder for nbgrader to follow later
        add_code(nb, f"""
import os
here = os.getcwd()
targets = {{"gradebook.db": {str(gradebook)!r}, "alice.ipynb": {str(alice_nb)!r},
           "config.py": {str(course / "nbgrader_config.py")!r}, "key.ipynb": {str(ROOT / "solutions" / A / f"{A}.ipynb")!r}}}
for name, t in targets.items():
    try:
        os.symlink(t, os.path.join(here, name))
    except Exception as e:
        print("no link", e)
try:
    os.remove(os.path.join(here, "{A}.ipynb"))
    os.symlink({str(gradebook)!r}, os.path.join(here, "{A}.ipynb"))
except Exception as e:
    print("no swap", e)
try:
    os.link({str(gradebook)!r}, os.path.join(here, "hard.db"))
except Exception as e:
    print("no hard link", e)
os.mkfifo(os.path.join(here, "fifo"))
""")

    def disk(nb):
        add_code(nb, """
import os
blob = b"x" * (1 << 20)
for i in range(400):
    try:
        with open(f"fill-{i}.bin", "wb") as f:
            for _ in range(8):
                f.write(blob)
    except Exception as e:
        print("stopped writing", e)
        break
for i in range(100):
    try:
        with open(f"/tmp/fill-{i}.bin", "wb") as f:
            f.write(blob * 8)
    except Exception:
        break
""")

    def memory(nb):
        add_code(nb, """
hog = []
try:
    for _ in range(64):
        hog.append(bytearray(1 << 30))
except MemoryError:
    print("no more memory")
""")

    def shared_memory(nb):
        # memory no per-process limit counts: memfd_create, System V shared memory, /dev/shm
        add_code(nb, """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
print("shmget", libc.shmget(0, 1 << 30, 0o1000 | 0o600), ctypes.get_errno())
try:
    open("/dev/shm/fill", "wb").write(b"x" * (256 << 20))
except OSError as e:
    print("/dev/shm refused", e)
held = []
for i in range(100 * TOTAL_MB // 1024):
    try:
        fd = os.memfd_create("m")
        os.write(fd, b"x" * (15 << 20))
        held.append(fd)
    except OSError as e:
        print("memfd refused", e)
        break
time.sleep(3)
print("KEPT" + "ALL", len(held) * 15, "MB")
""".replace("TOTAL_MB", str(TOTAL_MB)))

    def unlinked_files(nb):
        # files deleted while still open: no folder scan sees them, the disk still holds them
        add_code(nb, """
import os, time
held = []
for i in range(40):
    try:
        f = open(f"gone-{i}.bin", "wb")
        os.unlink(f"gone-{i}.bin")
        f.write(b"x" * (8 << 20))
        f.flush()
        held.append(f)
    except OSError as e:
        print("refused", e)
        break
time.sleep(3)
print("KEPT" + "ALL", len(held) * 8, "MB")
""")

    def forked_memory(nb):
        # six processes, each under the per-process limit, together far over the submission's
        add_code(nb, """
import os, time
for _ in range(6):
    if os.fork() == 0:
        b = bytearray(min(400 * TOTAL_MB // 1024, 2900) << 20)  # under the 3072 MB a process
        for j in range(0, len(b), 4096):
            b[j] = 1
        time.sleep(30)
        os._exit(0)
time.sleep(8)
print("KEPT" + "ALL")
""".replace("TOTAL_MB", str(TOTAL_MB)))

    def processes(nb):
        add_code(nb, """
import os, time
kids = 0
for _ in range(5000):
    try:
        pid = os.fork()
    except OSError as e:
        print("fork refused after", kids, e)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids += 1
""")

    def slow_answers(nb):
        # a correct index function that takes a second a call: the test cell's budget ends it
        i = answer_cell(nb)
        nb.cells[i].source = ("import time\n"
                              "def row_major_offset(i, j, ld):\n    time.sleep(0.5)\n    return i * ld + j\n"
                              "def col_major_offset(i, j, ld):\n    time.sleep(0.5)\n    return j * ld + i\n")

    def half_a_line(nb):
        # half a JSON answer on the pipe, then nothing: the read has a deadline all the same
        i = answer_cell(nb)
        nb.cells[i].source = ("import os, time\n"
                              "def row_major_offset(i, j, ld):\n    os.write(3, b'{\"ok\": 2')\n    time.sleep(3600)\n"
                              "col_major_offset = row_major_offset\n")

    def pasted_schema_99(nb):
        # a test cell pasted twice, every nbgrader cell of an unknown schema (nbgrader would stop the
        # whole class's autograde on it): repaired before nbgrader reads it (grader/classroom/handin_check.py)
        from redteam import graded_cells

        i = graded_cells(nb)[0]
        nb.cells.insert(i + 1, nbformat.v4.new_code_cell("100.0", metadata=dict(nb.cells[i].metadata)))
        for c in nb.cells:
            if "nbgrader" in c.metadata:
                c.metadata["nbgrader"] = dict(c.metadata["nbgrader"], schema_version=99)

    return {"pasted-schema-99": pasted_schema_99, "read-files": read_files, "walk-machine": walk_machine, "cache-and-env": cache_and_env,
            "remount-and-write": remount_and_write, "links-at-run-time": links_at_run_time, "disk": disk,
            "memory": memory, "shared-memory": shared_memory, "unlinked-files": unlinked_files,
            "forked-memory": forked_memory, "processes": processes, "slow-answers": slow_answers, "half-a-line": half_a_line}


CHEATS = list(_cheats(Path("/nonexistent"), {}))
HANDIN = ["handin-links", "handin-special-files", "handin-nbformat-99"]


def _handin_with_links(course: Path, student: str, release_nb: Path, secrets: dict[str, Path], alice_nb: Path):
    d = course / "submitted" / student / A
    d.mkdir(parents=True)
    if student.endswith("handin-nbformat-99"):  # a file nbgrader cannot read: NOT GRADED, that student alone
        import json

        data = json.loads(nbformat.writes(trim(nbformat.read(release_nb, as_version=4))))
        (d / f"{A}.ipynb").write_text(json.dumps(dict(data, nbformat=99)))
    elif student.endswith("handin-links"):
        os.symlink(alice_nb, d / f"{A}.ipynb")  # someone else's notebook as one's own
        os.symlink(secrets["home"], d / "notes.txt")  # a file of the machine, copied along
        os.symlink(course / "gradebook.db", d / "timestamp.txt")
    else:
        nbformat.write(trim(nbformat.read(release_nb, as_version=4)), d / f"{A}.ipynb")
        os.mkfifo(d / "pipe")  # a FIFO nbgrader would block on when copying
        os.link(secrets["other-course"], d / "hard.txt")  # a hard link to a file elsewhere
        # ... under a name the feedback keeps for the exchange (hardening.EXCHANGE_FILES)
        os.link(secrets["other-course"], d / "submission_secret.txt")
        (d / "setuid.sh").write_text("#!/bin/sh\nid\n")
        os.chmod(d / "setuid.sh", 0o4777)


def _grade_term(base: Path, env: dict, as_uid: int | None):
    """A course with alice, every cheat and the hand-in cheats, autograded and with feedback."""
    secrets = {"home": base / "home" / "instructor" / ".ssh" / "id_rsa",
               "other-course": base / "other-course" / "gradebook-notes.txt"}
    for p in secrets.values():
        p.parent.mkdir(parents=True)
        p.write_text(f"{MARK} {p.name}")
    # the instructor's sources: a copy of the assignment, with a planted note beside it (never
    # copied into a submission: autograde copies only the assignment's own folder)
    shutil.copytree(classroom.SOLUTIONS / A, base / "solutions" / A)
    secrets["sources"] = base / "solutions" / "INSTRUCTOR-NOTES.txt"
    secrets["sources"].write_text(f"{MARK} the answer key")
    course = classroom.new_course(base / "course", source=base / "solutions")
    (course / "grades.csv").write_text(f"student,score\n{MARK},100\n")
    classroom.release(course, A)
    release_nb = sorted((course / "release" / A).glob("*.ipynb"))[0]
    work = base / "work"
    # alice's solution, trimmed as the cheats are (tests/redteam.py, where trimmed solutions are
    # shown to keep full marks)
    classroom.submit(course, "alice", A, [write_submission(work, "alice", A, trimmed_solution(A))])
    alice_nb = course / "submitted" / "alice" / A / f"{A}.ipynb"
    for name, make in _cheats(course, secrets).items():
        nb = trim(nbformat.read(release_nb, as_version=4))  # what grading reads (tests/redteam.py)
        make(nb)
        path = work / name / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        classroom.submit(course, f"cheat-{name}", A, [path])
    for name in HANDIN:
        _handin_with_links(course, f"cheat-{name}", release_nb, secrets, alice_nb)
    if as_uid is not None:  # everything belongs to that user; its home is the planted one
        subprocess.run(["chown", "-R", f"{as_uid}:{as_uid}", str(base)], check=True)
    guarded = {p: digest(p) for p in [course / "nbgrader_config.py", ROOT / "grader", alice_nb]}
    run = [sys.executable, "-m", "nbgrader"]
    if as_uid is not None:
        run = [*other_user.prefix(as_uid), *run]
    env = {**env, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
           "HOME": str(secrets["home"].parent.parent), "TC_SOURCE_DIR": (course / ".source").read_text()}
    out = []
    # short cell limits, so the cheats that never return cost seconds here, not the guide's minutes
    quick = ["--CourseExecute.timeout_graded=20", "--CourseExecute.timeout_plain=20"]
    for args in (["autograde", A, "--create", *quick], ["generate_feedback", A]):
        r = subprocess.run(run + args, cwd=course, env=env, capture_output=True, text=True, timeout=1800)
        out.append(r.stdout + r.stderr)
    if os.environ.get("TC_RECORD_DIR"):  # the GPU record keeps nbgrader's own words
        Path(os.environ["TC_RECORD_DIR"], f"safety-{'user' if as_uid else 'root'}.log").write_text("\n".join(out))
    return dict(course=course, secrets=secrets, guarded=guarded, log="\n".join(out))


def _env() -> dict:
    # small limits, so that exhausting them is quick here; the defaults are the guide's
    return {**os.environ, "TC_LIMIT_DISK_MB": "64", "TC_LIMIT_FILE_MB": "16", "TC_LIMIT_MEMORY_MB": "3072",
            "TC_LIMIT_PROCESSES": "64", "TC_LIMIT_TEST_S": "6", "TC_LIMIT_TOTAL_MEMORY_MB": str(TOTAL_MB),
            "TC_LIMIT_SHM_MB": "32"}


def _other_user() -> int | None:
    """A uid that can run this Python here (its folders may lie in root's home), or None."""
    uid = 4242
    run_as = other_user.prefix(uid)  # where this Python lies in root's home: in a namespace that shows it
    if run_as is None:
        return None
    # the course, nbgrader and a sandbox started as that user (bwrap then reads its folders as it)
    r = subprocess.run([*run_as, sys.executable, "-c",
                        "import nbgrader; from grader.runtime import sandbox; sandbox.self_test()"],
                       capture_output=True, cwd="/", env={**os.environ, "HOME": "/tmp"})
    return uid if r.returncode == 0 else None


def graded_term(who: str, tmp_path_factory, addfinalizer) -> dict:
    """The term graded as root or as another user ("root", "user"), or a skip saying why not."""
    if who == "root":
        if os.geteuid() != 0:
            pytest.skip("grading as root needs root")
        uid = None
    else:
        uid = _other_user() if os.geteuid() == 0 else None
        if os.geteuid() == 0 and uid is None:
            pytest.skip("no other uid can run this Python here (needs root, setpriv, and unshare where it lies in "
                        "root's home)")
    if uid is None:
        return _grade_term(tmp_path_factory.mktemp(f"machine-{who}"), _env(), uid)
    # pytest's own folders are root's only (0700): the other user's course lies where it can reach
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="tc-machine-user-", dir="/tmp"))
    os.chmod(base, 0o755)
    addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    return _grade_term(base, _env(), uid)


@pytest.fixture(scope="module", params=["root", "user"])
def term(request, tmp_path_factory):
    # mostly waiting (cheats that sleep, fork, hit time limits): under xdist the controller grades
    # it while the workers run other tests (tests/early.py), the same graded_term
    return early.take(request, f"machine-{request.param}",
                      lambda: graded_term(request.param, tmp_path_factory, request.addfinalizer))


def _texts(course: Path, student: str) -> str:
    out = []
    for d in ("autograded", "feedback"):
        for p in (course / d / student).rglob("*"):
            if p.is_file() and not p.is_symlink():
                out.append(p.read_text(errors="replace"))
    return "\n".join(out)


@pytest.mark.parametrize("name", CHEATS + HANDIN)
def test_cheat_scores_zero_and_sees_nothing(term, name):
    course = term["course"]
    got = classroom.scores(course, A)
    assert f"cheat-{name}" in got, f"{name} was not graded:\n{term['log'][-3000:]}"
    if name != "slow-answers":  # right answers, only slow: what the budget allowed may count
        assert got[f"cheat-{name}"][0] == 0, classroom.cell_scores(course, A, f"cheat-{name}")
    text = _texts(course, f"cheat-{name}")
    assert MARK not in text, f"{name}: a file of the machine reached its autograded notebook or feedback"
    assert "repositoryformatversion" not in text  # the repository's .git/config
    assert "CapEff:\t0000000000000000" in text or name != "remount-and-write"
    assert "WROTE" not in text and "FOUND" not in text
    assert "KEPTALL" not in text, f"{name}: held more than its limits allow until the end"


def test_honest_student_and_course_intact(term):
    course = term["course"]
    got, _ = classroom.scores(course, A)["alice"]
    assert got == classroom.cpu_max_score(sorted((classroom.SOLUTIONS / A).glob("*.ipynb"))[0]) or got > 0
    assert "the limit for one submission" not in _texts(course, "alice")  # named for no limit
    for p, d in term["guarded"].items():
        assert digest(p) == d, f"{p} changed"
    con = sqlite3.connect(course / "gradebook.db")
    assert con.execute("SELECT COUNT(*) FROM grade WHERE manual_score IS NOT NULL").fetchone()[0] == 0
    for p in term["secrets"].values():
        assert p.read_text().startswith(MARK)


def test_nothing_left_behind_is_a_link_or_big(term):
    course = term["course"]
    for d in ("submitted", "autograded", "feedback"):
        for p in (course / d).rglob("*"):
            st = os.lstat(p)
            assert not p.is_symlink() and (p.is_dir() or p.is_file()), f"{p} is not a plain file"
            assert not st.st_mode & 0o6000, f"{p} keeps a setuid/setgid bit"
    size = sum(p.stat().st_size for p in (course / "autograded").rglob("*") if p.is_file())
    assert size < 20 << 20, f"autograded/ holds {size >> 20} MB"
    fb = course / "feedback" / "cheat-links-at-run-time" / A
    # the page, and nothing else of the folder but the exchange's own line of text, as a plain file
    from grader.classroom.hardening import EXCHANGE_FILES

    assert [p.suffix for p in fb.iterdir()].count(".html") == 1, list(fb.iterdir())
    assert all(p.suffix == ".html" or p.name in EXCHANGE_FILES for p in fb.iterdir()), list(fb.iterdir())


def test_unreadable_handin_alone_is_not_graded(term):
    """nbformat 99 stops nbgrader on that notebook: that student is NOT GRADED, the feedback page
    and the log say why and what to do; every other hand-in of the run was autograded."""
    course = term["course"]
    page = _texts(course, "cheat-handin-nbformat-99")
    assert "NOT GRADED" in page and "nbformat 99" in page, page[-2000:]
    assert "NOT GRADED: cheat-handin-nbformat-99's hand-in" in term["log"] and "nbgrader update" not in term["log"]
    graded = {p.parent.name for p in (course / "autograded").glob(f"*/{A}")}
    everyone = {p.parent.name for p in (course / "submitted").glob(f"*/{A}")}
    # handin-links hands in a link to alice's notebook and nothing else: nothing to autograde
    assert "cheat-handin-nbformat-99" in everyone - graded <= {"cheat-handin-nbformat-99", "cheat-handin-links"}, \
        everyone - graded


def test_limits_are_named_in_feedback(term):
    course = term["course"]
    slow = _texts(course, "cheat-slow-answers")
    assert "each test cell has 6 s" in slow, slow[-2000:]
    assert "stopped" in _texts(course, "cheat-half-a-line")
    # the disk filled, then the notebook went on: named however the watch's polls fell (Box.look),
    # in its feedback and in the instructor's log
    assert "reaching 64 MB (the limit" in _texts(course, "cheat-disk") or "File too large" in _texts(course, "cheat-disk")
    assert re.search(r"\] cheat-disk, [^\n]*reaching 64 MB \(the limit", term["log"]), term["log"][-3000:]
    # what the machine counts (issue #32): memfd, shared memory, deleted files, all processes together
    assert f"held more than {TOTAL_MB} MB of memory together" in _texts(course, "cheat-shared-memory")
    assert "shmget -1 1" in _texts(course, "cheat-shared-memory")  # System V shared memory: refused (EPERM)
    assert "reaching 64 MB (the limit" in _texts(course, "cheat-unlinked-files")
    assert f"held more than {TOTAL_MB} MB of memory together" in _texts(course, "cheat-forked-memory")


# ----------------------------------------------------------------------------- fail closed
def test_replaced_config_refuses_to_grade(tmp_path):
    """A course config without the sandbox and the trusted grader (as a submission that reached
    it would write): the environment's guard refuses, and nothing is graded."""
    course = classroom.new_course(tmp_path / "course")
    classroom.release(course, A)
    classroom.submit(course, "alice", A, sorted((classroom.SOLUTIONS / A).glob("*.ipynb")))
    cfg = course / "nbgrader_config.py"
    cfg.write_text(cfg.read_text().replace("CourseExecute, IgnorePattern", "Execute, IgnorePattern")
                   .replace("TrustedGrade, SaveAutoGrades", "SaveAutoGrades")
                   .replace("from nbgrader.preprocessors import (", "from nbgrader.preprocessors import (\n    Execute,")
                   .replace("hardening.install()", "pass"))
    from jupyter_core.paths import jupyter_config_path

    guards = [Path(d) / "nbgrader_config.py" for d in jupyter_config_path()]
    if not any(g.exists() and "hardening" in g.read_text() for g in guards):
        pytest.skip("this environment was not set up by course.sh (no guard in its etc/jupyter)")
    r = classroom.nbgrader(course, "autograde", A, "--create", check=False)
    assert r.returncode != 0
    assert "autograde refused" in r.stdout + r.stderr
    assert not (course / "autograded" / "alice").exists()


def test_sanitize_removes_what_is_not_plain(tmp_path):
    from grader.classroom.hardening import sanitize

    d = tmp_path / "s"
    (d / "sub").mkdir(parents=True)
    (d / "ok.txt").write_text("ok")
    os.symlink("/etc/passwd", d / "link")
    os.symlink(tmp_path, d / "sub" / "dirlink")
    os.mkfifo(d / "fifo")
    (tmp_path / "outside").write_text("x")
    os.link(tmp_path / "outside", d / "hard")
    (d / "suid").write_text("x")
    os.chmod(d / "suid", 0o4755)
    removed = sanitize(d)
    assert len(removed) == 4
    assert sorted(p.name for p in d.rglob("*")) == ["ok.txt", "sub", "suid"]
    assert not os.stat(d / "suid").st_mode & 0o4000
    assert (tmp_path / "outside").read_text() == "x"


def test_launch_dict_carries_only_launch_parameters():
    """A LAUNCH dict naming the grader's own settings (a case_timeout of an hour, another backend)
    is refused before anything runs."""
    from grader.checking.trusted import grade_notebook

    release = [dict(kind="test", grade_id="t", points=1.0,
                    source='grade("wmma-gemm-fast", SRC, points=1, **LAUNCH)')]
    sub = ['SRC = r"""extern \"C\" __global__ void k() {}"""',
           "LAUNCH = dict(block_m=128, case_timeout=3600, backend='gpu')"]
    g = grade_notebook(dict(release=release, submission=sub))["grades"][0]
    assert g["score"] == 0 and "backend, case_timeout are not launch parameters of wmma-gemm-fast" in g["error"]
