"""The "Why p* wins" view: no map where every matrix takes one p*, the map and histogram where p* varies,
the break-even table as the CSV keeps it and as the page shows it, and a report made of the same objects."""

from __future__ import annotations

import numpy as np

from dashboard.views.why import NONE_WINS, TITLE, WhyView, break_even_table, why_view
from specbound.core.bounds import BoundAnalysis
from specbound.present.explain import break_even, explain_p_star, p_star_summary


def view_of(analysis: BoundAnalysis, rank_kind: str = "QK") -> WhyView:
    return why_view(
        analysis,
        p_star_summary(analysis),
        explain_p_star(analysis),
        model="m",
        map_expert=None,
        rank_kind=rank_kind,
        source="m · p*",
    )


def test_one_p_star_for_all_draws_no_map(minilm: BoundAnalysis) -> None:
    view = view_of(minilm)
    assert set(minilm.p_opt) == {0.0}
    assert view.p_map is None and view.histogram is None
    assert view.report()[0].figures == []


def test_a_varied_p_star_draws_the_map_and_the_histogram(finetune_base: BoundAnalysis) -> None:
    view = view_of(finetune_base)
    assert view.p_map is not None and view.histogram is not None
    assert len(view.p_map.figures) == len(view.p_map.widths) == len(view.p_map.stacks) >= 2
    counts = [sum(trace.y) for trace in view.histogram.data]
    assert sum(counts) == 12  # every matrix of the two-layer model counted once
    clickable = [t for fig in view.p_map.figures for t in fig.data if t.type == "scatter" and t.name.endswith("cells")]
    assert clickable  # a click on a cell opens the matrix


def test_the_break_even_table_is_the_explanations_numbers(finetune_base: BoundAnalysis) -> None:
    table = break_even_table(finetune_base)
    even = break_even(finetune_base)
    np.testing.assert_array_equal(table["p_opt"], finetune_base.p_opt)
    np.testing.assert_array_equal(table["log10_break_even"], even.log10_break_even)
    np.testing.assert_allclose(table["decades_above"], table["log10_scale"] - table["log10_break_even"], atol=1e-12)
    # a matrix at p* = 0 has no winning p > 0; one at p* > 0 has one, no larger than its p*
    at_zero = table["p_opt"] == 0
    assert table.loc[at_zero, "first_winning_p"].isna().all()
    assert (table.loc[~at_zero, "first_winning_p"] <= table.loc[~at_zero, "p_opt"] + 1e-12).all()


def test_the_shown_table_words_the_empty_cells(finetune_base: BoundAnalysis) -> None:
    view = view_of(finetune_base)
    shown = view.shown_table
    assert list(shown.columns) == ["matrix", "p_opt", "log10_scale", "log10_break_even", "first_winning_p"]
    none_wins = view.table["first_winning_p"].isna()
    assert (shown.loc[none_wins, "first_winning_p"] == NONE_WINS).all()
    assert (shown.loc[~none_wins, "first_winning_p"] != NONE_WINS).all()


def test_the_report_is_the_view(finetune_base: BoundAnalysis) -> None:
    view = view_of(finetune_base, rank_kind="V")
    sections = view.report()
    assert [s.heading for s in sections] == [
        "p* of every matrix",
        "Rank against its structural maximum",
        "Scale against break-even",
    ]
    assert view.p_map is not None
    assert [id(f) for f in sections[0].figures] == [id(f) for f in (*view.p_map.figures, view.histogram)]
    assert [id(f) for f in sections[1].figures] == [id(view.ranks)]
    assert [id(f) for f in sections[2].figures] == [id(view.break_even)]
    assert sections[2].tables[0] is view.table
    assert sections[0].note == f"{view.summary.headline()}. {view.sentence}"
    assert view.heading.title == TITLE and view.heading.p_text == "p*"
