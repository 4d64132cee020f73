"""Benchmark of the Lab page's view switch, warm: from one run through training to the sweep and back.

Run with ``python benchmarks/bench_lab_switch.py``. The page runs in-process (Streamlit's AppTest, the
real page and its caches, no browser), so the times are the server's part of a switch: a full run of
app.py on the Lab page after the radio moved. In one process it:

* opens the Lab page and switches once to the sweep view and back, which fills the caches (the
  shipped references, each sweep's tables and the grokking null: the cold cost, reported apart);
* then times SWITCHES warm switches each way, and, as the baseline measured in the same run, as many
  plain reruns of the Lab page on its opening view (the answer and one run through training, nothing
  switched): the cost any rerun of this page pays on this machine at this moment;
* prints the medians, each switch's ratio to the baseline, and the target (a warm switch under 2 s).

The answer at the top of the page reads the shipped verdict tables once per server; what a switch
adds over a plain rerun is drawing the other view from cached tables, never a bootstrap.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "lab")]

SWITCHES = 5
TARGET_S = 2.0
RUN_VIEW, SWEEP_VIEW = "One run through training", "Sweep: measures against the gap"


def main() -> int:
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
    base = statistics.median(rerun)
    print(f"Lab page, cold: open {cold_open:.2f} s, first switch to the sweep {cold_sweep:.2f} s (caches filled)")
    print(f"baseline, a warm rerun of the Lab page on its opening view: median {base:.2f} s over {SWITCHES}")
    for name, times in (("run -> sweep", to_sweep), ("sweep -> run", to_run)):
        median = statistics.median(times)
        verdict = "meets" if median < TARGET_S else "misses"
        print(
            f"warm switch {name}: median {median:.2f} s ({median / base:.2f} x the baseline); "
            f"{verdict} the target of {TARGET_S:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
