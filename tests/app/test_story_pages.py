"""The Overview, Why p* wins and Compare pages, and presentation mode, on the bundled model: every number
on screen is the package's own (specbound.present.explain, specbound.studies.compare, specbound.studies.twin)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from app_harness import as_shown, drawn_width, table_columns

from dashboard.state.baseline import PIN_KEY, TWIN_KEY, twin_analysis
from dashboard.views.compare import WHY_AGREE
from dashboard.widgets.drilldown import head_cell, p_star_cell
from dashboard.widgets.tables import TABLE_WIDTH_PX
from dashboard.wording.numbers import format_change
from dashboard.wording.text import BOUND_NOTE, EDELMAN_LABEL, OPTIMAL_LABEL, plain
from dashboard.wording.vocabulary import TERMS
from pages.overview import HOW_TO_READ, P_STAR_LABEL, PRODUCT_NAME, RATIO_LABEL, TOUR, WHAT_P_IS
from specbound.core.architecture import Kind
from specbound.core.logspace import to_log10
from specbound.core.profile import MatrixId
from specbound.core.proxies import Proxy
from specbound.present.explain import break_even, explain_p_star, p_star_by_kind, p_star_summary
from specbound.present.numbers import format_log
from specbound.studies.compare import compare


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_overview_is_the_landing_page_with_the_package_numbers(landing_app, minilm) -> None:
    at = landing_app
    assert [t.value for t in at.title] == [PRODUCT_NAME]
    metrics = _metrics(at)
    assert metrics[OPTIMAL_LABEL] == format_log(minilm.optimal.log_total) == "20,573"
    assert metrics[EDELMAN_LABEL] == format_log(minilm.log_edelman) == "6.854 × 10²⁸"
    assert float(to_log10(minilm.log_edelman - minilm.optimal.log_total)) == pytest.approx(24.52, abs=0.01)
    assert metrics[RATIO_LABEL] == "3.3 × 10²⁴ times"
    helps = {m.label: m.help for m in at.metric}
    assert "Lower is better" in helps[OPTIMAL_LABEL] and "Lower is better" in helps[EDELMAN_LABEL]
    assert metrics[P_STAR_LABEL] == p_star_summary(minilm).headline() == "p* = 0 for 156 of 156 matrices"
    texts = [m.value for m in at.markdown]
    assert f"**{plain('Ours at p* is 3.3 × 10²⁴ times smaller than the Edelman-style proxy.')}** {HOW_TO_READ}" in texts
    assert "lower is better" in HOW_TO_READ
    assert WHAT_P_IS in texts and "0 ($S_0$ counts the rank)" in WHAT_P_IS  # p defined above the fold
    # subscripts are maths, not markdown underscores that would pair into italics
    assert not re.search(
        r"(?<![$\\])\b[SPs]_[0-9pmW]", re.sub(r"\$[^$]+\$", "", WHAT_P_IS + "".join(t[3] for t in TOUR))
    )
    assert plain(explain_p_star(minilm)) in texts and "depth factor α" in explain_p_star(minilm)
    links = at.get("page_link")
    labels = [label for _, label, _, _ in TOUR]
    assert [link.proto.label for link in links] == labels + labels  # the short tour at the top, then explained
    glossary = next(t for t in texts if t.startswith(f"- **{plain('Ours at p*')}"))
    for symbol in ("QK", "V", "M_in", "M_out", "α⁽ℓ⁾ (depth factor)", "γ (local factor)", "s_W (scale)", "P_m"):
        assert f"**{plain(symbol)}**" in glossary
    # escaped: the stars of "s*_W" and "p*" in one line no longer pair into italics
    assert f"**{plain('decades above s*_W')}**: {plain(TERMS['decades_above'].meaning)}" in glossary
    assert "s\\*\\_W" in glossary and "s*_W" not in glossary
    assert len(TERMS) == glossary.count("\n") + 1
    assert sum(BOUND_NOTE in c.value for c in at.caption) == 1


def test_why_page_shows_p_star_ranks_and_break_even(landing_app, rerun, figure_titled, minilm) -> None:
    at = landing_app
    at.switch_page("pages/why.py")
    rerun(at)
    assert [t.value for t in at.title] == ["Why p* wins"] and not at.error
    by_kind = p_star_by_kind(minilm)
    assert all((values == 0).all() for values in by_kind.values())
    # one p* for all: the map would be one block and the histogram one bar; a sentence says it instead
    assert any("All 156 matrices take p* = 0" in i.value for i in at.info)
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert not any("p* of every matrix" in spec or "How often each p* wins" in spec for spec in titles)
    ranks = figure_titled(at, "QK: 72 of 72 matrices at maximum rank")["data"][0]
    np.testing.assert_array_equal(ranks["z"], minilm.profile.per_head(minilm.profile.rank, Kind.QK))
    assert ranks["zmin"] == 0 and ranks["zmax"] == 32  # colours span [0, d]: a full-rank model reads as full
    (element,) = [d for d in at.dataframe if "log10_break_even" in d.value.columns]
    table = element.value
    # the columns that fit a projector (the decades above s*_W and the ranks are in the charts and the CSV)
    assert list(table.columns) == ["matrix", "p_opt", "log10_scale", "log10_break_even", "first_winning_p"]
    assert drawn_width(element, selectable=True) <= TABLE_WIDTH_PX
    assert not any(spec.get("pinned") for spec in table_columns(element).values())  # it fits: nothing pinned
    even = break_even(minilm)
    # the package's numbers, sent as shown (two decimals of a log10): no digit in the page that is not on screen
    np.testing.assert_array_equal(table["log10_break_even"], as_shown(even.log10_break_even, "log10"))
    np.testing.assert_array_equal(table["log10_scale"], as_shown(even.log10_scale, "log10"))
    assert table["log10_scale"].iloc[0] != even.log10_scale[0]  # 25.48, not 25.478918...
    assert set(table["first_winning_p"]) == {"none: p = 0 wins"}
    at.radio(key="rank_kind").set_value("M_in")
    rerun(at)
    assert figure_titled(at, "M_in: 6 of 6 matrices at maximum rank")
    assert at.query_params["rank_kind"] == "m_in"


def test_why_page_offers_a_model_where_p_star_varies(landing_app, rerun) -> None:
    """Every p* of the bundled model is 0: the page says why and opens a shipped lab model whose p* vary."""
    from dashboard.services import lab

    at = landing_app
    at.switch_page("pages/why.py")
    rerun(at)
    key, step = lab.varied_p_star_run()
    run = lab.available_runs()[key]
    assert len(set(run.final.p_opt)) > 1 and step == run.final.step
    at.button(key="why_open_varied").click()
    rerun(at)
    assert not at.error and not any("matrices take p* =" in i.value for i in at.info)  # the map is drawn
    assert any("How often each p* wins" in c.proto.spec for c in at.get("plotly_chart"))
    from dashboard.state.atlas import LABEL_KEY

    assert at.session_state[LABEL_KEY] == lab.model_label(run.spec)  # the lab's run is the session's model


def test_chart_clicks_point_at_the_right_matrix() -> None:
    assert p_star_cell(0, 3, 2) == MatrixId(2, Kind.QK, 3)
    assert p_star_cell(1, 11, 5) == MatrixId(5, Kind.V, 11)
    assert p_star_cell(2, "M_out", 4) == MatrixId(4, Kind.M_OUT)
    assert p_star_cell(4, 11, 5) == MatrixId(5, Kind.V, 11)  # the clickable cells over the V panel
    assert head_cell(Kind.V)(1, 7, 0) == MatrixId(0, Kind.V, 7)


def test_compare_with_the_random_twin(landing_app, rerun, figure_titled, minilm) -> None:
    at = landing_app
    at.switch_page("pages/compare.py")
    rerun(at)
    assert any("No baseline yet" in i.value for i in at.info)
    at.button(key=TWIN_KEY).click()
    rerun(at)
    twin = twin_analysis("minilm-l6", 0.02)
    comparison = compare(minilm, twin)
    metrics = _metrics(at)
    assert metrics["Ours at p*: model"] == format_log(comparison.model.log_ours_opt) == "20,573"
    assert metrics["Ours at p*: baseline"] == format_log(comparison.baseline.log_ours_opt) == "20,573"
    assert (
        metrics["model − baseline"]
        == format_change(comparison.model.log_ours_opt, comparison.baseline.log_ours_opt)
        == "±0"
    )
    # the lesson of issue 10: equal at p*, 10^28.8 against 10^8.1 for the Edelman-style proxy
    assert comparison.baseline.log10["edelman"] == pytest.approx(8.1, abs=0.05)
    lesson = plain("Its Edelman-style proxy is 4.9 × 10²⁰ times larger than the baseline's.")
    assert any(lesson in m.value for m in at.markdown)
    (why,) = [i.value for i in at.info if WHY_AGREE in i.value]  # the page says why the totals agree
    assert plain("every one of the 156 matrices of both models takes p* = 0") in why
    assert plain("9,216") in why and plain(format_log(comparison.baseline.log_edelman)) in why
    assert any(plain("random twin of minilm-l6 (seed 0, σ = 0.02)") in m.value for m in at.markdown)
    bars = figure_titled(at, "Model against baseline")["data"]
    np.testing.assert_allclose(
        bars[1]["x"],
        [comparison.baseline.log10[Proxy.OURS], comparison.baseline.log10_at, comparison.baseline.log10[Proxy.EDELMAN]],
    )
    (layers,) = [d.value for d in at.dataframe if "layer" in d.value.columns]
    np.testing.assert_allclose(layers["difference"], comparison.per_layer_difference, atol=1e-9)
    # Σ c(W; p*) per kind in the one format, as on screen: 72 sqrt(32 · 384) = 7,981.29... and 6 · 384
    (kinds,) = [d.value for d in at.dataframe if "kind" in d.value.columns]
    assert kinds["model"].tolist() == kinds["baseline"].tolist() == [7981.0, 7981.0, 2304.0, 2304.0]
    np.testing.assert_array_equal(layers["model"], as_shown(np.exp(comparison.log_layer_sums_model)))
    overlay = figure_titled(at, "Spectra overlaid: M_in, layer 0")["data"]
    assert {t["name"] for t in overlay if t.get("showlegend")} == {"minilm-l6", twin.profile.model}
    assert at.query_params["baseline"] == "twin:minilm-l6"


def test_a_pinned_model_of_another_depth(landing_app, rerun, make_checkpoint) -> None:
    at = landing_app
    at.switch_page("pages/compare.py")
    rerun(at)
    at.button(key=PIN_KEY).click()
    rerun(at)
    directory = make_checkpoint("bert", layers=2, hidden=32, heads=4, ffn=48)
    at.radio(key="model_source").set_value("Hub id or local directory")
    rerun(at)
    at.text_input(key="model_custom").input(str(directory))
    rerun(at)
    at.button(key="open_model").click()
    rerun(at)
    assert any("different depths" in c.value for c in at.caption)
    assert any("Baseline:** minilm\\-l6" in m.value for m in at.markdown)


def test_presentation_mode_folds_notes_and_tables_and_is_in_the_link(landing_app, rerun) -> None:
    at = landing_app
    assert [e.label for e in at.main.expander] == []
    at.toggle(key="present").set_value(True)
    rerun(at)
    assert [e.label for e in at.main.expander] == ["Symbols"]
    assert at.query_params["present"] == "1"
    at.switch_page("pages/bounds.py")
    rerun(at)
    assert "Tables per matrix, per layer and per kind (CSV)" in {e.label for e in at.expander}
    assert not at.dataframe  # on demand in either mode
    assert any("font-size: 19px" in h.proto.body for h in at.get("html"))


def test_a_link_names_a_server_directory_as_the_baseline_under_the_model_s_rule(make_checkpoint, monkeypatch) -> None:
    """A baseline directory in a link opens exactly where ``model=`` would: only when the operator allows
    server paths; a link the app writes (pinning a local model) is a link it reopens."""
    from dashboard.safety import SERVER_PATHS_ENV
    from dashboard.state.baseline import BASELINE_CODEC, Baseline

    directory = make_checkpoint("bert", layers=2, hidden=32, heads=4, ffn=48)
    assert BASELINE_CODEC.parse("twin:minilm-l6") == Baseline("minilm-l6", twin=True)
    assert BASELINE_CODEC.parse("L2-H128") == Baseline("L2-H128")
    monkeypatch.delenv(SERVER_PATHS_ENV, raising=False)
    for text in (str(directory), f"twin:{directory}"):
        with pytest.raises(ValueError):
            BASELINE_CODEC.parse(text)
    monkeypatch.setenv(SERVER_PATHS_ENV, "1")
    for baseline in (Baseline(str(directory)), Baseline(str(directory), twin=True)):
        assert BASELINE_CODEC.parse(BASELINE_CODEC.format(baseline)) == baseline  # written, then reopened


def test_the_twin_takes_the_initializer_range_of_the_model(make_checkpoint, tmp_path) -> None:
    import json

    from dashboard.state.baseline import model_initializer_range
    from specbound.core.defaults import BERT_INITIALIZER_RANGE

    directory = make_checkpoint("bert", layers=2, hidden=32, heads=4, ffn=48)
    config = json.loads((directory / "config.json").read_text())
    config["initializer_range"] = 0.05
    (directory / "config.json").write_text(json.dumps(config))
    assert model_initializer_range(str(directory)) == 0.05
    assert model_initializer_range("minilm-l6") == BERT_INITIALIZER_RANGE  # all-MiniLM-L6-v2's config says 0.02
    assert model_initializer_range(str(tmp_path / "nowhere")) == BERT_INITIALIZER_RANGE  # nothing on disk: the default
