"""The Compare page's view: the model against its baseline at p*, the per-kind and per-layer sums, the
overlaid spectra and the centred reading, and a report made of the same objects."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dashboard.views.compare import (
    BASELINE_LABEL,
    CENTRED_LABEL,
    CHANGE_LABEL,
    MODEL_LABEL,
    TITLE,
    WHY_AGREE,
    CompareView,
    compare_view,
    overlay_kinds,
    overlay_layers,
    why_totals_agree,
)
from dashboard.wording.numbers import format_change, ratio_sentence
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis
from specbound.core.directions import Directions
from specbound.present.numbers import format_log

SOURCE = "a against b · p*"


def view_of(
    model: BoundAnalysis,
    base: BoundAnalysis,
    centred: BoundAnalysis | str = "no weights",
    directions: Directions | str | None = None,
    **choice: Any,
) -> CompareView:
    options: dict[str, Any] = {"overlay_kind": "M_in", "overlay_layer": 0} | choice
    found = None if directions is None else (lambda: directions)
    return compare_view(
        model, base, name="model", base_name="base", centred=lambda: centred, source=SOURCE, directions=found, **options
    )


def test_the_totals_and_the_tables_are_model_against_baseline(minilm: BoundAnalysis, twin: BoundAnalysis) -> None:
    view = view_of(minilm, twin)
    ours, theirs = minilm.optimal.log_total, twin.optimal.log_total
    assert view.totals == [
        (MODEL_LABEL, format_log(ours)),
        (BASELINE_LABEL, format_log(theirs)),
        (CHANGE_LABEL, format_change(ours, theirs)),
    ]
    kinds = view.kinds
    assert list(kinds["kind"]) == ["QK", "V", "M_in", "M_out"]
    np.testing.assert_allclose(kinds["difference"], kinds["model"] - kinds["baseline"], rtol=1e-12, atol=1e-9)
    model_sums = minilm.optimal.log_per_kind()
    np.testing.assert_allclose(kinds["model"], [math.exp(model_sums[k]) for k in minilm.profile.model_kinds])
    assert view.layers is not None and len(view.layers) == 6
    np.testing.assert_allclose(view.layers["model"], minilm.optimal.per_layer(6), rtol=1e-12)
    np.testing.assert_allclose(view.layers["baseline"], twin.optimal.per_layer(6), rtol=1e-12)


def test_a_twin_at_rank_counting_p_star_says_why_the_totals_agree(minilm: BoundAnalysis, twin: BoundAnalysis) -> None:
    """MiniLM and its twin: every matrix at p* = 0 and full rank, so the totals at p* are equal."""
    assert minilm.optimal.log_total == pytest.approx(twin.optimal.log_total, rel=1e-12)
    view = view_of(minilm, twin)
    assert view.why == why_totals_agree(minilm, twin, "base")
    assert view.why is not None and view.why.startswith(f"**{WHY_AGREE}**") and "156 matrices" in view.why


def test_models_that_differ_say_nothing_about_agreeing(
    finetune_full: BoundAnalysis, finetune_base: BoundAnalysis
) -> None:
    assert view_of(finetune_full, finetune_base).why is None


def test_different_depths_have_no_per_layer_table(minilm: BoundAnalysis, finetune_base: BoundAnalysis) -> None:
    view = view_of(finetune_base, minilm)
    assert view.layers is None and overlay_layers(finetune_base, minilm) == [0, 1]
    (_, per_kind, _) = view.report()
    assert len(per_kind.tables) == 1 and list(per_kind.table_captions) == ["Σ c(W; p*) per kind"]


def test_the_overlay_draws_the_chosen_kind_and_layer(minilm: BoundAnalysis, twin: BoundAnalysis) -> None:
    assert overlay_kinds(minilm, twin) == ["QK", "V", "M_in", "M_out"]
    view = view_of(minilm, twin, overlay_kind="V", overlay_layer=3)
    assert "V" in view.overlay.layout.title.text and "3" in view.overlay.layout.title.text


def test_the_centred_reading_counts_the_changed_matrices(
    finetune_full: BoundAnalysis, finetune_base: BoundAnalysis, centred_full: BoundAnalysis
) -> None:
    view = view_of(finetune_full, finetune_base, centred_full)
    centred = view.centred
    assert not isinstance(centred, str)
    changed = int((centred_full.schatten_profile.rank > 0).sum())
    assert 0 < changed <= 12
    assert centred.totals == [
        (f"{CENTRED_LABEL} centred at base", format_log(centred_full.optimal.log_total)),
        (MODEL_LABEL, format_log(finetune_full.optimal.log_total)),
        ("Matrices changed", f"{changed} of 12"),
    ]
    cells = [trace for trace in centred.changes.data if trace.type == "scatter" and trace.name.endswith("cells")]
    assert cells and len(cells) == sum(trace.type == "heatmap" for trace in centred.changes.data)  # clickable


def test_the_report_is_the_view(
    finetune_full: BoundAnalysis, finetune_base: BoundAnalysis, centred_full: BoundAnalysis
) -> None:
    view = view_of(finetune_full, finetune_base, centred_full)
    sections = view.report()
    assert [s.heading for s in sections] == [
        "Totals",
        "Per kind and per layer",
        "Spectra overlaid",
        "What changed: size and direction, centred at base",
    ]
    assert not isinstance(view.centred, str)
    figures = [fig for s in sections for fig in s.figures]
    assert [id(f) for f in figures] == [id(view.bars), id(view.overlay), id(view.centred.changes)]
    assert [id(t) for t in sections[1].tables] == [id(view.kinds), id(view.layers)]
    assert sections[0].totals == view.totals and sections[-1].note == "Reference W⁰: base"
    assert view.heading.title == TITLE and view.heading.model == "model" and view.heading.p_text == "p*"
    assert len(view_of(finetune_full, finetune_base, "no weights").report()) == 3  # no centred reading


def test_the_sentences_compare_the_two_models_in_words(
    finetune_full: BoundAnalysis, finetune_base: BoundAnalysis, centred_full: BoundAnalysis
) -> None:
    view = view_of(finetune_full, finetune_base, centred_full)
    ours, theirs = view.comparison.model, view.comparison.baseline
    assert view.sentence == (
        ratio_sentence("Ours at p* for model", ours.log_ours_opt, "its baseline's", theirs.log_ours_opt)
        + " "
        + ratio_sentence("Its Edelman-style proxy", ours.log_edelman, "the baseline's", theirs.log_edelman)
    )
    assert not isinstance(view.centred, str)
    assert view.centred.sentence.startswith("Centred at base: each c(W; p) takes S_p")  # no SPEC in its words
    assert view.centred.sentence.endswith(
        ratio_sentence(
            "Centred", centred_full.optimal.log_total, "the uncentred total", finetune_full.optimal.log_total
        )
    )
    for figure in (view.bars, view.overlay):
        assert figure.layout.title.subtitle.text == SOURCE
    # so its PNG says it; the models' names are in the page's other charts (beside the intruder map at half
    # width, a longer subtitle would not fit at 1024 px)
    assert view.centred.changes.layout.title.subtitle.text == "centred at base"


def test_the_centred_reading_is_taken_when_first_read_and_once(
    finetune_full: BoundAnalysis, finetune_base: BoundAnalysis, centred_full: BoundAnalysis
) -> None:
    """Taking it opens both checkpoints: the page draws everything above it first, and reads it once."""
    calls = []

    def reading() -> BoundAnalysis:
        calls.append(1)
        return centred_full

    view = compare_view(
        finetune_full,
        finetune_base,
        name="model",
        base_name="base",
        overlay_kind="M_in",
        overlay_layer=0,
        centred=reading,
        source=SOURCE,
    )
    assert calls == []  # the totals, tables and overlay need no centred reading
    first = view.centred
    assert view.centred is first and len(view.report()) == 4 and calls == [1]


def test_the_centred_reading_maps_the_intruders_beside_the_changes(
    finetune_full: BoundAnalysis, finetune_base: BoundAnalysis, centred_full: BoundAnalysis, directions_full: Directions
) -> None:
    """SPEC §14b on the page: the per-head intruder map beside the map of sizes, in the report too."""
    view = view_of(finetune_full, finetune_base, centred_full, directions_full)
    centred = view.centred
    assert not isinstance(centred, str) and not isinstance(centred.intruders, str)
    heat = [t for t in centred.intruders.data if t.type == "heatmap"]
    qk = finetune_base.profile.per_head(directions_full.intruders, Kind.QK)
    np.testing.assert_array_equal(heat[0].z, qk)
    total, with_any = int(directions_full.intruders.sum()), int((directions_full.intruders > 0).sum())
    assert total > 0
    assert f"{total} in {with_any} of 12 matrices" in centred.direction_sentence
    assert "top k = 10" in centred.direction_sentence and "ε = 0.5" in centred.direction_sentence
    section = view.report()[-1]
    assert [id(f) for f in section.figures] == [id(centred.changes), id(centred.intruders)]
    assert section.note.startswith("Reference W⁰: base. Intruder dimensions (Shuttleworth et al. 2025")
    cells = [trace for trace in centred.intruders.data if trace.type == "scatter" and trace.name.endswith("cells")]
    assert len(cells) == len(heat)  # clickable as the map of sizes is
    unknown = view_of(finetune_full, finetune_base, centred_full, "the weights could not be read").centred
    assert not isinstance(unknown, str) and unknown.intruders == "the weights could not be read"
    assert [id(f) for f in unknown.section("base").figures] == [id(unknown.changes)]
