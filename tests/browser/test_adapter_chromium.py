"""A LoRA adapter with a relative base opens in a real dashboard server, in Debian's headless Chromium.

The adapter is written by peft's own ``save_pretrained`` and records ``models/my-base``, relative to
its project; the server runs from the repository, another folder. A link opens the adapter centred at
its base, pinned as the baseline: the page draws without an error and its headline is the API's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from peft_projects import ADAPTER, BASE, make_project
from streamlit_page import assert_no_errors, screenshot, wait_idle
from streamlit_server import serve_dashboard

import specbound
from dashboard.safety import SERVER_PATHS_ENV
from dashboard.wording.text import OPTIMAL_LABEL, with_centring
from specbound.present.numbers import format_log
from specbound.present.report import centred_label

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser
pytest.importorskip("peft")


def test_an_adapter_with_a_relative_base_opens_centred_in_the_browser(tmp_path: Path, browser_page: Page) -> None:
    project = make_project(tmp_path / "project")
    adapter, base = project / ADAPTER, project / BASE
    expected = specbound.analyze(str(adapter), use_cache=False)
    assert expected.centred is not None
    label = with_centring(OPTIMAL_LABEL, centred_label(str(base)))
    page = browser_page
    with serve_dashboard(tmp_path, {SERVER_PATHS_ENV: "1", "HF_HUB_OFFLINE": "1"}) as server:
        page.goto(f"{server.url}/bounds?model={quote(str(adapter))}&baseline={quote(str(base))}&centred=1")
        page.get_by_role("heading", name="Bound explorer").first.wait_for()
        metric = page.locator('[data-testid="stMetric"]', has_text=label)
        metric.wait_for()
        wait_idle(page)
        assert_no_errors(page)
        value = metric.locator('[data-testid="stMetricValue"]').inner_text().strip()
        screenshot(page, "adapter-centred-at-its-base")
    assert value == format_log(expected.centred.optimal.log_total)
