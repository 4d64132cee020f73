"""Singular values of a dense matrix (directly and through its Gram matrix) against LAPACK's SVD; norms
and rank by hand. The factored products of the heads are tested in ``test_factored.py``."""

from __future__ import annotations

import numpy as np
import pytest
from hand_profiles import numerical_rank, with_singular_values

from specbound.core.defaults import RANK_TOL
from specbound.core.spectrum import cumulative_energy, norm_11, norm_21, rank_threshold, singular_values


@pytest.mark.parametrize("rows, cols", [(24, 96), (96, 24), (30, 30)])
def test_dense_route_matches_svd_for_well_conditioned(rows: int, cols: int) -> None:
    sigma = np.linspace(5.0, 0.5, min(rows, cols))
    w = with_singular_values(sigma, rows, cols)
    got = singular_values(w)
    np.testing.assert_allclose(got, sigma, rtol=0, atol=1e-12 * sigma[0])


def test_dense_route_falls_back_when_gram_would_lose_small_values() -> None:
    # sigma spanning 12 decades: squaring them in a Gram matrix would lose the small ones entirely.
    sigma = np.logspace(0, -12, 16)
    w = with_singular_values(sigma, 16, 64, seed=3)
    got = singular_values(w)
    ref = np.linalg.svd(w, compute_uv=False)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-14)
    assert got[-1] == pytest.approx(1e-12, rel=1e-2)


def test_dense_route_rank_deficient() -> None:
    w = with_singular_values(np.array([3.0, 2.0, 1.0]), 12, 40)
    got = singular_values(w)
    assert got.shape == (12,)
    np.testing.assert_allclose(got[:3], [3.0, 2.0, 1.0], atol=1e-12)
    assert numerical_rank(got, 12) == 3


def test_numerical_rank_at_the_tolerance_edge() -> None:
    k = 50
    for top in (0.25, 1.0, 40.0):  # the cut-off uses max(sigma_1, 1)
        cut = RANK_TOL * k * max(top, 1.0)
        assert rank_threshold(top, k) == pytest.approx(cut, rel=1e-15)
        sv = np.array([top, cut * 1.001, cut, cut * 0.999, 0.0])
        assert numerical_rank(sv, k) == 2  # strictly above the cut-off only


def test_rank_threshold_scales_with_k() -> None:
    sv = np.array([1.0, 3e-9])
    assert numerical_rank(sv, 10) == 2  # cut-off 1e-9
    assert numerical_rank(sv, 100) == 1  # cut-off 1e-8


def test_norms_by_hand_and_orientation() -> None:
    w = np.array([[3.0, 0.0, -1.0], [4.0, -2.0, 0.0]])
    # columns: (3, 4) -> 5, (0, -2) -> 2, (-1, 0) -> 1
    assert norm_21(w) == pytest.approx(8.0)
    # rows of w (= columns of w^T): sqrt(10) + sqrt(20)
    assert norm_21(w.T) == pytest.approx(np.sqrt(10) + np.sqrt(20))
    assert norm_11(w) == pytest.approx(10.0)
    batched = np.stack([w, 2 * w])
    np.testing.assert_allclose(norm_21(batched), [8.0, 16.0])
    np.testing.assert_allclose(norm_11(batched), [10.0, 20.0])


def test_cumulative_energy() -> None:
    np.testing.assert_allclose(cumulative_energy(np.array([2.0, 1.0, 1.0, 0.0])), [4 / 6, 5 / 6, 1.0, 1.0])
    np.testing.assert_array_equal(cumulative_energy(np.zeros(3)), np.zeros(3))
