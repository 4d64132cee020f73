"""Fixtures of the browser tests: a real dashboard server and a page in Debian's headless Chromium.

When Chromium is missing the tests are skipped with that reason (CI installs it). Helpers that read
a page live in ``streamlit_page.py``, the server and browser launchers in ``streamlit_server.py``.

One server and one Chromium serve the tests of a module, each test getting a page of its own in a
browser context of its own (no cookie, storage or Streamlit session is shared): a module pays once for
what a server does before its first page (Python, Streamlit, the library, the default model's profile)
and for a browser's start, not once per test. Every module starts its own, so a module's first test
meets a fresh server; test_product.py gives each of its tests a fresh server and browser (its reason is
written there).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit_server import ModuleServer, dashboard_server, headless_chromium


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleServer]:
    """The dashboard served for the tests of one module."""
    with dashboard_server(tmp_path_factory.mktemp("dashboard")) as running:
        yield running


@pytest.fixture
def server(module_server: ModuleServer) -> str:
    """The dashboard's URL (the module's server)."""
    return module_server.url


@pytest.fixture
def server_log(module_server: ModuleServer) -> Path:
    """The log of the module's server (its standard output and error)."""
    return module_server.log


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium, started once for the tests of one module."""
    with headless_chromium() as browser:
        yield browser


@pytest.fixture
def browser_page(chromium):
    """A new page of the module's Chromium, in a browser context of its own (closed after the test)."""
    page = chromium.new_page(viewport={"width": 1400, "height": 1800})
    try:
        page.set_default_timeout(60_000)
        yield page
    finally:
        page.context.close()
