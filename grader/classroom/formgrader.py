"""The formgrader's pages, safe to open on a hostile hand-in (issue 32, item 1).

The formgrader runs inside the instructor's authenticated Jupyter server, so a script of a
student's on one of its pages could do anything the instructor can. `install()` (called by
grader/classroom/hardening.py when the server loads the course's nbgrader config) changes
nbgrader's formgrader handlers so that:
- the page of a submission is rendered through SafeOutputs first, whatever wrote the
  autograded notebook (an older autograde, a hand-edited file): nbgrader's `formgrade`
  template renders markdown unsanitized;
- every page is sent with a Content-Security-Policy that allows only the formgrader's own
  scripts: its script files, the inline scripts of its template (by their hashes, taken from
  the page before the notebook's cells begin) and MathJax from cdnjs; no other inline script,
  event handler or javascript: link runs, no object or frame loads, nothing is sent elsewhere.
"""
from __future__ import annotations

import base64
import hashlib
import re

# where a submission's cells begin on its formgrade page (nbconvert may reorder the attributes):
# nothing after it is the template's own; without it, only the <head>'s scripts are
NOTEBOOK_START = re.compile(r"""<div\b[^>]*\bid=["']?notebook["'\s>]""", re.I)
HEAD_END = re.compile(r"</head\s*>", re.I)
# the formgrader templates' own event handlers (nbgrader 0.9.6: formgrade_macros, gradebook pages)
HANDLERS = ("toggle_name(true);", "toggle_name(false);", "toggleAllNames()")
CDN = "https://cdnjs.cloudflare.com"  # MathJax, as nbconvert's templates load it
_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script\s*>", re.S | re.I)
_TYPE = re.compile(r"""type\s*=\s*["']?([^"'\s>]+)""", re.I)


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def policy(page: str, student_content: bool = True) -> str:
    """The Content-Security-Policy for one formgrader page: its inline scripts before a
    student's content (all of them on a page that shows none) are the template's own."""
    own = page
    if student_content:
        start = NOTEBOOK_START.search(page) or HEAD_END.search(page)
        own = page[:start.start()] if start else ""
    hashes = []
    for m in _SCRIPT.finditer(own):
        t = _TYPE.search(m["attrs"])
        if "src=" in m["attrs"].lower() or t and t.group(1).lower() not in ("text/javascript", "application/javascript"):
            continue
        hashes.append(_sha(m["body"]))
    hashes += [_sha(h) for h in HANDLERS]
    return "; ".join([
        "default-src 'self'",
        f"script-src 'self' {CDN} 'unsafe-hashes' " + " ".join(sorted(set(hashes))),
        f"style-src 'self' 'unsafe-inline' {CDN}",
        f"font-src 'self' data: {CDN}",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "frame-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ])


def install() -> None:
    """Patch nbgrader's formgrader handlers (idempotent)."""
    from nbgrader.server_extensions.formgrader import base, handlers

    from grader.classroom.safe_outputs import SafeOutputs

    if getattr(base.BaseHandler, "_tc_safe", False):
        return
    plain_exporter, plain_write = base.BaseHandler.exporter, base.BaseHandler.write

    def exporter(self):
        exp = plain_exporter.fget(self)
        if not any(isinstance(p, SafeOutputs) for p in exp._preprocessors):
            exp.register_preprocessor(SafeOutputs(parent=exp), enabled=True)
        return exp

    def write(self, chunk):
        if isinstance(chunk, (str, bytes)):
            text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else chunk
            if "<html" in text[:4000].lower():
                self.set_header("Content-Security-Policy", policy(text, isinstance(self, handlers.SubmissionHandler)))
        return plain_write(self, chunk)

    base.BaseHandler.exporter = property(exporter)
    base.BaseHandler.write = write
    base.BaseHandler._tc_safe = True
