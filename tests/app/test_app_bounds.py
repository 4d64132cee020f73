"""The Bound explorer on the bundled model: totals, charts and tables equal the package's numbers
for the p the widgets set, and a slider move recomputes from the cached spectra alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dashboard.text import BOUND_NOTE, EDELMAN_LABEL, OPTIMAL_LABEL, TOTAL_LABEL, format_log_value
from specbound.bounds import PAssignment
from specbound.matrices import Kind
from specbound.logspace import to_log10 as log10


def _metric(at, label: str) -> str:
    (value,) = [m.value for m in at.metric if m.label == label]
    return value


def _terms_table(at):
    (table,) = [d.value for d in at.dataframe if "contribution" in d.value.columns]
    return table


def test_page_renders_with_the_package_totals(bounds_app, minilm) -> None:
    at = bounds_app
    assert [t.value for t in at.title] == ["Bound explorer"]
    assert not at.error
    assert at.slider(key="p_global").value == 1.0
    assert _metric(at, TOTAL_LABEL) == format_log_value(minilm.evaluate(PAssignment(default=1.0)).log_total)
    assert _metric(at, OPTIMAL_LABEL) == format_log_value(minilm.evaluate().log_total) == "20,573.03"
    assert _metric(at, EDELMAN_LABEL) == format_log_value(minilm.log_edelman)
    assert _metric(at, "√L") == f"{math.sqrt(6):.4g}"
    assert sum(c.value == BOUND_NOTE for c in at.caption) >= 3


def test_moving_the_global_slider_changes_the_total(bounds_app, rerun, minilm) -> None:
    at = bounds_app
    before = _metric(at, TOTAL_LABEL)
    at.slider(key="p_global").set_value(0.5)
    rerun(at)
    after = _metric(at, TOTAL_LABEL)
    assert after != before
    assert after == format_log_value(minilm.evaluate(0.5).log_total)
    np.testing.assert_allclose(_terms_table(at)["contribution"], minilm.evaluate(0.5).contribution, rtol=1e-12)


def test_snapping_and_free_p(bounds_app, rerun, minilm) -> None:
    at = bounds_app
    at.slider(key="p_global").set_value(0.52)  # between 6/12 and 7/12: snaps to 0.5
    rerun(at)
    assert _metric(at, TOTAL_LABEL) == format_log_value(minilm.evaluate(0.5).log_total)
    at.toggle(key="p_snap").set_value(False)
    rerun(at)
    assert any("Free p" in c.value for c in at.caption)
    at.slider(key="p_global").set_value(0.52)
    rerun(at)
    assert _metric(at, TOTAL_LABEL) == format_log_value(minilm.evaluate(0.52).log_total)
    assert _metric(at, TOTAL_LABEL) != format_log_value(minilm.evaluate(0.5).log_total)


def test_optimal_toggle_gives_the_optimum(bounds_app, rerun, minilm) -> None:
    at = bounds_app
    at.toggle(key="p_optimal").set_value(True)
    rerun(at)
    assert at.slider(key="p_global").disabled
    assert _metric(at, TOTAL_LABEL) == _metric(at, OPTIMAL_LABEL)
    np.testing.assert_array_equal(_terms_table(at)["p"], minilm.p_opt)


def test_overrides_per_kind_and_per_layer(bounds_app, rerun, minilm) -> None:
    at = bounds_app
    at.selectbox(key="p_kind_M_in_mode").select("own p")
    rerun(at)  # the slider is enabled once its row asks for its own p
    at.slider(key="p_kind_M_in").set_value(2.0)
    at.selectbox(key="p_layer_3_mode").select("optimal p*")
    rerun(at)
    expected = minilm.evaluate(PAssignment(default=1.0, by_kind={Kind.M_IN: 2.0}, by_layer={3: None}))
    assert _metric(at, TOTAL_LABEL) == format_log_value(expected.log_total)
    table = _terms_table(at)
    np.testing.assert_array_equal(table["p"], expected.p)
    assert set(table.loc[(table["kind"] == "M_in") & (table["layer"] != 3), "p"]) == {2.0}


def test_charts_carry_the_terms(bounds_app, rerun, figure_titled, minilm) -> None:
    at = bounds_app
    at.slider(key="p_global").set_value(0.75)
    rerun(at)
    terms = minilm.evaluate(0.75)

    sums = figure_titled(at, "by layer and kind")
    bars = {t["name"]: np.asarray(t["y"], dtype=float) for t in sums["data"]}
    assert sums["layout"]["barmode"] == "stack"
    for kind in Kind:
        expected = [terms.contribution[(terms.layers == layer) & (terms.kinds == kind.value)].sum()
                    for layer in range(6)]
        np.testing.assert_allclose(bars[kind.value], expected, rtol=1e-12)
    assert math.isclose(sum(b.sum() for b in bars.values()), terms.total, rel_tol=1e-12)

    proxies = figure_titled(at, "Proxies side by side")["data"][0]
    np.testing.assert_allclose(proxies["x"], log10([terms.log_total, minilm.evaluate().log_total,
                                                    minilm.log_edelman]), rtol=1e-12)

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


def test_slider_path_touches_no_file_and_runs_no_svd(bounds_app, rerun, minilm, monkeypatch) -> None:
    """After the first render, moving p only evaluates the cached analysis."""
    import specbound.loading
    import specbound.cache
    import specbound.checkpoints
    import specbound.models

    def forbidden(*_, **__):
        raise AssertionError("the slider path reached file access or a decomposition")

    for module, name in [(specbound.loading, "load_profile"), (specbound.loading, "compute_profile"),
                         (specbound.checkpoints, "fetch"), (specbound.checkpoints, "is_cached"),
                         (specbound.checkpoints, "open_checkpoint"), (specbound.cache.ProfileCache, "load"),
                         (specbound.models, "catalog"), (np.linalg, "svd"), (np.linalg, "eigvalsh")]:
        monkeypatch.setattr(module, name, forbidden)
    for p in (0.25, 1.75):
        at = bounds_app
        at.slider(key="p_global").set_value(p)
        rerun(at)
        assert _metric(at, TOTAL_LABEL) == format_log_value(minilm.evaluate(p).log_total)


def test_tables_export_as_csv(bounds_app) -> None:
    labels = {b.label for b in bounds_app.get("download_button")}
    assert labels >= {"Download the per-matrix terms (CSV)", "Download the per-layer sums (CSV)"}
    table = _terms_table(bounds_app)
    assert {"matrix", "gamma", "log10_scale", "p", "schatten_p", "contribution", "p_opt"} <= set(table.columns)
