"""Profiles and matrices with prescribed singular values, for the tests of the spectra, the bound terms,
their tables and the closed forms behind the explanations; the rank SPEC §3 counts."""

from __future__ import annotations

import numpy as np

from specbound.core.architecture import ModelShape
from specbound.core.profile import SpectralProfile, full_dims_of, matrix_ids
from specbound.core.spectrum import rank_threshold


def make_profile(
    shape: ModelShape,
    spectra: list[list[float]],
    norm_21: list[float] | None = None,
    full_dims: list[int] | None = None,
) -> SpectralProfile:
    """A profile with prescribed singular values, listed in profile order."""
    width = max(len(s) for s in spectra)
    sv = np.zeros((len(spectra), width))
    for i, s in enumerate(spectra):
        sv[i, : len(s)] = sorted(s, reverse=True)
    m = len(spectra)
    dims = full_dims or full_dims_of(shape).tolist()
    return SpectralProfile(
        model="hand",
        revision="0",
        shape=shape,
        singular_values=sv,
        full_dims=np.array(dims),
        norm_21=np.array(norm_21 or [1.0] * m),
        norm_11=np.ones(m),
    )


# Two layers, two heads of size 2, N = 4, d_ff = 6. Order per layer: QK h0, QK h1, V h0, V h1, M_in, M_out.
HAND_SHAPE = ModelShape(num_layers=2, hidden_size=4, num_heads=2, ffn_size=6)
HAND_SPECTRA = [
    [2.0, 1.0],
    [3.0],
    [1.0, 0.5],
    [2.0],
    [4.0, 2.0, 1.0, 1.0],
    [3.0, 1.0, 1.0, 0.5],
    [1.5],
    [0.5, 0.25],
    [2.0, 2.0],
    [1.0],
    [2.0, 1.0],
    [5.0, 1.0, 1.0, 1.0],
]
HAND_NORM21 = [1.5 * (i + 1) for i in range(12)]


#: One layer, one head of d = N = 4, d_ff = 4: four matrices QK, V, M_in, M_out, alpha = 1, L = 1.
ONE_LAYER = ModelShape(num_layers=1, hidden_size=4, num_heads=1, ffn_size=4)


def profile_from_spectra(shape: ModelShape, spectra: list[list[float]], model: str = "hand") -> SpectralProfile:
    """A profile whose matrices (profile order) have the listed singular values (zeros elsewhere)."""
    width = max(max(len(s) for s in spectra), 1)
    sv = np.zeros((len(spectra), width))
    for i, s in enumerate(spectra):
        sv[i, : len(s)] = sorted(s, reverse=True)
    dims = [shape.hidden_size if i.kind.per_head else min(shape.hidden_size, shape.ffn_size) for i in matrix_ids(shape)]
    m = len(spectra)
    return SpectralProfile(
        model=model,
        revision="0",
        shape=shape,
        singular_values=sv,
        full_dims=np.array(dims),
        norm_21=np.ones(m),
        norm_11=np.ones(m),
    )


def flat_one_layer(
    qk: float, v: float, m_in: float, m_out: float, rank: int = 4, model: str = "hand"
) -> SpectralProfile:
    """:data:`ONE_LAYER` with flat spectra: every matrix has ``rank`` singular values equal to its value.

    Then s_W = 2 v m_out m_in (QK), m_out m_in (V), m_out (M_in), 1 (M_out), and S_p = rank sigma^p.
    """
    return profile_from_spectra(ONE_LAYER, [[sigma] * rank for sigma in (qk, v, m_in, m_out)], model)


def numerical_rank(sv: np.ndarray, k: int) -> int:
    """SPEC §3's rank: #{i : sigma_i > tau k max(sigma_1, 1)}, through the package's threshold."""
    return int(np.count_nonzero(sv > rank_threshold(sv.max(initial=0.0), k)))


def with_singular_values(sigma: np.ndarray, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """A rows x cols matrix U diag(sigma) V^T with random orthonormal U, V."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((rows, len(sigma))))
    v, _ = np.linalg.qr(rng.standard_normal((cols, len(sigma))))
    matrix: np.ndarray = (u * sigma) @ v.T
    return matrix
