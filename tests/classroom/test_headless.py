"""Headless widgets: one static call of the function, no Output widget anywhere."""
import subprocess
import sys

CODE = r"""
import os
os.environ["TC_HEADLESS"] = "1"
import grader  # installs the static widgets
import ipywidgets as w
calls = []
w.interact(lambda n, kind, flag: calls.append((n, kind, flag)), n=(0, 10), kind=["a", "b"],
           flag=w.Checkbox(value=True))
box = w.interactive(lambda x: calls.append(x), x=w.IntSlider(value=3))
out = w.Output()
with out:
    print("inside")
out.clear_output()
assert calls == [(5, "a", True), 3], calls
assert not isinstance(out, w.widgets.widget_output.Output)
print("ok")
"""


def test_headless_widgets_call_once_with_defaults():
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["inside", "ok"]
