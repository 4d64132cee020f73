"""The Bound explorer on the bundled model: totals, charts and tables equal the package's numbers
for the p the widgets set, and a slider move recomputes from the cached spectra alone."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from app_harness import as_shown, drawn_width, forbid_recomputation, run_clean, table_columns

from dashboard.widgets.tables import EXPLORER_TABLES_KEY, TABLE_WIDTH_PX
from dashboard.wording.numbers import DIGITS, format_against, significant_digits
from dashboard.wording.text import BOUND_NOTE, EDELMAN_LABEL, OPTIMAL_LABEL, TOTAL_LABEL
from dashboard.wording.totals import total_texts
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundTerms, PAssignment
from specbound.core.logspace import to_log10 as log10
from specbound.present.figures.bounds import SumsView
from specbound.present.numbers import format_log


def _metric(at, label: str) -> str:
    (value,) = [m.value for m in at.metric if m.label == label]
    return value


def _total_text(terms: BoundTerms, optimal: BoundTerms) -> str:
    """The headline's text for the total of ``terms``: the digits its change against p* needs."""
    return total_texts(terms.log_total, optimal.log_total)[0]


def _change_text(terms: BoundTerms, optimal: BoundTerms) -> str:
    """The headline's change against p*."""
    return total_texts(terms.log_total, optimal.log_total)[1]


def _terms_table(at):
    """The per-matrix table, opening the tables section first (it is drawn only when open)."""
    if not at.session_state[EXPLORER_TABLES_KEY]:
        at.session_state[EXPLORER_TABLES_KEY] = True
        run_clean(at)
    (table,) = [d.value for d in at.dataframe if "contribution" in d.value.columns]
    return table


def test_page_opens_at_p_star_with_the_package_totals(bounds_app, minilm) -> None:
    at = bounds_app
    assert [t.value for t in at.title] == ["Bound explorer"]
    assert not at.error
    assert at.toggle(key="p_optimal").value is True and at.slider(key="p_global").disabled
    assert _metric(at, TOTAL_LABEL) == _metric(at, OPTIMAL_LABEL) == format_log(minilm.optimal.log_total) == "20,573"
    (total,) = [m for m in at.metric if m.label == TOTAL_LABEL]
    assert total.delta == "±0 vs p*"
    assert _metric(at, EDELMAN_LABEL) == format_log(minilm.log_edelman) == "6.854 × 10²⁸"
    assert _metric(at, "√L") == "2.449"
    assert sum(c.value == BOUND_NOTE for c in at.caption) == 1  # the proxy note once per page
    np.testing.assert_array_equal(_terms_table(at)["p"], minilm.p_opt)


def test_moving_the_global_slider_changes_the_total(free_p_app, rerun, minilm) -> None:
    at = free_p_app
    assert _metric(at, TOTAL_LABEL) == _total_text(minilm.evaluate(1.0), minilm.optimal)
    at.slider(key="p_global").set_value(0.5)
    rerun(at)
    terms = minilm.evaluate(0.5)
    assert _metric(at, TOTAL_LABEL) == _total_text(terms, minilm.optimal)
    (total,) = [m for m in at.metric if m.label == TOTAL_LABEL]
    assert total.delta == _change_text(terms, minilm.optimal)
    np.testing.assert_array_equal(_terms_table(at)["contribution"], as_shown(terms.contribution))


def test_a_one_layer_change_shows_in_the_headline(bounds_app, rerun, minilm) -> None:
    """From p*, moving only the top layer's p changes the total far down its digits: the total shows it."""
    at = bounds_app
    before = _metric(at, TOTAL_LABEL)
    at.toggle(key="p_layers").set_value(True)
    rerun(at)  # the per-layer rows appear
    at.selectbox(key="p_layer_5_mode").select("own p")
    rerun(at)
    at.slider(key="p_layer_5").set_value(0.5)
    rerun(at)
    expected = minilm.evaluate(PAssignment(default=None, by_layer={5: 0.5}))
    after = _metric(at, TOTAL_LABEL)
    assert after == _total_text(expected, minilm.optimal) != before
    change = expected.total - minilm.optimal.total
    shown = float(after.replace(",", ""))
    assert abs(shown - expected.total) < abs(change) / 10  # the shown digits resolve the change
    (total,) = [m for m in at.metric if m.label == TOTAL_LABEL]
    assert total.delta == _change_text(expected, minilm.optimal) != "±0 vs p*"  # and so does the change badge


def test_far_from_p_star_the_total_takes_the_usual_digits(free_p_app, minilm) -> None:
    """At p = 1 the total is nearly eight decades above p*: four digits show that change, ten would be noise."""
    at = free_p_app
    terms = minilm.evaluate(1.0)
    assert terms.log_total - minilm.optimal.log_total > 7 * math.log(10)
    (total,) = [m for m in at.metric if m.label == TOTAL_LABEL]
    assert total.value == _total_text(terms, minilm.optimal) and significant_digits(total.value) == DIGITS
    assert total.delta.startswith("+") and total.delta.endswith(" vs p*")
    assert significant_digits(total.delta.removeprefix("+").removesuffix(" vs p*")) == DIGITS


def test_snapping_and_free_p(free_p_app, rerun, minilm) -> None:
    at = free_p_app
    at.slider(key="p_global").set_value(0.52)  # between 6/12 and 7/12: snaps to 0.5
    rerun(at)
    assert _metric(at, TOTAL_LABEL) == _total_text(minilm.evaluate(0.5), minilm.optimal)
    at.toggle(key="p_snap").set_value(False)
    rerun(at)
    assert any("Free p" in c.value for c in at.caption)
    at.slider(key="p_global").set_value(0.52)
    rerun(at)
    assert _metric(at, TOTAL_LABEL) == _total_text(minilm.evaluate(0.52), minilm.optimal)


def test_switching_the_snap_keeps_the_global_p(free_p_app, rerun, minilm) -> None:
    """Bug of issue 10: switching "Snap p to the grid" reset the global p to 1."""
    at = free_p_app
    at.slider(key="p_global").set_value(0.25)
    rerun(at)
    for snap in (False, True):
        at.toggle(key="p_snap").set_value(snap)
        rerun(at)
        assert at.slider(key="p_global").value == 0.25
        assert _metric(at, TOTAL_LABEL) == _total_text(minilm.evaluate(0.25), minilm.optimal)
    assert at.query_params["p_global"] == "0.25"


def test_optimal_toggle_gives_the_optimum(free_p_app, rerun, minilm) -> None:
    at = free_p_app
    at.toggle(key="p_optimal").set_value(True)
    rerun(at)
    assert at.slider(key="p_global").disabled
    assert _metric(at, TOTAL_LABEL) == _metric(at, OPTIMAL_LABEL)
    np.testing.assert_array_equal(_terms_table(at)["p"], minilm.p_opt)


def test_overrides_per_kind_and_per_layer(free_p_app, rerun, minilm) -> None:
    at = free_p_app
    assert not [s for s in at.slider if s.key.startswith(("p_kind_", "p_layer_"))]  # no override rows yet
    at.toggle(key="p_kinds").set_value(True)
    at.toggle(key="p_layers").set_value(True)
    rerun(at)
    at.selectbox(key="p_kind_M_in_mode").select("own p")
    rerun(at)  # the slider is enabled once its row asks for its own p
    at.slider(key="p_kind_M_in").set_value(2.0)
    at.selectbox(key="p_layer_3_mode").select("optimal p*")
    rerun(at)
    expected = minilm.evaluate(PAssignment(default=1.0, by_kind={Kind.M_IN: 2.0}, by_layer={3: None}))
    assert _metric(at, TOTAL_LABEL) == _total_text(expected, minilm.optimal)
    table = _terms_table(at)
    np.testing.assert_array_equal(table["p"], as_shown(expected.p, "p"))  # 0.333 for 1/3, as on screen
    assert set(table.loc[(table["kind"] == "M_in") & (table["layer"] != 3), "p"]) == {2.0}


def test_charts_carry_the_terms(free_p_app, rerun, figure_titled, minilm) -> None:
    at = free_p_app
    at.radio(key="sums_view").set_value(SumsView.LINEAR)
    at.slider(key="p_global").set_value(0.75)
    rerun(at)
    terms = minilm.evaluate(0.75)

    sums = figure_titled(at, "by layer and kind")
    bars = {t["name"]: np.asarray(t["y"], dtype=float) for t in sums["data"]}
    assert sums["layout"]["barmode"] == "stack"
    for kind in minilm.profile.model_kinds:
        expected = [
            terms.contribution[(terms.layers == layer) & (terms.kinds == kind.value)].sum() for layer in range(6)
        ]
        np.testing.assert_allclose(bars[kind.value], expected, rtol=1e-12)
    assert math.isclose(sum(b.sum() for b in bars.values()), terms.total, rel_tol=1e-12)

    proxies = figure_titled(at, "Proxies side by side")["data"][0]
    np.testing.assert_allclose(
        proxies["x"], log10([terms.log_total, minilm.evaluate().log_total, minilm.log_edelman]), rtol=1e-12
    )

    depth = figure_titled(at, "Depth factors")["data"]
    np.testing.assert_allclose(depth[0]["y"], log10(minilm.log_alpha), rtol=1e-12)

    curves = figure_titled(at, "c(W; p) against p")["data"]
    default_rows = ["L5 QK h0", "L5 V h0", "L5 M_in", "L5 M_out"]
    assert [t["name"] for t in curves if t.get("showlegend", True)] == default_rows
    for label in default_rows:
        i = [m.label for m in minilm.profile.ids].index(label)
        star = next(t for t in curves if t["name"] == f"{label} p*")
        here = next(t for t in curves if t["name"] == f"{label} current p")
        assert star["x"][0] == pytest.approx(minilm.p_opt[i])
        assert here["x"][0] == 0.75
        assert here["y"][0] == pytest.approx(terms.contribution[i], rel=1e-12)


def test_slider_path_touches_no_file_and_runs_no_svd(free_p_app, rerun, minilm, monkeypatch) -> None:
    """After the first render, moving p only evaluates the cached analysis."""
    forbid_recomputation(monkeypatch)
    for p in (0.25, 1.75):
        at = free_p_app
        at.slider(key="p_global").set_value(p)
        rerun(at)
        assert _metric(at, TOTAL_LABEL) == _total_text(minilm.evaluate(p), minilm.optimal)


def test_the_guard_reaches_a_function_under_every_name_it_is_imported_as(monkeypatch) -> None:
    """The guard of the slider path is no formality: the loader's own imported names raise too."""
    import specbound.io.checkpoints.hub
    import specbound.io.loading

    forbid_recomputation(monkeypatch)
    for call in (specbound.io.loading.fetch, specbound.io.checkpoints.hub.fetch, specbound.io.loading.open_checkpoint):
        with pytest.raises(AssertionError, match="slider path"):
            call("minilm-l6")


def _live_tables(at) -> dict:
    """The slider tables the explorer sends for its total to follow the sliders in the browser."""
    (component,) = [e for e in at.get("bidi_component") if e.proto.component_name == "specbound_live_total"]
    data = json.loads(component.proto.json)
    assert data["label"] == TOTAL_LABEL
    return data["sliders"]


def _headline(at) -> tuple[str, str]:
    (total,) = [m for m in at.metric if m.label == TOTAL_LABEL]
    return total.value, total.delta


def test_the_total_follows_each_slider_with_the_texts_the_server_shows(free_p_app, rerun, minilm) -> None:
    """What the browser writes while a slider moves is, position by position, what the rerun then shows."""
    at = free_p_app
    at.toggle(key="p_snap").set_value(False)  # steps of 0.01
    at.toggle(key="p_kinds").set_value(True)
    at.toggle(key="p_layers").set_value(True)
    rerun(at)
    at.selectbox(key="p_kind_QK_mode").select("own p")
    at.selectbox(key="p_layer_3_mode").select("own p")
    at.selectbox(key="p_kind_V_mode").select("optimal p*")
    rerun(at)
    tables = _live_tables(at)
    assert set(tables) == {"p_global", "p_kind_QK", "p_layer_3"}  # V at p* has no slider that moves
    for key, table in tables.items():
        assert table["step"] == 0.01 and table["now"] == 100  # every slider at p = 1
        assert tables[key]["texts"][str(table["now"])] == list(_headline(at))
        assert {"0", "75", "125", "200"} <= set(table["texts"]) and "74" not in table["texts"]  # 25 steps and ends
    for key, position in [("p_global", 101), ("p_global", 0), ("p_kind_QK", 99), ("p_layer_3", 200)]:
        expected = _live_tables(at)[key]["texts"][str(position)]
        at.slider(key=key).set_value(position / 100)
        rerun(at)
        assert list(_headline(at)) == expected, (key, position)
    # the tables now hold the new settings: the global p at 0, QK at 0.99, layer 3 at 2
    settings = PAssignment(default=0.0, by_kind={Kind.QK: 0.99, Kind.V: None}, by_layer={3: 2.0})
    terms = minilm.evaluate(settings)
    assert _live_tables(at)["p_global"]["texts"]["0"] == [
        _total_text(terms, minilm.optimal),
        _change_text(terms, minilm.optimal),
    ]


def test_no_slider_table_at_p_star_and_one_step_of_the_grid_when_snapping(bounds_app, rerun, minilm) -> None:
    at = bounds_app
    assert _live_tables(at) == {}  # p* is the default: the global slider is off
    at.toggle(key="p_optimal").set_value(False)
    rerun(at)
    (table,) = _live_tables(at).values()
    assert table["step"] == 1 / minilm.grid_m and table["now"] == minilm.grid_m  # p = 1 on P_12
    assert sorted(map(int, table["texts"])) == list(range(2 * minilm.grid_m + 1))  # the whole grid is in reach
    for position in (0, 5, 24):
        value, change = table["texts"][str(position)]
        terms = minilm.evaluate(position / minilm.grid_m)
        assert value == _total_text(terms, minilm.optimal)
        assert change == _change_text(terms, minilm.optimal)


def test_the_tables_are_drawn_when_their_section_opens_and_export_as_csv(bounds_app) -> None:
    """Closed at first, the tables section sends nothing; opened, it draws the three tables and is in the link."""
    at = bounds_app
    csv_labels = {"Download the per-matrix terms (CSV)", "Download the per-layer sums (CSV)"}
    assert not at.dataframe and not csv_labels & {b.label for b in at.get("download_button")}
    assert EXPLORER_TABLES_KEY not in at.query_params
    table = _terms_table(at)
    assert {b.label for b in at.get("download_button")} >= csv_labels
    assert at.query_params[EXPLORER_TABLES_KEY] == "1"
    assert list(table.columns)[:5] == ["matrix", "p", "contribution", "p_opt", "contribution_at_p_opt"]
    assert {"gamma", "log10_scale", "schatten_p"} <= set(table.columns)
    assert set(table.loc[table["kind"] == "M_out", "head"]) == {"—"}  # no "None" cells
    (kinds,) = [d.value for d in at.dataframe if "share" in d.value.columns]
    assert list(kinds["kind"]) == ["QK", "V", "M_in", "M_out"]  # the kinds a BERT has: no M_gate
    (terms,) = [d for d in at.dataframe if "contribution" in d.value.columns]
    assert table_columns(terms)["matrix"]["pinned"]  # wider than a projector: it scrolls under the matrix
    # the per-layer sums fit a projector: short headers under a caption, the depth factors in their chart
    (layers,) = [d for d in at.dataframe if "log10_xi" in d.value.columns]
    headers = {name: spec["label"] for name, spec in table_columns(layers).items()}
    assert headers == {
        "layer": "layer",
        "sum_c_QK": "QK",
        "sum_c_V": "V",
        "sum_c_M_in": "M_in",
        "sum_c_M_out": "M_out",
        "sum_c": "all kinds",
        "log10_xi": "log10 ξ⁽ℓ⁾",
    }
    assert drawn_width(layers) <= TABLE_WIDTH_PX


def test_kind_shares_at_p_star_in_closed_form(bounds_app, minilm) -> None:
    """At p* = 0 every c(W; 0) is sqrt(rank · N): QK and V heads sqrt(32 · 384), M_in and M_out 384."""
    at = bounds_app
    total = 2 * 72 * math.sqrt(32 * 384) + 12 * 384 + math.sqrt(6)
    assert total == pytest.approx(minilm.optimal.total, rel=1e-12)
    head, ffn = 72 * math.sqrt(32 * 384) / total, 6 * 384 / total
    expected = f"Share of the total by kind: QK {100 * head:.3g} % · V {100 * head:.3g} % · M_in {100 * ffn:.3g} % · "
    expected += f"M_out {100 * ffn:.3g} %"
    assert expected == "Share of the total by kind: QK 38.8 % · V 38.8 % · M_in 11.2 % · M_out 11.2 %"
    assert expected in [c.value for c in at.caption]
    at.session_state[EXPLORER_TABLES_KEY] = True
    (kinds,) = [d.value for d in run_clean(at).dataframe if "share" in d.value.columns]
    # sent as shown: 7,981 for 72 sqrt(32 · 384) = 7,981.29..., and the shares in percent units (38.8: "38.8 %")
    np.testing.assert_array_equal(kinds["sum_c"], [7981.0, 7981.0, 2304.0, 2304.0])
    np.testing.assert_array_equal(kinds["share"], [38.8, 38.8, 11.2, 11.2])


@pytest.mark.slow  # writes and opens a second checkpoint through the whole app
def test_the_curve_chart_survives_a_model_with_fewer_layers(free_p_app, rerun, make_checkpoint, figure_titled) -> None:
    """Bug of issue 10: after switching to a shallower model the c(W; p) chart disappeared."""
    at = free_p_app
    at.multiselect(key="curve_matrices").set_value(["L5 M_in", "L4 QK h3"])
    rerun(at)
    directory = make_checkpoint("bert", layers=2, hidden=32, heads=4, ffn=48)
    at.radio(key="model_source").set_value("Hub id or local directory")
    rerun(at)
    at.text_input(key="model_custom").input(str(directory))
    rerun(at)
    at.button(key="open_model").click()
    rerun(at)
    assert at.multiselect(key="curve_matrices").value == ["L1 QK h0", "L1 V h0", "L1 M_in", "L1 M_out"]
    curves = figure_titled(at, "c(W; p) against p")["data"]
    assert [t["name"] for t in curves if t.get("showlegend", True)] == ["L1 QK h0", "L1 V h0", "L1 M_in", "L1 M_out"]


def test_a_shared_link_draws_its_widgets_without_a_session_state_clash(monkeypatch, minilm) -> None:
    """Bug of issue 10: a link opened with "p_kind_QK created with a default value but also set via Session State".

    Streamlit logs that warning only under a server runtime; here the same rule is checked on every widget.
    """
    from app_harness import APP, TIMEOUT_S, run_clean
    from streamlit.elements.lib import policies
    from streamlit.runtime.state import get_session_state
    from streamlit.testing.v1 import AppTest

    clashes: list[str] = []
    original = policies.check_session_state_rules

    def check(default_value, key, writes_allowed=True):
        if key is not None and default_value is not None and get_session_state().is_new_state_value(key):
            clashes.append(key)
        return original(default_value, key, writes_allowed)

    monkeypatch.setattr(policies, "check_session_state_rules", check)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update(
        {
            "p_optimal": "0",
            "p_global": "0.5",
            "p_kinds": "1",
            "p_kind_QK_mode": "own",
            "p_kind_QK": "0.25",
            "p_layers": "1",
            "p_layer_2_mode": "optimal",
            "sums_view": "share",
            "present": "1",
        }
    )
    run_clean(at)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    assert at.slider(key="p_kind_QK").value == 0.25 and at.radio(key="sums_view").value == SumsView.SHARE
    expected = minilm.evaluate(PAssignment(default=0.5, by_kind={Kind.QK: 0.25}, by_layer={2: None}))
    assert _metric(at, TOTAL_LABEL) == _total_text(expected, minilm.optimal)
    assert clashes == []


def test_the_headline_compares_with_the_random_twin(bounds_app, rerun, minilm) -> None:
    from dashboard.state.baseline import CONTROLS_SECTION_KEY, TWIN_KEY, twin_analysis
    from dashboard.widgets.headline import BASELINE_LABEL
    from specbound.studies.compare import compare

    at = bounds_app
    assert "Compare with a baseline" in [e.label for e in at.expander]
    assert TWIN_KEY not in [b.key for b in at.button]  # the buttons are drawn when their section opens
    at.session_state[CONTROLS_SECTION_KEY] = True
    rerun(at)
    at.button(key=TWIN_KEY).click()
    rerun(at)
    twin = twin_analysis("minilm-l6", 0.02)
    comparison = compare(minilm, twin)
    assert twin.profile.model == "random twin of minilm-l6 (seed 0, σ = 0.02)"
    assert _metric(at, BASELINE_LABEL) == format_against(comparison.baseline.log_ours_at, comparison.model.log_ours_at)
    assert _metric(at, BASELINE_LABEL) == "20,573"  # full rank everywhere: the same architecture-only number
    assert at.query_params["baseline"] == "twin:minilm-l6"
    assert any("baseline: random twin of minilm" in c.value for c in at.caption)
