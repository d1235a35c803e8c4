"""Small HTML helpers for notebooks (tables a projector can show)."""
from __future__ import annotations

import html


class HTML:
    """Anything with _repr_html_ renders in Jupyter; str() keeps plain-text runs readable."""

    def __init__(self, markup: str, text: str = ""):
        self.markup, self.text = markup, text

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return self.text or self.markup


def table(rows: list[dict], columns: list[str] | None = None, highlight: str | None = None) -> HTML:
    """Render dicts as an HTML table; rows whose `highlight` key is truthy are shaded green,
    falsy ones grey."""
    columns = columns or [c for c in rows[0] if c != highlight]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in rows:
        style = ""
        if highlight is not None:
            style = " style='background:#dafbe1'" if r.get(highlight) else " style='color:#888'"
        body.append(f"<tr{style}>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in columns) + "</tr>")
    text = "\n".join(" | ".join(str(r[c]) for c in columns) for r in rows)
    return HTML(f"<table><tr>{head}</tr>{''.join(body)}</table>", " | ".join(columns) + "\n" + text)
