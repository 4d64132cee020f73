"""The Scaling and Theory pages in a real Chromium, from a shared link that names an atlas file on the
server, a model in it and p settings; screenshots go to ``test-artifacts/``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import pytest
from miniature_family import family_atlas
from streamlit_page import assert_no_errors, screenshot, wait_for_link, wait_idle
from tiny_models import MakeCheckpoint

from dashboard.state.atlas import model_name
from dashboard.wording.text import TOTAL_LABEL

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser


def test_scaling_theory_and_a_shared_link(
    server: str, server_log: Path, browser_page: Page, make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    page = browser_page
    path, _ = family_atlas(make_checkpoint, tmp_path)
    model = model_name(path, "L2-H32")

    # The first request to this fresh server is a link straight to a page: it must still run through
    # app.py (sidebar, atlas and model from the URL), not Streamlit's legacy pages/ mode.
    page.goto(f"{server}/scaling?{urlencode({'model': model})}")
    page.locator(".st-key-growth_width_0 .js-plotly-plot").wait_for()
    page.locator(".st-key-growth_depth_0 .js-plotly-plot").wait_for()
    wait_idle(page)
    assert page.get_by_role("heading", name="Scaling").count() >= 1
    assert page.get_by_text("Fitted growth exponents").count() == 1
    assert page.locator('[data-testid="stSidebarNavLink"]', has_text="Bound explorer").count() == 1
    assert page.get_by_text("Current model:").count() == 1  # app.py's shared sidebar ran
    assert_no_errors(page)
    screenshot(page, "scaling", full_page=True)

    page.goto(f"{server}/theory?{urlencode({'model': model, 'theory_p': '0.5'})}")
    page.locator(".st-key-playground_1 .js-plotly-plot").wait_for()  # the playground's c(W; p) panel
    wait_idle(page)
    assert page.get_by_role("heading", name="Theory").count() >= 1
    assert page.locator('[data-testid="stMetric"]').count() >= 12
    assert page.locator(".katex").count() >= 9
    assert float(page.locator('.st-key-theory_p input[type="range"]').input_value()) == 0.5
    assert_no_errors(page)
    screenshot(page, "theory", full_page=True)

    shared = {
        "model": model,
        "p_optimal": "0",
        "p_global": "0.5",
        "p_kinds": "1",
        "p_kind_V_mode": "own",
        "p_kind_V": "0.25",
    }
    page.goto(f"{server}/bounds?{urlencode(shared)}")
    page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL).wait_for()
    wait_idle(page)
    assert float(page.locator('.st-key-p_global input[type="range"]').input_value()) == 0.5
    assert page.get_by_text("L2-H32 (atlas family.npz)").count() >= 1
    wait_for_link(page, "p_global=0.5", "p_kind_V_mode=own")
    # issue 10: the link's widgets are drawn without value=, so no session-state clash is logged
    assert "created with a default value" not in server_log.read_text()
    assert_no_errors(page)
    screenshot(page, "shared-link", full_page=True)
