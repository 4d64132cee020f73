"""The Lab page in a real Chromium, opened by its URL: its figures draw from the shipped reference and
nothing fails; the sweep view draws the verdicts and the robust view's CDF; screenshots at 1440 px wide go
to ``test-artifacts/lab.png`` and ``test-artifacts/lab-sweep.png``. On a projector (1024 × 768,
presentation mode) the first screen holds the answer: its sentence and its forest plot
(``test-artifacts/lab-1024-present.png``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from streamlit_page import assert_no_errors, screenshot, wait_for_link, wait_idle

from dashboard.wording.lab import LAB_MODEL_LABEL

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

#: The spectra at a step are one chart per kind (QK, V, M_in, M_out: stacked on a phone).
SPECTRA = tuple(f"lab_spectra_{n}" for n in range(4))
FIGURES = (
    "lab_answer_forest",
    "lab_proxies",
    "lab_errors",
    "lab_alpha",
    "lab_p_distribution",
    "lab_power_law",
    "lab_p_map",
    *SPECTRA,
)


def test_the_lab_page_opens_by_its_url(server: str, browser_page: Page) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 2900})
    page.goto(f"{server}/lab")
    for key in FIGURES:
        page.locator(f".st-key-{key} .js-plotly-plot").wait_for()
    wait_idle(page)
    assert page.get_by_role("heading", name="Lab").count() >= 1
    assert page.locator('[data-testid="stPlotlyChart"]').count() == len(FIGURES)
    assert page.get_by_text(LAB_MODEL_LABEL).count() >= 1
    assert page.locator('[data-testid="stMetric"]', has_text="Total (ours at p*)").count() == 1
    assert page.get_by_text("Current model:").count() == 1  # app.py's shared sidebar ran
    assert_no_errors(page)
    screenshot(page, "lab", full_page=True)

    page.get_by_text("Sweep: measures against the gap").click()
    # one chart per measure; the first switch reads every shipped sweep's tables (no bootstrap)
    page.locator(".st-key-lab_measures_0 .js-plotly-plot").wait_for(timeout=180_000)
    page.locator(".st-key-lab_robust_cdf .js-plotly-plot").wait_for()  # the robust view's CDF over couplings
    wait_idle(page)
    wait_for_link(page, "lab_view=sweep")
    verdicts = [page.locator(f".st-key-lab_verdict_{n}").inner_text() for n in range(5)]  # each sweep's, in words
    assert [v.count("threshold/bert:") for v in verdicts] == [1, 1, 0, 0, 0]
    assert "threshold/gpt2:" in verdicts[2] and "markov/gpt2:" in verdicts[3] and "markov/llama:" in verdicts[4]
    assert_no_errors(page)
    screenshot(page, "lab-sweep", full_page=True)


def test_on_a_projector_the_first_screen_holds_the_answer(server: str, browser_page: Page) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{server}/lab?present=1")
    page.locator(".st-key-lab_answer_forest .js-plotly-plot").wait_for()
    wait_idle(page)
    page.evaluate("window.scrollTo(0, 0)")
    sentence = page.locator(".st-key-lab_answer")
    assert sentence.inner_text().startswith("Does the bound predict the gap here?")
    for element in (sentence, page.locator(".st-key-lab_answer_forest .js-plotly-plot")):
        box = element.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 768, box  # whole, on screen
    assert_no_errors(page)
    screenshot(page, "lab-1024-present")
