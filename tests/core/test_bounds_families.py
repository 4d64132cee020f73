"""The bound's terms for the adapted blocks of SPEC §11, against the formulas written out by hand.

Hand-built profiles with prescribed singular values: a gated MLP with grouped-query attention (the
Llama family), a parallel residual (GPT-NeoX), and the activation constants. Every expected value is
computed here from SPEC §11 with plain Python loops, independently of :mod:`specbound.core.bounds`.
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np
import pytest
from hand_profiles import make_profile

from specbound.core.architecture import Adaptation, Kind, Mlp, ModelShape, Residual
from specbound.core.bounds import BoundAnalysis, BoundSettings
from specbound.core.logspace import to_log10

L_PHI_SILU = 1.0998

# Two layers of two query heads sharing one key/value head (d = 2), N = 4, d_ff = 6, gated MLP.
# Order per layer: QK h0, QK h1, V h0, V h1, M_gate, M_in, M_out.
GATED = ModelShape(
    2, 4, 2, 6, num_kv_heads=1, mlp=Mlp.GATED, family="llama", activation="silu",
    adaptations=(Adaptation.CAUSAL, Adaptation.ROTARY, Adaptation.GROUPED_QUERY, Adaptation.GATED_MLP),
)  # fmt: skip
GATED_SPECTRA = [
    [2.0, 1.0], [3.0], [1.0, 0.5], [2.0], [1.5, 1.0, 0.2], [4.0, 2.0, 1.0], [3.0, 1.0, 0.5],
    [1.5], [0.5, 0.25], [2.0, 2.0], [1.0], [0.7, 0.7, 0.1], [2.0, 1.0], [5.0, 1.0, 1.0],
]  # fmt: skip
GATED_NORM21 = [0.5 * (i + 1) for i in range(14)]

# The same attention, a plain MLP and a parallel residual (GPT-NeoX with use_parallel_residual).
PARALLEL = ModelShape(2, 4, 2, 6, residual=Residual.PARALLEL, family="gpt_neox", adaptations=(Adaptation.CAUSAL,))
PARALLEL_SPECTRA = [s for i, s in enumerate(GATED_SPECTRA) if i % 7 != 4]  # drop both M_gate rows
PARALLEL_NORM21 = [0.5 * (i + 1) for i in range(12)]


def _layer_norms(spectra: list[list[float]], per_layer: int, layer: int) -> list[float]:
    return [max(s) for s in spectra[layer * per_layer : (layer + 1) * per_layer]]


class Expected(TypedDict):
    """α per layer, γ per matrix, ξ per layer and the Edelman-style total, written out by hand."""

    alpha: list[float]
    gamma: list[float]
    xi: list[float]
    edelman: float


def expected_gated(l_phi: float = L_PHI_SILU) -> Expected:
    """α, γ and the Edelman-style proxy of GATED from SPEC §11, written out."""
    norms = [_layer_norms(GATED_SPECTRA, 7, layer) for layer in range(2)]
    factors, gammas = [], []
    for qk0, qk1, v0, v1, gate, up, down in norms:
        nu = 2 * gate * up
        factors.append(l_phi * nu * down * (v0 * (1 + 4 * qk0) + v1 * (1 + 4 * qk1)))
        gammas += [2 * v0 * down * nu, 2 * v1 * down * nu, down * nu, down * nu, 2 * down * up, 2 * down * gate, 1.0]
    alpha = [factors[1], 1.0]
    xi = []
    for layer in range(2):
        terms = 0.0
        for j in range(7):
            gamma_e = gammas[7 * layer + j] / (2 if j < 2 else 1)  # γᴱ = γ / 2 for QK only
            terms += (gamma_e * GATED_NORM21[7 * layer + j]) ** (2 / 3)
        xi.append(terms)
    edelman = (1 + sum(a ** (2 / 3) * x for a, x in zip(alpha, xi, strict=True))) ** 1.5
    return Expected(alpha=alpha, gamma=gammas, xi=xi, edelman=edelman)


def test_a_gated_grouped_query_block_takes_nu_in_alpha_and_its_own_local_factors() -> None:
    profile = make_profile(GATED, GATED_SPECTRA, GATED_NORM21)
    analysis = BoundAnalysis.from_profile(profile)
    want = expected_gated()
    assert analysis.l_phi == L_PHI_SILU  # the activation's constant, not GELU's
    np.testing.assert_allclose(np.exp(analysis.log_alpha), want["alpha"], rtol=1e-13)
    np.testing.assert_allclose(analysis.gamma, want["gamma"], rtol=1e-13)
    np.testing.assert_allclose(np.exp(analysis.log_scale), np.array(want["gamma"]) * np.repeat(want["alpha"], 7) * 2)
    np.testing.assert_allclose(np.exp(analysis.log_xi), want["xi"], rtol=1e-13)
    assert analysis.edelman == pytest.approx(want["edelman"], rel=1e-13)


def test_the_totals_of_a_gated_model_at_the_closed_form_indices() -> None:
    profile = make_profile(GATED, GATED_SPECTRA, GATED_NORM21)
    analysis = BoundAnalysis.from_profile(profile)
    n, scales = 4, np.exp(analysis.log_scale)
    ranks = [len(s) for s in GATED_SPECTRA]
    at_0 = sum(math.sqrt(r * n) for r in ranks) + math.sqrt(2)
    at_1 = sum((sum(s) * w) ** (1 / 3) * n ** (2 / 3) for s, w in zip(GATED_SPECTRA, scales, strict=True))
    assert analysis.evaluate(0.0).total == pytest.approx(at_0, rel=1e-13)
    assert analysis.evaluate(1.0).total == pytest.approx(at_1 + math.sqrt(2), rel=1e-13)
    assert len(analysis.p_opt) == 2 * (2 * 2 + 3)
    assert list(analysis.optimal.log_per_kind()) == [Kind.QK, Kind.V, Kind.M_GATE, Kind.M_IN, Kind.M_OUT]


def test_an_explicit_l_phi_overrides_the_activation_constant() -> None:
    profile = make_profile(GATED, GATED_SPECTRA, GATED_NORM21)
    analysis = BoundAnalysis.from_profile(profile, BoundSettings(l_phi=1.13))
    np.testing.assert_allclose(np.exp(analysis.log_alpha), expected_gated(1.13)["alpha"], rtol=1e-13)


def test_a_parallel_residual_adds_its_branches_and_its_attention_skips_the_mlp() -> None:
    profile = make_profile(PARALLEL, PARALLEL_SPECTRA, PARALLEL_NORM21)
    analysis = BoundAnalysis.from_profile(profile)
    norms = [_layer_norms(PARALLEL_SPECTRA, 6, layer) for layer in range(2)]
    factors, gammas = [], []
    for qk0, qk1, v0, v1, up, down in norms:
        attention = v0 * (1 + 4 * qk0) + v1 * (1 + 4 * qk1)
        factors.append(1.13 * up * down + attention)  # a sum, not the product of the sequential block
        gammas += [2 * v0, 2 * v1, 1.0, 1.0, down, 1.0]
    np.testing.assert_allclose(np.exp(analysis.log_alpha), [factors[1], 1.0], rtol=1e-13)
    np.testing.assert_allclose(analysis.gamma, gammas, rtol=1e-13)
    xi = [
        sum((gammas[6 * layer + j] / (2 if j < 2 else 1) * PARALLEL_NORM21[6 * layer + j]) ** (2 / 3) for j in range(6))
        for layer in range(2)
    ]
    np.testing.assert_allclose(np.exp(analysis.log_xi), xi, rtol=1e-13)
    edelman = (1 + factors[1] ** (2 / 3) * xi[0] + xi[1]) ** 1.5
    assert analysis.edelman == pytest.approx(edelman, rel=1e-13)


def test_the_same_norms_sequentially_give_the_product_of_the_branches() -> None:
    sequential = ModelShape(2, 4, 2, 6)
    analysis = BoundAnalysis.from_profile(make_profile(sequential, PARALLEL_SPECTRA, PARALLEL_NORM21))
    qk0, qk1, v0, v1, up, down = _layer_norms(PARALLEL_SPECTRA, 6, 1)
    product = 1.13 * up * down * (v0 * (1 + 4 * qk0) + v1 * (1 + 4 * qk1))
    assert math.exp(analysis.log_alpha[0]) == pytest.approx(product, rel=1e-13)
    assert float(to_log10(analysis.log_alpha[1])) == 0.0


@pytest.mark.parametrize(
    ("activation", "l_phi"),
    [("gelu", 1.13), ("gelu_new", 1.13), ("relu", 1.0), ("silu", 1.0998), ("quick_gelu", 1.0998)],
)
def test_each_activation_brings_its_lipschitz_constant(activation: str, l_phi: float) -> None:
    shape = ModelShape(2, 4, 2, 6, activation=activation)
    analysis = BoundAnalysis.from_profile(make_profile(shape, PARALLEL_SPECTRA, PARALLEL_NORM21))
    assert analysis.l_phi == l_phi
    qk0, qk1, v0, v1, up, down = _layer_norms(PARALLEL_SPECTRA, 6, 1)
    assert math.exp(analysis.log_alpha[0]) == pytest.approx(
        l_phi * up * down * (v0 * (1 + 4 * qk0) + v1 * (1 + 4 * qk1)), rel=1e-13
    )


def test_an_unknown_activation_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="tanh"):
        ModelShape(2, 4, 2, 6, activation="tanh")
