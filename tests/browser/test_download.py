"""Downloads from the dashboard: BERT Miniatures that are not cached come from a local server that
speaks the Hub's protocol (see tests/local_hub.py), with the app's real download code."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from local_hub import LocalHub
from streamlit_page import assert_no_errors, screenshot, wait_idle
from streamlit_server import serve_dashboard
from tiny_models import MakeCheckpoint

from dashboard.widgets.sidebar import CACHED_MARK
from specbound.io.models import miniature_repo_id

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

#: Tiny stand-ins for L2-H128 and L4-H128 (their shapes, random weights): one growth curve in L.
PUBLISHED = ((2, 128), (4, 128))


@pytest.fixture
def hub_server(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> Iterator[str]:
    """A dashboard whose Hub is a local server publishing the PUBLISHED miniatures."""
    with LocalHub(tmp_path / "hub") as hub:
        for layers, width in PUBLISHED:
            hub.add(
                miniature_repo_id(layers, width),
                make_checkpoint("bert", layers=layers, hidden=width, heads=2, ffn=256, seed=layers),
            )
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
        with serve_dashboard(tmp_path, env) as server:
            yield server.url


def choose(page: Page, key: str, *options: str) -> None:
    """Pick options of a selectbox or multiselect (a combo box: open its list, click each option)."""
    for option in options:
        page.locator(f".st-key-{key} [role='combobox']").click()
        page.get_by_role("option", name=option, exact=True).click()
        wait_idle(page)


def test_a_miniature_is_downloaded_when_opened(browser_page: Page, hub_server: str) -> None:
    page = browser_page
    page.goto(f"{hub_server}/spectra")
    page.locator(".st-key-sv_profiles_0 .js-plotly-plot").wait_for()  # the profiles, one chart per kind
    wait_idle(page)
    page.locator(".st-key-model_source").get_by_text("BERT Miniature").click()
    wait_idle(page)
    choose(page, "miniature_layers", "2")
    choose(page, "miniature_width", "128")
    page.locator(".st-key-open_model button").click()
    # the size comes first, from the Hub's metadata; the weights only after the visitor agrees
    confirm = page.locator(".st-key-confirm_download button")
    confirm.wait_for()
    assert re.fullmatch(r"Download \d+\.\d MB and open", confirm.inner_text().strip())
    confirm.click()
    page.get_by_text("L = 2 layers · N = 128").wait_for()
    wait_idle(page)
    assert_no_errors(page)
    # the grid now marks the selection as cached, and only it
    grid = page.locator("[data-testid='stSidebar'] table").inner_text()
    assert f"[{CACHED_MARK}]" in grid and grid.count(CACHED_MARK) == 1
    screenshot(page, "download-miniature")


def test_the_scaling_page_downloads_the_chosen_miniatures(browser_page: Page, hub_server: str) -> None:
    page = browser_page
    page.goto(f"{hub_server}/scaling?scaling_family=mini")  # none cached: it would open on the lab's family
    page.get_by_text("The study needs at least two models").wait_for()
    wait_idle(page)
    choose(page, "scaling_download_models", "L2-H128", "L4-H128")
    page.keyboard.press("Escape")  # a multiselect keeps its list open
    page.locator("[data-testid='stFormSubmitButton'] button").click()
    confirm = page.locator(".st-key-scaling_confirm_download button")
    confirm.wait_for()  # the size comes first, from config.json and the Hub's metadata
    assert re.fullmatch(r"Download [\d.,]+ MB for 2 model\(s\) and analyse them", confirm.inner_text().strip())
    confirm.click()
    page.locator(".st-key-growth_depth_0 .js-plotly-plot").wait_for()
    wait_idle(page)
    assert_no_errors(page)
    assert page.get_by_text("Fitted growth exponents").count() == 1
    assert page.get_by_text("22 of the 24 BERT Miniatures").count() == 1  # the two left the missing list
    screenshot(page, "scaling-after-download", full_page=True)
