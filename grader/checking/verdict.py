"""The verdict: one object per check, rendered as HTML (notebook), text (CLI) or JSON (tools).

Every failed item says what failed, where, and one concrete thing to try next.
"""
from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import asdict, dataclass, field

import numpy as np

PASS, FAIL, SKIP = "pass", "fail", "skip"

# Each status as its word on a coloured badge. Emoji marks (U+2705, U+274C) render as empty boxes
# in a browser without a colour-emoji font; ASCII letters render in every font, and a screen
# reader reads the word.
BADGES = {PASS: ("PASS", "#1a7f37"), FAIL: ("FAIL", "#cf222e"), SKIP: ("SKIP", "#6e7781")}


def badge(status: str) -> str:
    """HTML of one status mark: the word (PASS / FAIL / SKIP) in white on its colour."""
    word, color = BADGES[status]
    return (f"<span style='display:inline-block;min-width:3.2em;text-align:center;padding:0 4px;"
            f"border-radius:3px;background:{color};color:#fff;font-weight:bold;font-size:0.85em'>{word}</span>")


@dataclass
class Item:
    name: str
    status: str  # pass | fail | skip
    message: str
    hint: str = ""
    kind: str = ""  # failure class, e.g. "compile-error", "wrong-result", "edge", "race"
    where: dict = field(default_factory=dict)
    error_map: np.ndarray | None = None  # fraction of bad elements per tile (2-D outputs)
    tile: tuple[int, int] | None = None


@dataclass
class Verdict:
    exercise: str
    backend: str
    items: list[Item] = field(default_factory=list)
    score: float = 0.0
    max_score: float = 0.0
    speed: dict | None = None  # gflops / ratio / floor / target when measured
    stdout: str = ""  # what the kernel printed
    coach: object | None = None  # grader.coach.panel.Panel: where the time goes (speed-graded exercises)

    @property
    def passed(self) -> bool:
        """Every check that could run passed (speed that needs a GPU is skipped, not passed)."""
        return all(i.status != FAIL for i in self.items)

    @property
    def correct(self) -> bool:
        return self.passed and any(i.name.startswith("correct") and i.status == PASS for i in self.items)

    def points(self, out_of: float | None = None) -> float:
        """Awarded points as a plain float, scaled to `out_of` and capped (for nbgrader)."""
        if out_of is None:
            return float(min(max(self.score, 0.0), self.max_score))
        frac = self.score / self.max_score if self.max_score else 0.0
        return float(min(max(frac * out_of, 0.0), out_of))

    @property
    def ran(self) -> bool:
        """Some check ran (a verdict of skips only, like a check cell under autograde, passed nothing)."""
        return any(i.status != SKIP for i in self.items)

    @property
    def headline(self) -> str:
        speed_skipped = any(i.name == "speed" and i.status == SKIP for i in self.items)
        if not self.ran:
            return f"{self.exercise}: not checked here: {self.items[0].message if self.items else 'nothing ran'}"
        if not self.passed:
            first = next(i for i in self.items if i.status == FAIL)
            return f"{self.exercise}: NOT YET — {first.name}: {first.message}"
        if speed_skipped:
            return f"{self.exercise}: correct; speed not checked: {self._skip_reason()}"
        return f"{self.exercise}: PASSED ({self.score:g}/{self.max_score:g} points)"

    def _skip_reason(self) -> str:
        return next((i.message for i in self.items if i.name == "speed" and i.status == SKIP), "")

    # ------------------------------------------------------------------ renderings
    def shown(self) -> list[tuple[Item, list[str]]]:
        """The items to render, each with the cases that failed the same way and are folded
        into it: a diagnosis repeated for every case is said once ("also fails on: ...")."""
        out: list[tuple[Item, list[str]]] = []
        first: dict[tuple, list[str]] = {}
        for i in self.items:
            if i.status == FAIL and i.name.startswith("correct: "):
                key = (i.kind, i.hint)
                if key in first:
                    first[key].append(i.name[len("correct: "):])
                    continue
                first[key] = []
                out.append((i, first[key]))
            else:
                out.append((i, []))
        return out

    def text(self) -> str:
        mark = {PASS: "PASS", FAIL: "FAIL", SKIP: "skip"}
        lines = [self.headline] + ([f"  backend: {self.backend}; score {self.score:g}/{self.max_score:g}"] if self.ran else [])
        for i, also in (self.shown() if self.ran else []):
            lines.append(f"  [{mark[i.status]}] {i.name}: {i.message}")
            if also:
                lines.append(f"         also fails on: {'; '.join(also)}")
            if i.status == FAIL and i.hint:
                lines.append(f"         hint: {i.hint}")
            if i.status == FAIL and i.error_map is not None:
                lines.extend("         " + row for row in _ascii_map(i.error_map, i.tile))
        if self.coach is not None and self.ran:
            lines.append(self.coach.text())
        if self.stdout.strip():
            lines.append("  your kernel printed:")
            lines.extend("    " + l for l in self.stdout.strip().splitlines()[:40])
        return "\n".join(lines)

    def to_json(self) -> str:
        coach, self.coach = self.coach, None
        try:
            d = asdict(self)
        finally:
            self.coach = coach
        d["coach"] = coach.to_dict() if coach is not None else None
        for item in d["items"]:
            if item["error_map"] is not None:
                item["error_map"] = np.asarray(item["error_map"]).round(4).tolist()
        d.update(passed=self.passed, headline=self.headline)
        return json.dumps(d, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        ok = self.passed
        color = ("#1a7f37" if ok else "#cf222e") if self.ran else "#6e7781"
        rows = []
        for i, also in (self.shown() if self.ran else []):  # nothing ran: the headline says why
            extra = ""
            if also:
                extra += f"<div style='margin-top:4px'>also fails on: {html.escape('; '.join(also))}</div>"
            if i.status == FAIL and i.hint:
                extra += f"<div style='margin-top:4px'><b>Try:</b> {html.escape(i.hint)}</div>"
            if i.status == FAIL and i.error_map is not None:
                extra += _png_map(i.error_map, i.tile)
            rows.append(f"<tr><td style='vertical-align:top'>{badge(i.status)}</td>"
                        f"<td style='vertical-align:top;white-space:nowrap'><b>{html.escape(i.name)}</b></td>"
                        f"<td style='text-align:left'><pre style='margin:0;white-space:pre-wrap'>"
                        f"{html.escape(i.message)}</pre>{extra}</td></tr>")
        printed = ""
        if self.stdout.strip():
            printed = ("<details><summary>your kernel printed</summary><pre>"
                       f"{html.escape(self.stdout[-5000:])}</pre></details>")
        return (f"<div style='border-left:6px solid {color};padding:4px 10px'>"
                f"<div style='font-size:1.15em;color:{color}'><b>{html.escape(self.headline)}</b></div>"
                + (f"<div style='color:#666'>backend: {self.backend} · score {self.score:g}/{self.max_score:g}</div>"
                   if self.ran else "") +
                f"<table>{''.join(rows)}</table>"
                + (self.coach.html() if self.coach is not None and self.ran else "") + f"{printed}</div>")


# A tile with some wrong elements: one character per fifth (':' under 20% ... '*' under 100%).
_PARTIAL = ":-=+*"
MAP_LEGEND = ("'.' clean, ':' under 20% of its elements wrong, '-' under 40%, '=' under 60%, "
              "'+' under 80%, '*' 80% or more, '#' all wrong")


def _map_char(v: float) -> str:
    if v <= 0:
        return "."
    if v >= 1:
        return "#"
    return _PARTIAL[min(len(_PARTIAL) - 1, int(v * len(_PARTIAL)))]


def _ascii_map(m: np.ndarray, tile) -> list[str]:
    """Per-tile error map for a terminal: '.' clean, ':-=+*' more and more wrong, '#' all wrong."""
    if m.shape[0] > 32 or m.shape[1] > 64:
        return [f"(error map {m.shape[0]}x{m.shape[1]} tiles; the notebook shows it as a picture)"]
    rows = [f"error map, one character per {tile[0]}x{tile[1]} tile ({MAP_LEGEND}):"]
    for r in m:
        rows.append("".join(_map_char(float(v)) for v in r))
    return rows


def _png_map(m: np.ndarray, tile) -> str:
    # A Figure with its own Agg canvas: never matplotlib.use() or pyplot here, which would
    # switch a notebook's backend away from inline and blank every later plt.show().
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except Exception:  # pragma: no cover - matplotlib is a dependency
        return ""
    h, w = m.shape
    fig = Figure(figsize=(min(6, 1.5 + w * 0.25), min(4, 1 + h * 0.25)), dpi=80)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    im = ax.imshow(m, cmap="Reds", vmin=0, vmax=1, interpolation="nearest")
    ax.set_xlabel(f"tile column ({tile[1]} wide)")
    ax.set_ylabel(f"tile row ({tile[0]} high)")
    ax.set_title("fraction of wrong elements per tile")
    fig.colorbar(im, ax=ax, fraction=0.046)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return f"<img src='data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}'/>"
