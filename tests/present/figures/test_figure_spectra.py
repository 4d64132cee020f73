"""Spectra figures: heads aggregated by default (median and min-max band), each head on demand, rank maxima."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest
from hand_profiles import profile_from_spectra

from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.directions import Directions
from specbound.core.profile import SpectralProfile
from specbound.core.spectrum import cumulative_energy
from specbound.present.figures import spectra as figures
from specbound.present.figures.style import (
    MAX_LABELLED_HEADS,
    PALETTE,
    PANEL_TITLE_ROOM,
    TOP_MARGIN_SUBTITLE,
    log_axis_ticks,
)
from specbound.present.numbers import format_number
from specbound.studies.twin import random_twin

SHAPE = ModelShape(num_layers=2, hidden_size=32, num_heads=4, ffn_size=48)


@pytest.fixture(scope="module")
def profile() -> SpectralProfile:
    return random_twin(SHAPE, model="tiny")


def _named(fig: go.Figure) -> dict[str, Any]:
    return {t.name: t for t in fig.data}


def test_default_draws_median_and_band_per_layer_and_kind(profile: SpectralProfile) -> None:
    fig = figures.singular_value_profiles(profile)
    # per layer: QK and V 3 traces each (min, max, median), M_in and M_out 1 each, one legend stand-in
    assert len(fig.data) == SHAPE.num_layers * (3 + 3 + 1 + 1 + 1)
    traces = _named(fig)
    qk = profile.per_head(np.arange(SHAPE.num_matrices), Kind.QK)[1]  # rows of layer 1's QK heads
    sv = profile.singular_values[qk, :8]  # (4 heads, d = 8), all full rank
    np.testing.assert_allclose(traces["L1 QK median of 4 heads"].y, np.median(sv, axis=0), rtol=1e-15)
    np.testing.assert_allclose(traces["L1 QK median of 4 heads min"].y, sv.min(axis=0), rtol=1e-15)
    assert traces["L1 QK median of 4 heads max"].fill == "tonexty"
    m_in = profile.index(profile.ids[2 * SHAPE.matrices_per_layer - 2])
    np.testing.assert_allclose(traces["L1 M_in"].y, profile.singular_values[m_in, :32], rtol=1e-15)
    titles = [a.text for a in fig.layout.annotations]
    assert f"QK · {2 * 4 * (32 - 8):,} zero σ not drawn" in titles


def test_heads_on_demand_draw_each_chosen_head(profile: SpectralProfile) -> None:
    fig = figures.singular_value_profiles(profile, layers=[0], kinds=["QK", "M_out"], heads=[1, 3], normalise=True)
    lines = sorted(t.name for t in fig.data if t.name.startswith("L"))
    assert lines == ["L0 M_out", "L0 QK h1", "L0 QK h3"]
    assert all(t.y[0] == 1.0 for t in fig.data if t.name.startswith("L"))


def test_log_axes_carry_ticks_from_the_data_range(profile: SpectralProfile) -> None:
    fig = figures.singular_value_profiles(profile, kinds=["V"])
    drawn = np.concatenate([np.asarray(t.y, dtype=float) for t in fig.data if t.y is not None and t.y[0] is not None])
    assert list(fig.layout.yaxis.tickvals) == log_axis_ticks(drawn.min(), drawn.max())[0]
    assert list(fig.layout.xaxis.tickvals) == log_axis_ticks(1, 8)[0] == [2.0, 4.0, 6.0, 8.0]  # d = 8 < 10


def test_cumulative_energy_median_ends_at_one(profile: SpectralProfile) -> None:
    fig = figures.cumulative_energy_curves(profile, layers=[1], kinds=["V", "M_in"])
    traces = _named(fig)
    v = profile.per_head(np.arange(SHAPE.num_matrices), Kind.V)[1]
    energy = cumulative_energy(profile.singular_values[v, :8])
    np.testing.assert_allclose(traces["L1 V median of 4 heads"].y, np.median(energy, axis=0), rtol=1e-12)
    assert traces["L1 M_in"].y[-1] == pytest.approx(1.0)


def test_rank_against_maximum_fixes_the_colour_range(profile: SpectralProfile) -> None:
    fig = figures.rank_against_maximum(profile, Kind.QK, source="tiny")
    (heatmap,) = fig.data
    assert heatmap.zmin == 0 and heatmap.zmax == 8 and np.asarray(heatmap.z).shape == (2, 4)
    assert set(np.asarray(heatmap.text).ravel()) == {"8 of 8"} and heatmap.texttemplate == "%{text}"
    assert fig.layout.title.text == "QK: 8 of 8 matrices at maximum rank"
    (strip,) = figures.rank_against_maximum(profile, "M_out").data
    assert strip.zmax == 32 and list(np.asarray(strip.text).ravel()) == ["32 of 32"] * 2
    low = profile_from_spectra(ModelShape(1, 4, 1, 4), [[1.0], [1.0, 1.0], [1.0] * 3, [1.0] * 4])
    deficient = figures.rank_against_maximum(low, "QK")
    assert np.asarray(deficient.data[0].text).ravel().tolist() == ["1 of 4"]
    assert deficient.layout.title.text == "QK: 0 of 1 matrix at maximum rank"


def test_head_heatmaps_rank_colours_span_zero_to_d(profile: SpectralProfile) -> None:
    rank, _, norm = figures.head_heatmaps(profile, "V").data
    assert (rank.zmin, rank.zmax) == (0, 8) and norm.zmin is None
    np.testing.assert_array_equal(rank.z, profile.per_head(profile.rank, Kind.V))


def test_head_heatmaps_stay_readable_side_by_side(profile: SpectralProfile, minilm: BoundAnalysis) -> None:
    """Cell numbers up to MAX_LABELLED_HEADS heads (4 here), not for MiniLM's 12; layer ticks on panel 1 only."""
    few = figures.head_heatmaps(profile, "QK", source="tiny · p*")
    many = figures.head_heatmaps(minilm.profile, "QK", source="minilm-l6 · p*")
    assert profile.shape.num_heads <= MAX_LABELLED_HEADS < minilm.profile.shape.num_heads
    # cells written as the hover writes them (the project's number format), never by Plotly's "1e+03", and
    # through `text`: a heatmap's cell text has x, y, z and text only (with customdata a browser shows "-")
    assert {t.texttemplate for t in few.data} == {"%{text}"} and {t.texttemplate for t in many.data} == {None}
    assert few.data[2].text[0][0] == format_number(float(few.data[2].z[0][0]))
    assert all("%{text}" in t.hovertemplate for t in few.data)
    assert few.data[0].text[0][0] == str(int(few.data[0].z[0][0]))  # a rank is a whole number: "8", not "8.000"
    for fig in (few, many):
        assert [fig.layout[f"yaxis{s}"].showticklabels for s in ("", "2", "3")] == [True, False, False]
        assert fig.layout.margin.t == TOP_MARGIN_SUBTITLE + PANEL_TITLE_ROOM  # the subtitle clears the panel titles
    # the axes span exactly the cells (click targets laid over them must not widen them); 12 heads: every 2nd tick
    assert list(many.layout.xaxis.range) == [-0.5, 11.5] and many.layout.xaxis.dtick == 2
    assert list(many.layout.yaxis.range) == [-0.5, 5.5] and few.layout.xaxis3.dtick == 1


def test_overlaid_spectra_of_two_models(profile: SpectralProfile) -> None:
    other = random_twin(ModelShape(3, 32, 4, 48), model="other", initializer_range=0.05)
    fig = figures.overlaid_spectra(profile, other, "V", 1, source="tiny vs other")
    legend = [t for t in fig.data if t.showlegend]
    assert [t.name for t in legend] == [profile.model, other.model]
    assert [t.line.color for t in legend] == list(PALETTE[:2])
    assert fig.layout.yaxis.type == "log" and fig.layout.title.subtitle.text == "tiny vs other"
    m_in = figures.overlaid_spectra(profile, other, "M_in", 0)
    assert len(m_in.data) == 2
    with pytest.raises(ValueError, match="no layer 2"):
        figures.overlaid_spectra(other, profile, "V", 2)


def test_esd_figure_draws_the_eigenvalues_and_the_fitted_tail(profile: SpectralProfile) -> None:
    from specbound.core.heavy_tail import fit_power_law

    index = 0
    eigenvalues = np.square(profile.singular_values[index, profile.above_threshold[index]])
    fig = figures.esd_figure(profile, index, source="tiny")
    bars, *law = fig.data
    assert int(np.sum(bars.y)) == eigenvalues.size  # every counted eigenvalue in one bin
    fit = fit_power_law(eigenvalues)
    assert fit is not None and len(law) == 1
    # the line is the fit's expected count per bin: over the bins above x_min it sums to the tail's size
    # times the fitted probability of a value up to the largest eigenvalue, 1 - (λ_max / x_min)^(1 - α)
    edges = np.concatenate([np.asarray(bars.customdata)[:, 0], [np.asarray(bars.customdata)[-1, 1]]])
    above = edges[1:] > fit.xmin
    np.testing.assert_allclose(np.asarray(law[0].x), np.sqrt(edges[:-1] * edges[1:])[above])
    reach = 1.0 - (edges[-1] / fit.xmin) ** (1.0 - fit.alpha)
    assert float(np.sum(law[0].y)) == pytest.approx(fit.tail * reach, rel=1e-12)
    assert fig.layout.shapes[0].x0 == fit.xmin and f"α = {fit.alpha:.2f}" in fig.layout.title.text


def _directions(profile: SpectralProfile) -> Directions:
    """Directions with a distinct count per matrix (0..k, cycling) and a near tie on matrix 5."""
    from specbound.core.directions import DirectionSettings

    m = profile.shape.num_matrices
    intruders = np.arange(m) % 5
    return Directions(
        intruders=intruders,
        min_cosine=np.linspace(0.1, 0.9, m),
        overlap_left=np.full(m, 0.75),
        overlap_right=np.full(m, 0.5),
        chance_cosine=np.full(m, 0.25),
        near_tie=np.arange(m) == 5,
        top_k=np.full(m, 4),
        settings=DirectionSettings(k=4, eps=0.3),
    )


def test_intruder_maps_lay_out_the_counts_as_the_change_maps_do(profile: SpectralProfile) -> None:
    """SPEC §14b's per-head map: each head's count in its cell, the feed-forward matrices by layer, one
    colour range from 0 to k, the cosines and overlaps in the hover."""
    directions = _directions(profile)
    fig = figures.intruder_heatmaps(profile, directions)
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert [t.hovertemplate.split("<br>")[1].split(" =")[0] for t in heat] == [
        "intruders in QK's top k",
        "intruders in V's top k",
        "intruders in the top k",
    ]
    np.testing.assert_array_equal(heat[0].z, profile.per_head(directions.intruders, Kind.QK))
    np.testing.assert_array_equal(heat[1].z, profile.per_head(directions.intruders, Kind.V))
    mlp = np.stack([profile.per_layer(directions.intruders, kind) for kind in (Kind.M_IN, Kind.M_OUT)], axis=1)
    np.testing.assert_array_equal(heat[2].z, mlp)
    assert all(t.zmin == 0.0 and t.zmax == 4.0 for t in heat)
    assert fig.layout.title.text.startswith("Intruders: top 4, |cos| < 0.3")
    cells = [c for t in heat for row in np.asarray(t.customdata) for c in row]
    assert sum("near-tied" in c for c in cells) == 1
    first = profile.per_head(np.arange(profile.shape.num_matrices), Kind.QK)[0, 0]
    want = f"{directions.min_cosine[first]:.3f} (chance ≈ 0.25)"
    assert want in heat[0].customdata[0][0] and "left 0.750, right 0.500" in heat[0].customdata[0][0]


def test_change_maps_keep_their_values_and_hover(profile: SpectralProfile) -> None:
    """The map of sizes shares the intruder map's layout code: its values and words are unchanged."""
    delta = random_twin(SHAPE, model="delta", seed=3)
    fig = figures.change_heatmaps(profile, delta)
    heat = [t for t in fig.data if t.type == "heatmap"]
    ratio = delta.spectral_norm / profile.spectral_norm
    np.testing.assert_allclose(heat[0].z, profile.per_head(ratio, Kind.QK), rtol=1e-15)
    assert heat[0].hovertemplate == (
        "layer %{y}, head %{x}<br>‖ΔQK‖₂ / ‖QK⁰‖₂ = %{text}<br>rank of the difference %{customdata}<extra></extra>"
    )
    assert heat[2].hovertemplate == (
        "layer %{y}, %{x}<br>‖ΔW‖₂ / ‖W⁰‖₂ = %{text}<br>rank of the difference %{customdata}<extra></extra>"
    )
    assert heat[2].zmax == pytest.approx(float(ratio.max()), rel=1e-15)
