"""Fixtures of the browser tests: a real dashboard server and a page in Debian's headless Chromium.

When Chromium is missing the tests are skipped with that reason (CI installs it). Helpers that read
a page live in ``streamlit_page.py``, the server and browser launchers in ``streamlit_server.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit_server import CHROMIUM, launch_chromium, serve_dashboard

from dashboard.safety import SERVER_PATHS_ENV


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """The dashboard's URL; the server is always stopped, even when the test fails.

    Its operator lets visitors name server paths: the tests open atlases from temporary folders.
    The default settings are tested in test_visitors.py.
    """
    with serve_dashboard(tmp_path, {SERVER_PATHS_ENV: "1"}) as running:
        yield running.url


@pytest.fixture
def browser_page():
    if not CHROMIUM.is_file():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(60_000)
            yield page
        finally:
            browser.close()
