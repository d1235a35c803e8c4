"""Widgets without a frontend: when a notebook runs headless (nbgrader autograde, CI), every
interactive widget is replaced by one static call of its function.

Why: nbclient captures ipywidgets' Output widget (which `interact` uses) through comm messages,
and a headless execution then sometimes waits forever on an idle kernel (jupyter/nbclient#312;
seen here under nbgrader and nbclient). With no one to turn a dial, a static rendering is all a
headless run needs. Switched on by TC_HEADLESS=1 (course/nbgrader_config.py and the tests set
it); a live JupyterLab keeps real widgets.
"""
from __future__ import annotations

import os


def active() -> bool:
    return os.environ.get("TC_HEADLESS", "") not in ("", "0")


def _default(value):
    """The value a widget abbreviation starts at (ipywidgets' own rules, simplified)."""
    if hasattr(value, "value"):
        return value.value
    if isinstance(value, tuple) and len(value) in (2, 3) and all(isinstance(v, (int, float)) for v in value):
        lo, hi = value[0], value[1]
        mid = (lo + hi) / 2
        return type(lo)(mid) if isinstance(lo, int) and isinstance(hi, int) else mid
    if isinstance(value, (list, tuple)) and value:
        first = value[0]
        return first[1] if isinstance(first, tuple) and len(first) == 2 else first
    if isinstance(value, dict) and value:
        return next(iter(value.values()))
    return value


def install() -> None:
    """Replace the widgets by static calls. Without ipywidgets there is nothing to replace (the
    command line, a GPU machine without Jupyter): then nothing happens, never an ImportError."""
    try:
        import ipywidgets as w
    except ImportError:
        return

    def interact(__fn=None, **kwargs):
        def run(fn):
            kw = {k: _default(v) for k, v in kwargs.items() if not k.startswith("__")}
            fn(**kw)
            return fn
        return run(__fn) if __fn is not None else run

    def interactive(__fn, **kwargs):
        interact(__fn, **kwargs)
        return w.VBox([])

    class StaticOutput(w.HTML):
        """Stands in for Output: what is displayed inside `with out:` goes to the cell."""

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def clear_output(self, *args, **kwargs):
            pass

        def append_stdout(self, text):
            print(text, end="")

    w.interact = interact
    w.interact_manual = interact
    w.interactive = interactive
    w.Output = StaticOutput
    w.widgets.interact = interact
    w.widgets.interact_manual = interact
    w.widgets.interactive = interactive
