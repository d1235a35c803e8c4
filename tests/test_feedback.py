"""What a student reads when a check fails: a verdict that leaves the notebook's matplotlib
backend alone."""
import numpy as np
import pytest

from grader import kernels
from grader.check import check
from grader.compile import nvrtc_compile
from grader.errors import CompileError
from grader.verdict import FAIL, PASS, Item, Verdict


def variant(base: str, old: str, new: str) -> str:
    src = kernels.source(base)
    assert old in src, f"the reference kernel {base} changed; update the test"
    return src.replace(old, new)


def failures(v):
    return [i for i in v.items if i.status == FAIL]


def failing_verdict(n_cases=3) -> Verdict:
    v = Verdict("sgemm-naive", "emu", max_score=1)
    v.items.append(Item("compile", PASS, "compiled"))
    for k in range(n_cases):
        v.items.append(Item(f"correct: M=33 N=17 K=9 #{k}", FAIL, f"{k} elements are wrong", kind="wrong-result",
                            hint="same hint", error_map=np.array([[0.0, 1.0], [0.5, 0.0]]), tile=(16, 16)))
    return v


# ---------------------------------------------------------------------- 1. matplotlib backend
def test_error_map_leaves_the_notebook_backend_alone(monkeypatch):
    import matplotlib

    pytest.importorskip("matplotlib_inline")
    before = matplotlib.get_backend()
    matplotlib.use("module://matplotlib_inline.backend_inline")
    calls = []
    real_use = matplotlib.use
    monkeypatch.setattr(matplotlib, "use", lambda *a, **k: calls.append(a) or real_use(*a, **k))
    try:
        html = failing_verdict()._repr_html_()
        assert "data:image/png;base64" in html
        assert matplotlib.get_backend() == "module://matplotlib_inline.backend_inline"
        assert calls == []  # never switches the backend, not even to the same one
    finally:
        real_use(before)
