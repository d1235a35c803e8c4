"""The formgrader and the feedback page of a hostile hand-in, in a real headless browser (issue 32,
item 1): the formgrader runs as `./course.sh grade` starts it (on the red team's course,
tests/redteam.py), and no script of the student's runs there or in the feedback page, whichever
way the notebook tried (tests/classroom/test_outputs.py's hand-ins); an honest student's plot still shows.
A notebook written into autograded/ unsanitized (by an older autograde, by hand) is rendered safe
by the formgrader too. The server has no terminals and sends a Content-Security-Policy that
allows no inline script but its own."""
from __future__ import annotations

import json
import secrets
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from browser import browser_page, free_port, jupyter_env, stop, wait_http  # noqa: F401 (browser_page: the fixture)
from redteam import require_sandbox
from test_outputs import ASSIGNMENT, FILES_BESIDE, _hostile_executed, feedback  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow
require_sandbox()

ROOT = Path(__file__).resolve().parents[2]
PROBE = "() => ({pwned: window.__pwned === undefined ? null : String(window.__pwned), title: document.title})"


@pytest.fixture(scope="module")
def formgrader(redteam, tmp_path_factory):
    """`./course.sh grade` on the red team's course (TC_COURSE_DIR), on a free port with a token."""
    root = redteam["root"]
    # a hostile notebook as an autograde without the course's sanitizer would have left it
    legacy = root / "autograded" / "out-legacy" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    legacy.chmod(0o644)
    nb = nbformat.read(legacy, as_version=4)
    hostile = _hostile_executed()
    nb.cells = hostile.cells + nb.cells
    nb.metadata.update(hostile.metadata)
    nbformat.write(nb, legacy)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(jupyter_env(tmp_path_factory.mktemp("formgrader")), TC_COURSE_DIR=str(root))
    proc = subprocess.Popen([str(ROOT / "course.sh"), "grade", "--no-browser", f"--port={port}",
                             "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
                             f"--IdentityProvider.token={token}"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/api/status?token={token}", proc)
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            ids = {s: gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, s).id
                   for s in ("out-hostile", "out-honest-plot", "out-legacy")}
        yield dict(base=base, token=token, ids=ids, root=root)
    finally:
        stop(proc)


def _open(page, url: str):
    page.goto(url, wait_until="load")
    page.wait_for_timeout(1500)  # let onload/onerror handlers and deferred scripts have their chance
    # a link a student left (javascript:) runs only when clicked: click every one without a real target
    page.evaluate("""() => document.querySelectorAll('a').forEach(a => {
        const h = a.getAttribute('href'); if (!h || /^\\s*javascript:/i.test(h)) a.click(); })""")
    page.wait_for_timeout(300)
    return page.evaluate(PROBE)


def _login(page, fg):
    _record(page)
    page.goto(f"{fg['base']}/formgrader?token={fg['token']}", wait_until="load")


def _record(page):
    """Keep what the browser says (console messages, page errors) on page.console_log."""
    if not hasattr(page, "console_log"):
        page.console_log = []
        page.on("console", lambda m: page.console_log.append(f"console.{m.type}: {m.text}"))
        page.on("pageerror", lambda e: page.console_log.append(f"pageerror: {e}"))


@pytest.mark.parametrize("student", ["out-hostile", "out-legacy"])
def test_formgrader_runs_no_script_of_a_hostile_hand_in(formgrader, browser_page, student):
    page = browser_page
    _login(page, formgrader)
    state = _open(page, f"{formgrader['base']}/formgrader/submissions/{formgrader['ids'][student]}")
    print("\n".join(page.console_log))  # recorded: what the browser said (CSP refusals, missing CDN)
    assert state == {"pwned": None, "title": ASSIGNMENT}, (state, page.console_log)
    assert not any("__pwned" in m and "pageerror" in m for m in page.console_log)
    # the page is the formgrader's, working under its policy: its own scripts filled the scores in
    assert page.locator("input.score").count() >= 1
    assert page.locator("input.score").first.get_attribute("placeholder") == "0", page.console_log  # auto score
    assert not [m for m in page.console_log if "Content Security Policy" in m and "/formgrader/static" in m]
    if student == "out-hostile":
        assert "My notes" in page.content()  # the student's markdown still shows, as data


@pytest.mark.parametrize("where", ["manage_assignments", "gradebook", f"gradebook/{ASSIGNMENT}/{ASSIGNMENT}",
                                   "manage_students"])
def test_the_formgraders_own_pages_work_under_its_policy(formgrader, browser_page, where):
    page = browser_page
    _login(page, formgrader)
    page.goto(f"{formgrader['base']}/formgrader/{where}", wait_until="load")
    page.wait_for_timeout(1500)
    refused = [m for m in page.console_log if "Content Security Policy" in m]
    assert refused == [], refused
    assert page.locator("td").count() >= 1, page.console_log  # its scripts filled the table in


def test_formgrader_shows_an_honest_plot(formgrader, browser_page):
    page = browser_page
    _login(page, formgrader)
    _open(page, f"{formgrader['base']}/formgrader/submissions/{formgrader['ids']['out-honest-plot']}")
    widths = page.evaluate("""() => [...document.querySelectorAll('img')]
        .filter(i => i.src.startsWith('data:image/png')).map(i => i.naturalWidth)""")
    assert widths and max(widths) > 50, widths  # the matplotlib figure decoded and drawn
    # the plot the student saved beside the notebook, shown by its markdown from the autograded folder
    saved = page.evaluate("""() => [...document.querySelectorAll('img')]
        .filter(i => i.getAttribute('src') === 'plot.png').map(i => i.naturalWidth)""")
    assert saved == [120], (saved, page.console_log)
    assert page.locator("th", has_text="GFLOPS").count() == 1


@pytest.mark.parametrize("name", sorted(FILES_BESIDE["hostile"]))
def test_formgrader_serves_a_hand_ins_own_files_as_inert_text(formgrader, browser_page, name):
    """nbgrader's formgrader serves every file of a student's autograded folder, which autograde
    copied from the hand-in, at /formgrader/submissions/<id>/<file>: on the instructor's origin, with
    the instructor's session. An .html or .svg the student put beside the notebook (and linked to from
    it) ran its script there. Opened in the browser as the instructor would (the link clicked, the
    address typed), nothing of it runs, and what it holds is shown as text."""
    page = browser_page
    _login(page, formgrader)
    url = f"{formgrader['base']}/formgrader/submissions/{formgrader['ids']['out-hostile']}/{name}"
    state = _open(page, url)
    print("\n".join(page.console_log))
    assert state["pwned"] is None, (name, state, page.console_log)
    assert page.evaluate("() => document.contentType") == "text/plain", name
    assert "__pwned" in page.evaluate("() => document.body.innerText"), "the file is shown, as text"
    with urllib.request.urlopen(f"{url}?token={formgrader['token']}", timeout=30) as r:
        csp = r.headers.get("Content-Security-Policy", "")
    assert csp.split(";")[0].strip() == "sandbox" and "allow-scripts" not in csp, csp
    # the notebook's own link to it leads to the same place, and nothing runs there either
    page.goto(f"{formgrader['base']}/formgrader/submissions/{formgrader['ids']['out-hostile']}/", wait_until="load")
    link = page.locator("a", has_text="my notes")
    assert link.count() == 1
    link.first.click()
    page.wait_for_timeout(1000)
    assert page.url.endswith("/notes.html") and page.evaluate(PROBE)["pwned"] is None, page.url


def test_formgraders_api_answers_are_inert_data(formgrader, browser_page):
    """The formgrader's API answers JSON that holds student data (ids, names) as text/html: opened
    as a page (a link in a hand-in to /formgrader/api/students), any markup in it would have run.
    It is text, in an origin of its own; the formgrader's pages, which read it, still work (the
    policy test above)."""
    page = browser_page
    _login(page, formgrader)
    url = f"{formgrader['base']}/formgrader/api/students"
    page.goto(url, wait_until="load")
    assert page.evaluate("() => document.contentType") == "text/plain"
    assert any(s["id"] == "out-hostile" for s in json.loads(page.evaluate("() => document.body.innerText")))
    with urllib.request.urlopen(f"{url}?token={formgrader['token']}", timeout=30) as r:
        assert r.headers.get("Content-Security-Policy", "").split(";")[0].strip() == "sandbox"


def test_feedback_page_runs_no_script(redteam, feedback, browser_page):
    page = browser_page
    _record(page)
    path = redteam["root"] / "feedback" / "out-hostile" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    state = _open(page, path.as_uri())
    print("\n".join(page.console_log))
    assert state == {"pwned": None, "title": ASSIGNMENT}, (state, page.console_log)
    assert "Graded by the course's trusted grader" in page.content()


def test_the_server_has_no_terminals_and_a_script_policy(formgrader):
    base, token = formgrader["base"], formgrader["token"]
    req = urllib.request.Request(f"{base}/api/terminals?token={token}", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code in (403, 404), e.value.code
    with urllib.request.urlopen(f"{base}/formgrader/submissions/{formgrader['ids']['out-hostile']}?token={token}",
                                timeout=30) as r:
        csp = r.headers.get("Content-Security-Policy", "")
    assert "script-src" in csp and "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";")[0], csp
    # the kernel API an instructor's lab needs is still there
    with urllib.request.urlopen(f"{base}/api/kernelspecs?token={token}", timeout=10) as r:
        assert "kernelspecs" in json.loads(r.read())
