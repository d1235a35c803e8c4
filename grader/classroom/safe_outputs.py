"""A hand-in's outputs are data, never code (issue 32, items 1 and 5).

Whatever a student's notebook shows (any cell's outputs, its markdown, attachments, widget
state) is rendered later in the instructor's browser (the formgrader, inside the instructor's
authenticated Jupyter server) and in the student's feedback page. `SafeOutputs`, an nbgrader
preprocessor, reduces it to what cannot run:
- output MIME types are an allowlist: text/plain, text/html passed through nh3 with an
  allowlist (tags, attributes, CSS properties; links http/https/mailto; images only as base64
  PNG/JPEG/GIF data), text/markdown rendered and sanitized the same way, and PNG/JPEG/GIF whose
  data is base64; everything else (JavaScript, SVG, LaTeX, widget views, ...) is dropped, its
  text/plain kept or a note saying what was removed;
- a markdown cell with raw HTML or a link that is not http/https/mailto/relative becomes the
  sanitized HTML of its rendering; attachments are kept only as PNG/JPEG/GIF;
- notebook metadata keeps only kernelspec, language_info and nbgrader (widget state, a title
  that a page would print, ... go); output metadata only numeric width/height;
- size: a cell shows at most `max_cell_bytes` of output and `max_cell_outputs` outputs, a
  notebook `max_notebook_bytes`; the rest is cut and a note says how much. `CourseExecute` cuts
  the same way while the notebook runs (`admit`), so a 200 MB print never sits in nbgrader's
  memory, and `SafeOutputs` cuts what is left after the trusted grader wrote its verdicts.
  Errors and execute_results (a graded cell's score) are never dropped, only shortened.

It runs last in autograde (what is written to autograded/), in generate_feedback, and in the
formgrader's page renderer (grader/classroom/formgrader.py); grader/classroom/hardening.py
refuses to autograde or make feedback without it.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter

import html

import nh3
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from grader.classroom.feedback import _priority as feedback_priority

# -------------------------------------------------------------------------------- HTML
TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "center", "code", "col", "colgroup", "dd", "del", "details",
    "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins",
    "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var",
})
# no id, name or class: nothing of a student's may clobber the page's own names or selectors
ATTRS = {"*": {"style", "title", "align", "valign", "width", "height"}, "a": {"href"}, "img": {"src", "alt"},
         "td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan", "scope"}, "col": {"span"},
         "colgroup": {"span"}, "ol": {"start"}, "details": {"open"}}
# properties that take no URL and cannot lift an element out of its cell (no position, no
# background images, no content)
CSS = frozenset({
    "background-color", "border", "border-bottom", "border-collapse", "border-color", "border-left",
    "border-radius", "border-right", "border-spacing", "border-style", "border-top", "border-width", "caption-side",
    "color", "display", "font", "font-family", "font-size", "font-style", "font-variant", "font-weight", "height",
    "letter-spacing", "line-height", "list-style-type", "margin", "margin-bottom", "margin-left", "margin-right",
    "margin-top", "max-width", "min-width", "opacity", "padding", "padding-bottom", "padding-left", "padding-right",
    "padding-top", "text-align", "text-decoration", "text-indent", "vertical-align", "white-space", "width",
    "word-break",
})
# HTML nested deeper than this costs a parser time that grows with the square of the depth
# (nh3: 64 s for 100,000 nested <div>): it is shown as text instead
MAX_DEPTH = 2000
# elements that need no end tag: void ones, and those a sibling closes (they never nest deep)
_NO_END = frozenset("area base br col embed hr img input link meta param source track wbr "
                    "p li dt dd tr td th thead tbody tfoot option optgroup rb rt rp colgroup caption".split())
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)")


def depth(text: str) -> int:
    """How deep `text`'s elements nest at most, counted per name (a `</i>` does not close a
    `<b>`): a bound on a parser's stack of open elements."""
    open_, now, most = Counter(), 0, 0
    for slash, name in _TAG.findall(text):
        name = name.lower()
        if name in _NO_END:
            continue
        if not slash:
            open_[name] += 1
            now += 1
            most = max(most, now)
        elif open_[name]:
            open_[name] -= 1
            now -= 1
    return most


RASTER = ("image/png", "image/jpeg", "image/gif")
# stands in for an attachment that was not a raster image, so the markdown naming it still renders
BLANK_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR4nGNgAAIAAAUAAXpeqz8AAAAASUVORK5CYII="
_B64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_RASTER_URI = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=]+")
_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.\-]*):")


def safe_link(url: str) -> bool:
    """http, https, mailto, or a relative link / fragment (no scheme at all)."""
    m = _SCHEME.match(url)
    return m is None or m.group(1).lower() in ("http", "https", "mailto")


def _attr(tag: str, name: str, value: str) -> str | None:
    if tag == "a" and name == "href":
        return value if safe_link(value) else None
    if tag == "img" and name == "src":
        return value if _RASTER_URI.fullmatch(value.strip()) else None
    return value


def clean_html(text: str) -> str:
    """`text` with every tag, attribute, URL and CSS property outside the allowlist removed
    (nh3: the Rust sanitizer ammonia, linear in the input; a script's content goes with it)."""
    if depth(text) > MAX_DEPTH:
        return "<pre>" + html.escape(text) + "</pre>"
    return nh3.clean(text, tags=TAGS, attributes=ATTRS, attribute_filter=_attr,
                     url_schemes={"http", "https", "mailto", "data"}, filter_style_properties=CSS,
                     strip_comments=True)


# ---------------------------------------------------------------------------- markdown
def _render(source: str, attachments: dict | None = None, escape: bool = False) -> str:
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=escape, attachments=attachments or {})).render(source)


_URL_ATTR = re.compile(r"""\b(?:href|src)\s*=\s*("([^"]*)"|'([^']*)')""", re.I)


def safe_markdown(source: str, attachments: dict | None = None) -> str:
    """The markdown itself when it holds no raw HTML and only safe links; otherwise the
    sanitized HTML of its rendering, as one line in a <div>: one raw HTML block that no
    markdown renderer parses again (so text the sanitizer let through never becomes a link)."""
    if not source or "<" not in source and ":" not in source:
        return source
    if _is_block(source):
        return source  # already this function's output
    try:
        raw = _render(source, attachments)
        escaped = _render(source, attachments, escape=True)
    except Exception:  # a renderer that chokes on it (a missing attachment, ...): show it as text
        return _block("<pre>" + html.escape(source) + "</pre>")
    urls_ok = all(safe_link(m.group(2) or m.group(3) or "") or _RASTER_URI.fullmatch(m.group(2) or m.group(3) or "")
                  for m in _URL_ATTR.finditer(escaped))
    if raw == escaped and urls_ok:
        return source
    return _block(clean_html(raw))


def markdown_html(source: str) -> str:
    """A text/markdown output as the sanitized HTML it renders to."""
    safe = safe_markdown(source)
    return safe if _is_block(safe) else clean_html(_render(safe))


def _block(markup: str) -> str:
    return "<div>" + markup.strip().replace("\r", "").replace("\n", "&#10;") + "</div>"


def _is_block(source: str) -> bool:
    return source.startswith("<div>") and source.endswith("</div>") and "\n" not in source \
        and _block(clean_html(source[5:-6].replace("&#10;", "\n"))) == source


# ---------------------------------------------------------------------------- outputs
def _b64(value) -> bool:
    if not isinstance(value, str) or not _B64.fullmatch(value):
        return False
    try:
        base64.b64decode("".join(value.split()), validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def reduce_bundle(data: dict) -> tuple[dict, list[str]]:
    """An output's MIME bundle reduced to the allowlist; returns it and the types removed."""
    out, removed = {}, []
    for mime, value in data.items():
        if mime == "text/plain" and isinstance(value, str):
            out[mime] = value
        elif mime == "text/html" and isinstance(value, str):
            out[mime] = clean_html(value)
        elif mime == "text/markdown" and isinstance(value, str):
            if "text/html" not in data:  # the same output's own HTML, when there is one, wins
                out["text/html"] = markdown_html(value)
        elif mime in RASTER and _b64(value):
            out[mime] = "".join(value.split())
        else:
            removed.append(mime)
    return out, removed


def _reduce_metadata(meta: dict) -> dict:
    keep = {}
    for mime, m in (meta or {}).items():
        if mime in RASTER and isinstance(m, dict):
            sub = {k: m[k] for k in ("width", "height") if isinstance(m.get(k), (int, float)) and not isinstance(m.get(k), bool)}
            if m.get("needs_background") in ("light", "dark"):
                sub["needs_background"] = m["needs_background"]
            if sub:
                keep[mime] = sub
    return keep


OVERHEAD = 64  # bytes an output costs in the notebook's JSON however empty it is


def size(out: dict) -> int:
    """Bytes an output (or an iopub message's content) holds."""
    n = OVERHEAD
    for v in (out.get("data") or {}).values():
        n += len(v) if isinstance(v, str) else len(json.dumps(v, default=str))
    text = out.get("text")
    n += len(text) if isinstance(text, str) else 0
    n += sum(len(line) for line in out.get("traceback") or [] if isinstance(line, str))
    n += len(str(out.get("evalue", "")))
    return n


def shorten(out: dict, room: int) -> None:
    """Cut `out` (an output or a message's content) down to about `room` bytes of text, in place:
    rich data goes, text/plain, stream text and the traceback are cut."""
    room = max(room, 0)
    data = out.get("data")
    if isinstance(data, dict):
        plain = data.get("text/plain")
        data.clear()
        if isinstance(plain, str):
            data["text/plain"] = plain[:room]
        if isinstance(out.get("metadata"), dict):
            out["metadata"] = {}
    if isinstance(out.get("text"), str):
        out["text"] = out["text"][:room]
    if isinstance(out.get("traceback"), list):
        kept, left = [], room
        for line in out["traceback"]:
            if not isinstance(line, str) or len(line) > left:
                break
            kept.append(line)
            left -= len(line)
        out["traceback"] = kept
    if isinstance(out.get("evalue"), str):
        out["evalue"] = out["evalue"][: max(room, 200)]


def cut_note(cut_bytes: int, cut_outputs: int, cell_cap: int, nb_cap: int, max_outputs: int) -> str:
    parts = []
    if cut_bytes:
        parts.append(f"{cut_bytes:,} bytes")
    if cut_outputs:
        parts.append(f"{cut_outputs:,} more outputs")
    return (f"[output cut by the grader: {' and '.join(parts)} of this cell's output not kept; a cell keeps at most "
            f"{cell_cap:,} bytes and {max_outputs:,} outputs, a notebook {nb_cap:,} bytes]")


class OutputBudget:
    """What may still be kept of a notebook's output while it runs (CourseExecute.output)."""

    def __init__(self, cell_cap: int, nb_cap: int, max_outputs: int):
        self.cell_cap, self.nb_cap, self.max_outputs = cell_cap, nb_cap, max_outputs
        self.nb_used = 0
        self.cells: dict[int, list] = {}  # index -> [bytes kept, outputs kept, vital kinds kept]

    def forget(self, index: int) -> None:
        """The cell's output was cleared: what it kept counts no more."""
        used = self.cells.pop(index, [0, 0])
        self.nb_used -= used[0]

    def admit_update(self, content: dict) -> bool:
        """An update of a display shown earlier (update_display_data): it replaces data that was
        counted when shown, without passing admit(); every update is counted against the
        notebook's budget as a new output would be, and none is kept past it."""
        n = size(content)
        if n > self.nb_cap - self.nb_used:
            return False
        self.nb_used += n
        return True

    def admit(self, cell, index: int, content: dict) -> bool:
        """True to keep `content` (shortened in place when it does not fit); False drops it.
        What is cut is counted in the cell's metadata (course.output_cut) for the note."""
        used = self.cells.setdefault(index, [0, 0, set()])
        n = size(content)
        room = min(self.cell_cap - used[0], self.nb_cap - self.nb_used)
        cut = cell.metadata.setdefault("course", {}).setdefault("output_cut", {"bytes": 0, "outputs": 0})
        # a cell's error and its result are shortened, never dropped; a cell has one of each, so
        # any more (forged messages, a displayhook called in a loop) count as other outputs do
        kind = "error" if "traceback" in content else "result" if "execution_count" in content else None
        vital = kind is not None and kind not in used[2]
        if vital:
            used[2].add(kind)
        if not vital and (used[1] >= self.max_outputs or room <= 0):
            cut["bytes"] += n
            cut["outputs"] += 1
            return False
        if n > room:
            shorten(content, max(room, 2000 if vital else 0))
            cut["bytes"] += n - size(content)
        used[0] += size(content)
        used[1] += 1
        self.nb_used += size(content)
        if not cut["bytes"] and not cut["outputs"]:
            del cell.metadata["course"]["output_cut"]
            if not cell.metadata["course"]:
                del cell.metadata["course"]
        return True


# ------------------------------------------------------------------------- preprocessor
GRADE_ID = re.compile(r"[A-Za-z0-9_\-]+")
NB_META = ("kernelspec", "language_info", "nbgrader")


class SafeOutputs(NbGraderPreprocessor):
    """Every output, markdown cell, attachment and notebook metadata of a hand-in reduced to data."""

    display_data_priority = feedback_priority()  # set by the feedback's HTML exporter

    max_cell_bytes = Integer(2_000_000, help="bytes of output one cell keeps").tag(config=True)
    max_cell_outputs = Integer(500, help="outputs one cell keeps").tag(config=True)
    max_notebook_bytes = Integer(20_000_000, help="bytes of output (and attachments) one notebook keeps").tag(
        config=True)

    def budget(self) -> OutputBudget:
        return OutputBudget(self.max_cell_bytes, self.max_notebook_bytes, self.max_cell_outputs)

    def preprocess(self, nb, resources):
        meta = nb.get("metadata", {})
        for key in list(meta):
            if key not in NB_META:
                del meta[key]
        nb_left = self.max_notebook_bytes
        for cell in nb.cells:
            nb_left -= self._cell(cell, nb_left)
        return nb, resources

    @staticmethod
    def _reduce(out) -> None:
        out["data"], removed = reduce_bundle(out.get("data") or {})
        out["metadata"] = _reduce_metadata(out.get("metadata"))
        if removed:  # said where it shows, so nothing vanishes without a word
            note = f"[output of type {', '.join(removed)} removed by the grader: only text and images are shown]"
            data = out["data"]
            data["text/plain"] = (data["text/plain"] + "\n" if data.get("text/plain") else "") + note
            if "text/html" in data:
                data["text/html"] += f"<p><i>{html.escape(note)}</i></p>"

    def _cell(self, cell, nb_left: int) -> int:
        """Make one cell safe; returns the bytes of output it keeps."""
        nbg = cell.get("metadata", {}).get("nbgrader")
        if isinstance(nbg, dict) and "grade_id" in nbg and not GRADE_ID.fullmatch(str(nbg["grade_id"])):
            nbg["grade_id"] = re.sub(r"[^A-Za-z0-9_\-]", "_", str(nbg["grade_id"]))[:100] or "cell"
        if cell.cell_type == "markdown":
            kept = 0
            atts = {}
            for name, bundle in (cell.get("attachments") or {}).items():
                bundle, _ = reduce_bundle({k: v for k, v in (bundle or {}).items() if k in RASTER})
                n = sum(len(v) for v in bundle.values())
                if bundle and n <= nb_left - kept:
                    atts[name] = bundle
                    kept += n
                else:
                    atts[name] = {"image/png": BLANK_PNG}
            if "attachments" in cell:
                cell.attachments = atts
            cell.source = safe_markdown(cell.source, atts)
            return kept
        if cell.cell_type == "raw":
            cell.source = clean_html(cell.source)
            cell.metadata.pop("raw_mimetype", None)
            cell.metadata.pop("format", None)
            return 0
        if cell.cell_type != "code":
            return 0
        earlier = cell.metadata.get("course", {}).pop("output_cut", None) or {}
        cut_bytes, cut_outputs = int(earlier.get("bytes", 0)), int(earlier.get("outputs", 0))
        # a graded cell shows the trusted grader's verdict (grader/classroom/autograde.py: bounded, and
        # what the feedback page is for): the rest of the notebook's output never crowds it out
        graded = isinstance(nbg, dict) and nbg.get("grade") is True and not nbg.get("solution")
        room = self.max_cell_bytes if graded else min(self.max_cell_bytes, nb_left)
        kept, outputs, kinds = 0, [], set()
        for out in cell.get("outputs", []):
            # cut to size first (so the sanitizer never reads more than the caps), then sanitize
            n = size(out)
            # the grade reads a cell's error and its result (one of each: any more count as others)
            vital = out.get("output_type") in ("error", "execute_result") and out.get("output_type") not in kinds
            kinds.add(out.get("output_type"))
            if not vital and (len(outputs) >= self.max_cell_outputs or room - kept <= 0):
                cut_bytes += n
                cut_outputs += 1
                continue
            if n > room - kept:
                shorten(out, max(room - kept, 2000 if vital else 0))
                cut_bytes += n - size(out)
            if "data" in out:
                self._reduce(out)
            kept += size(out)
            outputs.append(out)
        if cut_bytes or cut_outputs:
            outputs.append(new_output("display_data", data={"text/plain": cut_note(
                cut_bytes, cut_outputs, self.max_cell_bytes, self.max_notebook_bytes, self.max_cell_outputs)}))
        if cell.get("metadata", {}).get("course") == {}:
            del cell.metadata["course"]
        cell.outputs = outputs
        return kept
