"""Small things a visitor sees, each in a real dashboard server and Debian's headless Chromium.

At 1024 × 768 the Bound explorer's sticky headline holds its four values on one aligned row, nothing of it
cut and its caption inside its band, whether or not p is at p* and a baseline is pinned. On a phone the
map of what a fine-tune changed keeps its labels apart, and a shared ``matrix=`` link opens with that
matrix in view. Every title sits under the toolbar without a blank band; the p* histogram counts in whole
numbers with nothing written on its bars; the grokking figure's marks and titles stay apart; Theory's
playground shows its controls and its charts on one screen. A model opened from a folder of the server is
named by the folder alone on every label, and an uploaded atlas opens without a click on "Open model".
"""

from __future__ import annotations

import contextlib
import itertools
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from peft_projects import ADAPTER, BASE, make_project
from streamlit_page import assert_no_errors, screenshot, wait_idle
from test_product import LAB_MODEL, PAGES, PHONE, PROJECTOR, _open

from dashboard.wording.text import TOTAL_LABEL
from pages.overview import PRODUCT_NAME

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

#: Every label, value and change of the sticky headline's metrics: [metric, part, left, top, width, height,
#: clipped] where clipped says the text is wider than its box or cut with an ellipsis.
HEADLINE_PARTS = """() => [...document.querySelectorAll('.st-key-headline [data-testid="stMetric"]')].flatMap((m, i) =>
    [...m.querySelectorAll(['Label', 'Value', 'Delta'].map(part => `[data-testid="stMetric${part}"]`).join(', '))]
    .map(e => {
        const b = e.getBoundingClientRect();
        const cut = [e, ...e.querySelectorAll('*')].some(x => x.scrollWidth > x.clientWidth + 1
            && getComputedStyle(x).overflow !== 'visible') || e.innerText.includes('…');
        return [i, e.dataset.testid.replace('stMetric', ''), b.left, b.top, b.width, b.height, cut];
    }))"""
#: The sticky band (the headline's wrapper) and its caption: [band top, band bottom, caption top, caption bottom].
HEADLINE_BAND = """() => {
    const band = document.querySelector('[data-testid="stLayoutWrapper"]:has(> .st-key-headline)')
        .getBoundingClientRect();
    const caption = document.querySelector('.st-key-headline [data-testid="stCaptionContainer"]')
        .getBoundingClientRect();
    return [band.top, band.bottom, caption.top, caption.bottom];
}"""
#: Texts of the chart in the element keyed by the argument, chosen by a CSS selector, whose boxes overlap.
OVERLAPPING_IN = """([key, css]) => {
    const boxes = [...document.querySelectorAll(`.st-key-${key} .js-plotly-plot ${css}`)]
        .filter(t => t.textContent.trim()).map(t => [t.textContent, t.getBoundingClientRect()])
        .filter(([, b]) => b.width > 0);
    const hits = [];
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const [a, p] = boxes[i], [b, q] = boxes[j];
        const apart = p.right <= q.left + 1 || q.right <= p.left + 1 || p.bottom <= q.top + 1 || q.bottom <= p.top + 1;
        if (!apart) hits.push(a + ' / ' + b);
    }
    return hits;
}"""
#: [toolbar bottom, top of the first line of the page title's text].
TITLE_GAP = """() => {
    const header = document.querySelector('[data-testid="stHeader"]').getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(document.querySelector('[data-testid="stMain"] h1'));
    return [header.bottom, range.getClientRects()[0].top];
}"""
#: The histogram's count ticks, and the texts written over one of its bars: [ticks, [text, ...]].
HISTOGRAM = """() => {
    const plot = document.querySelector('.st-key-p_star_histogram .js-plotly-plot');
    const ticks = [...plot.querySelectorAll('.yaxislayer-above text')].map(t => t.textContent);
    const bars = [...plot.querySelectorAll('.bars path')].map(p => p.getBoundingClientRect()).filter(b => b.height > 0);
    const texts = [...plot.querySelectorAll('.gtitle, .gtitle-subtitle, .annotation-text, .legendtext')]
        .filter(t => t.textContent.trim()).filter(t => {
            const b = t.getBoundingClientRect();
            return bars.some(q => !(b.right <= q.left || q.right <= b.left || b.bottom <= q.top || q.bottom <= b.top));
        }).map(t => t.textContent);
    return [ticks, texts];
}"""
#: Every text a visitor reads in the page (its elements' text, chart texts, tooltips and button labels) that
#: holds the argument.
TEXTS_WITH = """(needle) => {
    const hits = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        const shown = t.textContent.includes(needle) && !t.parentElement.closest('script, style');
        if (shown) hits.push(t.textContent.slice(0, 120));
    }
    for (const e of document.querySelectorAll('[title], [aria-label]')) for (const a of ['title', 'aria-label']) {
        const v = e.getAttribute(a);
        if (v && v.includes(needle)) hits.push(`${a}: ${v.slice(0, 120)}`);
    }
    return hits;
}"""
#: The open matrix's heading against what stays on top of the page: [heading top, heading bottom, bottom of the
#: toolbar and of the sticky headline's band (where the page has one), window height].
DETAIL_HEADING = """() => {
    const heading = document.querySelector('.st-key-drilldown h4').getBoundingClientRect();
    const header = document.querySelector('[data-testid="stHeader"]').getBoundingClientRect();
    const band = document.querySelector('[data-testid="stLayoutWrapper"]:has(> .st-key-headline)');
    const bottom = Math.max(header.bottom, band ? band.getBoundingClientRect().bottom : 0);
    return [heading.top, heading.bottom, bottom, window.innerHeight];
}"""
#: The headline's tolerance: boxes of one row agree to within this many px.
ALIGNED_PX = 1.5


def _headline_rows(page: Page) -> dict[str, list[list[float]]]:
    parts = page.evaluate(HEADLINE_PARTS)
    rows: dict[str, list[list[float]]] = {}
    for _metric, part, left, top, width, height, cut in parts:
        assert not cut, parts  # a label, value or change cut with "…" or wider than its box
        rows.setdefault(part, []).append([left, top, width, height])
    return rows


@pytest.mark.parametrize("suffix", ["", "&present=1"], ids=["1024", "1024-present"])
def test_the_sticky_headline_aligns_its_four_values_at_1024(server: str, browser_page: Page, suffix: str) -> None:
    """p far from p* (a change of 10¹⁶) and the twin pinned: four values, their tops and heights equal, none
    of the labels, values or changes cut, and the caption inside the sticky band, scrolled or not."""
    page = browser_page
    page.set_viewport_size(PROJECTOR)
    _open(page, f"{server}/bounds?p_optimal=0&p_global=2&baseline=twin:minilm-l6{suffix}", "Bound explorer")
    page.locator('[data-testid="stMetric"]', has_text="Baseline at the same p").wait_for()
    wait_idle(page)
    assert_no_errors(page)
    rows = _headline_rows(page)
    values, labels = rows["Value"], rows["Label"]
    assert len(values) == 4 and len(rows["Delta"]) == 2, rows
    for row in (values, labels):
        tops, heights = [box[1] for box in row], [box[3] for box in row]
        assert max(tops) - min(tops) <= ALIGNED_PX, (suffix, row)
        assert max(heights) - min(heights) <= ALIGNED_PX, (suffix, row)
    lefts = sorted(box[0] for box in values)
    widths = {box[0]: box[2] for box in values}
    assert all(a + widths[a] <= b + 1 for a, b in itertools.pairwise(lefts)), values  # side by side
    band = page.evaluate(HEADLINE_BAND)
    assert band[0] <= band[2] and band[3] <= band[1] + 1, band  # the caption inside its band
    page.mouse.move(PROJECTOR["width"] - 40, PROJECTOR["height"] // 2)
    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(600)
    band = page.evaluate(HEADLINE_BAND)
    assert band[0] < 100 and band[3] <= band[1] + 1, band  # stuck under the toolbar, caption still inside
    assert page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL).is_visible()
    screenshot(page, f"minors-headline-1024{suffix.replace('&', '-').replace('=', '')}")


def test_on_a_phone_the_change_map_labels_stay_apart_and_a_matrix_link_opens_at_its_matrix(
    server: str, browser_page: Page
) -> None:
    """The shipped fine-tune against its base at 390 px: the tick labels of the map of what changed and of the
    map of intruders do not overprint ("M_inM_out"). A link naming a matrix opens with its detail's heading
    on screen, below the sticky band (the toolbar, and the headline on the pages that have one), at 390 and
    at 1024 px."""
    from specbound.io import FINETUNE_BASE as BASE_NAME
    from specbound.io import FINETUNE_FULL as FULL_NAME

    page = browser_page
    page.set_viewport_size(PHONE)
    _open(page, f"{server}/compare?model={FULL_NAME}&baseline={BASE_NAME}", "Compare")
    for key in ("change_heatmaps", "intruder_heatmaps"):
        chart = page.locator(f".st-key-{key} .js-plotly-plot")
        chart.wait_for()
        chart.scroll_into_view_if_needed()
        ticks = page.evaluate(OVERLAPPING_IN, [key, ".xaxislayer-above text, .yaxislayer-above text"])
        assert ticks == [], (key, ticks)
        assert page.locator(f".st-key-{key} .xaxislayer-above text", has_text="M_out").count() == 1, key
    screenshot(page, "minors-change-map-390")

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for viewport, width in ((PHONE, "390"), (PROJECTOR, "1024")):
        page.set_viewport_size(viewport)
        for path, heading in (
            ("bounds?matrix=3", "Bound explorer"),
            ("why?matrix=3", "Why p* wins"),
            (f"compare?model={FULL_NAME}&baseline={BASE_NAME}&matrix=3", "Compare"),
        ):
            where = f"{path} at {width}"
            page.goto(f"{server}/{path}")
            page.get_by_role("heading", name=heading).first.wait_for()
            detail = page.locator(".st-key-drilldown")
            detail.wait_for()
            wait_idle(page)
            page.wait_for_timeout(1500)
            # the heading of the matrix the link names, below the sticky band (toolbar and headline), on screen
            with contextlib.suppress(PlaywrightTimeout):
                page.wait_for_function(
                    f"() => {{ const [t, b, band, h] = ({DETAIL_HEADING})(); return t >= band && b <= h; }}",
                    timeout=8_000,
                )
            top, bottom, band, height = page.evaluate(DETAIL_HEADING)
            assert band <= top and bottom <= height, (where, top, bottom, band, height)
            assert top - band <= 0.25 * height, (where, top, band)  # brought up to the band, not left screens below
            assert re.match(r"L\d+ (QK|V|M_)", detail.locator("h4").first.inner_text()), where  # the matrix named
            first = detail.locator('[data-testid="stMetric"]').first.bounding_box()
            assert first is not None and first["y"] + first["height"] <= height, (where, first)
            screenshot(page, f"minors-matrix-link-{heading.lower().replace(' ', '-').replace('*', '')}-{width}")


def test_titles_sit_under_the_toolbar_on_every_page(server: str, browser_page: Page) -> None:
    """No blank band above a page's title: its text starts within 40 px of the toolbar's bottom edge."""
    page = browser_page
    page.set_viewport_size(PROJECTOR)
    for path, heading in PAGES:
        page.goto(f"{server}/{path}")
        page.get_by_role("heading", name=heading).first.wait_for()
        # while the script still runs, elements above the title (a model's progress bar) come and go:
        # measure once the layout has settled, or after 20 s whatever it is
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"() => {{ const [t, h] = ({TITLE_GAP})(); return h - t <= 40; }}", timeout=20_000)
        toolbar, title = page.evaluate(TITLE_GAP)
        assert 0 <= title - toolbar <= 40, (path, toolbar, title)


def test_the_histogram_the_grokking_figure_and_the_playground_read_cleanly(server: str, browser_page: Page) -> None:
    """A lab model's p* histogram counts 0, 1, 2, ... with no text over a bar, in presentation mode too; the
    shipped grokking run's marks ("train fits", "test jumps") and titles do not overlap; on Theory at 1024 ×
    768 the playground's first control and the bottom of its charts fit one screen."""
    from specbound_lab.reference import REFERENCE_DIR

    page = browser_page
    page.set_viewport_size(PROJECTOR)
    lab = f"model=atlas:{quote(str((REFERENCE_DIR / 'atlas.npz').resolve()))}%23{LAB_MODEL}"
    for suffix in ("", "&present=1"):
        _open(page, f"{server}/why?{lab}{suffix}", "Why p* wins")
        page.locator(".st-key-p_star_histogram .js-plotly-plot").scroll_into_view_if_needed()
        ticks, over_bars = page.evaluate(HISTOGRAM)
        assert ticks and all(re.fullmatch(r"\d+", tick) for tick in ticks), ticks
        assert [int(t) for t in ticks] == list(range(0, int(ticks[-1]) + 1)), ticks  # every whole number
        assert over_bars == [], (suffix, over_bars)

    _open(page, f"{server}/runs", "Training runs")
    grokking = page.locator(".st-key-runs_grokking_figure .js-plotly-plot")
    grokking.wait_for()
    grokking.scroll_into_view_if_needed()
    assert page.locator(".st-key-runs_grokking_figure .annotation-text", has_text="test jumps").count() == 1
    texts = page.evaluate(OVERLAPPING_IN, ["runs_grokking_figure", ".gtitle, .gtitle-subtitle, .annotation-text"])
    assert texts == [], texts

    _open(page, f"{server}/theory", "Theory")
    page.locator(".st-key-play_rank").scroll_into_view_if_needed()
    page.evaluate("() => document.querySelector('.st-key-play_rank').scrollIntoView({block: 'start'})")
    page.wait_for_timeout(400)
    control = page.locator(".st-key-play_rank").bounding_box()
    charts = [page.locator(f".st-key-playground_{n}").bounding_box() for n in (0, 1)]
    assert control is not None and all(chart is not None for chart in charts)
    bottom = max(chart["y"] + chart["height"] for chart in charts if chart is not None)
    assert bottom - control["y"] <= PROJECTOR["height"] - 60, (control, charts)  # one screen under the toolbar
    screenshot(page, "minors-playground-1024")


def test_a_model_from_a_folder_is_named_by_the_folder(tmp_path: Path, server: str, browser_page: Page) -> None:
    """A LoRA adapter and its base opened from folders of the server, on every page that names them: no
    text, legend, subtitle, button or tooltip holds the path to them, where the folder's name does."""
    project = make_project(tmp_path / "project")
    adapter, base = project / ADAPTER, project / BASE
    page = browser_page
    page.set_viewport_size(PROJECTOR)
    for path, heading in (("bounds", "Bound explorer"), ("compare", "Compare"), ("spectra", "Spectra")):
        _open(page, f"{server}/{path}?model={quote(str(adapter))}&baseline={quote(str(base))}", heading)
        page.get_by_text(adapter.name).first.wait_for()
        assert_no_errors(page)
        assert page.evaluate(TEXTS_WITH, str(project)) == [], path
        assert page.evaluate(TEXTS_WITH, adapter.name), path  # named, by its folder


def test_an_uploaded_atlas_opens_without_a_click(server: str, browser_page: Page) -> None:
    """Choosing the atlas source and uploading the shipped reference atlas opens its first model at once,
    named by its run's words (a lab run's model is never shown by its run id or a file name)."""
    from dashboard.state.atlas import shown_member
    from specbound.io.atlas import load_atlas
    from specbound_lab.reference import REFERENCE_DIR

    first = load_atlas(REFERENCE_DIR / "atlas.npz")[0].model
    expected = shown_member(first)
    assert expected != first and not expected.startswith("lab-")
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    _open(page, f"{server}/", PRODUCT_NAME)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_role("radiogroup", name="Source").get_by_text("Atlas file").click()
    wait_idle(page)
    sidebar.locator('input[type="file"]').set_input_files(str(REFERENCE_DIR / "atlas.npz"))
    page.wait_for_function(
        "(name) => document.querySelector('[data-testid=stSidebar]').innerText.includes('Current model: ' + name)",
        arg=expected,
        timeout=90_000,
    )
    wait_idle(page)
    assert_no_errors(page)
    current = sidebar.locator('[data-testid="stMarkdownContainer"]', has_text="Current model:").first.inner_text()
    assert expected in current and first not in current, current
    screenshot(page, "minors-uploaded-atlas-opened")
