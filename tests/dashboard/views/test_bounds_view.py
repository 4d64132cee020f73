"""The Bound explorer's view: its sentences, tables and figures follow the terms at the chosen p, and
its report holds the very objects the page draws."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from dashboard.views.bounds import TITLE, ExplorerView, choice_sentence, depth_figure, explorer_view
from dashboard.wording.numbers import ratio_sentence
from dashboard.wording.text import EDELMAN_LABEL, OPTIMAL_LABEL, SQRT_DEPTH_LABEL, TOTAL_LABEL
from dashboard.wording.totals import headline_sentence, kind_shares_sentence, total_texts
from specbound.core.bounds import BoundAnalysis, PAssignment
from specbound.present.figures.bounds import SumsView
from specbound.present.numbers import format_log

HALF = PAssignment(default=0.5)


def view_at(
    analysis: BoundAnalysis,
    assignment: PAssignment,
    curve_rows: Sequence[int] = (0, 1),
    sums_view: SumsView = SumsView.LOG,
) -> ExplorerView:
    terms = analysis.evaluate(assignment)
    depth = depth_figure(analysis, "minilm · independent of p")
    return explorer_view(
        analysis,
        terms,
        assignment=assignment,
        p_text="default p = 0.5",
        model="minilm",
        sums_view=sums_view,
        curve_rows=list(curve_rows),
        depth=depth,
        source="minilm · default p = 0.5",
    )


def test_the_sentence_at_p_star_is_the_overviews_and_elsewhere_compares_with_edelman(minilm: BoundAnalysis) -> None:
    assert choice_sentence(minilm, minilm.optimal, PAssignment()) == headline_sentence(minilm)
    terms = minilm.evaluate(HALF)
    assert choice_sentence(minilm, terms, HALF) == ratio_sentence(
        "Ours at the chosen p", terms.log_total, "the Edelman-style proxy", minilm.log_edelman
    )
    assert view_at(minilm, HALF).sentence == choice_sentence(minilm, terms, HALF)


def test_the_totals_are_the_headlines_numbers(minilm: BoundAnalysis) -> None:
    view = view_at(minilm, HALF)
    value, change = total_texts(view.terms.log_total, minilm.optimal.log_total)
    assert view.totals == [
        (TOTAL_LABEL, f"{value} ({change})"),
        (OPTIMAL_LABEL, format_log(minilm.optimal.log_total)),
        (EDELMAN_LABEL, format_log(minilm.log_edelman)),
        (SQRT_DEPTH_LABEL, "2.449"),  # √6 for MiniLM's six layers
    ]


def test_the_kind_table_sums_to_the_total_less_the_depth_term(minilm: BoundAnalysis) -> None:
    """Σ_kinds Σ c(W; p) + √L is the total, so the shares add up to 1 − √L / total."""
    view = view_at(minilm, HALF)
    table = view.kind_table
    assert list(table["kind"]) == ["QK", "V", "M_in", "M_out"]
    total = math.exp(view.terms.log_total)
    assert table["sum_c"].sum() + math.sqrt(6) == pytest.approx(total, rel=1e-12)
    assert table["share"].sum() == pytest.approx(1 - math.sqrt(6) / total, rel=1e-12)
    np.testing.assert_allclose(table["sum_c"], [math.exp(v) for v in view.terms.log_per_kind().values()], rtol=1e-12)
    assert view.shares_sentence == kind_shares_sentence(view.terms)


def test_the_terms_table_holds_every_matrix_at_the_chosen_p(minilm: BoundAnalysis) -> None:
    view = view_at(minilm, HALF)
    table = view.terms_table
    assert len(table) == 156 and list(table["matrix"]) == [m.label for m in minilm.profile.ids]
    np.testing.assert_array_equal(table["p"], np.full(156, 0.5))
    np.testing.assert_array_equal(table["contribution"], view.terms.contribution)
    np.testing.assert_array_equal(table["p_opt"], minilm.p_opt)
    assert list(view.layer_table.index) == list(range(6))
    np.testing.assert_allclose(view.layer_table["sum_c"], view.terms.per_layer(6), rtol=1e-12)


def test_the_curves_follow_the_chosen_matrices(minilm: BoundAnalysis) -> None:
    assert view_at(minilm, HALF, curve_rows=()).curves is None
    two = view_at(minilm, HALF, curve_rows=(0, 150)).curves
    assert two is not None
    names = {trace.name for trace in two.data if trace.name}
    assert any(minilm.profile.ids[0].label in name for name in names), names
    assert any(minilm.profile.ids[150].label in name for name in names), names


def test_the_sums_view_changes_the_figure(minilm: BoundAnalysis) -> None:
    log_axis = view_at(minilm, HALF, sums_view=SumsView.LOG).sums
    stacked = view_at(minilm, HALF, sums_view=SumsView.LINEAR).sums
    assert log_axis.layout.yaxis.type == "log" and stacked.layout.barmode == "stack"


def test_the_report_is_the_view(minilm: BoundAnalysis) -> None:
    """Every figure and table of the report is the object the page draws (no second build)."""
    view = view_at(minilm, HALF)
    sections = view.report()
    assert [s.heading for s in sections] == [
        "Totals",
        "Where the total comes from",
        "c(W; p) against p",
        "Every term",
        "Depth factors",
    ]
    figures = [fig for s in sections for fig in s.figures]
    assert [id(f) for f in figures] == [id(view.proxies), id(view.sums), id(view.curves), id(view.depth)]
    tables = [table for s in sections for table in s.tables]
    assert [id(t) for t in tables] == [id(view.kind_table), id(view.terms_table), id(view.layer_table)]
    assert sections[0].totals == view.totals and view.sentence in sections[0].note
    assert view.heading.title == TITLE and view.heading.p_text == "default p = 0.5"
    assert view.heading.shape == minilm.profile.shape and view.heading.grid_m == minilm.grid_m
    assert view_at(minilm, HALF, curve_rows=()).report()[2].figures == []
