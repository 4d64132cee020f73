"""The dashboard in a real headless Chromium: serve app.py, open each page, drag the global p slider.

The server (a real ``streamlit run`` on a free local port with a fresh profile cache) and Debian's
Chromium come from ``conftest.py``; screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import re
import time

import pytest
from streamlit_page import assert_no_errors, screenshot, wait_idle

from dashboard.text import TOTAL_LABEL

pytestmark = pytest.mark.browser


def _total(page) -> str:
    metric = page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL)
    return metric.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_every_page_opens_and_the_slider_moves_the_total(server: str, browser_page) -> None:
    page = browser_page

    page.goto(server)
    page.locator(".st-key-sv_profiles .js-plotly-plot").wait_for()
    wait_idle(page)
    assert page.get_by_role("heading", name="Spectra").count() >= 1
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 3
    assert page.get_by_text("L = 6 layers · N = 384").count() == 1  # the sidebar's model shape
    assert_no_errors(page)
    screenshot(page, "spectra")

    # every page in the navigation opens without an exception
    # each link's text is the icon's ligature name, then the title
    titles = [t.strip().splitlines()[-1] for t in page.locator('[data-testid="stSidebarNavLink"]').all_inner_texts()]
    assert {"Spectra", "Bound explorer"} <= set(titles)
    for title in titles:
        page.locator('[data-testid="stSidebarNavLink"]', has_text=title).click()
        page.get_by_role("heading", name=title).first.wait_for()
        wait_idle(page)
        exceptions = page.locator('[data-testid="stException"]')
        assert exceptions.count() == 0, (title, exceptions.all_inner_texts())
        screenshot(page, f"page-{title}")

    page.locator('[data-testid="stSidebarNavLink"]', has_text="Bound explorer").click()
    page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL).wait_for()
    wait_idle(page)
    assert_no_errors(page)
    before = _total(page)
    screenshot(page, "bounds-before")

    slider_input = page.locator('.st-key-p_global input[type="range"]')
    thumb = slider_input.locator("xpath=../..")  # the thumb wraps a visually hidden range input
    track = page.locator('.st-key-p_global [role="group"] > div').first
    box, track_box = thumb.bounding_box(), track.bounding_box()
    assert box is not None and track_box is not None
    start_p = float(slider_input.input_value())
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(track_box["x"] + 0.25 * track_box["width"], box["y"] + box["height"] / 2, steps=8)
    page.mouse.up()
    released = time.perf_counter()
    page.wait_for_function(
        """([label, old]) => [...document.querySelectorAll('[data-testid="stMetric"]')]
               .some(m => m.innerText.includes(label)
                      && m.querySelector('[data-testid="stMetricValue"]').innerText.trim() !== old)""",
        arg=[TOTAL_LABEL, before], polling="raf",
    )
    latency_ms = 1e3 * (time.perf_counter() - released)
    after = _total(page)
    end_p = float(slider_input.input_value())
    print(f"\nslider p {start_p:.3f} -> {end_p:.3f}: total {before} -> {after}; "
          f"release to updated total in the browser: {latency_ms:.0f} ms")
    wait_idle(page)
    timing = page.get_by_text(re.compile(r"terms evaluated in [0-9.]+ ms")).inner_text()
    print(f"server side: {timing.split(' · ')[-1]}")
    assert after != before
    assert end_p < start_p
    assert_no_errors(page)
    screenshot(page, "bounds-after")
    page.locator(".st-key-contribution_curves").scroll_into_view_if_needed()
    screenshot(page, "bounds-curves-and-tables")
