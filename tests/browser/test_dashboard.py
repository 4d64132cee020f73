"""The dashboard in a real headless Chromium: serve app.py, open each page, drag the global p slider.

The server is a real ``streamlit run`` subprocess on a free local port with a fresh profile cache;
screenshots go to ``test-artifacts/`` for people to look at. Chromium is Debian's package; when it
is missing the test is skipped with that reason (CI installs it).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.text import TOTAL_LABEL

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
STARTUP_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"streamlit did not become healthy in {STARTUP_TIMEOUT_S} s:\n{log.read_text()}")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A dashboard served on a free port; always stopped, even when the test fails."""
    port = _free_port()
    log = tmp_path / "streamlit.log"
    env = dict(os.environ, SPECBOUND_CACHE=str(tmp_path / "profiles"))
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.headless", "true", "--server.address", "127.0.0.1"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def browser_page():
    if not CHROMIUM.is_file():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(60_000)
            yield page
        finally:
            browser.close()


def _assert_no_errors(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator('[data-testid="stException"]').all_inner_texts()
    assert page.locator('[data-testid="stAlert"]').count() == 0, page.locator('[data-testid="stAlert"]').all_inner_texts()


def _wait_idle(page) -> None:
    """Wait until the script run is over (the status widget shows 'Running' while a rerun is on)."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")


def _total(page) -> str:
    metric = page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL)
    return metric.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def test_every_page_opens_and_the_slider_moves_the_total(server: str, browser_page) -> None:
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)

    page.goto(server)
    page.locator(".st-key-sv_profiles .js-plotly-plot").wait_for()
    _wait_idle(page)
    assert page.get_by_role("heading", name="Spectra").count() >= 1
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 3
    assert page.get_by_text("L = 6 layers · N = 384").count() == 1  # the sidebar's model shape
    _assert_no_errors(page)
    page.screenshot(path=str(ARTIFACTS / "spectra.png"))

    # every page in the navigation opens without an exception
    # each link's text is the icon's ligature name, then the title
    titles = [t.strip().splitlines()[-1] for t in page.locator('[data-testid="stSidebarNavLink"]').all_inner_texts()]
    assert {"Spectra", "Bound explorer"} <= set(titles)
    for title in titles:
        page.locator('[data-testid="stSidebarNavLink"]', has_text=title).click()
        page.get_by_role("heading", name=title).first.wait_for()
        _wait_idle(page)
        exceptions = page.locator('[data-testid="stException"]')
        assert exceptions.count() == 0, (title, exceptions.all_inner_texts())
        page.screenshot(path=str(ARTIFACTS / f"page-{_slug(title)}.png"))

    page.locator('[data-testid="stSidebarNavLink"]', has_text="Bound explorer").click()
    page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL).wait_for()
    _wait_idle(page)
    _assert_no_errors(page)
    before = _total(page)
    page.screenshot(path=str(ARTIFACTS / "bounds-before.png"))

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
    _wait_idle(page)
    timing = page.get_by_text(re.compile(r"terms evaluated in [0-9.]+ ms")).inner_text()
    print(f"server side: {timing.split(' · ')[-1]}")
    assert after != before
    assert end_p < start_p
    _assert_no_errors(page)
    page.screenshot(path=str(ARTIFACTS / "bounds-after.png"))
    page.locator(".st-key-contribution_curves").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "bounds-curves-and-tables.png"))
