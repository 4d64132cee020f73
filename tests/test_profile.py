"""The profile's layout and derived quantities."""

from __future__ import annotations

import numpy as np
import pytest

from specbound.matrices import EncoderShape, Kind
from specbound.profile import MatrixId, SpectralProfile, matrix_ids


def test_matrix_order_and_count() -> None:
    shape = EncoderShape(num_layers=2, hidden_size=6, num_heads=3, ffn_size=8)
    ids = matrix_ids(shape)
    assert len(ids) == shape.num_matrices == 16
    assert ids[:8] == (MatrixId(0, Kind.QK, 0), MatrixId(0, Kind.QK, 1), MatrixId(0, Kind.QK, 2),
                       MatrixId(0, Kind.V, 0), MatrixId(0, Kind.V, 1), MatrixId(0, Kind.V, 2),
                       MatrixId(0, Kind.M_IN), MatrixId(0, Kind.M_OUT))
    assert ids[8] == MatrixId(1, Kind.QK, 0)
    assert ids[4].label == "L0 V h1"


def test_derived_norms_and_ranks() -> None:
    shape = EncoderShape(num_layers=1, hidden_size=4, num_heads=1, ffn_size=4)
    sv = np.array([[3.0, 1e-11, 0, 0],  # the second value is below the cut-off 1e-10 * 4 * 3
                   [2.0, 1.0, 0, 0],
                   [0.0, 0, 0, 0],
                   [1.0, 1.0, 1.0, 1.0]])
    profile = SpectralProfile("m", "r", shape, sv, np.array([4, 4, 4, 4]), np.arange(4.0), np.ones(4))
    np.testing.assert_array_equal(profile.rank, [1, 2, 0, 4])
    np.testing.assert_allclose(profile.frobenius_norm, [np.hypot(3, 1e-11), np.sqrt(5), 0, 2])
    np.testing.assert_allclose(profile.nuclear_norm, [3 + 1e-11, 3, 0, 4])
    np.testing.assert_allclose(profile.stable_rank, [1.0, 5 / 4, 0.0, 4.0])
    np.testing.assert_array_equal(profile.heads, [0, 0, -1, -1])
    np.testing.assert_array_equal(profile.mask(Kind.M_IN), [False, False, True, False])
    frame = profile.to_frame()
    assert list(frame["kind"]) == ["QK", "V", "M_in", "M_out"]
    assert frame["head"].isna().tolist() == [False, False, True, True]


def test_singular_values_of_pads_to_full_size() -> None:
    shape = EncoderShape(num_layers=1, hidden_size=6, num_heads=3, ffn_size=2)
    sv = np.zeros((shape.num_matrices, 2))
    sv[:, 0] = 1.0
    profile = SpectralProfile("m", "r", shape, sv, np.array([6] * 6 + [2, 2]), np.ones(8), np.ones(8))
    assert profile.singular_values_of(0).shape == (6,)
    assert profile.singular_values_of(MatrixId(0, Kind.M_OUT)).shape == (2,)


def test_rejects_inconsistent_arrays() -> None:
    shape = EncoderShape(num_layers=1, hidden_size=4, num_heads=1, ffn_size=4)
    with pytest.raises(ValueError):
        SpectralProfile("m", "r", shape, np.zeros((3, 4)), np.ones(3), np.ones(3), np.ones(3))
