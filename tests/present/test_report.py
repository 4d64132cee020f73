"""The table and JSON edge: every column is the analysis's own number, in profile order."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hand_profiles import HAND_NORM21, HAND_SHAPE, HAND_SPECTRA, make_profile

from specbound.core.bounds import BoundAnalysis
from specbound.present.report import analysis_json, layer_frame, singular_values_frame, terms_frame


@pytest.fixture
def hand() -> BoundAnalysis:
    return BoundAnalysis.from_profile(make_profile(HAND_SHAPE, HAND_SPECTRA, HAND_NORM21))


def test_terms_frame_holds_the_terms_at_p_and_at_p_opt(hand: BoundAnalysis) -> None:
    terms = hand.evaluate(0.5)
    frame = terms_frame(hand, terms)
    assert len(frame) == HAND_SHAPE.num_matrices == 12
    assert list(frame["kind"][:6]) == ["QK", "QK", "V", "V", "M_in", "M_out"]
    np.testing.assert_array_equal(frame["p"], 0.5)
    np.testing.assert_allclose(frame["contribution"], np.exp(terms.log_contribution), rtol=1e-15)
    np.testing.assert_allclose(frame["schatten_p"], [sum(s**0.5 for s in sv) for sv in HAND_SPECTRA], rtol=1e-14)
    np.testing.assert_array_equal(frame["p_opt"], hand.p_opt)
    np.testing.assert_allclose(frame["contribution_at_p_opt"], hand.evaluate().contribution, rtol=1e-15)
    np.testing.assert_allclose(frame["gamma"], [24, 48, 12, 12, 3, 1, 40, 20, 10, 10, 5, 1], rtol=1e-14)
    np.testing.assert_allclose(frame["log10_alpha"], np.repeat([math.log10(192.1), 0.0], 6), rtol=1e-14)
    np.testing.assert_allclose(frame["norm_21"], HAND_NORM21)


def test_layer_frame_sums_by_kind_and_layer(hand: BoundAnalysis) -> None:
    terms = hand.evaluate(1.0)
    frame = layer_frame(hand, terms)
    c = terms.contribution
    assert list(frame.columns) == [
        "layer",
        "log10_alpha",
        "sum_c_QK",
        "sum_c_V",
        "sum_c_M_in",
        "sum_c_M_out",
        "sum_c",
        "log10_xi",
    ]
    np.testing.assert_allclose(frame["sum_c_QK"], [c[0] + c[1], c[6] + c[7]], rtol=1e-15)
    np.testing.assert_allclose(frame["sum_c_M_out"], [c[5], c[11]], rtol=1e-15)
    np.testing.assert_allclose(frame["sum_c"], [c[:6].sum(), c[6:].sum()], rtol=1e-14)
    np.testing.assert_allclose(frame["log10_xi"], hand.log_xi / math.log(10), rtol=1e-14)


def test_singular_values_frame_lists_every_value_with_its_energy(hand: BoundAnalysis) -> None:
    frame = singular_values_frame(hand)
    profile = hand.profile
    assert len(frame) == int(profile.full_dims.sum())  # zeros included, k = min(rows, cols) per matrix
    first = frame[(frame["layer"] == 0) & (frame["kind"] == "M_in")]
    np.testing.assert_allclose(first["sigma"], [4.0, 2.0, 1.0, 1.0])
    np.testing.assert_allclose(first["cumulative_energy"], np.cumsum([16, 4, 1, 1]) / 22, rtol=1e-15)
    assert first["index"].tolist() == [1, 2, 3, 4]
    assert frame[frame["kind"] == "M_out"]["head"].isna().all()


def test_analysis_json_is_strict_json_with_log10_twins(hand: BoundAnalysis) -> None:
    data = json.loads(json.dumps(analysis_json(hand, 2.0), allow_nan=False))
    assert data["proxies"]["ours"] == pytest.approx(hand.evaluate().total, rel=1e-15)
    assert data["proxies"]["ours_log10"] == pytest.approx(hand.evaluate().log_total / math.log(10), rel=1e-15)
    assert data["proxies"]["at_p"] == pytest.approx(hand.evaluate(2.0).total, rel=1e-15)
    assert data["grid_m"] == hand.grid_m
    assert [m["p_opt"] for m in data["matrices"]] == hand.p_opt.tolist()
    second = data["matrices"][1]
    assert (second["layer"], second["head"], second["kind"], second["rank"]) == (0, 1, "QK", 1)


# --- centred at a reference: one naming scheme (issue 56) -------------------------------------------------


def test_a_centred_table_names_the_difference_delta_and_keeps_the_weights_own() -> None:
    """The shipped LoRA adapter centred at its base: the weights' rank and norms under their own names,
    every quantity of W - W⁰ or of c_ref under delta_*, each the centred analysis's own number."""
    import specbound
    from specbound.present.report import CENTRED_PREFIX

    result = specbound.analyze("finetune-lora")
    centred = result.centred
    assert centred is not None
    terms = centred.evaluate(0.5)
    frame = terms_frame(centred, terms, result.directions)
    assert not {"schatten_p", "contribution", "p_opt", "contribution_at_p_opt"} & set(frame.columns)
    np.testing.assert_array_equal(frame["rank"], result.profile.rank)  # the weights' rank
    np.testing.assert_array_equal(frame["delta_rank"], centred.schatten_profile.rank)  # the difference's
    assert (frame["rank"] > frame["delta_rank"]).any()  # a rank-4 update of a full-rank weight
    np.testing.assert_allclose(frame["spectral_norm"], result.profile.spectral_norm, rtol=0)
    np.testing.assert_allclose(frame["delta_spectral_norm"], centred.schatten_profile.spectral_norm, rtol=0)
    np.testing.assert_allclose(frame["delta_p_opt"], centred.p_opt, rtol=0)
    np.testing.assert_allclose(frame["delta_contribution"], centred.optimal.contribution, rtol=0)
    np.testing.assert_allclose(frame["delta_contribution_at_p"], terms.contribution, rtol=0)
    np.testing.assert_allclose(frame["delta_schatten_p"], terms.schatten, rtol=0)
    assert frame["p"].tolist() == [0.5] * len(frame)
    assert set(frame.columns) >= set(result.to_frame().filter(like=CENTRED_PREFIX).columns)
    layers = layer_frame(centred, terms)
    uncentred = layer_frame(result.bounds, result.bounds.evaluate(0.5))
    np.testing.assert_allclose(layers["delta_sum_c"], terms.per_layer(result.shape.num_layers), rtol=0)
    np.testing.assert_allclose(layers["log10_alpha"], uncentred["log10_alpha"], rtol=0)  # α of the weights
    assert [c for c in layers.columns if not c.startswith(CENTRED_PREFIX)] == ["layer", "log10_alpha"]
    assert not [c for c in uncentred.columns if c.startswith(CENTRED_PREFIX)]  # uncentred: unchanged


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("/data/runs/my-base", "my-base"),
        ("/data/runs/my-base/", "my-base"),
        ("./runs/my-base", "my-base"),
        ("~/models/base", "base"),
        ("a/b/c", "c"),
        ("google/gemma-2-2b", "google/gemma-2-2b"),
        ("finetune-base", "finetune-base"),
        ("models/my-base (in memory)", "models/my-base (in memory)"),
    ],
)
def test_the_centring_is_named_by_the_references_short_name(name: str, short: str) -> None:
    from specbound.io.models import short_model_name
    from specbound.present.report import centred_label

    assert short_model_name(name) == short
    assert centred_label(name) == f"centred at {short}"
