"""The Spectra page's view: one panel per chosen kind, the head heatmaps of one head kind (clickable),
the matrix table, and a report made of the same objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from tiny_models import tiny_model

from dashboard.views.spectra import P_TEXT, TITLE, SpectraView, spectra_view
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis
from specbound.io.loading import profile_in_memory


def view_of(
    analysis: BoundAnalysis,
    layers: Sequence[int] = (0, 5),
    kinds: Sequence[str] = ("QK", "M_in"),
    head_kind: Kind = Kind.QK,
    **choice: Any,
) -> SpectraView:
    options: dict[str, Any] = {"heads": [], "experts": None, "normalise": False} | choice
    return spectra_view(
        analysis,
        model="minilm",
        layers=list(layers),
        kinds=list(kinds),
        head_kind=head_kind,
        source="minilm · spectra",
        **options,
    )


def test_one_panel_per_chosen_kind(minilm: BoundAnalysis) -> None:
    view = view_of(minilm)
    assert len(view.profiles) == 2 and len(view.energy) == 2
    assert "QK" in view.profiles[0].layout.title.text and "M_in" in view.profiles[1].layout.title.text
    normalised = view_of(minilm, normalise=True).profiles[0]
    drawn = [y for trace in normalised.data if trace.y is not None for y in trace.y if y is not None]
    assert max(drawn) == 1.0  # σ_i / σ₁: the top singular value reads 1


def test_nothing_chosen_draws_no_profile(minilm: BoundAnalysis) -> None:
    view = view_of(minilm, layers=())
    assert view.profiles == () and view.energy == ()
    assert view.report()[0].figures == []


def test_the_heatmaps_are_three_clickable_panels_of_the_chosen_kind(minilm: BoundAnalysis) -> None:
    view = view_of(minilm, head_kind=Kind.V)
    assert len(view.heatmaps) == 3 and view.heatmaps_per_row is None
    for panel in view.heatmaps:
        (heatmap,) = [trace for trace in panel.data if trace.type == "heatmap"]
        (cells,) = [trace for trace in panel.data if trace.type == "scatter"]
        assert len(heatmap.z) == 6 and len(heatmap.z[0]) == 12  # layers × heads
        assert len(cells.x) == 6 * 12  # a marker on every layer × head cell
    assert "V heads" in view.heatmaps[0].layout.title.text


def test_an_encoder_decoder_shows_its_two_stacks_side_by_side() -> None:
    model = tiny_model("t5", layers=2, hidden=32, heads=4, ffn=48)
    profile = profile_in_memory(model.config.to_dict(), model.state_dict(), name="tiny-t5")
    analysis = BoundAnalysis.from_profile(profile)
    assert len(view_of(analysis, layers=(0,), kinds=("QK",)).heatmaps) == 2  # the encoder's, the decoder's
    assert view_of(analysis, layers=(0,), kinds=("QK",)).heatmaps_per_row == 2
    assert len(view_of(analysis, layers=(0,), kinds=("QK",), head_kind=Kind.QK_X).heatmaps) == 1  # decoder only


def test_the_report_is_the_view(minilm: BoundAnalysis) -> None:
    view = view_of(minilm)
    sections = view.report()
    assert [s.heading for s in sections] == ["Singular values", "QK heads", "Every matrix"]
    assert [id(f) for f in sections[0].figures] == [id(f) for f in (*view.profiles, *view.energy)]
    assert [id(f) for f in sections[1].figures] == [id(f) for f in view.heatmaps]
    (table,) = sections[2].tables
    assert table is view.table
    pd.testing.assert_frame_equal(view.table, minilm.profile.to_frame())
    assert view.heading.title == TITLE and view.heading.p_text == P_TEXT == "independent of p"


def test_chosen_heads_are_drawn_one_by_one(minilm: BoundAnalysis) -> None:
    banded = view_of(minilm, layers=(0,), kinds=("QK",)).profiles[0]
    heads = view_of(minilm, layers=(0,), kinds=("QK",), heads=[0, 3]).profiles[0]
    named = [trace.name for trace in heads.data if trace.name]
    assert "L0 QK h0" in named and "L0 QK h3" in named, named
    assert not any("L0 QK h" in (trace.name or "") for trace in banded.data)  # the median and its band only


def test_a_mixture_of_experts_draws_the_chosen_experts_mlp() -> None:
    model = tiny_model(
        "qwen2_moe",
        layers=1,
        hidden=32,
        heads=4,
        ffn=48,
        num_key_value_heads=2,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=24,
    )
    profile = profile_in_memory(model.config.to_dict(), model.state_dict(), name="tiny-moe")
    analysis = BoundAnalysis.from_profile(profile)
    one, other = (view_of(analysis, layers=(0,), kinds=("M_in",), experts=[e]).profiles[0] for e in (0, 1))
    ys = [[y for t in fig.data if t.y is not None for y in t.y if y is not None] for fig in (one, other)]
    assert ys[0] and ys[1] and ys[0] != ys[1]  # each expert's own singular values


def test_every_figure_carries_the_source(minilm: BoundAnalysis) -> None:
    view = view_of(minilm)
    for figure in (*view.profiles, *view.energy, *view.heatmaps):
        assert "minilm · spectra" in (figure.layout.title.subtitle.text or ""), figure.layout.title.text
