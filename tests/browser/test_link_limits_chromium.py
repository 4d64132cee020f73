"""Hostile links (class 12), in a real Chromium: a link with more query parameters than Streamlit reads
(it then ignores the whole query string, which AppTest never sends) is said so on the page and
cleared from the address bar; a link within the limit keeps its own settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import pytest
from streamlit.runtime.state.query_params import CLIENT_STATE_QUERY_STRING_MAX_FIELDS
from streamlit_page import screenshot, wait_idle
from streamlit_server import serve_dashboard

from dashboard.safety import SERVER_PATHS_ENV

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

WARNING_BOX = '[data-testid="stAlertContentWarning"]'
SIDEBAR_SHAPE = "L = 6 layers · N = 384"


@pytest.fixture(scope="module")
def visitor_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A dashboard with the settings a server starts with (server paths off), for this module's tests."""
    with serve_dashboard(tmp_path_factory.mktemp("visitors"), {SERVER_PATHS_ENV: ""}) as running:
        yield running.url


def _junk(count: int) -> str:
    return "&".join(f"j{i}=x" for i in range(count))


@pytest.mark.parametrize("extra", [CLIENT_STATE_QUERY_STRING_MAX_FIELDS, 5000])
def test_a_link_beyond_the_parameter_limit_is_said_so_and_cleared(
    visitor_server: str, browser_page: Page, extra: int
) -> None:
    page = browser_page
    page.goto(f"{visitor_server}/bounds?p_global=0.5&{_junk(extra)}")
    warning = page.locator(WARNING_BOX).filter(has_text="query parameters")
    warning.wait_for()
    text = " ".join(warning.inner_text().split())
    assert f"{extra + 1:,} query parameters" in text and "none of its settings were used" in text
    page.wait_for_url(lambda address: "?" not in address and "j1=" not in address)
    page.get_by_text(SIDEBAR_SHAPE).wait_for()
    wait_idle(page)
    screenshot(page, f"link-over-the-limit-{extra}")
    page.reload()  # the address bar now reproduces what is shown: no warning again
    page.get_by_text(SIDEBAR_SHAPE).wait_for()
    wait_idle(page)
    assert page.locator(WARNING_BOX).filter(has_text="query parameters").count() == 0


def test_a_link_within_the_limit_keeps_its_settings_and_drops_the_junk(visitor_server: str, browser_page: Page) -> None:
    page = browser_page
    page.goto(
        f"{visitor_server}/bounds?{urlencode({'p_global': '0.5'})}&{_junk(CLIENT_STATE_QUERY_STRING_MAX_FIELDS - 2)}"
    )
    page.get_by_text(SIDEBAR_SHAPE).wait_for()
    page.wait_for_url(lambda address: "j1=" not in address and "p_global=0.5" in address)
    wait_idle(page)
    assert page.locator(WARNING_BOX).filter(has_text="query parameters").count() == 0
