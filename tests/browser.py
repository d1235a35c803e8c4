"""A real headless browser for tests (Debian's chromium driven by the `playwright` package; never
`playwright install`). `browser_page` yields a playwright sync Page, or skips saying what is
missing. Import it into a test module: `from browser import browser_page  # noqa: F401`."""
from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("TC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage",
        "--disable-extensions", "--no-first-run"]


@pytest.fixture
def browser_page():
    if not os.path.exists(CHROMIUM):
        pytest.skip("no chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("no playwright (pip install playwright; the system chromium is used, no `playwright install`)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        try:
            yield page
        finally:
            browser.close()
