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
  event handler or javascript: link runs, no object or frame loads, nothing is sent elsewhere;
- what it sends that is not one of its pages is inert: a file of a student's autograded folder
  (nbgrader serves every file a hand-in carried there, `/formgrader/submissions/<id>/<file>`:
  an `.html` or `.svg` a student put beside the notebook ran its script on the instructor's
  origin, with the instructor's session) and its API's answers (JSON that nbgrader sent as HTML)
  go out with `INERT`, a policy that runs nothing (`sandbox`, as Jupyter's own /files/ and
  /nbconvert/ answers, without their `allow-scripts`), and a file is sent as an image only when
  it is a raster image, as text otherwise (and the API's JSON as text).
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
# what the formgrader sends that is not its own page: a document in an origin of its own, with no
# script, plugin, frame, form or fetch; images stay drawable where the formgrader's page shows them
INERT = "; ".join(["sandbox", "default-src 'none'", "img-src 'self' data:", "style-src 'unsafe-inline'",
                   "frame-ancestors 'self'"])
# the types a hand-in's file keeps (a notebook's markdown may show it as an image); anything else is text
PASSIVE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


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
    plain_type = handlers.SubmissionFilesHandler.get_content_type
    plain_api_headers = base.BaseApiHandler.set_default_headers

    def exporter(self):
        exp = plain_exporter.fget(self)
        if not any(isinstance(p, SafeOutputs) for p in exp._preprocessors):
            exp.register_preprocessor(SafeOutputs(parent=exp), enabled=True)
        return exp

    def write(self, chunk):
        if isinstance(chunk, (str, bytes)) and not getattr(self, "_tc_inert", False):
            text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else chunk
            if "<html" in text[:4000].lower():
                self.set_header("Content-Security-Policy", policy(text, isinstance(self, handlers.SubmissionHandler)))
        return plain_write(self, chunk)

    def file_type(self):
        kind = plain_type(self)
        return kind if kind in PASSIVE_TYPES else "text/plain; charset=utf-8"

    def api_headers(self):
        plain_api_headers(self)
        # nbgrader sends its JSON as text/html; its pages' scripts parse the text themselves (JSON.parse
        # of what jQuery hands them: with application/json jQuery would parse it first, and they break)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")

    base.BaseHandler.exporter = property(exporter)
    base.BaseHandler.write = write
    # Jupyter sets each answer's policy from this property (and X-Content-Type-Options: nosniff)
    for cls in (handlers.SubmissionFilesHandler, base.BaseApiHandler):
        cls.content_security_policy = property(lambda self: INERT)
        cls._tc_inert = True
    handlers.SubmissionFilesHandler.get_content_type = file_type
    base.BaseApiHandler.set_default_headers = api_headers
    base.BaseHandler._tc_safe = True
