"""The dashboard in a real headless Chromium: every page by its own address at 1440 and at 1024 × 768 (a
projector, sidebar open), headline values and formulas never cut, the headline in view while the page scrolls,
the global p slider dragged to a new total, and the total written in the browser as a slider moves.

The server (a real ``streamlit run`` on a free local port with a fresh profile cache) and Debian's
Chromium come from ``conftest.py``; screenshots of every page at both widths go to ``test-artifacts/``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from streamlit_page import assert_no_errors, screenshot, wait_for_link, wait_idle

from dashboard.wording.text import OPTIMAL_LABEL, TOTAL_LABEL
from pages.overview import PRODUCT_NAME

if TYPE_CHECKING:
    from playwright.sync_api import Page, ViewportSize, WebSocketRoute

pytestmark = pytest.mark.browser

WIDE: ViewportSize = {"width": 1440, "height": 900}
PROJECTOR: ViewportSize = {"width": 1024, "height": 768}

#: Elements whose text is cut (ellipsis or clipping): each headline value and everything inside it.
TRUNCATED_METRICS = """() => [...document.querySelectorAll(
    '[data-testid="stMetricValue"], [data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] *')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""
#: Toggle and checkbox labels cut short with "…" (Streamlit keeps them on one line by default).
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid="stCheckbox"] [data-testid="stMarkdownContainer"]')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""
#: Formulas wider than their box, which shows only a part of them (KaTeX's multi-line layouts
#: overhang by a pixel or two without hiding anything visible).
CUT_FORMULAS = """() => [...document.querySelectorAll('.katex-display')]
    .filter(e => e.scrollWidth > e.clientWidth + 4).map(e => e.innerText.slice(0, 40))"""
#: Headline values broken over two lines although they hold no space ("1.4986e+1" above "2").
BROKEN_VALUES = """() => [...document.querySelectorAll('[data-testid="stMetricValue"]')].filter(value => {
        if (/\\s/.test(value.innerText.trim())) return false;
        const lines = new Set();
        const texts = document.createTreeWalker(value, NodeFilter.SHOW_TEXT);
        for (let text = texts.nextNode(); text; text = texts.nextNode()) {
            const range = document.createRange();
            range.selectNodeContents(text);
            for (const box of range.getClientRects()) if (box.width > 0) lines.add(Math.round(box.top));
        }
        return lines.size > 1;
    }).map(value => value.innerText)"""


def _total(page: Page) -> str:
    metric = page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL)
    return metric.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _open(page: Page, url: str, heading: str) -> None:
    page.goto(url)
    page.get_by_role("heading", name=heading).first.wait_for()
    wait_idle(page)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .every(chart => chart.querySelector('.js-plotly-plot'))""")  # every chart drawn
    page.wait_for_timeout(300)


def _whole_page_screenshot(page: Page, name: str, viewport: ViewportSize) -> None:
    """The page's whole height at this width (Streamlit scrolls inside its main block, not the document)."""
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": viewport["width"], "height": min(max(height, viewport["height"]), 6000)})
    page.wait_for_timeout(500)
    screenshot(page, name)
    page.set_viewport_size(viewport)


def test_pages_by_their_address_and_views_kept_in_links(server: str, browser_page: Page) -> None:
    page = browser_page

    # "/" is the Overview itself (no forwarding round trip); "/overview" forwards to it
    page.set_viewport_size(WIDE)
    _open(page, f"{server}/overview?present=1", PRODUCT_NAME)
    assert re.fullmatch(re.escape(server) + r"/?\?present=1", page.url), page.url  # the link's settings kept
    _open(page, server, PRODUCT_NAME)
    assert page.url.rstrip("/") == server
    assert page.locator('[data-testid="stMetric"]', has_text=OPTIMAL_LABEL).count() == 1
    assert page.get_by_text("L = 6 layers · N = 384").count() == 1  # the sidebar's model shape
    assert_no_errors(page)

    # every page at each width is visited by test_product.py, with the checks above among its own
    # the explorer's longest headline (p = 1: "1.498622588 × 10¹²" with its change) in large type at 1024
    page.set_viewport_size(PROJECTOR)
    _open(page, f"{server}/bounds?p_optimal=0&present=1", "Bound explorer")
    assert "× 10¹²" in _total(page)
    assert page.evaluate(TRUNCATED_METRICS) == [] and page.evaluate(BROKEN_VALUES) == []
    assert page.evaluate(CUT_LABELS) == []  # the p controls' toggles in large type
    screenshot(page, "bounds-1024-p1-present")

    # at 1024 x 768, the explorer's headline stays in view while the page scrolls to its tables
    _open(page, f"{server}/bounds?show_tables=1", "Bound explorer")  # the tables section opened by the link
    page.locator(".st-key-terms_table").scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = page.locator(".st-key-headline").bounding_box()
    assert box is not None and 0 <= box["y"] < 150, box
    assert page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL).is_visible()
    screenshot(page, "bounds-1024-scrolled")

    # drill-down: a click on a heatmap cell, and on a table row, opens that matrix
    page.set_viewport_size(WIDE)
    _open(page, f"{server}/spectra", "Spectra")
    cells = page.locator(".st-key-head_heatmaps_0 .nsewdrag").first  # the numerical ranks, the first panel
    cells.scroll_into_view_if_needed()
    box = cells.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 0.3 * box["width"], box["y"] + 0.2 * box["height"])
    page.locator(".st-key-drill_curve .js-plotly-plot").wait_for()
    wait_for_link(page, "matrix=")
    assert re.search(r"[?&]matrix=\d+", page.url)
    _open(page, f"{server}/why", "Why p* wins")
    table = page.locator(".st-key-break_even_table [data-testid='stDataFrameResizable']").first
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 18, box["y"] + 4 * 35 + 18)  # the fourth row's selection box: L0 QK h3
    page.locator(".st-key-drill_curve .js-plotly-plot").wait_for()
    wait_for_link(page, "matrix=3")
    assert page.get_by_text("L0 QK h3").count() >= 1
    assert_no_errors(page)
    screenshot(page, "drill-down")
    page.set_viewport_size(PROJECTOR)

    # the twin as a baseline, in presentation mode: larger type, values still whole
    _open(page, f"{server}/compare?present=1", "Compare")
    page.locator(".st-key-baseline_twin button").first.click()
    page.get_by_text("Ours at p*: baseline").wait_for()
    wait_idle(page)
    assert page.evaluate(TRUNCATED_METRICS) == []
    wait_for_link(page, "baseline=twin", "present=1")
    assert_no_errors(page)
    _whole_page_screenshot(page, "compare-twin-present-1024", PROJECTOR)


def test_the_slider_moves_the_total(server: str, browser_page: Page) -> None:
    page = browser_page
    _open(page, f"{server}/bounds?p_optimal=0", "Bound explorer")
    page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL).wait_for()
    assert_no_errors(page)
    before = _total(page)

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
        arg=[TOTAL_LABEL, before],
        polling="raf",
    )
    latency_ms = 1e3 * (time.perf_counter() - released)
    after = _total(page)
    end_p = float(slider_input.input_value())
    print(
        f"\nslider p {start_p:.3f} -> {end_p:.3f}: total {before} -> {after}; "
        f"release to updated total in the browser: {latency_ms:.0f} ms"
    )
    wait_idle(page)
    timing = page.get_by_text(re.compile(r"terms evaluated in [0-9.]+ ms")).inner_text()
    print(f"server side: {timing.split(' · ')[-1]}")
    assert after != before
    assert end_p < start_p
    wait_for_link(page, f"p_global={end_p:g}")  # the fragment keeps the link in step
    assert_no_errors(page)


#: In the page: the total's value and its change against p*, and the headline's caption (which only
#: the server's rerun redraws); null for any of them not on the page (while the headline is redrawn).
READ_HEADLINE = """(label) => {
    const metric = [...document.querySelectorAll('[data-testid="stMetric"]')].find(m => m.innerText.includes(label));
    return [metric?.querySelector('[data-testid="stMetricValue"]')?.innerText.trim() ?? null,
            metric?.querySelector('[data-testid="stMetricDelta"]')?.innerText.trim() ?? null,
            document.querySelector('.st-key-headline [data-testid="stCaptionContainer"]')?.innerText ?? null];
}"""


class HeldServer:
    """Relays the page's websocket to the Streamlit server, holding back what the server sends while held."""

    def __init__(self) -> None:
        self.held: list[str | bytes] | None = None
        self._page_side: WebSocketRoute | None = None

    def route(self, socket: WebSocketRoute) -> None:
        """Playwright's handler for the page's websocket (``page.route_web_socket``)."""
        self._page_side = socket
        server = socket.connect_to_server()  # what the page sends goes on to the server as it is
        server.on_message(self._to_page)

    def _to_page(self, message: str | bytes) -> None:
        assert self._page_side is not None  # routed before any message
        if self.held is None:
            self._page_side.send(message)
        else:
            self.held.append(message)

    def hold(self) -> None:
        self.held = []

    def release(self) -> None:
        """Send what was held, in order, then let messages through again.

        Playwright delivers the server's new messages while a send is under way; they join the queue
        (still held), so nothing overtakes an older message.
        """
        assert self._page_side is not None  # routed before any message
        while self.held:
            self._page_side.send(self.held.pop(0))
        self.held = None


@pytest.mark.parametrize(
    ("link", "slider"),
    [("p_optimal=0", "p_global"), ("p_optimal=0&p_snap=0&p_kinds=1&p_kind_QK_mode=own", "p_kind_QK")],
)
def test_the_total_follows_a_slider_before_the_server_answers(
    server: str, browser_page: Page, link: str, slider: str
) -> None:
    """With the server's messages held back, a key press on a p slider still shows the new total and
    its change; once they arrive, the server's rerun draws the same texts (dashboard/widgets/live_total.py)."""
    page = browser_page
    relay = HeldServer()
    page.route_web_socket(re.compile(r".*/_stcore/stream"), relay.route)
    _open(page, f"{server}/bounds?{link}", "Bound explorer")
    # mounted, and hidden by the style sheet, which on a first load can arrive seconds after the elements
    page.locator(".st-key-live_total").wait_for(state="hidden", timeout=30_000)
    assert page.locator(".st-key-live_total").count() == 1
    for key in ("ArrowRight", "ArrowLeft", "ArrowLeft"):
        wait_idle(page)
        page.wait_for_timeout(500)  # the last run's messages all in
        value, delta, caption = page.evaluate(READ_HEADLINE, TOTAL_LABEL)
        relay.hold()
        page.locator(f'.st-key-{slider} input[type="range"]').focus()
        page.keyboard.press(key)
        page.wait_for_function(
            "([label, old]) => (" + READ_HEADLINE + ")(label)[0] !== old", arg=[TOTAL_LABEL, value], timeout=5_000
        )  # no server message can have changed it
        live_value, live_delta, _ = page.evaluate(READ_HEADLINE, TOTAL_LABEL)
        assert live_delta != delta or live_delta == "±0 vs p*"
        deadline = time.monotonic() + 60
        while not relay.held:  # wait for the server's answer; its messages wait in the relay
            assert time.monotonic() < deadline, "the server never answered the move"
            page.wait_for_timeout(50)
        page.wait_for_timeout(300)
        assert page.evaluate(READ_HEADLINE, TOTAL_LABEL) == [live_value, live_delta, caption]  # none reached the page
        relay.release()
        page.wait_for_function(  # the server's rerun draws the texts the browser showed
            """([label, old, value, delta]) => {
                const [shownValue, shownDelta, caption] = ("""
            + READ_HEADLINE
            + """)(label);
                return ![null, old].includes(caption) && shownValue === value && shownDelta === delta;
            }""",
            arg=[TOTAL_LABEL, caption, live_value, live_delta],
            timeout=30_000,
        )
    assert_no_errors(page)


def test_tables_and_reports_download_the_view_they_show(server: str, browser_page: Page) -> None:
    """The CSV and the HTML report are written when their button is pressed, at the p the page shows."""
    page = browser_page
    page.set_viewport_size(WIDE)
    _open(page, f"{server}/bounds?p_optimal=0&p_global=0.5", "Bound explorer")
    assert page.locator(".st-key-download_terms").count() == 0  # the tables are drawn when their section opens
    page.locator(".st-key-show_tables summary").click()
    page.locator(".st-key-download_terms button").wait_for()
    wait_idle(page)
    wait_for_link(page, "show_tables=1")
    with page.expect_download() as download:
        page.locator(".st-key-download_terms button").click()
    assert download.value.suggested_filename == "minilm-l6-terms.csv"
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    assert header[0] == "matrix" and "p" in header and len(lines) == 1 + 156  # one row per proxy matrix
    p_column = header.index("p")
    assert {line.split(",")[p_column] for line in lines[1:]} == {"0.5"}
    with page.expect_download() as download:
        page.get_by_role("button", name="Download this view as an HTML report").click()
    report = Path(download.value.path()).read_text(encoding="utf-8")
    assert "default p = 0.5" in report and 'class="plotly-graph-div"' in report
    assert_no_errors(page)
