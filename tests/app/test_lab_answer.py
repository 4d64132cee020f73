"""The Lab page answers first: above every view, the sentence and the forest plot of τ read from the
shipped verdict tables, with no bootstrap and no run record behind them; what was trained is folded
below, and the sweep view leads with the same answer's environments."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from app_harness import APP, TIMEOUT_S, decode_arrays, run_clean, unescaped
from streamlit.testing.v1 import AppTest

from dashboard.services import lab as service
from dashboard.wording import lab as words
from dashboard.wording.vocabulary import measure_name
from specbound_lab.answer import shipped_answer
from specbound_lab.registry import is_baseline


@pytest.fixture
def lab_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/lab.py")
    return run_clean(at)


def test_the_page_opens_on_the_answer_and_its_forest(lab_app) -> None:
    at = lab_app
    answer = shipped_answer()
    main = at.main
    first = main.markdown[0].value  # the first words of the page under its title
    assert unescaped(first) == f"**{answer.sentence(measure_name)}**"
    charts = [decode_arrays(json.loads(chart.proto.spec)) for chart in at.get("plotly_chart")]
    forest = charts[0]  # the first chart of the page
    assert forest["layout"]["title"]["text"].startswith("Kendall τ with the gap")
    ours = [r for r in answer.rows if r.measure == "ours"]
    (drawn,) = [trace for trace in forest["data"] if trace["name"] == measure_name("ours")]
    np.testing.assert_allclose(sorted(drawn["x"]), sorted(r.tau for r in ours), rtol=1e-12)
    assert len(forest["data"]) == 3  # ours, Edelman's, the strongest trivial baseline
    (fold,) = [e for e in at.expander if e.label.startswith("What the lab trained")]
    items = [words.shipped_item(shipped, runs) for shipped, runs in service.shipped_counts() if runs]
    assert all(item in unescaped(fold.markdown[0].value) for item in items)
    assert len(items) == len(service.SHIPPED)


def test_the_answer_computes_nothing_the_tables_hold(monkeypatch) -> None:
    """With every bootstrap and verdict computation of the lab made to raise, the page still opens on its
    answer: it reads verdict.csv, nothing more."""
    import specbound_lab.correlation as correlation
    import specbound_lab.tables as tables
    import specbound_lab.verdict as verdict

    def forbidden(*_, **__):
        raise AssertionError("the answer recomputed what the shipped tables hold")

    originals = [
        correlation.bootstrap_counts,
        correlation.cluster_counts,
        correlation.correlate,
        correlation.compare_taus,
        tables.environment_verdicts,
        tables.comparisons,
        verdict.environment_verdict,
    ]
    for holder in [m for key, m in list(sys.modules.items()) if key.split(".")[0] in ("specbound_lab", "dashboard")]:
        for alias, value in list(vars(holder).items()):
            if any(value is original for original in originals):  # under every name it is imported as
                monkeypatch.setattr(holder, alias, forbidden)
    service.answer.clear()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/lab.py")
    run_clean(at)
    assert unescaped(at.main.markdown[0].value).startswith("**Does the bound predict the gap here?")
    assert not at.error


def test_each_environment_s_verdict_table_is_drawn_when_its_fold_opens(lab_app) -> None:
    """The sweep view's six verdict tables wait behind their folds (drawn on demand: they were a third of
    a switch to the view); opening one draws that environment's table, with its measures in words."""
    at = lab_app
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    assert not [d for d in at.dataframe if "τ within n" in d.value.columns]  # folded: nothing drawn yet
    at.session_state["lab_verdict_fold_1"] = True  # the fold opened, as a click on it does
    run_clean(at)
    (table,) = [d.value for d in at.dataframe if "τ within n" in d.value.columns]
    verdicts = service.verdicts(service.SWEEPS[0])
    _, env = verdicts[1]
    assert list(table["Measure"]) == [
        measure_name(m.measure) + (" (trivial baseline)" if is_baseline(m.measure) else "") for m in env.measures
    ]
    np.testing.assert_allclose(
        [float(v) for v in table["τ"]], [m.kendall_tau for m in env.measures], atol=5e-4
    )  # shown to three decimals
