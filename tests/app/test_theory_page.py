"""The Theory page shows the live values of the current model, its playground reacts to its widgets,
and a link's query parameters restore the model and the p settings."""

from __future__ import annotations

import numpy as np
import pytest
from app_harness import APP, TIMEOUT_S, run_clean
from streamlit.testing.v1 import AppTest

from dashboard.services import theory as live
from dashboard.state.atlas import model_name
from dashboard.widgets.controls import OWN
from dashboard.wording.numbers import format_against
from dashboard.wording.text import TOTAL_LABEL
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis, PAssignment
from specbound.present.numbers import format_log

MODEL = "L2-H32"


@pytest.fixture
def reference(family) -> BoundAnalysis:
    _, profiles = family
    (profile,) = [p for p in profiles if p.model == MODEL]
    return BoundAnalysis.from_profile(profile)


def _linked_app(family, **params: str) -> AppTest:
    """The dashboard opened from a link naming the atlas on the server, the model and ``params``."""
    path, _ = family
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"model": model_name(path, MODEL), **params})
    return run_clean(at)


def _metric(at, label: str) -> str:
    (value,) = [m.value for m in at.metric if m.label == label]
    return value


def test_theory_page_shows_the_live_values(family, reference) -> None:
    at = _linked_app(family)
    at.switch_page("pages/theory.py")
    run_clean(at)
    assert [t.value for t in at.title] == ["Theory"]
    assert not at.error
    assert len(at.get("latex")) >= 9
    labels = [m.label for m in reference.profile.ids]
    assert labels[at.selectbox(key="theory_matrix").value] == "L1 M_in"
    values = live.readout(reference, labels.index("L1 M_in"), 1.0)
    assert _metric(at, live.RANK_LABEL) == str(int(reference.profile.rank[labels.index("L1 M_in")])) == "32"
    assert _metric(at, live.SCHATTEN_LABEL) == format_log(values.log_schatten)
    assert _metric(at, live.ALPHA_LABEL) == "1.000"  # the top layer
    assert _metric(at, live.GRID_LABEL) == str(reference.grid_m) == "6"  # ceil(2 + ln 32)
    assert _metric(at, live.OURS_LABEL) == format_log(reference.evaluate().log_total)
    assert _metric(at, live.EDELMAN_LABEL) == format_log(reference.log_edelman)

    at.selectbox(key="theory_matrix").set_value(labels.index("L0 QK h1"))
    at.slider(key="theory_p").set_value(0.5)
    run_clean(at)
    index = labels.index("L0 QK h1")
    terms = reference.evaluate(0.5)
    assert _metric(at, live.RANK_LABEL) == "16"  # head dimension d = 32 / 2
    assert _metric(at, live.SCHATTEN_LABEL) == format_log(terms.log_schatten[index])
    assert _metric(at, live.CONTRIBUTION_LABEL) == format_log(terms.log_contribution[index])
    assert _metric(at, live.ALPHA_LABEL) == format_log(reference.log_alpha[0])
    assert _metric(at, live.SCALE_LABEL) == format_log(reference.log_scale[index])
    assert _metric(at, live.P_OPT_LABEL) == f"{reference.p_opt[index]:.3f}"
    assert _metric(at, live.OURS_AT_P_LABEL) == format_log(terms.log_total)


def test_closed_forms_agree_with_the_contribution(reference) -> None:
    for index in range(len(reference.p_opt)):
        values = live.readout(reference, index, 1.0)
        for p, log_closed in values.log_closed_form.items():
            np.testing.assert_allclose(log_closed, reference.evaluate(p).log_contribution[index], rtol=1e-9)


def test_playground_reacts_to_the_scale(family) -> None:
    at = _linked_app(family)
    at.switch_page("pages/theory.py")
    run_clean(at)
    assert any("Synthetic, not from any model" in i.value for i in at.info)
    assert 0 < float(_metric(at, "p* of the synthetic matrix")) < 2  # it opens where p moves, not on a flat spectrum
    at.select_slider(key="play_scale").set_value(1e6)
    run_clean(at)
    large = _metric(at, "p* of the synthetic matrix")
    at.select_slider(key="play_scale").set_value(1e-6)
    run_clean(at)
    small = _metric(at, "p* of the synthetic matrix")
    assert (large, small) == ("0.000", "2.000")
    at.selectbox(key="play_decay").set_value("exponential")
    at.slider(key="play_rank").set_value(8)
    run_clean(at)
    assert any("Numerical rank 8" in c.value for c in at.caption)


def test_a_link_restores_model_and_p_settings(family, reference) -> None:
    at = _linked_app(
        family,
        p_optimal="0",
        p_global="0.5",
        p_snap="0",
        p_kinds="1",
        p_kind_V_mode="own",
        p_kind_V="0.25",
        p_layers="1",
        p_layer_1_mode="optimal",
    )
    at.switch_page("pages/bounds.py")
    run_clean(at)
    assert not at.error
    assert at.session_state["model"] == model_name(family[0], MODEL)
    # the sidebar shows where the model came from: the atlas source, with the model picked
    assert at.radio(key="model_source").value == "Atlas file"
    assert at.selectbox(key="atlas_model").value == MODEL
    assert at.slider(key="p_global").value == 0.5
    assert at.toggle(key="p_snap").value is False
    assert at.selectbox(key="p_kind_V_mode").value == OWN
    assert at.slider(key="p_kind_V").value == 0.25
    expected = reference.evaluate(PAssignment(default=0.5, by_kind={Kind.V: 0.25}, by_layer={1: None}))
    assert _metric(at, TOTAL_LABEL) == format_against(expected.log_total, reference.optimal.log_total)
    # the address bar keeps the view: the model (with its atlas file) and every non-default setting
    assert at.query_params["model"] == model_name(family[0], MODEL)
    assert at.query_params["p_global"] == "0.5" and at.query_params["p_snap"] == "0"
    assert at.query_params["p_kind_V_mode"] == "own" and at.query_params["p_layer_1_mode"] == "optimal"
    assert at.query_params["p_optimal"] == "0"
    assert "p_kind_QK_mode" not in at.query_params and "sums_view" not in at.query_params  # defaults stay out


def test_a_link_to_a_model_that_cannot_open_keeps_the_app_usable(family) -> None:
    at = _linked_app(family, model=model_name(family[0], "L9-H999"), p_global="not a number")
    assert any("cannot be opened" in e.value for e in at.error)
    assert at.session_state.get("model", "minilm-l6") == "minilm-l6"  # still the bundled default
    assert not at.exception


def test_the_adapted_factors_shown_are_the_ones_the_bound_uses() -> None:
    """The Theory page's Φ and A_x, put into the formulas it prints for an encoder-decoder and a mixture of
    experts, give the package's own γ of every matrix they name (SPEC §12)."""
    import math

    from specbound.core.architecture import ModelShape
    from specbound.core.profile import MatrixId
    from specbound.studies.twin import random_twin

    t5 = BoundAnalysis.from_profile(
        random_twin(ModelShape(5, 32, 4, 48, encoder_layers=2, family="t5", activation="relu"), model="t5")
    )
    profile = t5.profile

    def gamma(kind: Kind, layer: int, head: int | None = None) -> float:
        return float(np.exp(t5.log_gamma[profile.index(MatrixId(layer, kind, head))]))

    def norm(kind: Kind, layer: int, head: int) -> float:
        return float(profile.spectral_norm[profile.index(MatrixId(layer, kind, head))])

    assert math.isnan(live.cross_factor(profile, 1))  # an encoder layer has no cross-attention
    for layer in (2, 4):  # decoder layers
        cross, phi = live.cross_factor(profile, layer), live.mlp_factor(profile, layer)
        for head in (0, 3):
            assert gamma(Kind.QK, layer, head) == pytest.approx(2 * norm(Kind.V, layer, head) * cross * phi, rel=1e-9)
            assert gamma(Kind.V, layer, head) == pytest.approx(cross * phi, rel=1e-9)
            assert gamma(Kind.QK_X, layer, head) == pytest.approx(2 * norm(Kind.V_X, layer, head) * phi, rel=1e-9)
            assert gamma(Kind.V_X, layer, head) == pytest.approx(phi, rel=1e-9)

    moe_shape = ModelShape(2, 32, 4, 48, num_kv_heads=2, mlp="gated", family="mixtral", activation="silu",
                           num_experts=4, experts_per_token=2)  # fmt: skip
    moe = BoundAnalysis.from_profile(random_twin(moe_shape, model="moe"))
    for layer in (0, 1):
        phi = live.mlp_factor(moe.profile, layer)  # the largest expert's ν_e ‖M_out^e‖₂
        v = moe.profile.index(MatrixId(layer, Kind.V, 2))
        assert float(np.exp(moe.log_gamma[v])) == pytest.approx(phi, rel=1e-9)
