"""A hand-in's outputs are data, never code (issue 32, items 1 and 5): every way a notebook can
put script in front of the instructor (the formgrader) or a student (the feedback page) is
handed in and graded by real nbgrader with the course's config (the red team's shared course,
tests/redteam.py), and the autograded notebook and feedback page hold nothing that runs; a
huge output is cut with a note; an honest student's plot, table and verdicts still show and
score right. The unit tests at the top run SafeOutputs alone; tests/classroom/test_browser_outputs.py
opens the same pages in a real browser.
"""
from __future__ import annotations

import base64
import io
import json
import re

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from grader.classroom.safe_outputs import SafeOutputs, clean_html, safe_markdown

ASSIGNMENT = "01-memory-layout"  # graded in the red team's course; Python answers and a kernel
PWN = "window.__pwned=document.title=`{}`"  # what a student's script would do (no quotes: fits anywhere)
HUGE_MB = 30  # one print of one line (issue 32 measured 200 MB; the cut is the same)
MANY = 3000  # outputs of one cell

SVG_SCRIPT = ("<svg xmlns='http://www.w3.org/2000/svg' onload=\"" + PWN.format("svg-onload") + "\">"
              "<script>" + PWN.format("svg") + "</script><circle r='5'/></svg>")

# What the student's answer cell runs, each line another way to put script on a page.
HOSTILE_CODE = r'''
from IPython.display import display, HTML, Javascript, Markdown
display(HTML("<script>PWN_html</script><b id='x'>bold</b>"))
display(HTML('<img src="nope" onerror="PWN_img"><a href="javascript:PWN_jsurl">click</a>'))
display(HTML('<iframe srcdoc="<script>parent.PWN_iframe</script>"></iframe><object data="javascript:PWN_object"></object>'))
display(HTML('<div style="position:fixed;top:0;left:0;width:100%;height:100%;background:url(javascript:PWN_css)">x</div>'))
display(Javascript("PWN_js"))
display({"image/svg+xml": SVG}, raw=True)
display({"text/markdown": "<img src=x onerror=\"PWN_mdout\"> and [a](javascript:window.__pwned=1)"}, raw=True)
display({"text/vnd.mermaid": "</pre><img src=x onerror=\"PWN_mermaid\">"}, raw=True)
display({"image/png": "\"><img src=x onerror=\"PWN_png\">"}, metadata={"image/png": {"width": "1 onload=PWN_width"}}, raw=True)
display({"text/latex": "$\\href{javascript:PWN_latex}{x}$"}, raw=True)
try:
    from comm import create_comm
    w = create_comm(target_name="jupyter.widget", data={"state": {
        "_model_name": "HTMLModel", "_model_module": "@jupyter-widgets/controls", "_model_module_version": "2.0.0",
        "_view_name": "HTMLView", "_view_module": "@jupyter-widgets/controls", "_view_module_version": "2.0.0",
        "value": "<img src=x onerror=\"PWN_widget\">"}, "buffer_paths": []}, metadata={"version": "2.1.0"})
    display({"application/vnd.jupyter.widget-view+json": {"model_id": w.comm_id, "version_major": 2,
                                                          "version_minor": 0}, "text/plain": "HTML()"}, raw=True)
except Exception as e:
    print("no comm:", e)
'''


def _pwn(text: str) -> str:
    return re.sub(r"PWN_(\w+)", lambda m: PWN.format(m.group(1)), text)


def make_hostile(nb):
    """The release plus every vector: in the answer cell's outputs, a markdown cell, an
    attachment, the notebook's own metadata (a title and widget state, as a file can carry)."""
    from redteam import add_code

    add_code(nb, _pwn(HOSTILE_CODE).replace("SVG", repr(SVG_SCRIPT)))
    md = new_markdown_cell(_pwn("# My notes\n\n<script>PWN_mdcell</script>\n\n<img src=x onerror=\"PWN_mdimg\">\n\n"
                                "[link](javascript:window.__pwned=1) ![pic](attachment:evil.svg) "
                                "[my notes](notes.html)\n"))
    md["attachments"] = {"evil.svg": {"image/svg+xml": base64.b64encode(SVG_SCRIPT.encode()).decode()}}
    nb.cells.insert(1, md)
    nb.metadata["title"] = "</title><script>" + PWN.format("title") + "</script>"
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"version_major": 2, "version_minor": 0,
                              "state": {"m1": {"model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls",
                                               "model_module_version": "2.0.0",
                                               "state": {"value": "<img src=x onerror=\"" + PWN.format("state") + "\">"}}}}}
    return nb


def make_huge(nb):
    from redteam import add_code

    add_code(nb, f"print('x' * ({HUGE_MB} * 1000 * 1000))")
    return nb


def make_many(nb):
    from redteam import add_code

    add_code(nb, f"for i in range({MANY}):\n    display(i)")
    return nb


PLOT_CODE = '''
import matplotlib
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot([0, 1, 2], [0, 1, 4], label="my curve")
plt.show()
from IPython.display import display, HTML
display(HTML("<table><tr><th>size</th><th style='color:#0969da'>GFLOPS</th></tr><tr><td>256</td><td>1.5</td></tr></table>"))
'''


def make_honest_plot(nb):
    """An honest student who plotted and showed a table, and solved nothing (0 points)."""
    from redteam import add_code

    add_code(nb, PLOT_CODE)
    nb.cells.insert(1, new_markdown_cell("The same plot, saved: ![my saved plot](plot.png)"))
    return nb


def _png(width: int, height: int) -> bytes:
    """A real PNG of one colour (what an honest student saves from a plot)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\x20\x60\xc0" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


# Files a hand-in carries beside its notebook: nbgrader copies them to autograded/ and its formgrader
# serves them from there, on the instructor's own origin (/formgrader/submissions/<id>/<file>); the
# hostile notebook links to one (a relative link: any sanitizer keeps it). The honest student shows
# a plot saved beside the notebook. Written into the hand-in folders by tests/redteam.py.
FILES_BESIDE = {
    "hostile": {"notes.html": _pwn("<html><head><title>notes</title></head><body><script>PWN_file_html</script>"
                                   "<img src=x onerror=\"PWN_file_img\"></body></html>").encode(),
                "plain.htm": _pwn("<script>PWN_file_htm</script>").encode(),
                "figure.svg": SVG_SCRIPT.replace("svg-onload", "file_svg").encode(),
                "page.xhtml": _pwn("<html xmlns='http://www.w3.org/1999/xhtml'><body><script>PWN_file_xhtml"
                                   "</script></body></html>").encode(),
                "data.json": _pwn('{"x": "<script>PWN_file_json</script>"}').encode()},
    "honest-plot": {"plot.png": _png(120, 80)},
}

# The red team's course (tests/redteam.py) hands these in as students out-NAME. "legacy" is the
# release: tests/classroom/test_browser_outputs.py overwrites its autograded notebook with an unsanitized one.
HANDINS = {"hostile": make_hostile, "huge": make_huge, "many": make_many, "honest-plot": make_honest_plot,
           "legacy": lambda nb: nb}


# ------------------------------------------------------------------------------ checks
def executable(html: str) -> list[str]:
    """What in a page would run a student's script: any marker of PWN inside a <script>, an
    event handler, a javascript: URL, an iframe/object/embed/svg, widget state."""
    soup = BeautifulSoup(html, "html.parser")
    found = []
    for tag in soup.find_all(True):
        if tag.name == "script":
            if "__pwned" in (tag.string or "") or tag.get("src", "").startswith("data:"):
                found.append(f"script: {str(tag)[:120]}")
            if "widget-state" in tag.get("type", "") or "widget-view" in tag.get("type", ""):
                found.append(f"widget script: {str(tag)[:120]}")
        if tag.name in ("iframe", "object", "embed", "svg", "frame", "base", "form") or \
                (tag.name == "meta" and tag.get("http-equiv")):
            found.append(f"<{tag.name}>: {str(tag)[:120]}")
        for name, value in tag.attrs.items():
            value = " ".join(value) if isinstance(value, list) else str(value)
            if name.lower().startswith("on") and "__pwned" in value:
                found.append(f"{name}= on <{tag.name}>: {value[:80]}")
            if name.lower() in ("href", "src", "data", "action", "formaction", "xlink:href") and \
                    re.match(r"\s*(javascript|vbscript|data:text|data:image/svg)", value, re.I):
                found.append(f"{name}= {value[:80]} on <{tag.name}>")
            if name.lower() == "style" and ("url(" in value or "position" in value):
                found.append(f"style= {value[:80]}")
    return found


def notebook_executable(nb) -> list[str]:
    """The same, for a notebook as JupyterLab or nbconvert would render it."""
    found = []
    for name in nb.metadata:
        if name not in ("kernelspec", "language_info", "nbgrader"):
            found.append(f"notebook metadata {name}")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            found += [f"cell {i} markdown: {f}" for f in executable(safe_markdown_rendering(cell))]
            for att in (cell.get("attachments") or {}).values():
                found += [f"cell {i} attachment {m}" for m in att if m not in ("image/png", "image/jpeg", "image/gif")]
        for out in cell.get("outputs", []):
            for mime, value in (out.get("data") or {}).items():
                if mime not in ("text/plain", "text/html", "image/png", "image/jpeg", "image/gif"):
                    found.append(f"cell {i} output {mime}")
                elif mime == "text/html":
                    found += [f"cell {i} html: {f}" for f in executable(value)]
                elif mime.startswith("image/"):
                    base64.b64decode(value, validate=True)
    return found


def safe_markdown_rendering(cell) -> str:
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=cell.get("attachments", {}))).render(
        cell.source)


# ------------------------------------------------------------------- SafeOutputs alone
def _run(nb, **caps):
    pre = SafeOutputs(**caps)
    nb, _ = pre.preprocess(nb, {})
    return nb


def _hostile_executed():
    """The hostile notebook as an execution would leave it (outputs written by hand)."""
    nb = nbformat.v4.new_notebook()
    md = new_markdown_cell(_pwn("<script>PWN_md</script> [a](javascript:PWN_a) ![p](attachment:e.svg)"))
    md["attachments"] = {"e.svg": {"image/svg+xml": base64.b64encode(SVG_SCRIPT.encode()).decode()}}
    code = new_code_cell("x")
    code.outputs = [
        new_output("display_data", data={"text/html": _pwn("<script>PWN_1</script><img src=x onerror='PWN_2'>"),
                                         "text/plain": "<HTML>"}),
        new_output("display_data", data={"application/javascript": _pwn("PWN_3")}),
        new_output("display_data", data={"image/svg+xml": SVG_SCRIPT}),
        new_output("display_data", data={"image/png": '"><img src=x onerror="x">'},
                   metadata={"image/png": {"width": "1 onload=x"}}),
        new_output("display_data", data={"text/markdown": _pwn("<img src=x onerror='PWN_4'>")}),
        new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "m1"}}),
    ]
    nb.cells = [md, code]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb.metadata["title"] = "</title><script>x</script>"
    return nb


def test_every_vector_is_reduced_to_data():
    nb = _run(_hostile_executed())
    assert notebook_executable(nb) == []
    assert "widgets" not in nb.metadata and "title" not in nb.metadata
    outs = nb.cells[1].outputs
    assert len(outs) == 6  # none vanished without a trace
    assert "<script" not in outs[0].data["text/html"] and "__pwned" not in outs[0].data["text/html"]
    assert "removed by the grader" in outs[1].data["text/plain"] and "application/javascript" in outs[1].data["text/plain"]
    assert "image/svg+xml" in outs[2].data["text/plain"]
    assert "image/png" not in outs[3].data and outs[3].get("metadata", {}) == {}
    from grader.classroom.safe_outputs import BLANK_PNG  # the SVG attachment: a blank stand-in, still named
    assert nb.cells[0].attachments == {"e.svg": {"image/png": BLANK_PNG}}


def test_the_page_check_sees_script_where_nothing_sanitizes():
    """executable() is the check the pages below must pass: it finds the vectors in a page
    nbconvert renders from the raw notebook, and none once SafeOutputs ran."""
    from nbconvert.exporters import HTMLExporter

    raw, _ = HTMLExporter(template_name="classic").from_notebook_node(_hostile_executed())
    found = executable(raw)
    assert len(found) >= 4 and any("onerror" in f for f in found) and any("script" in f for f in found), found
    safe, _ = HTMLExporter(template_name="classic").from_notebook_node(_run(_hostile_executed()))
    assert executable(safe) == []


def test_honest_outputs_keep_their_look():
    """A verdict (its styles and error-map picture), a plot, a table, plain markdown: unchanged."""
    from grader.checking.verdict import FAIL, PASS, Item, Verdict
    import numpy as np

    v = Verdict("sgemm-naive", "emu", max_score=1)
    v.items.append(Item("compile", PASS, "compiled"))
    v.items.append(Item("correct", FAIL, "3 elements are wrong", kind="wrong-result", hint="a hint",
                        error_map=np.array([[0.0, 1.0], [0.5, 0.0]]), tile=(16, 16)))
    html = v._repr_html_()
    cleaned = clean_html(html)
    soup = BeautifulSoup(cleaned, "html.parser")
    assert soup.find("img")["src"].startswith("data:image/png;base64,")
    assert "border-left" in cleaned and "3 elements are wrong" in cleaned and "a hint" in cleaned
    assert BeautifulSoup(html, "html.parser").get_text() == soup.get_text()
    md = "# Title\n\nsome *text*, `a<b`, $x^2 < y$, [docs](https://docs.nvidia.com) and a quote:\n\n> q"
    assert safe_markdown(md) == md
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 20).decode()
    nb = nbformat.v4.new_notebook()
    cell = new_code_cell("plot")
    cell.outputs = [new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"},
                               metadata={"image/png": {"width": 300}}),
                    new_output("execute_result", data={"text/plain": "1.0"}, execution_count=1)]
    nb.cells = [cell]
    out = _run(nb).cells[0].outputs
    assert out[0].data["image/png"] == png and out[0].metadata == {"image/png": {"width": 300}}
    assert out[1].data == {"text/plain": "1.0"}


def test_size_is_capped_with_a_note():
    nb = nbformat.v4.new_notebook()
    big = new_code_cell("print")
    big.outputs = [new_output("stream", name="stdout", text="x" * 5_000_000)]
    many = new_code_cell("many")
    many.outputs = [new_output("display_data", data={"text/plain": str(i)}) for i in range(2000)]
    score = new_code_cell("graded")
    score.outputs = [new_output("stream", name="stdout", text="y" * 3_000_000),
                     new_output("error", ename="E", evalue="v", traceback=["t" * 100] * 100_000),
                     new_output("execute_result", data={"text/plain": "0.0"}, execution_count=1)]
    nb.cells = [big, many, score]
    nb = _run(nb, max_cell_bytes=1_000_000, max_notebook_bytes=2_500_000, max_cell_outputs=500)
    sizes = [len(json.dumps(c.outputs)) for c in nb.cells]
    assert sizes[0] < 1_100_000 and "5,000,000" not in nb.cells[0].outputs[-1].data["text/plain"]
    assert "4,000,000 bytes" in nb.cells[0].outputs[-1].data["text/plain"]
    assert len(nb.cells[1].outputs) == 501 and "1,500 more outputs" in nb.cells[1].outputs[-1].data["text/plain"]
    # the notebook's budget is spent, yet the error and the score of the last cell stay
    kinds = [o.output_type for o in nb.cells[2].outputs]
    assert "error" in kinds and "execute_result" in kinds and sum(sizes) < 2_700_000
    assert nb.cells[2].outputs[kinds.index("execute_result")].data["text/plain"] == "0.0"


def test_html_that_would_cost_the_parser_minutes_is_shown_as_text():
    """1 MB of elements nested deep (quadratic work for an HTML parser: bleach took 78 s on the
    first here, nh3 64 s and 140 s on the next two) is escaped as text at once; 1.4 MB of honest
    table is cleaned as HTML."""
    import time

    t0 = time.monotonic()
    nested = clean_html("<div style='color:red'><b>x</b><img src=x onerror=y>" * 20000)
    closed_late = clean_html("<div>" * 100_000 + "x" + "</div>" * 100_000)  # nh3 alone: 64 s
    misnested = clean_html("<b>x</i>" * 125_000)  # nh3 alone: 140 s
    table = clean_html("<table>" + "<tr><td>1</td><td style='color:red'>2</td></tr>" * 30000 + "</table>")
    assert time.monotonic() - t0 < 20
    for text in (nested, closed_late, misnested):
        assert text.startswith("<pre>&lt;") and "<img" not in text and "<div" not in text
    assert table.count("<td") == 60000 and 'style="color:red"' in table


def test_budget_cuts_while_the_notebook_runs():
    from grader.classroom.safe_outputs import OutputBudget

    cell = new_code_cell("x")
    b = OutputBudget(cell_cap=1000, nb_cap=10_000, max_outputs=3)
    content = {"name": "stdout", "text": "z" * 5000}
    assert b.admit(cell, 0, content) and len(content["text"]) == 1000
    assert not b.admit(cell, 0, {"name": "stdout", "text": "more"})
    assert cell.metadata["course"]["output_cut"] == {"bytes": 4000 + 4 + 64, "outputs": 1}
    assert b.admit(cell, 0, {"ename": "E", "evalue": "v", "traceback": ["t" * 100] * 100})  # an error stays
    b.forget(0)  # clear_output: a redrawn progress line starts again
    assert b.admit(cell, 0, {"name": "stdout", "text": "ok"})


def test_the_guard_refuses_pipelines_without_the_sanitizer():
    from grader.classroom import hardening
    from grader.classroom.autograde import TrustedGrade
    from nbgrader.preprocessors import SaveAutoGrades

    assert "not in the generate_feedback pipeline" in hardening._safe_outputs_problem([], "generate_feedback")
    assert "must come last" in hardening._safe_outputs_problem([SafeOutputs, SaveAutoGrades], "autograde", last=True)
    assert hardening._safe_outputs_problem([TrustedGrade, SaveAutoGrades, SafeOutputs], "autograde", last=True) is None


@pytest.mark.parametrize("command, setting", [
    ("autograde", "c.Autograde.autograde_preprocessors = [p for p in c.Autograde.autograde_preprocessors "
                  "if p is not SafeOutputs]"),
    ("autograde", "c.Autograde.autograde_preprocessors = [SafeOutputs] + [p for p in "
                  "c.Autograde.autograde_preprocessors if p is not SafeOutputs]"),
    ("generate_feedback", "c.GenerateFeedback.preprocessors = [p for p in c.GenerateFeedback.preprocessors "
                          "if p is not SafeOutputs]"),
])
def test_nbgrader_refuses_to_write_unsanitized_outputs(tmp_path, command, setting):
    """A course config that leaves the sanitizer out (or runs it before the trusted grader writes
    its verdicts): real nbgrader stops before touching a hand-in, saying why and what to do."""
    from grader.classroom import workflow as classroom

    course = classroom.new_course(tmp_path / "course")
    (course / "nbgrader_config.py").write_text((course / "nbgrader_config.py").read_text() + "\n" + setting + "\n")
    r = classroom.nbgrader(course, command, ASSIGNMENT, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and f"{command} refused" in out and "SafeOutputs" in out, out[-3000:]
    assert "git diff course/nbgrader_config.py" in out and "git checkout" not in out
    assert not (course / "autograded").exists() and not (course / "feedback").exists()


# ------------------------------------------------------------ through real nbgrader
def _autograded(root, student):
    return nbformat.read(root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def feedback(redteam):
    from grader.classroom import workflow as classroom

    root = redteam["root"]
    classroom.nbgrader(root, "generate_feedback", ASSIGNMENT, "--student", "out-*", "--force")
    return {s: (root / "feedback" / f"out-{s}" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text() for s in HANDINS}


@pytest.mark.slow
def test_hostile_outputs_never_reach_a_page_as_code(redteam, feedback):
    from grader.classroom import workflow as classroom

    root = redteam["root"]
    nb = _autograded(root, "out-hostile")
    assert notebook_executable(nb) == []
    text = json.dumps(nb)
    # every vector ran (the sandboxed kernel produced it) and is there as text, not lost silently
    assert "removed by the grader" in text and "application/javascript" in text
    assert executable(feedback["hostile"]) == []
    assert "my notes" in feedback["hostile"].lower()  # the student's markdown still shows
    assert classroom.scores(root, ASSIGNMENT)["out-hostile"][0] == 0.0


@pytest.mark.slow
def test_huge_and_many_outputs_are_cut_with_a_note(redteam, feedback):
    root = redteam["root"]
    cap = SafeOutputs()
    for student in ("out-huge", "out-many"):
        path = root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert path.stat().st_size < cap.max_notebook_bytes + 1_000_000, (student, path.stat().st_size)
        assert "output cut by the grader" in path.read_text()
        assert len(feedback[student.split("-", 1)[1]]) < cap.max_notebook_bytes + 2_000_000
        assert "output cut by the grader" in feedback[student.split("-", 1)[1]]
    # the one-line print (and its newline) less what a cell keeps
    huge = (root / "autograded" / "out-huge" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert f"{HUGE_MB * 1000 * 1000 + 1 - cap.max_cell_bytes:,} bytes" in huge


@pytest.mark.slow
def test_honest_plot_table_and_verdicts_still_show(redteam, feedback):
    from grader.classroom import workflow as classroom

    root = redteam["root"]
    page = BeautifulSoup(feedback["honest-plot"], "html.parser")
    assert any(img.get("src", "").startswith("data:image/png;base64,") for img in page.find_all("img"))
    assert page.find("th", string="GFLOPS") is not None
    assert "Graded by the course's trusted grader" in page.get_text()
    assert classroom.scores(root, ASSIGNMENT)["out-honest-plot"][0] == 0.0  # the release solved nothing
    # alice, graded in the same course, keeps every point a CPU can award
    assert classroom.cell_scores(root, ASSIGNMENT, "alice") == redteam["before"][ASSIGNMENT]


@pytest.mark.slow
def test_as_an_ordinary_user_outputs_are_data_too(tmp_path_factory):
    """The hostile and the huge hand-ins beside alice's solution, autograded and made into
    feedback by real nbgrader run as an ordinary uid (tests/classroom/test_machine_safety.py's way)."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from redteam import require_sandbox, trim, trimmed_solution, write_submission
    import other_user
    from test_machine_safety import _other_user

    from grader.classroom import workflow as classroom

    require_sandbox()
    uid = _other_user()
    if uid is None:
        pytest.skip("no other uid can run this Python here (needs root, setpriv, and a Python it can reach)")
    base = Path(tempfile.mkdtemp(prefix="tc-outputs-user-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        course = classroom.new_course(base / "course")
        release = classroom.release(course, ASSIGNMENT)
        rel = sorted(release.glob("*.ipynb"))[0]
        subs = {"alice": trimmed_solution(ASSIGNMENT)}
        for name in ("hostile", "huge"):
            subs[f"out-{name}"] = HANDINS[name](trim(nbformat.read(rel, as_version=4)))
        for student, nb in subs.items():
            classroom.submit(course, student, ASSIGNMENT, [write_submission(base / "work", student, ASSIGNMENT, nb)])
        subprocess.run(["chown", "-R", f"{uid}:{uid}", str(base)], check=True)
        env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
               "HOME": str(base), "TC_SOURCE_DIR": (course / ".source").read_text()}
        run = [*other_user.prefix(uid), sys.executable, "-m", "nbgrader"]
        for args in (["autograde", ASSIGNMENT, "--create"], ["generate_feedback", ASSIGNMENT]):
            r = subprocess.run(run + args, cwd=course, env=env, capture_output=True, text=True, timeout=1800)
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
        for student in ("out-hostile", "out-huge"):
            nb = nbformat.read(course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
            page = (course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
            assert notebook_executable(nb) == [] and executable(page) == [], student
            assert len(page) < SafeOutputs().max_notebook_bytes + 2_000_000
        scores = classroom.scores(course, ASSIGNMENT)
        assert scores["out-hostile"][0] == scores["out-huge"][0] == 0.0
        assert scores["alice"][0] == classroom.cpu_max_score(sorted((classroom.SOLUTIONS / ASSIGNMENT).glob("*.ipynb"))[0])
    finally:
        shutil.rmtree(base, ignore_errors=True)
