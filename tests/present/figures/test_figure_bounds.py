"""Bound figures carry the analysis' numbers: sums, p* stars, p* map and histogram, break-even, comparison."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import pytest

from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.proxies import Proxy
from specbound.present.explain import break_even
from specbound.present.figures import bounds as figures
from specbound.present.figures.style import (
    CELL_TEXT_PX,
    KIND_COLORS,
    PALETTE,
    colorbar_gap,
    for_projector,
    log_axis_ticks,
    spaced_ticks,
)
from specbound.studies.compare import compare
from specbound.studies.twin import random_twin

SHAPE = ModelShape(num_layers=2, hidden_size=32, num_heads=4, ffn_size=48)


@pytest.fixture(scope="module")
def mixed() -> BoundAnalysis:
    """σ = 0.08 on this shape gives p* = 0 for some matrices and p > 0 for others."""
    analysis = BoundAnalysis.from_profile(random_twin(SHAPE, model="tiny", initializer_range=0.08))
    assert 0.0 in analysis.p_opt and np.any(analysis.p_opt > 0)
    return analysis


def _bars(fig: go.Figure) -> dict[str, np.ndarray]:
    return {t.name: np.asarray(t.y, dtype=float) for t in fig.data}


def test_term_sums_views(mixed: BoundAnalysis) -> None:
    terms = mixed.evaluate(0.5)
    linear = figures.term_sums(mixed, terms)
    assert linear.layout.barmode == "stack"
    assert sum(b.sum() for b in _bars(linear).values()) == pytest.approx(terms.total, rel=1e-12)
    log = figures.term_sums(mixed, terms, "log")
    sums = figures.kind_layer_sums(terms, 2)
    values = np.append(np.concatenate(list(sums.values())), terms.sqrt_depth)
    assert log.layout.barmode == "group" and log.layout.yaxis.type == "log"
    assert list(log.layout.yaxis.tickvals) == log_axis_ticks(values.min(), values.max())[0]
    share = _bars(figures.term_sums(mixed, terms, figures.SumsView.SHARE))
    assert figures.SQRT_DEPTH_LABEL not in share
    np.testing.assert_allclose(sum(share.values()), [100.0, 100.0])
    np.testing.assert_allclose(share["QK"], 100 * sums[Kind.QK] / sum(sums.values()), rtol=1e-12)
    assert [t.marker.color for t in log.data[:4]] == [KIND_COLORS[k] for k in mixed.profile.model_kinds]


def test_contribution_curves_mark_p_star_and_the_current_p(mixed: BoundAnalysis) -> None:
    rows = [0, 4, 8, 9]  # L0 QK h0, L0 V h0, L0 M_in, L0 M_out
    terms = mixed.evaluate(0.75)
    fig = figures.contribution_curves(mixed, rows, terms)
    assert len(fig.data) == 4 * len(rows)
    for n, i in enumerate(rows):
        label = mixed.profile.ids[i].label
        line, star, here = (
            next(t for t in fig.data if t.name == name) for name in (label, f"{label} p*", f"{label} current p")
        )
        assert line.line.color == KIND_COLORS[mixed.profile.ids[i].kind]  # a curve in its kind's colour
        assert star.x[0] == mixed.p_opt[i] and star.marker.size == figures.STAR_SIZES[n]
        assert star.y[0] == pytest.approx(math.exp(mixed.log_contribution_opt[i]), rel=1e-12)
        assert here.x[0] == 0.75 and here.y[0] == pytest.approx(terms.contribution[i], rel=1e-12)
    assert fig.layout.yaxis.type == "log" and all(
        "<sup>" in t or "." in t or t.isdigit() for t in fig.layout.yaxis.ticktext
    )


def test_p_star_map_and_histogram(mixed: BoundAnalysis) -> None:
    prof, grid = mixed.profile, mixed.grid
    fig = figures.p_star_heatmap(mixed)
    qk, v, mlp = fig.data
    np.testing.assert_array_equal(qk.z, prof.per_head(mixed.p_opt, Kind.QK))
    np.testing.assert_array_equal(v.z, prof.per_head(mixed.p_opt, Kind.V))
    np.testing.assert_array_equal(np.asarray(mlp.z)[:, 1], prof.per_layer(mixed.p_opt, Kind.M_OUT))
    step = grid[1] - grid[0]
    assert qk.zmin == pytest.approx(-step / 2) and qk.zmax == pytest.approx(2 + step / 2)
    assert len(qk.colorscale) == 2 * len(grid)  # one flat band per grid value
    taken = sorted(set(mixed.p_opt) | {0.0, 2.0})
    ticks = list(mlp.colorbar.tickvals)  # the values taken, less those whose labels would overlap
    assert ticks[0] == 0.0 and ticks[-1] == 2.0 and set(ticks) <= set(taken)
    gap = colorbar_gap(fig.layout.height, fig.layout.margin.t, CELL_TEXT_PX) * (qk.zmax - qk.zmin)
    assert min(np.diff(ticks)) >= gap > 0
    assert list(spaced_ticks(np.array([0.0, 1 / 12, 0.25, 1.0, 2.0]), 0.2)) == [0.0, 0.25, 1.0, 2.0]
    assert (mlp.colorbar.len, mlp.colorbar.y, mlp.colorbar.yanchor) == (0.8, 0, "bottom")  # its title below the titles
    large = for_projector(fig).data[2].colorbar  # 18 px labels need more room: fewer of them, no title on top
    assert set(large.tickvals) <= set(ticks) and {0.0, 2.0} <= set(large.tickvals) and large.title.text is None
    L, H = prof.shape.num_layers, prof.shape.num_heads
    assert list(fig.layout.xaxis.range) == [-0.5, H - 0.5] and list(fig.layout.xaxis3.range) == [-0.5, 1.5]
    assert list(fig.layout.yaxis2.range) == [-0.5, L - 0.5]  # the cells, not the click targets laid over them
    assert [fig.layout[f"yaxis{s}"].showticklabels for s in ("", "2", "3")] == [True, False, False]

    hist = figures.p_star_histogram(mixed)
    assert hist.layout.barmode == "stack"
    total = np.sum([np.asarray(t.y) for t in hist.data], axis=0)
    np.testing.assert_array_equal(total, np.bincount(mixed.p_opt_index, minlength=len(grid)))
    assert sum(total) == SHAPE.num_matrices
    # counts tick in whole numbers (Plotly steps by 0.5 below about 4), with a tenth of room above the top bar
    tallest = int(total.max())
    assert (hist.layout.yaxis.dtick, hist.layout.yaxis.tick0, hist.layout.yaxis.tickformat) == (
        figures.count_ticks(tallest)["dtick"],
        0,
        ",d",
    )
    assert hist.layout.yaxis.range[1] == pytest.approx(1.1 * tallest, rel=1e-9)
    steps = {n: figures.count_ticks(n)["dtick"] for n in (0, 1, 2, 3, 6, 7, 12, 13, 30, 31, 61, 1000)}
    assert steps == {0: 1, 1: 1, 2: 1, 3: 1, 6: 1, 7: 2, 12: 2, 13: 5, 30: 5, 31: 10, 61: 20, 1000: 200}


def test_break_even_figure_plots_scale_against_break_even(mixed: BoundAnalysis) -> None:
    fig = figures.break_even_figure(mixed)
    even = break_even(mixed)
    assert [t.name for t in fig.data if t.type == "scatter" and t.mode == "markers"] == ["QK", "V", "M_in", "M_out"]
    for kind in mixed.profile.model_kinds:
        trace = next(t for t in fig.data if t.name == kind.value)
        mask = mixed.profile.mask(kind)
        np.testing.assert_allclose(trace.x, even.log10_break_even[mask])
        np.testing.assert_allclose(trace.y, even.log10_scale[mask])
        assert trace.marker.color == KIND_COLORS[kind]
    diagonal = fig.data[-1]
    assert list(diagonal.x) == list(diagonal.y)


def test_break_even_axes_fit_their_own_points(mixed: BoundAnalysis, minilm: BoundAnalysis) -> None:
    """MiniLM's break-even scales span a tenth of a decade and its scales 25 decades: each axis fits its
    own points (one shared range crammed them into a column), and the corner notes say only what holds."""
    even = break_even(minilm)
    fig = figures.break_even_figure(minilm)
    x_low, x_high = fig.layout.xaxis.range
    y_low, y_high = fig.layout.yaxis.range
    assert x_low < even.log10_break_even.min() and even.log10_break_even.max() < x_high
    assert y_low < even.log10_scale.min() and even.log10_scale.max() < y_high
    spread = even.log10_break_even.max() - even.log10_break_even.min()
    assert x_high - x_low <= spread + 0.2 + 1e-12 < y_high - y_low  # the break-even axis is not 25 decades wide
    notes = [a.text for a in fig.layout.annotations]
    assert "above the line: p* = 0" in notes and ("below the line: some p > 0 wins" in notes) == (y_low < x_high)
    both = [a.text for a in figures.break_even_figure(mixed).layout.annotations]
    assert both == ["above the line: p* = 0", "below the line: some p > 0 wins"]


def test_compare_bars_show_both_models(mixed: BoundAnalysis) -> None:
    other = BoundAnalysis.from_profile(random_twin(SHAPE, model="tiny", initializer_range=0.02))
    result = compare(mixed, other, p=1.0)
    fig = figures.compare_bars(result, source="tiny · p = 1")
    model, baseline = fig.data
    assert model.name == mixed.profile.model and baseline.name == other.profile.model
    model_log10 = result.model.log10
    np.testing.assert_allclose(model.x, [model_log10[Proxy.OURS], result.model.log10_at, model_log10[Proxy.EDELMAN]])
    ratio = [result.log10_ratio[Proxy.OURS], result.log10_ratio_at, result.log10_ratio[Proxy.EDELMAN]]
    np.testing.assert_allclose(baseline.customdata, ratio)
    assert list(model.y) == ["ours at p*", "ours at the chosen p", "Edelman-style"]
    assert [model.marker.color, baseline.marker.color] == list(PALETTE[:2])
    assert fig.layout.title.subtitle.text == "tiny · p = 1"


@pytest.mark.parametrize(
    "build",
    [
        lambda a: figures.term_sums(a, a.optimal, source="S"),
        lambda a: figures.depth_factors(a, source="S"),
        lambda a: figures.contribution_curves(a, [0], a.optimal, source="S"),
        lambda a: figures.proxy_comparison({Proxy.OURS: a.optimal.log_total}, source="S"),
        lambda a: figures.p_star_heatmap(a, source="S"),
        lambda a: figures.p_star_histogram(a, source="S"),
        lambda a: figures.break_even_figure(a, source="S"),
    ],
)
def test_every_builder_carries_its_source(mixed: BoundAnalysis, build: Callable[[BoundAnalysis], go.Figure]) -> None:
    fig = build(mixed)
    assert fig.layout.title.subtitle.text == "S" and len(fig.layout.title.text) <= 40
    assert fig.layout.legend.orientation == "h"


def test_per_layer_charts_mark_an_encoder_decoder_s_stacks(mixed: BoundAnalysis) -> None:
    from specbound.core.architecture import ModelShape

    t5 = BoundAnalysis.from_profile(
        random_twin(ModelShape(5, 32, 4, 48, encoder_layers=2, family="t5", activation="relu"), model="t5")
    )
    for fig in (figures.depth_factors(t5), figures.term_sums(t5, t5.optimal)):
        (line,) = [s for s in fig.layout.shapes if s.line.dash == "dash"]
        assert line.x0 == line.x1 == 1.5  # between encoder layer 1 and the first decoder layer, 2
        notes = {a.text: a.x for a in fig.layout.annotations if a.text in ("encoder", "decoder")}
        assert notes == {"encoder": 0.5, "decoder": 3.0}  # over the middle of each stack
    plain = figures.depth_factors(mixed)
    assert not plain.layout.shapes and not any(a.text in ("encoder", "decoder") for a in plain.layout.annotations)
