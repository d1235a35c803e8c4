"""A term through nbgrader's exchange (issue 33, item 4), as course/README.md "With a JupyterHub
exchange" tells it, with real nbgrader and the course's config (sandbox and trusted grader in
the autograde pipeline, as for plain autograde):

    instructor: generate_assignment, release_assignment
    students:   fetch_assignment, (answer), submit
    instructor: collect, autograde, generate_feedback, release_feedback, export
    students:   fetch_feedback
    cy hands in again; instructor: the same commands, plain (no --update, no --force)
    students:   fetch_feedback

The exchange is a temporary folder named where a Hub names it, in a shared nbgrader_config.py
on the Jupyter config path (JUPYTER_CONFIG_PATH here, /etc/jupyter on a Hub); each student runs
the student commands from their own home with their own config (their id and nbgrader cache),
as a Hub's separate users would, without `--student`.

ada answers everything; ben only the fp16 decoder; cy hands in the untouched release, gets
0 back, then hands in every answer: the resubmission must be collected, regraded and its new
page released without any flag the guide does not give. ben is then given a manual score, and
release_feedback run before generate_feedback must not hand him the page that omits it. dan's untouched notebook came by e-mail:
put in submitted/ by hand, graded with the rest; release_feedback names it and releases everyone
else's.

Anyone can write the exchange's inbound folder (nbgrader makes it so), and `collect` runs with the
instructor's rights: zed puts a link there, named as his hand-in, to the answer key (through
/proc/self/cwd, collect's own folder: no path to guess); ada's hand-in carries a link to a file of
the instructor's, ben's a FIFO. None of it is collected, and everyone else is. eli empties the
`submission_secret.txt` beside his hand-in: his page is not released, everyone else's is. fay takes
the timestamp.txt out of hers; gil renames his folder to a week earlier and rewrites its times. As root, where this
machine has the accounts, `daemon` is a student who is a user of the machine (as on a Hub of system
users) and `bin` hands in under daemon's name, later, and tries to rename daemon's own hand-in away:
daemon's own hand-in is the one collected. `news` is a student whose id happens to name a system account
(the students here write as one account, as the others do): their hand-in is collected all the same.
`kim,lee` has a comma in their id (nbgrader takes any id): their page, stale beside ben's, is held back too.
"""
import csv
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from grader.classroom import workflow as classroom
from test_term import formgrader

pytestmark = pytest.mark.slow

A = "02-precision"  # Python answers only: the same scores on a CPU and a GPU
COURSE_ID = "tensor-cores"  # course/nbgrader_config.py
# What each student's last hand-in must earn: answered grade ids -> (score, max); every cell
# of 02 is worth 2 points and its test cell is "<id>-test".
COMMA = "kim,lee"  # an id with a comma: nbgrader's exclusion lists are comma-separated
ANSWERS = {"ada": ("decode-fp16", "predictions"), "ben": ("decode-fp16",), "cy": ("decode-fp16", "predictions"),
           COMMA: ("decode-fp16",)}
FIRST = {"ada": ANSWERS["ada"], "ben": ANSWERS["ben"], "cy": (), COMMA: ANSWERS[COMMA]}  # cy's first: untouched
CELLS = ("decode-fp16", "predictions")
BEN_MANUAL = 0.5  # given by hand on ben's (and kim,lee's) predictions cell after the second round
MANUAL = {"ben": BEN_MANUAL, COMMA: BEN_MANUAL}
BACKDATED = "2026-11-20 10:00:00.000000 UTC"  # gil's hand-in, renamed to a week before it was made


def _accounts(*names):
    try:
        return {n: pwd.getpwnam(n).pw_uid for n in names}
    except KeyError:
        return None


# a student who is an account of this machine, and the account that hands in under their name
# (owners can only be given as root)
ACCOUNTS = _accounts("daemon", "bin") if os.geteuid() == 0 else None
if ACCOUNTS:
    ANSWERS["daemon"] = FIRST["daemon"] = ("decode-fp16",)
# a student whose id happens to name a system account of this machine (not theirs: they write as everyone does)
NAMESAKE = "news" if _accounts("news") else None
if NAMESAKE:
    ANSWERS[NAMESAKE] = FIRST[NAMESAKE] = ("decode-fp16", "predictions")
def as_account(name: str, *cmd: str) -> subprocess.CompletedProcess:
    uid = ACCOUNTS[name]
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd],
                          capture_output=True, text=True)


SECRET = "INSTRUCTOR-ONLY-8d3f"  # in a file of the instructor's, which ada's hand-in links to


def points(answered) -> dict[str, float]:
    return {f"{g}-test": (2.0 if g in answered else 0.0) for g in CELLS}


def _env(config_dir: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["JUPYTER_CONFIG_PATH"] = str(config_dir)  # the Hub's shared config: where the exchange is
    env["TC_SOURCE_DIR"] = str(classroom.SOLUTIONS)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("TC_NO_SANDBOX", None)  # the sandbox, as for plain autograde
    return env


def nbg(where: Path, env: dict, *args: str) -> str:
    """`nbgrader ARGS` from `where` (the course folder, or a student's home); its whole output."""
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=where, env=env, capture_output=True,
                          text=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} in {where} failed ({proc.returncode}):\n{out[-5000:]}"
    return out


def answer(home: Path, answered) -> None:
    """The student fills in the answer cells named, in the notebook they fetched, with the
    solution's code (its solution markers are the instructor's: a student never sees them)."""
    path = home / A / f"{A}.ipynb"
    nb = nbformat.read(path, as_version=4)
    sol = nbformat.read(classroom.SOLUTIONS / A / f"{A}.ipynb", as_version=4)
    code = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in sol.cells}
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answered:
            c.source = "\n".join(ln for ln in code[gid].splitlines() if "### BEGIN SOLUTION" not in ln
                                 and "### END SOLUTION" not in ln)
    nbformat.write(nb, path)


def text_of(page: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text()))


def page_scores(page: Path) -> tuple[dict[str, float], tuple[float, float]]:
    """The trusted grader's points per graded cell, and the page's total, as the student reads them."""
    text = text_of(page)
    said = re.findall(r"trusted grader: ([\d.]+) of ([\d.]+) points", text)
    total = re.search(r"Score: ([\d.]+) / ([\d.]+)", text)  # nbgrader's heading comes first
    return [float(a) for a, _ in said], (float(total.group(1)), float(total.group(2)))


def fetched_pages(home: Path) -> list[Path]:
    """The feedback pages fetch_feedback brought, oldest hand-in first (folders are timestamps)."""
    return sorted((home / A / "feedback").glob(f"*/{A}.html"), key=lambda p: p.parent.name)


@pytest.fixture(scope="module")
def term(tmp_path_factory, request):
    home = tmp_path_factory.mktemp("exchange-term")
    # the exchange where every user can reach it, as on a Hub (pytest's own folders are root's alone)
    exchange = Path(tempfile.mkdtemp(prefix="tc-exchange-"))
    request.addfinalizer(lambda: shutil.rmtree(exchange, ignore_errors=True))
    exchange.chmod(0o755)
    hub = home / "hub-config"  # /etc/jupyter/nbgrader_config.py on a Hub
    hub.mkdir()
    (hub / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n")
    env = _env(hub)
    course = classroom.new_course(home / "course")
    homes = {}
    for s in ANSWERS:  # each student's own folder and config: on a Hub, their own user and home
        h = homes[s] = home / "students" / s
        h.mkdir(parents=True)
        (h / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            f"c.CourseDirectory.student_id = {s!r}\n"  # a Hub's user name; here a config, not a flag
            f"c.Exchange.cache = {str(h / '.nbgrader-cache')!r}\n")
    logs = {}
    logs["generate"] = nbg(course, env, "generate_assignment", A)
    logs["release"] = nbg(course, env, "release_assignment", A)
    for s, h in homes.items():
        logs[f"fetch-{s}"] = nbg(h, env, "fetch_assignment", A)
        answer(h, FIRST[s])
        logs[f"submit1-{s}"] = nbg(h, env, "submit", A)
    fetched = {s: nbformat.read(h / A / f"{A}.ipynb", as_version=4) for s, h in homes.items()}
    inbound = exchange / COURSE_ID / "inbound"
    # zed's "hand-in" is a link to the answer key, by collect's own working folder (the course)
    os.symlink(f"/proc/self/cwd/{os.path.relpath(classroom.SOLUTIONS / A, course)}",
               inbound / f"zed+{A}+2026-11-27 10:00:00.000000 UTC+abc")
    secret = home / "instructor-only.txt"
    secret.write_text(SECRET)
    os.symlink(secret, next(inbound.glob(f"ada+{A}+*")) / "leak.txt")
    os.mkfifo(next(inbound.glob(f"ben+{A}+*")) / "pipe")
    if ACCOUNTS:  # daemon's own hand-in is daemon's; bin's, under daemon's name and later, is not
        own = next(inbound.glob(f"daemon+{A}+*"))
        subprocess.run(["chown", "-R", f"{ACCOUNTS['daemon']}", str(own)], check=True)
        forged = inbound / f"daemon+{A}+2099-01-01 00:00:00.000000 UTC+forged"
        forged.mkdir()
        nbformat.write(nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4), forged / f"{A}.ipynb")
        (forged / "timestamp.txt").write_text("2099-01-01 00:00:00.000000 UTC")
        subprocess.run(["chown", "-R", f"{ACCOUNTS['bin']}", str(forged)], check=True)
        # bin can add to the inbound folder (as every student can), but not rename daemon's hand-in
        # away (to another assignment's name: never collected); nbgrader leaves the folder unsticky
        probe = inbound / "probe-by-bin"
        logs["bin-adds"] = as_account("bin", "mkdir", str(probe))
        away = inbound / f"daemon+00-setup+{own.name.split('+')[2]}+x"
        logs["bin-renames"] = as_account("bin", "mv", str(own), str(away))
        as_account("bin", "rmdir", str(probe))

    def late_student(name: str) -> Path:
        """A student added after the first three, with ada's config under their own id, who fetched A."""
        h = home / "students" / name
        h.mkdir(parents=True)
        (h / "nbgrader_config.py").write_text((homes["ada"] / "nbgrader_config.py").read_text().replace("ada", name))
        logs[f"fetch-{name}"] = nbg(h, env, "fetch_assignment", A)
        return h

    # eli hands in the release, then empties the secret `nbgrader submit` wrote beside it (his folder)
    eli = late_student("eli")
    logs["submit1-eli"] = nbg(eli, env, "submit", A)
    (next(inbound.glob(f"eli+{A}+*")) / "submission_secret.txt").write_text("")
    # fay hands in every answer, then takes the timestamp.txt out of her folder: never late?
    fay = late_student("fay")
    answer(fay, CELLS)
    logs["submit1-fay"] = nbg(fay, env, "submit", A)
    (next(inbound.glob(f"fay+{A}+*")) / "timestamp.txt").unlink()
    # gil hands in, then back-dates it: his folder renamed to an earlier time, timestamp.txt and the
    # files' times rewritten to match (a student can do all of it to their own folder)
    gil = late_student("gil")
    answer(gil, CELLS)
    logs["submit1-gil"] = nbg(gil, env, "submit", A)
    real = next(inbound.glob(f"gil+{A}+*"))
    back = inbound / f"gil+{A}+{BACKDATED}+{real.name.rsplit('+', 1)[1]}"
    real.rename(back)
    (back / "timestamp.txt").write_text(BACKDATED)
    then = datetime.strptime(BACKDATED, "%Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=timezone.utc).timestamp()
    for p in [back, *back.rglob("*")]:
        os.utime(p, (then, then))
    # dan e-mailed his notebook: the instructor puts it in submitted/ by hand, beside the exchange's
    by_hand = course / "submitted" / "dan" / A
    by_hand.mkdir(parents=True)
    nbformat.write(nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4), by_hand / f"{A}.ipynb")
    (by_hand / "timestamp.txt").write_text("2026-11-27 09:00:00.000000 UTC")

    def instructor_round(tag: str):
        logs[f"collect{tag}"] = nbg(course, env, "collect", A)
        logs[f"autograde{tag}"] = nbg(course, env, "autograde", A)
        logs[f"feedback{tag}"] = nbg(course, env, "generate_feedback", A)
        logs[f"release_feedback{tag}"] = nbg(course, env, "release_feedback", A)
        logs[f"export{tag}"] = nbg(course, env, "export", "--to", f"grades{tag}.csv")
        for s, h in homes.items():
            logs[f"fetch_feedback{tag}-{s}"] = nbg(h, env, "fetch_feedback", A)

    instructor_round("1")
    scores1 = classroom.scores(course, A)
    graded1 = {s: (course / "autograded" / s / A / f"{A}.ipynb").stat().st_mtime_ns for s in ANSWERS}

    answer(homes["cy"], ANSWERS["cy"])  # cy hands in again, every answer this time
    logs["submit2-cy"] = nbg(homes["cy"], env, "submit", A)
    logs["autograde-before-collect"] = nbg(course, env, "autograde", A)  # forgetting to collect: said
    instructor_round("2")
    graded2 = {s: (course / "autograded" / s / A / f"{A}.ipynb").stat().st_mtime_ns for s in ANSWERS}
    scores2 = classroom.scores(course, A), {s: classroom.cell_scores(course, A, s) for s in ANSWERS}

    # ben's empty predictions cell earns 0.5 by hand (the formgrader), and feedback is released
    # again without being made again: his page would still say 2 of 4
    for s, score in MANUAL.items():
        formgrader(course, "grade", "predictions-test", A, s, str(score), s)
    p = subprocess.run([sys.executable, "-m", "nbgrader", "release_feedback", A], cwd=course, env=env,
                       capture_output=True, text=True)
    logs["release_stale"] = (p.returncode, p.stdout + p.stderr)
    stale_fetch = {}
    for s in MANUAL:
        logs[f"fetch_stale-{s}"] = nbg(homes[s], env, "fetch_feedback", A)
        stale_fetch[s] = page_scores(fetched_pages(homes[s])[-1])[1]
    instructor_round("3")  # the guide's commands: the page made again, then released
    return dict(stale_fetch=stale_fetch, scores2=scores2, home=home, course=course, exchange=exchange, homes=homes, logs=logs, scores1=scores1,
                fetched=fetched, regraded={s for s in ANSWERS if graded2[s] != graded1[s]})


def _rows(term, tag):
    with open(term["course"] / f"grades{tag}.csv") as f:
        return {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == A}


def test_release_and_fetch_hand_every_student_the_release(term):
    release = nbformat.read(term["course"] / "release" / A / f"{A}.ipynb", as_version=4)
    assert (term["exchange"] / COURSE_ID / "outbound" / A / f"{A}.ipynb").is_file()
    for s, nb in term["fetched"].items():
        assert nb.cells[0].get("id") == "colab-setup", s
        # what the student fetched is the release, but for the answers they then wrote
        assert [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in CELLS] == \
               [c.source for c in release.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in CELLS], s


def test_collect_takes_every_hand_in_and_the_resubmission(term):
    course, logs = term["course"], term["logs"]
    for s in ANSWERS:
        d = course / "submitted" / s / A
        assert {p.name for p in d.iterdir()} >= {f"{A}.ipynb", "timestamp.txt", "submission_secret.txt"}, s
    # plain `nbgrader collect` (the course's config, no --update) replaced cy's first hand-in
    assert "Updating submission: cy" in logs["collect2"], logs["collect2"][-3000:]
    inbound = sorted((term["exchange"] / COURSE_ID / "inbound").glob(f"cy+{A}+*"))
    assert len(inbound) == 2
    newest = inbound[-1].name.split("+")[2]
    assert (course / "submitted" / "cy" / A / "timestamp.txt").read_text().strip() == newest.strip()


def test_collect_takes_what_a_hand_in_holds_never_what_it_points_at(term):
    """Before: zed was graded as the answer key (4 of 4), ada's hand-in held the instructor's file
    (her notebook could print it onto her feedback page), and ben's FIFO stopped `collect` for
    everyone after him."""
    course, log = term["course"], term["logs"]["collect1"]
    assert not (course / "submitted" / "zed").exists(), "a link to the answer key was collected as zed's hand-in"
    said = [ln for ln in log.splitlines() if "not collected: zed+" in ln]
    assert said and "a link" in said[0], log[-3000:]
    assert not (course / "submitted" / "ada" / A / "leak.txt").exists()
    assert "leak.txt (a symbolic link)" in log and "pipe (not a regular file" in log, log[-3000:]
    for top in ("submitted", "autograded", "feedback"):
        for p in (course / top).rglob("*"):
            assert not p.is_file() or SECRET.encode() not in p.read_bytes(), p
    assert {p.name for p in (course / "submitted").iterdir()} == set(ANSWERS) | {"dan", "eli", "fay", "gil"}


def test_a_hand_in_whose_time_was_taken_out_gets_the_time_it_was_handed_in_with(term):
    """fay took timestamp.txt out of her hand-in in the exchange: nbgrader collected it without one,
    so it was never late (and collected again on every `collect`). It gets the time `nbgrader submit`
    named its folder with, and the log says so."""
    course, logs = term["course"], term["logs"]
    own = next((term["exchange"] / COURSE_ID / "inbound").glob(f"fay+{A}+*"))
    assert (course / "submitted" / "fay" / A / "timestamp.txt").read_text() == own.name.split("+")[2]
    said = [ln for ln in logs["collect1"].splitlines() if "had no timestamp.txt" in ln]
    assert len(said) == 1 and "/fay/" in said[0], logs["collect1"][-3000:]
    assert "Updating submission: fay" not in logs["collect2"], logs["collect2"][-3000:]
    row = _rows(term, "2")["fay"]
    assert row["timestamp"] and row["status"] == "graded" and float(row["score"]) == 4.0, row


def test_a_hand_in_back_dated_in_the_exchange_is_flagged(term):
    """gil handed in, then renamed his folder in the exchange to an earlier time and rewrote
    timestamp.txt and every file time to match: collected as it was, it was on time with nothing
    flagged. The collected timestamp.txt keeps when the folder last changed (its status change
    time, which no one can set back): collect's log names it, and with a due date between the two
    times the course's reading of the hand-in's time (export's check column) flags it."""
    from grader.classroom import handin_time

    course, logs = term["course"], term["logs"]
    folder = course / "submitted" / "gil" / A
    assert (folder / "timestamp.txt").read_text() == BACKDATED  # the time he named is what is read...
    said = [ln for ln in logs["collect1"].splitlines() if f"gil+{A}+{BACKDATED}" in ln and "last changed" in ln]
    assert len(said) == 1, logs["collect1"][-3000:]
    arrived = datetime.utcfromtimestamp((folder / "timestamp.txt").stat().st_mtime)
    named = handin_time.parse_time(BACKDATED)
    assert arrived - named > timedelta(days=1), (arrived, named)  # ...but not when the files arrived
    due = named + timedelta(hours=1)  # on time by the name, days late by the files
    got = handin_time.of_handin(folder, "gil", A, due=due)
    assert got.at == named and any("back-dated" in f for f in got.flags), got
    # an honest hand-in of the same collection is not flagged at a due date after it
    ada = handin_time.of_handin(course / "submitted" / "ada" / A, "ada", A, due=arrived + timedelta(days=1))
    assert not ada.flags, ada


@pytest.mark.skipif(not ACCOUNTS, reason="needs root and the accounts daemon and bin (owners are given as root)")
def test_collect_takes_a_students_own_hand_in_not_one_under_their_name(term):
    """bin handed in under daemon's name, with a later time: nbgrader warned ("cheating attempt?")
    and collected it over daemon's own; bin could also rename daemon's own hand-in away (nbgrader
    makes the inbound folder writable by all, not sticky). daemon's own is collected (and graded: the tests above),
    the other is named in the log, and autograde never counts it as a hand-in waiting."""
    course, logs = term["course"], term["logs"]
    for tag in ("1", "2"):
        said = [ln for ln in logs[f"collect{tag}"].splitlines() if "not collected: daemon+" in ln]
        assert said and "belongs to bin, not to daemon" in said[0], logs[f"collect{tag}"][-3000:]
    assert logs["bin-adds"].returncode == 0, logs["bin-adds"]  # the exchange is open to bin, as to all
    assert logs["bin-renames"].returncode != 0, "bin renamed daemon's hand-in in the exchange (its folder is not sticky)"
    assert os.stat(term["exchange"] / COURSE_ID / "inbound").st_mode & 0o1000
    stamp = (course / "submitted" / "daemon" / A / "timestamp.txt").read_text()
    assert not stamp.startswith("2099"), stamp
    own = next(p for p in (term["exchange"] / COURSE_ID / "inbound").glob(f"daemon+{A}+*") if "forged" not in p.name)
    assert stamp.strip() == own.name.split("+")[2].strip()


def test_autograde_names_a_hand_in_not_yet_collected(term):
    logs = term["logs"]
    said = [ln for ln in logs["autograde-before-collect"].splitlines() if "handed in" in ln]
    assert len(said) == 1 and "cy handed in" in said[0], logs["autograde-before-collect"][-3000:]
    assert f"nbgrader collect {A}" in logs["autograde-before-collect"]
    for tag in ("1", "2"):  # collected: nothing to say
        assert "handed in" not in logs[f"autograde{tag}"], logs[f"autograde{tag}"][-3000:]


def test_autograde_through_the_course_pipeline_regrades_only_the_resubmission(term):
    got1, (got2, cells2) = term["scores1"], term["scores2"]  # after the second round
    for s in ANSWERS:
        assert got1[s] == (sum(points(FIRST[s]).values()), 4.0), (s, got1[s])
        assert got2[s] == (sum(points(ANSWERS[s]).values()), 4.0), (s, got2[s])
        assert cells2[s] == points(ANSWERS[s]), s
    assert term["regraded"] == {"cy"}
    for tag in ("1", "2"):  # the sandbox and the trusted grader graded it, as plain autograde does
        log = term["logs"][f"autograde{tag}"]
        assert "refused" not in log and "TC_NO_SANDBOX" not in log, log[-3000:]


def test_release_feedback_releases_every_page(term):
    for tag in ("1", "2"):
        log = term["logs"][f"release_feedback{tag}"]
        assert "Traceback" not in log and "FileNotFoundError" not in log, log[-3000:]
        for s in ANSWERS:
            assert f"Releasing feedback for student '{s}'" in log, (s, log[-3000:])
        # dan's hand-in came by hand: named, skipped, and the rest released all the same
        assert "not released: dan's hand-in" in log and "student 'dan'" not in log, log[-3000:]
        # eli emptied his secret: nbgrader stopped there (AssertionError), releasing none after him
        said = [ln for ln in log.splitlines() if "not released: eli's hand-in" in ln]
        assert said and "empty or not text" in said[0] and "student 'eli'" not in log, log[-3000:]
    assert (term["course"] / "feedback" / "dan" / A / f"{A}.html").is_file()
    released = list((term["exchange"] / COURSE_ID / "feedback").glob("*.html"))
    # cy's first page, under its own hand-in's secret, stays; and fay's and gil's pages
    assert len(released) == len(ANSWERS) + 3


def test_every_student_fetches_their_own_verdicts_and_score(term):
    for s, h in term["homes"].items():
        pages = fetched_pages(h)
        assert len(pages) == (2 if s == "cy" else 1), (s, pages)
        said, total = page_scores(pages[-1])
        want = points(ANSWERS[s])
        if s in MANUAL:  # the trusted grader's line of a cell graded by hand gives way to the instructor's
            del want["predictions-test"]
        assert sorted(said) == sorted(want.values()), (s, said)
        assert total == (sum(want.values()) + MANUAL.get(s, 0), 4.0), (s, total)
        text = text_of(pages[-1])
        assert "BEGIN HIDDEN TESTS" not in text
        assert "Graded by the course's trusted grader" in text and "WITHOUT the sandbox" not in text, s
        assert "not yet" in text.lower() if s == "ben" else True  # ben's empty cell says what to do
    # cy's first page, fetched before the resubmission, still shows the untouched hand-in's 0
    said, total = page_scores(fetched_pages(term["homes"]["cy"])[0])
    assert total == (0.0, 4.0) and said == [0.0, 0.0]


def test_release_feedback_never_hands_out_a_page_the_gradebook_has_moved_past(term):
    rc, out = term["logs"]["release_stale"]
    assert rc == 1 and "not released: ben's feedback page of 02-precision is stale" in out, out[-3000:]
    assert f"nbgrader generate_feedback {A}" in out and "Traceback" not in out, out[-3000:]
    assert "Releasing feedback for student 'ada'" in out, out[-3000:]  # everyone else's is released
    assert "student 'ben'" not in out, out[-3000:]
    assert term["stale_fetch"]["ben"] == (2.0, 4.0)  # ben still has the page released before, never a wrong new one
    assert "Releasing feedback for student 'ben'" in term["logs"]["release_feedback3"]


def test_an_id_with_a_comma_is_held_back_and_released_as_any_other(term):
    """nbgrader's exclusion list (student_id_exclude) is split on commas: kim,lee's stale page was
    released (and a "kim" or "lee" would have been held back)."""
    rc, out = term["logs"]["release_stale"]
    assert rc == 1 and f"not released: {COMMA}'s feedback page of {A} is stale" in out, out[-3000:]
    assert f"student '{COMMA}'" not in out, out[-3000:]
    assert term["stale_fetch"][COMMA] == (2.0, 4.0)  # the page released before, not the stale one
    assert f"Releasing feedback for student '{COMMA}'" in term["logs"]["release_feedback3"]


@pytest.mark.skipif(not NAMESAKE, reason="needs a system account named news")
def test_collect_takes_the_hand_in_of_a_student_named_like_a_system_account(term):
    """news writes as every other student here: their hand-in was refused ("belongs to root, not to
    news") and never graded, because the id names an account of this machine."""
    course, logs = term["course"], term["logs"]
    for tag in ("1", "2"):
        assert f"not collected: {NAMESAKE}+" not in logs[f"collect{tag}"], logs[f"collect{tag}"][-3000:]
    assert (course / "submitted" / NAMESAKE / A / f"{A}.ipynb").is_file()
    assert term["scores2"][0][NAMESAKE] == (4.0, 4.0)


@pytest.mark.skipif(os.geteuid() != 0 or not _accounts("news", "nobody"), reason="needs root (owners are given "
                    "as root) and the accounts news and nobody")
def test_collect_where_students_write_as_one_account_takes_every_hand_in(tmp_path):
    """Students who all write as one account that is not yours (`nobody` here, as a Hub's shared user):
    no hand-in in the exchange is its own account's, so ids are not accounts, and news's hand-in is
    collected beside ada's, not refused as not belonging to the account news."""
    exchange = Path(tempfile.mkdtemp(prefix="tc-exchange-"))
    try:
        hub = tmp_path / "hub-config"
        hub.mkdir()
        (hub / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n")
        inbound = exchange / COURSE_ID / "inbound"
        inbound.mkdir(parents=True)
        for s in ("news", "ada"):
            folder = inbound / f"{s}+{A}+2026-11-27 10:00:00.000000 UTC+x"
            folder.mkdir()
            (folder / f"{A}.ipynb").write_text("{}")
            (folder / "timestamp.txt").write_text("2026-11-27 10:00:00.000000 UTC")
            subprocess.run(["chown", "-R", "nobody", str(folder)], check=True)
        course = classroom.new_course(tmp_path / "course")
        out = nbg(course, _env(hub), "collect", A)
        assert "not collected" not in out, out[-3000:]
        assert {p.name for p in (course / "submitted").iterdir()} == {"news", "ada"}, out[-3000:]
    finally:
        shutil.rmtree(exchange, ignore_errors=True)


def test_feedback_fetched_is_the_page_the_instructor_made(term):
    course = term["course"]
    for s, h in term["homes"].items():
        assert fetched_pages(h)[-1].read_text() == (course / "feedback" / s / A / f"{A}.html").read_text(), s


def test_export_agrees_with_the_pages(term):
    for tag, answers in (("1", FIRST), ("2", ANSWERS)):
        rows = _rows(term, tag)
        for s in ANSWERS:
            r = rows[s]
            assert (float(r["score"]), float(r["max_score"]), r["status"]) == \
                   (sum(points(answers[s]).values()), 4.0, "graded"), (tag, s, r)
            assert r["timestamp"], (tag, s, r)  # the exchange's time of the hand-in
        assert (float(rows["dan"]["score"]), rows["dan"]["status"]) == (0.0, "graded"), rows["dan"]
