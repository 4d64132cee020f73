"""Reading a Streamlit page in the browser tests: waiting for a run to finish, checking for errors.

Screenshots go to ``ARTIFACTS`` (``test-artifacts/`` at the top of the repository, ignored by git)
for people to look at.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

#: An uncaught exception, and an st.error box. Info and warning boxes are not errors.
ERROR_SELECTORS = ('[data-testid="stException"]', '[data-testid="stAlertContentError"]')


def assert_no_errors(page: Page) -> None:
    for selector in ERROR_SELECTORS:
        found = page.locator(selector)
        assert found.count() == 0, found.all_inner_texts()


#: A placeholder Streamlit draws while an element's code is still loading (the Plotly chart's, on a
#: first load) or its content is still to come.
PLACEHOLDER = "[data-testid=stSkeleton]"


def wait_idle(page: Page) -> None:
    """Wait until the script run is over and everything it sent is drawn.

    The status widget shows 'Running' while a rerun is on, but only after a moment, and a chart shows
    a placeholder until Plotly's code has loaded: a check made before both are gone would look at an
    empty page and pass whatever it asks.
    """
    page.wait_for_timeout(300)
    page.wait_for_function(
        f"() => !document.querySelector('[data-testid=stStatusWidget]') && !document.querySelector('{PLACEHOLDER}')"
    )


def wait_for_link(page: Page, *parts: str, timeout: float = 30_000) -> None:
    """Wait until the page's address holds every one of ``parts``: the link follows a setting in a
    rerun of its own, after the widget's change is already drawn, and more slowly on a loaded machine."""
    page.wait_for_function(
        "parts => parts.every(part => window.location.href.includes(part))", arg=list(parts), timeout=timeout
    )


def screenshot(page: Page, name: str, *, full_page: bool = False) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{slug(name)}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
