"""Tensor Cores, hands-on: the course's runtime and grader (see README.md)."""
from . import headless as _headless

if _headless.active():  # nbgrader autograde / CI: static widgets (see grader/headless.py)
    _headless.install()
