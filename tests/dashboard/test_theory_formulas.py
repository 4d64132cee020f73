"""The Theory page writes each family's own α and γ (SPEC §11-§12), not BERT's under every model.

Each formula is checked against the bound it stands for: the local factor written for a kind, with the
norms of a hand-built profile put in, equals the γ the analysis uses for that matrix.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hand_profiles import make_profile

from dashboard.services.theory import alpha_latex, gamma_latex
from specbound.core.architecture import Kind, Mlp, ModelShape, Residual
from specbound.core.bounds import BoundAnalysis
from specbound.core.profile import MatrixId

PLAIN = ModelShape(2, 8, 2, 12)
GATED_PARALLEL = ModelShape(2, 8, 2, 12, mlp=Mlp.GATED, residual=Residual.PARALLEL)
SEQ2SEQ = ModelShape(4, 8, 2, 12, encoder_layers=2)
MOE = ModelShape(2, 8, 2, 12, mlp=Mlp.GATED, num_experts=3, experts_per_token=2, shared_expert_size=12)


@pytest.mark.parametrize(
    ("shape", "present", "absent"),
    [
        (PLAIN, [r"\mathrm{QK}", r"\Phi^{(\ell)} &= \|M_{\mathrm{in}}\|_2\, \|M_{\mathrm{out}}\|_2"], ["A_x", "nu"]),
        (
            GATED_PARALLEL,
            [
                r"\bigl(L_\varphi\, \Phi^{(k)} + A^{(k)}\bigr)",
                r"2\,\|V^{(\ell,h)}\|_2 & \mathrm{QK}",
                r"1 & \mathrm{V}",
                r"M_{\mathrm{gate}}",
                r"\nu = 2",
            ],
            ["A_x"],
        ),
        (SEQ2SEQ, [r"A_x \Phi^{(\ell)} & \mathrm{V}", r"\mathrm{QK}_{\mathrm{x}}", r"A^{(k)} A_x^{(k)}"], ["nu"]),
        (MOE, [r"\max_e \nu_e", r"\nu_s", r"M_{\mathrm{gate}}^{e}"], ["A_x"]),
    ],
    ids=["bert", "parallel-gated", "encoder-decoder", "moe"],
)
def test_each_family_gets_its_own_cases(shape: ModelShape, present: list[str], absent: list[str]) -> None:
    text = gamma_latex(shape) + alpha_latex(shape)
    for fragment in present:
        assert fragment in text, fragment
    for fragment in absent:
        assert fragment not in text, fragment


def test_the_written_local_factors_are_the_ones_the_bound_uses() -> None:
    """With σ₁ of every matrix set by hand, the written cases give the analysis's γ (a wrong case fails)."""
    shape = SEQ2SEQ
    rng = np.random.default_rng(3)
    profile = make_profile(shape, [sorted(rng.uniform(0.2, 3.0, 2), reverse=True) for _ in range(shape.num_matrices)])
    analysis = BoundAnalysis.from_profile(profile)
    s = profile.spectral_norm
    layer = 3  # a decoder layer: self-attention, cross-attention, MLP
    keys: list[tuple[Kind] | tuple[Kind, int]] = [
        (Kind.QK, 0), (Kind.V, 0), (Kind.QK_X, 0), (Kind.V_X, 0), (Kind.M_IN,), (Kind.M_OUT,)
    ]  # fmt: skip
    norm = {key: s[profile.index(MatrixId(layer, key[0], key[1] if len(key) == 2 else None))] for key in keys}
    cross = sum(
        s[profile.index(MatrixId(layer, Kind.V_X, h))] * (1 + 4 * s[profile.index(MatrixId(layer, Kind.QK_X, h))])
        for h in range(shape.num_heads)
    )
    phi = norm[(Kind.M_IN,)] * norm[(Kind.M_OUT,)]
    written = {
        Kind.QK: 2 * norm[(Kind.V, 0)] * cross * phi,
        Kind.V: cross * phi,
        Kind.QK_X: 2 * norm[(Kind.V_X, 0)] * phi,
        Kind.V_X: phi,
        Kind.M_IN: norm[(Kind.M_OUT,)],
        Kind.M_OUT: 1.0,
    }
    for kind, value in written.items():
        head = 0 if kind.per_head else None
        assert math.exp(analysis.log_gamma[profile.index(MatrixId(layer, kind, head))]) == pytest.approx(
            value, rel=1e-12
        )
