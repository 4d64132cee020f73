"""Opening a BERT Miniature that is not cached: the dashboard downloads it (from a local server that
speaks the Hub's protocol, see tests/local_hub.py) and the grid then marks it as cached."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_hub import LocalHub
from streamlit_page import assert_no_errors, screenshot, wait_idle
from streamlit_server import serve_dashboard

from dashboard.sidebar import CACHED_MARK
from specbound.models import miniature_repo_id

pytestmark = pytest.mark.browser


def choose(page, key: str, option: str) -> None:
    """Pick an option of a selectbox (a combo box: open its list, click the option)."""
    page.locator(f".st-key-{key} [role='combobox']").click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_idle(page)


def test_a_miniature_is_downloaded_when_opened(browser_page, make_checkpoint, tmp_path: Path) -> None:
    page = browser_page
    with LocalHub(tmp_path / "hub") as hub:
        hub.add(miniature_repo_id(2, 128), make_checkpoint("bert", layers=2, hidden=128, heads=2, ffn=256))
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
        with serve_dashboard(tmp_path, env) as server:
            page.goto(server.url)
            page.locator(".st-key-sv_profiles .js-plotly-plot").wait_for()
            wait_idle(page)
            page.locator(".st-key-model_source").get_by_text("BERT Miniature").click()
            wait_idle(page)
            choose(page, "miniature_layers", "2")
            choose(page, "miniature_width", "128")
            page.locator(".st-key-open_model button").click()
            page.get_by_text("L = 2 layers · N = 128").wait_for()
            wait_idle(page)
            assert_no_errors(page)
            screenshot(page, "download-miniature")
            # the selection now shows as cached in the grid
            grid = page.locator("[data-testid='stSidebar'] table").inner_text()
            assert f"[{CACHED_MARK}]" in grid and grid.count(CACHED_MARK) == 1
    assert (tmp_path / "hf" / "hub" / f"models--{miniature_repo_id(2, 128).replace('/', '--')}").is_dir()
