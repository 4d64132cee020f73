"""The heads' factored products (``specbound.core.factored``): singular values and entrywise norms of
L R computed from the factors alone (a QR core of size d, never the N x N product) against the dense
product's LAPACK SVD and norms, full rank, rank deficient and zero."""

from __future__ import annotations

import numpy as np
import pytest
from hand_profiles import numerical_rank

from specbound.core.factored import entrywise_norms_factored, singular_values_factored
from specbound.core.spectrum import norm_11, norm_21


def dense_reference(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return np.linalg.svd(left @ right, compute_uv=False)


@pytest.mark.parametrize("n, d, heads", [(32, 8, 4), (48, 1, 3), (96, 24, 4), (128, 64, 2), (20, 20, 1)])
def test_factored_singular_values_equal_dense(n: int, d: int, heads: int) -> None:
    rng = np.random.default_rng(n + d)
    left = rng.standard_normal((heads, n, d))
    right = rng.standard_normal((heads, d, n))
    got = singular_values_factored(left, right)
    assert got.shape == (heads, d)
    for h in range(heads):
        ref = dense_reference(left[h], right[h])
        padded = np.pad(got[h], (0, n - d))
        np.testing.assert_allclose(padded, ref, rtol=0, atol=1e-12 * ref[0])


def test_factored_rank_deficient_factors() -> None:
    rng = np.random.default_rng(1)
    n, d = 40, 8
    left = rng.standard_normal((n, d))
    left[:, 5:] = left[:, :3] @ rng.standard_normal((3, 3))  # rank 5
    right = rng.standard_normal((d, n))
    right[6:] = 0.0  # two dead rows
    got = singular_values_factored(left[None], right[None])[0]
    ref = dense_reference(left, right)
    np.testing.assert_allclose(np.pad(got, (0, n - d)), ref, atol=1e-12 * ref[0])
    # left @ right = left[:, :6] @ right[:6] and left[:, :6] has rank 5
    assert numerical_rank(got, n) == np.linalg.matrix_rank(left @ right) == 5


def test_factored_zero_product() -> None:
    got = singular_values_factored(np.zeros((1, 10, 3)), np.ones((1, 3, 10)))
    assert np.all(got == 0.0)
    assert numerical_rank(got[0], 10) == 0


def test_entrywise_norms_of_factored_products_equal_dense() -> None:
    rng = np.random.default_rng(4)
    left, right = rng.standard_normal((3, 20, 4)), rng.standard_normal((3, 4, 30))
    n21, n11 = entrywise_norms_factored(left, right)
    dense = left @ right
    np.testing.assert_allclose(n21, norm_21(dense), rtol=1e-13)
    np.testing.assert_allclose(n11, norm_11(dense), rtol=1e-13)
    np.testing.assert_allclose(n11[1], np.abs(left[1] @ right[1]).sum(), rtol=1e-13)
