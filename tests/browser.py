"""A real headless browser for the tests: Chromium driven by Playwright.

The browser is the system's Chromium (Debian's `chromium` package; `.ci/run` installs it), never
one Playwright downloads (the CI machine cannot fetch it). Without Chromium or the `playwright`
package the tests that need a browser skip, saying what to install, unless TC_REQUIRE_BROWSER=1
(set by .ci/run), where they fail: CI must prove what a browser shows.

Also here: starting a Jupyter server the way the course does and waiting until it answers.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

# Flags that keep Chromium off the network (this machine's closed network refuses its background
# connections) and usable as root in a container.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--disable-extensions"]


def chromium_path() -> str | None:
    return os.environ.get("TC_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _missing(why: str):
    if os.environ.get("TC_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{why}, and CI must run the browser tests (TC_REQUIRE_BROWSER=1)")
    pytest.skip(why)


@contextmanager
def open_page():
    """A fresh Playwright `Page` in headless Chromium; its console messages and page errors are
    collected in `page.console_log` (list of str)."""
    path = chromium_path()
    if path is None:
        _missing("no Chromium here (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[test]')")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.console_log = []
            page.on("console", lambda m: page.console_log.append(f"console.{m.type}: {m.text}"))
            page.on("pageerror", lambda e: page.console_log.append(f"pageerror: {e}"))
            yield page
        finally:
            browser.close()


@pytest.fixture
def browser_page():
    """open_page() as a fixture: `from browser import browser_page  # noqa: F401` in a test module."""
    with open_page() as page:
        yield page


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen | None = None, timeout: float = 180) -> int:
    """Wait until `url` answers (any HTTP status); returns the status. Fails early, with what the
    server printed, when `proc` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"the server exited with status {proc.returncode} before answering:\n{out[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"no answer from {url} in {timeout:.0f} s")


def stop(proc: subprocess.Popen) -> str:
    """Stop a server started with start_new_session=True (its whole group) and return its output."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 15)
            proc.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, 9)
            proc.wait(30)
    return proc.stdout.read() if proc.stdout else ""


def jupyter_env(tmp: Path) -> dict:
    """An environment whose Jupyter files (runtime, data, config of the user) stay in `tmp`."""
    env = dict(os.environ)
    env.update(JUPYTER_RUNTIME_DIR=str(tmp / "jp-runtime"), IPYTHONDIR=str(tmp / "ipython"),
               JUPYTER_CONFIG_DIR=str(tmp / "jp-config"), HOME=str(tmp / "home"))
    (tmp / "home").mkdir(exist_ok=True)
    return env
