"""Benchmark of the Lab page's view switch: from one run through training to the sweep and back, cold and
warm, on the server (in-process) and in a real Chromium.

Run with ``python benchmarks/bench_lab_switch.py`` (``--no-browser`` for the server part alone; the browser
part needs Debian's Chromium). Target: a warm switch under 2 s in the browser.

Server part. The page runs in-process (Streamlit's AppTest, the real page and its caches, no browser),
so the times are the server's part of a switch: a full run of app.py on the Lab page after the radio
moved. In one process it:

* opens the Lab page and switches once to the sweep view (the **cold** first switch of a fresh server:
  it fills the caches, reading each shipped sweep's tables and computing the grokking runs' null) and back;
* then times SWITCHES warm switches each way, and, as the baseline measured in the same run, as many
  plain reruns of the Lab page on its opening view (the answer and one run through training, nothing
  switched): the cost any rerun of this page pays on this machine at this moment;
* prints the medians and each switch's ratio to the baseline.

Browser part. The dashboard is served as ``make run`` serves it (a fresh server, a fresh profile cache)
and the Lab page opened in Chromium at 1440 × 900. It times, from the click on the view's radio button,

* the new view's first chart drawn (its Plotly SVG shown: the sweep's first measure panel, the run's
  proxies), and
* the run over (the app root's script state back to ``notRunning``, every chart drawn),

for the cold first switch to the sweep and then SWITCHES warm switches each way; the baseline, in the
same run and the same tab, is a plain rerun of the opening view (Streamlit's "R" shortcut) timed to the
run over. It prints the medians, their ratio to the baseline and whether a warm switch meets the target.

What a switch adds over a plain rerun is drawing the other view from cached tables: since the sweep view
reads the shipped tables (:mod:`specbound_lab.readback`), not even the cold switch resamples them.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "lab"), str(ROOT / "tests" / "browser")]

SWITCHES = 5
TARGET_S = 2.0
RUN_VIEW, SWEEP_VIEW = "One run through training", "Sweep: measures against the gap"
#: Each view's first chart (its element's key) and how long to wait for one at most.
FIRST_CHART = {RUN_VIEW: "lab_proxies", SWEEP_VIEW: "lab_measures_0"}
GIVE_UP_S = 300
WIDTH, HEIGHT = 1440, 900
PLACEHOLDER = '[data-testid="stSkeleton"]'
#: The script run's state as the app root states it (``running``, ``notRunning``, ...).
SCRIPT_STATE = "document.querySelector('[data-testid=stApp]')?.dataset.testScriptState"
#: How long a click or the rerun shortcut may take to start a run (a run that never starts is an error).
RUN_STARTS_S = 10


def server_times() -> dict[str, Any]:
    """The server part (module docstring): the cold open and first switch, then warm switches and reruns."""
    from streamlit.testing.v1 import AppTest

    from dashboard.routing import guard_apptest_runs

    undo = guard_apptest_runs()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        at.switch_page("pages/lab.py")

        def timed(view: str | None) -> float:
            if view is not None:
                at.radio(key="lab_view").set_value(view)
            start = time.perf_counter()
            at.run()
            elapsed = time.perf_counter() - start
            assert not at.exception, [e.value for e in at.exception]
            return elapsed

        cold_open = timed(None)
        cold_sweep = timed(SWEEP_VIEW)
        timed(RUN_VIEW)
        to_sweep, to_run, rerun = [], [], []
        for _ in range(SWITCHES):
            to_sweep.append(timed(SWEEP_VIEW))
            to_run.append(timed(RUN_VIEW))
            rerun.append(timed(None))
    finally:
        undo()
    return {"open": cold_open, "cold": cold_sweep, "to_sweep": to_sweep, "to_run": to_run, "rerun": rerun}


def _run_over(page: Any, start: float, *, started: bool = False) -> float:
    """Seconds from ``start`` until the script run the action started is over and drawn: Streamlit's app
    root says ``data-test-script-state="running"`` from the rerun request to the run's end (waited for
    first, so a run that has not begun yet is not taken for one that ended), then ``notRunning``, with no
    chart placeholder left. ``started``: the run is known to have begun (its first chart is drawn)."""
    if not started:
        page.wait_for_function(f"() => {SCRIPT_STATE} !== 'notRunning'", polling="raf", timeout=RUN_STARTS_S * 1000)
    page.wait_for_function(
        f"() => {SCRIPT_STATE} === 'notRunning' && !document.querySelector('{PLACEHOLDER}')",
        polling="raf",
        timeout=GIVE_UP_S * 1000,
    )
    return time.perf_counter() - start


def switch(page: Any, view: str) -> tuple[float, float]:
    """(seconds to the view's first chart drawn, seconds to the run over) from the click on ``view``."""
    start = time.perf_counter()
    page.get_by_text(view, exact=True).click()
    page.locator(f".st-key-{FIRST_CHART[view]} .js-plotly-plot .main-svg").first.wait_for(
        state="visible", timeout=GIVE_UP_S * 1000
    )
    first = time.perf_counter() - start
    return first, _run_over(page, start, started=True)


def rerun(page: Any) -> float:
    """Seconds from Streamlit's rerun shortcut to the run over (the opening view, nothing switched)."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # the shortcut, not a widget
    start = time.perf_counter()
    page.keyboard.press("r")
    return _run_over(page, start)


def browser_times() -> dict[str, Any]:
    """The browser part (module docstring), on a fresh server."""
    from playwright.sync_api import sync_playwright
    from streamlit_server import launch_chromium, serve_dashboard

    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            with serve_dashboard(Path(scratch)) as server:
                page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
                page.set_default_timeout(GIVE_UP_S * 1000)
                start = time.perf_counter()
                page.goto(f"{server.url}/lab")
                page.locator(f".st-key-{FIRST_CHART[RUN_VIEW]} .js-plotly-plot .main-svg").first.wait_for()
                opened = _run_over(page, start, started=True)
                cold = switch(page, SWEEP_VIEW)
                switch(page, RUN_VIEW)
                to_sweep, to_run, reruns = [], [], []
                for _ in range(SWITCHES):
                    to_sweep.append(switch(page, SWEEP_VIEW))
                    to_run.append(switch(page, RUN_VIEW))
                    reruns.append(rerun(page))
        finally:
            browser.close()
    return {"open": opened, "cold": cold, "to_sweep": to_sweep, "to_run": to_run, "rerun": reruns}


def _report_server(times: dict[str, Any]) -> None:
    base = statistics.median(times["rerun"])
    print(f"server (AppTest), cold: open {times['open']:.2f} s, first switch to the sweep {times['cold']:.2f} s")
    print(f"server, baseline: a warm rerun of the Lab page on its opening view, median {base:.2f} s over {SWITCHES}")
    for name, key in (("run -> sweep", "to_sweep"), ("sweep -> run", "to_run")):
        median = statistics.median(times[key])
        print(f"server, warm switch {name}: median {median:.2f} s ({median / base:.2f} x the baseline)")


def _report_browser(times: dict[str, Any]) -> None:
    base = statistics.median(times["rerun"])
    first, over = times["cold"]
    print(f"Chromium, cold: page open {times['open']:.2f} s; first switch to the sweep: first chart {first:.2f} s, "
          f"run over {over:.2f} s")  # fmt: skip
    print(f"Chromium, baseline: a plain rerun (the R shortcut) to the run over, median {base:.2f} s over {SWITCHES}")
    for name, key in (("run -> sweep", "to_sweep"), ("sweep -> run", "to_run")):
        charts = statistics.median(t[0] for t in times[key])
        ends = statistics.median(t[1] for t in times[key])
        verdict = "meets" if charts < TARGET_S else "misses"
        print(
            f"Chromium, warm switch {name}: first chart {charts:.2f} s, run over {ends:.2f} s "
            f"({ends / base:.2f} x the baseline); {verdict} the target of {TARGET_S:.0f} s"
        )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    _report_server(server_times())
    if "--no-browser" in args:
        return 0
    from streamlit_server import CHROMIUM

    if not CHROMIUM.is_file():
        print(f"Debian's chromium is not installed at {CHROMIUM}: no browser measurement", file=sys.stderr)
        return 1
    _report_browser(browser_times())
    return 0


if __name__ == "__main__":
    sys.exit(main())
