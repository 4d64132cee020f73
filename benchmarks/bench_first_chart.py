"""Benchmark: time to the first chart of every dashboard page in a fresh tab, warm, against a bare page.

Run with ``python benchmarks/bench_first_chart.py`` (Debian's Chromium must be installed). It serves the
dashboard as ``make run`` does on a fresh profile cache and opens every page once in the browser, so the
server's caches (the bundled model's spectra and terms, the lab's tables) and the browser's cache of
Streamlit's and Plotly's code are warm. Then, for each page, it opens the page in a new tab of the same
browser context :data:`REPEATS` times and takes, in that tab, the time from the start of its navigation
(``performance.now()``) to the first Plotly chart drawn on the page (its SVG present: a skeleton, which
Streamlit draws while a chart's code loads, is not a chart; the Overview, which draws no chart, is timed
to its first headline number). The same is measured in the same run on a bare
Streamlit page with a title and one chart (``bare_chart_app.py``), served the same way: what any Streamlit
page pays on this machine at this moment. It prints each page's median, its ratio to the bare page's and
whether it meets the target of :data:`TARGET_S` seconds (the claim "first charts under 3 s warm on every
page").
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "browser")]  # the dashboard and the browser-test launchers

from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from streamlit_server import CHROMIUM, launch_chromium, serve_dashboard  # noqa: E402

#: Each page's path (the pages of the navigation, in its order; "" is the Overview). Compare draws no chart
#: before a baseline is pinned: its link pins the bundled model's random twin.
PAGES: tuple[str, ...] = (
    "",
    "bounds",
    "why",
    "compare?baseline=twin:minilm-l6",
    "spectra",
    "scaling",
    "theory",
    "lab",
    "runs",
)
REPEATS = 3
TARGET_S = 3.0
#: A chart drawn and shown: Plotly's SVG inside a Streamlit chart element, with a size on the page (a chart
#: in a closed fold is drawn but not shown). The Overview draws no chart: there its first headline number
#: counts instead (the argument is the CSS selector of what counts).
CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'
NUMBER = '[data-testid="stMain"] [data-testid="stMetricValue"]'
SHOWN = """(css) => [...document.querySelectorAll(css)].some(e => e.getBoundingClientRect().width > 0)"""
#: A page that shows no chart in this many seconds counts as missing the target, with no time.
GIVE_UP_S = 60
BARE_APP = Path(__file__).with_name("bare_chart_app.py")
VIEWPORT = {"width": 1440, "height": 900}


def first_chart_seconds(context: Any, url: str, css: str = CHART) -> float:
    """Seconds from a new tab's navigation start to its first drawn chart, timed in the page (inf: none came)."""
    page = context.new_page()
    page.set_default_timeout(GIVE_UP_S * 1000)
    try:
        page.goto(url)
        page.wait_for_function(SHOWN, arg=css, polling="raf")
        now_ms: float = page.evaluate("() => performance.now()")  # the page's clock, in milliseconds
        return now_ms / 1000
    except PlaywrightTimeout:
        return math.inf
    finally:
        page.close()


def _shown(path: str) -> str:
    """What counts as the page's first useful thing: a chart, or on the Overview (which has none) a number."""
    return NUMBER if path == "" else CHART


def measure(browser: Any, url: str, paths: tuple[str, ...], bare: bool = False) -> dict[str, list[float]]:
    """Warm every page once (not timed), then time :data:`REPEATS` fresh tabs of each."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        for path in paths:
            first_chart_seconds(context, f"{url}/{path}", CHART if bare else _shown(path))
        times = {}
        for path in paths:
            css = CHART if bare else _shown(path)
            times[path] = [first_chart_seconds(context, f"{url}/{path}", css) for _ in range(REPEATS)]
            print(f"  {path or 'overview'}: {', '.join(f'{t:.2f}' for t in times[path])} s", flush=True)
        return times
    finally:
        context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--pages",
        nargs="+",
        metavar="PATH",
        help="only these pages, by the first word of their path (bounds why); the bare page is always timed",
    )
    args = parser.parse_args(argv)
    pages = PAGES if not args.pages else tuple(p for p in PAGES if (p.split("?")[0] or "overview") in args.pages)
    if args.pages and len(pages) != len(args.pages):
        parser.error(f"--pages takes among: {', '.join(p.split('?')[0] or 'overview' for p in PAGES)}")
    if not CHROMIUM.is_file():
        print(f"Debian's chromium is not installed at {CHROMIUM}", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            (Path(scratch) / "bare").mkdir()
            (Path(scratch) / "dashboard").mkdir()
            with serve_dashboard(Path(scratch) / "bare", script=str(BARE_APP)) as bare:
                baseline = statistics.median(measure(browser, bare.url, ("",), bare=True)[""])
            with serve_dashboard(Path(scratch) / "dashboard") as server:
                times = measure(browser, server.url, pages)
        finally:
            browser.close()
    print(f"first chart in a fresh tab, warm, median of {REPEATS}; a bare Streamlit page's: {baseline:.2f} s")
    print(f"{'page':<10} {'seconds':>8} {'× bare':>7}  target {TARGET_S:g} s")
    failed = []
    for path, seconds in times.items():
        median = statistics.median(seconds)
        met = median <= TARGET_S
        failed += [] if met else [path.split("?")[0] or "overview"]
        name = path.split("?")[0] or "overview"
        shown = f"{median:>8.2f} {median / baseline:>7.2f}" if math.isfinite(median) else f"none in {GIVE_UP_S} s"
        print(f"{name:<10} {shown}  {'met' if met else 'MISSED'}")
    print("every page meets the target" if not failed else f"missed on: {', '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
