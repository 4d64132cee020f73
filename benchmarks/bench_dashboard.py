"""Benchmark of the dashboard (SPEC §6-7): memory per session, slider latency, first page, Spectra build.

Run with ``python benchmarks/bench_dashboard.py`` (Debian's Chromium must be installed). It serves
the dashboard as ``make run`` does (``python -m dashboard.serve``, a real Streamlit server) with a
fresh profile cache, then in the same run:

* opens the Bound explorer in a first browser session (this fills the shared caches: the bundled
  model's spectra and bound terms) and reads the server's resident memory as the baseline;
* opens more sessions, each in its own browser context kept open, moves their p slider, and reports
  the server's memory growth per added session (target: at most 50 MB, since a session holds widget
  state and references to the shared caches, not weights);
* times slider moves in the browser from the key press to the updated total on the page (the
  explorer writes it in the browser from a table the server sent, ``dashboard/widgets/live_total.py``) and to
  the server's redrawn headline (its rerun's round trip), beside the computation-layer time the page
  reports for the same moves (the explorer opens at p*, so the link switches that off first; timing
  starts once every chart of the page is drawn), the same moves with the explorer's tables section
  open, and on a bare Streamlit slider and number (``bare_slider_app.py``) served in the same run: the
  round trip any Streamlit page pays on this machine at this moment;
* stops that server, then starts a new one on the now warm profile cache, five times, and times the
  first useful page: from the process start, and from the server answering, to the landing page's
  first headline number or chart (medians of the five starts), and the same for the bare page; the
  browser, with an empty tab, is open before the server starts (its cache is empty); then the same
  for a returning visitor, whose browser has opened the dashboard at that address before (Streamlit
  serves its script bundles as immutable, so they come from the browser's cache);
* from the landing page, clicks "Bound explorer" in the navigation and times, in the page, the click to
  the first frame that shows the total, and to the settled page (the run over, every chart drawn),
  beside the same click on two bare Streamlit pages (``bare_pages_app.py``) served in the same run;
* runs the Spectra page in-process (Streamlit's AppTest, no browser) and reports the median server
  time of a full run of app.py on that page.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "browser")]  # the dashboard and the browser-test launchers

from streamlit_page import wait_idle  # noqa: E402
from streamlit_server import CHROMIUM, free_port, launch_chromium, serve_dashboard  # noqa: E402

from dashboard.widgets.tables import EXPLORER_TABLES_KEY  # noqa: E402
from dashboard.wording.text import TOTAL_LABEL  # noqa: E402

EXTRA_SESSIONS = 6
SLIDER_MOVES = 16
#: The baseline page of the slider latency: a bare Streamlit slider and number.
BARE_APP = Path(__file__).with_name("bare_slider_app.py")
#: The baseline of the page click: two bare Streamlit pages, the second a slider and a number.
BARE_PAGES_APP = Path(__file__).with_name("bare_pages_app.py")
#: Clicks from the landing page to the Bound explorer that are timed (the median is reported).
PAGE_CLICKS = 5
#: Starts of a new server whose first useful page is timed (the median is reported).
FIRST_PAGE_STARTS = 5
TARGET_SESSION_MB = 50.0
SPECTRA_RUNS = 5
#: The explorer's link with the sliders in charge (it opens at p* otherwise, with the global slider off).
EXPLORER_LINK = "/bounds?p_optimal=0"
#: The same with its tables section open (three tables drawn on every move).
TABLES_LINK = f"{EXPLORER_LINK}&{EXPLORER_TABLES_KEY}=1"
#: What counts as the first useful thing on the landing page: a headline number or a drawn chart.
USEFUL = '[data-testid="stMetricValue"], [data-testid="stPlotlyChart"] .js-plotly-plot'


def resident_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of a process from /proc (Linux): VmRSS now, or VmHWM, its peak so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for process {pid}")


def open_explorer(browser: Browser, url: str, link: str = EXPLORER_LINK) -> Page:
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{url}{link}")
    page.locator('[data-testid="stMetric"]', has_text=TOTAL_LABEL).wait_for()
    wait_idle(page)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .every(chart => chart.querySelector('.js-plotly-plot'))""")  # every chart drawn
    return page


#: In the page: the text of the total's value and of the explorer headline's caption (the bare page has
#: no caption); null for either while it is not on the page (the headline is redrawn on every move).
READ_HEADLINE = """(label) => {
    const metric = [...document.querySelectorAll('[data-testid="stMetric"]')].find(m => m.innerText.includes(label));
    const caption = document.querySelector('.st-key-headline [data-testid="stCaptionContainer"]');
    return [metric?.querySelector('[data-testid="stMetricValue"]')?.innerText.trim() ?? null,
            caption?.innerText ?? null];
}"""
#: In the page: resolves with the times of the first animation frames (the ones painted next) that show
#: a total other than ``old_total``, and a headline caption other than ``old_caption`` (null without one).
SHOWN_AT = """([label, oldTotal, oldCaption]) => new Promise((resolve, reject) => {
    const read = READ, times = [null, oldCaption === null ? -1 : null], started = performance.now();
    const check = () => {
        const [total, caption] = read(label);
        if (times[0] === null && ![null, oldTotal].includes(total)) times[0] = performance.now();
        if (times[1] === null && ![null, oldCaption].includes(caption)) times[1] = performance.now();
        if (times[0] !== null && times[1] !== null) resolve(times);
        else if (performance.now() - started > 60000) reject(new Error(`no change in a minute: ${times}`));
        else requestAnimationFrame(check);
    };
    check();
})""".replace("READ", READ_HEADLINE, 1)


def move_slider(page: Page, key: str) -> tuple[float, float | None]:
    """Press one arrow key on the global p slider: seconds from the key press to the frame with the new
    total, and to the frame with the server's redrawn headline (None on the bare page).

    The explorer writes the new total in the browser as the slider moves (``dashboard/widgets/live_total.py``);
    the server's rerun then redraws the headline, whose caption (p and the computation time) changes on
    every move. Both ends are timed in the page (the keydown event, the animation frame that shows the
    change), so the figures leave out the test driver's own round trips to the browser.
    """
    before = page.evaluate(READ_HEADLINE, TOTAL_LABEL)
    page.locator('.st-key-p_global [role="slider"], .st-key-p_global input[type="range"]').first.focus()
    page.evaluate(
        """() => document.addEventListener('keydown', () => { window.specboundKeyAt = performance.now(); },
                                           {once: true, capture: true})"""
    )
    page.keyboard.press(key)
    total_at, headline_at = page.evaluate(SHOWN_AT, [TOTAL_LABEL, *before])
    key_at = page.evaluate("window.specboundKeyAt")
    wait_idle(page)
    return (total_at - key_at) / 1e3, None if headline_at < 0 else (headline_at - key_at) / 1e3


def slider_moves(page: Page) -> tuple[list[float], list[float]]:
    """Seconds of :data:`SLIDER_MOVES` moves of the global slider, right and left in turn: to the new
    total, and to the server's redrawn headline (empty on the bare page)."""
    moves = [move_slider(page, "ArrowLeft" if i % 2 else "ArrowRight") for i in range(SLIDER_MOVES)]
    return [total for total, _ in moves], [headline for _, headline in moves if headline is not None]


#: In the page: resolves with the time of the first frame that shows the total after the click.
HEADLINE_AFTER_CLICK = """(label) => new Promise((resolve, reject) => {
    const started = performance.now();
    const check = () => {
        const metric = [...document.querySelectorAll('[data-testid="stMetric"]')]
            .find(m => m.innerText.includes(label) && !m.closest('[data-stale="true"]'));
        if (metric?.querySelector('[data-testid="stMetricValue"]')?.innerText.trim()) resolve(performance.now());
        else if (performance.now() - started > 60000) reject(new Error('no headline in a minute'));
        else requestAnimationFrame(check);
    };
    check();
})"""


def click_to_explorer(browser: Browser, url: str) -> tuple[list[float], list[float]]:
    """Seconds from a click on "Bound explorer" in the navigation (on the landing page) to the frame that
    shows the total, and to the settled page; :data:`PAGE_CLICKS` clicks, each from a fresh landing page."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(120_000)
    to_headline, to_settled = [], []
    for _ in range(PAGE_CLICKS):
        page.goto(url)
        page.locator('[data-testid="stSidebarNavLink"]', has_text="Bound explorer").wait_for()
        wait_idle(page)
        page.wait_for_timeout(500)
        page.evaluate(
            """() => document.addEventListener('click', () => { window.specboundClickAt = performance.now(); },
                                               {once: true, capture: true})"""
        )
        page.locator('[data-testid="stSidebarNavLink"]', has_text="Bound explorer").click()
        shown_at = page.evaluate(HEADLINE_AFTER_CLICK, TOTAL_LABEL)
        wait_idle(page)
        page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
            .every(chart => chart.querySelector('.js-plotly-plot'))""")
        settled_at, click_at = page.evaluate("[performance.now(), window.specboundClickAt]")
        to_headline.append((shown_at - click_at) / 1e3)
        to_settled.append((settled_at - click_at) / 1e3)
    page.context.close()
    return to_headline, to_settled


def first_useful_page(
    browser: Browser, scratch: Path, script: str | None = None, returning: tuple[BrowserContext, int] | None = None
) -> tuple[float, float]:
    """(seconds from process start, seconds from the server's first answer) to the first useful view of "/".

    The visitor's browser is running with an empty tab before the server starts, as when someone
    types ``make run`` and opens the address it prints. By default its context is new, so nothing of
    the page is in the browser's cache. ``returning`` is a (context, port) of a visitor who has
    opened the dashboard on that port before: Streamlit's script bundles (served as immutable) then
    come from the browser's cache. (Opening the tab itself takes Chromium 0.15-0.25 s here; it is the
    browser's cost, not the dashboard's, and used to be counted.)
    """
    context, port = returning or (browser.new_context(viewport={"width": 1440, "height": 900}), None)
    page = context.new_page()
    page.set_default_timeout(120_000)
    started = time.perf_counter()
    with serve_dashboard(scratch, script=script, port=port) as server:
        healthy = time.perf_counter()
        page.goto(server.url)
        page.locator(USEFUL).first.wait_for()
        shown = time.perf_counter()
        page.close()
    if returning is None:
        context.close()
    return shown - started, shown - healthy


def spectra_server_seconds() -> list[float]:
    """Server time of full runs of app.py on the Spectra page (the first run, which fills caches, left out)."""
    from streamlit.testing.v1 import AppTest

    from dashboard.routing import guard_apptest_runs

    undo = guard_apptest_runs()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        at.switch_page("pages/spectra.py")
        at.run()
        times = []
        for _ in range(SPECTRA_RUNS):
            start = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - start)
        assert not at.exception, [e.value for e in at.exception]
        return times
    finally:
        undo()


def main() -> int:
    if f'LABEL = "{TOTAL_LABEL}"' not in BARE_APP.read_text():
        print(f"{BARE_APP.name} must label its number {TOTAL_LABEL!r}, as the dashboard does", file=sys.stderr)
        return 2
    if not CHROMIUM.is_file():
        print(f"Debian's chromium is needed at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="specbound-bench-") as tmp, sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        with serve_dashboard(Path(tmp)) as server:
            idle_mb = resident_mb(server.pid)
            first = open_explorer(browser, server.url)
            latencies, round_trips = slider_moves(first)
            server_ms = first.get_by_text("terms evaluated in").inner_text().split("evaluated in ")[-1]
            baseline_mb = resident_mb(server.pid)
            baseline_peak_mb = resident_mb(server.pid, "VmHWM")

            pages = []
            for _ in range(EXTRA_SESSIONS):
                page = open_explorer(browser, server.url)
                move_slider(page, "ArrowRight")
                pages.append(page)
            loaded_mb = resident_mb(server.pid)
            loaded_peak_mb = resident_mb(server.pid, "VmHWM")
            for page in [first, *pages]:
                page.context.close()
            tables = open_explorer(browser, server.url, TABLES_LINK)
            tables_latencies, tables_round_trips = slider_moves(tables)
            tables.context.close()
            click_headline, click_settled = click_to_explorer(browser, server.url)
        with serve_dashboard(Path(tmp), script=str(BARE_PAGES_APP)) as bare_pages:
            bare_click_headline, bare_click_settled = click_to_explorer(browser, bare_pages.url)
        with serve_dashboard(Path(tmp), script=str(BARE_APP)) as bare_server:
            bare = open_explorer(browser, bare_server.url, link="/")
            bare_latencies, _ = slider_moves(bare)
            bare.context.close()
        # the first server stopped, as before a fresh `make run`; the profile cache it filled is warm
        starts = [first_useful_page(browser, Path(tmp)) for _ in range(FIRST_PAGE_STARTS)]
        from_start_s = statistics.median(start for start, _ in starts)
        from_answer_s = statistics.median(answer for _, answer in starts)
        bare_starts = [first_useful_page(browser, Path(tmp), str(BARE_APP)) for _ in range(FIRST_PAGE_STARTS)]
        bare_from_start_s = statistics.median(start for start, _ in bare_starts)
        # a returning visitor: the same address (make run's port is fixed) opened once before
        returning = (browser.new_context(viewport={"width": 1440, "height": 900}), free_port())
        first_useful_page(browser, Path(tmp), returning=returning)
        warm_starts = [first_useful_page(browser, Path(tmp), returning=returning) for _ in range(FIRST_PAGE_STARTS)]
        warm_from_start_s = statistics.median(start for start, _ in warm_starts)
        returning[0].close()
        browser.close()
    spectra_s = spectra_server_seconds()

    # The garbage collector can return memory between two readings, so the growth is judged on the
    # larger of the current and the peak resident memory.
    per_session = max(loaded_mb - baseline_mb, loaded_peak_mb - baseline_peak_mb) / EXTRA_SESSIONS + 0.0  # no -0.0
    rows = [
        ("server, before any session", f"{idle_mb:.0f} MB", ""),
        ("server, one session on the Bound explorer (baseline)", f"{baseline_mb:.0f} MB", ""),
        ("  its peak so far", f"{baseline_peak_mb:.0f} MB", ""),
        (f"server, {EXTRA_SESSIONS} more sessions", f"{loaded_mb:.0f} MB", ""),
        ("  its peak so far", f"{loaded_peak_mb:.0f} MB", ""),
        (
            "memory added per session",
            f"{per_session:.1f} MB",
            f"<= {TARGET_SESSION_MB:g} MB: {'ok' if per_session <= TARGET_SESSION_MB else 'MISSED'}",
        ),
        (
            "slider key press to updated total (median)",
            f"{1e3 * statistics.median(latencies):.0f} ms",
            f"target < 100 ms; min {1e3 * min(latencies):.0f}, max {1e3 * max(latencies):.0f} ms "
            f"over {SLIDER_MOVES} moves",
        ),
        (
            "  the server's rerun redraws the headline (median)",
            f"{1e3 * statistics.median(round_trips):.0f} ms",
            f"min {1e3 * min(round_trips):.0f}, max {1e3 * max(round_trips):.0f} ms",
        ),
        (
            "  a bare Streamlit slider and number, same run",
            f"{1e3 * statistics.median(bare_latencies):.0f} ms",
            f"explorer / bare = {statistics.median(latencies) / statistics.median(bare_latencies):.2f}; "
            f"min {1e3 * min(bare_latencies):.0f}, max {1e3 * max(bare_latencies):.0f} ms",
        ),
        (
            "  with the tables section open",
            f"{1e3 * statistics.median(tables_latencies):.0f} ms",
            f"min {1e3 * min(tables_latencies):.0f}, max {1e3 * max(tables_latencies):.0f} ms",
        ),
        (
            "  and the server's headline with the tables open",
            f"{1e3 * statistics.median(tables_round_trips):.0f} ms",
            f"min {1e3 * min(tables_round_trips):.0f}, max {1e3 * max(tables_round_trips):.0f} ms",
        ),
        ("  of which the computation layer (last move)", server_ms, "target < 50 ms"),
        (
            "click on Bound explorer to its headline (median)",
            f"{statistics.median(click_headline):.2f} s",
            f"target within 1.5x of the bare pages: "
            f"{statistics.median(click_headline) / statistics.median(bare_click_headline):.2f}x; "
            f"min {min(click_headline):.2f}, max {max(click_headline):.2f} s over {PAGE_CLICKS} clicks",
        ),
        (
            "  the same click on two bare Streamlit pages",
            f"{statistics.median(bare_click_headline):.2f} s",
            f"min {min(bare_click_headline):.2f}, max {max(bare_click_headline):.2f} s",
        ),
        (
            "  click to the settled page (run over, charts drawn)",
            f"{statistics.median(click_settled):.2f} s",
            f"bare pages {statistics.median(bare_click_settled):.2f} s",
        ),
        (
            "first useful page, warm cache, from process start",
            f"{from_start_s:.2f} s",
            f"target < 3 s; median of {FIRST_PAGE_STARTS} starts",
        ),
        ("  from the server's first answer", f"{from_answer_s:.2f} s", ""),
        (
            "  the bare slider and number, from process start",
            f"{bare_from_start_s:.2f} s",
            f"dashboard / bare = {from_start_s / bare_from_start_s:.2f}",
        ),
        (
            "  a returning visitor (browser cache warm too)",
            f"{warm_from_start_s:.2f} s",
            f"target < 3 s; min {min(s for s, _ in warm_starts):.2f}, max {max(s for s, _ in warm_starts):.2f} s",
        ),
        (
            "Spectra page, server time of a full run (median)",
            f"{statistics.median(spectra_s):.2f} s",
            f"target < 0.5 s; min {min(spectra_s):.2f}, max {max(spectra_s):.2f} s over {SPECTRA_RUNS} runs",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>9}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
