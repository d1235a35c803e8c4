"""Numbers measured on a GPU and recorded in kernels/RESULTS*.md, for the lessons to show on a
machine without one: a record file, one section of it, and the label that says on which GPU
and when it was measured."""
from __future__ import annotations

import re
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def record(name: str) -> str:
    return (KERNELS / name).read_text()


def section(text: str, heading: str) -> str:
    """The part of `text` from the line starting with `heading` to the next heading of any level."""
    start = text.find(heading)
    if start < 0:
        return ""
    nxt = re.search(r"^#", text[start + len(heading):], flags=re.M)
    return text[start:start + len(heading) + nxt.start()] if nxt else text[start:]


def label_of(text: str, name: str) -> str:
    """'recorded on <GPU>, <date> (kernels/<name>)': the first GPU and date named in `text`."""
    gpu = re.search(r"NVIDIA [A-Z]\d+\w*", text)
    date = re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", text)
    return (f"recorded on {gpu.group(0) if gpu else 'a GPU'}"
            f"{', ' + date.group(0) if date else ''} (kernels/{name})")


def not_recorded_figure(what: str):
    """The figure a lesson shows where its record holds no run yet: one line saying what is missing."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, what, ha="center", va="center")
    plt.show()
    return fig
