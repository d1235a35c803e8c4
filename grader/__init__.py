"""Tensor Cores, hands-on: the course's runtime and grader (see README.md).

The package is a stack of rooms; imports run down this list only (tests/test_layering.py):
    lessons/                notebook helpers: plots, widgets, lesson data
    bench/  classroom/      GPU measurement; nbgrader, the course's notebooks, doctor
    checking/               one submission -> one verdict
    coach/                  where a correct kernel's time goes (the panel of speed verdicts)
    problems/  emu/         what each exercise computes; the CPU backend
    runtime/                compile, launch, time, on either backend
The face, for notebooks: `from grader import check, grade`.
"""
from grader.classroom import headless as _headless

if _headless.active():  # nbgrader autograde / CI: static widgets (see grader/classroom/headless.py)
    _headless.install()

# The face, loaded on first use (PEP 562) so `import grader.runtime...` stays light.
_FACE = {"check": "grader.checking.check", "grade": "grader.checking.check"}


def __getattr__(name):
    if name in _FACE:
        import importlib

        return getattr(importlib.import_module(_FACE[name]), name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")


__all__ = ["check", "grade"]
