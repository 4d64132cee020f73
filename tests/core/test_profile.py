"""The profile's layout and derived quantities."""

from __future__ import annotations

import numpy as np
import pytest

from specbound.core.architecture import Adaptation, Kind, Mlp, ModelShape
from specbound.core.profile import MatrixId, SpectralProfile, matrix_ids


def test_matrix_order_and_count() -> None:
    shape = ModelShape(num_layers=2, hidden_size=6, num_heads=3, ffn_size=8)
    ids = matrix_ids(shape)
    assert len(ids) == shape.num_matrices == 16
    assert ids[:8] == (
        MatrixId(0, Kind.QK, 0),
        MatrixId(0, Kind.QK, 1),
        MatrixId(0, Kind.QK, 2),
        MatrixId(0, Kind.V, 0),
        MatrixId(0, Kind.V, 1),
        MatrixId(0, Kind.V, 2),
        MatrixId(0, Kind.M_IN),
        MatrixId(0, Kind.M_OUT),
    )
    assert ids[8] == MatrixId(1, Kind.QK, 0)
    assert ids[4].label == "L0 V h1"


def test_derived_norms_and_ranks() -> None:
    shape = ModelShape(num_layers=1, hidden_size=4, num_heads=1, ffn_size=4)
    sv = np.array(
        [
            [3.0, 1e-11, 0, 0],  # the second value is below the cut-off 1e-10 * 4 * 3
            [2.0, 1.0, 0, 0],
            [0.0, 0, 0, 0],
            [1.0, 1.0, 1.0, 1.0],
        ]
    )
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
    shape = ModelShape(num_layers=1, hidden_size=6, num_heads=3, ffn_size=2)
    sv = np.zeros((shape.num_matrices, 2))
    sv[:, 0] = 1.0
    profile = SpectralProfile("m", "r", shape, sv, np.array([6] * 6 + [2, 2]), np.ones(8), np.ones(8))
    assert profile.singular_values_of(0).shape == (6,)
    assert profile.singular_values_of(MatrixId(0, Kind.M_OUT)).shape == (2,)


def test_rejects_inconsistent_arrays() -> None:
    shape = ModelShape(num_layers=1, hidden_size=4, num_heads=1, ffn_size=4)
    with pytest.raises(ValueError):
        SpectralProfile("m", "r", shape, np.zeros((3, 4)), np.ones(3), np.ones(3), np.ones(3))


def _profile_with_row_numbers(shape: ModelShape) -> SpectralProfile:
    m = shape.num_matrices
    sv = np.ones((m, 1))
    return SpectralProfile("m", "r", shape, sv, np.full(m, shape.hidden_size), np.arange(m, dtype=float), np.ones(m))


def test_order_accessors_agree_with_the_ids() -> None:
    shape = ModelShape(num_layers=3, hidden_size=8, num_heads=2, ffn_size=12)
    profile = _profile_with_row_numbers(shape)
    rows = profile.norm_21  # row i holds the number i
    for i, matrix in enumerate(profile.ids):
        assert profile.index(matrix) == i
    qk, v = profile.per_head(rows, Kind.QK), profile.per_head(rows, Kind.V)
    assert qk.shape == v.shape == (3, 2)
    for layer in range(3):
        for head in range(2):
            assert profile.ids[int(qk[layer, head])] == MatrixId(layer, Kind.QK, head)
            assert profile.ids[int(v[layer, head])] == MatrixId(layer, Kind.V, head)
        assert profile.ids[int(profile.per_layer(rows, Kind.M_IN)[layer])] == MatrixId(layer, Kind.M_IN)
        assert profile.ids[int(profile.per_layer(rows, Kind.M_OUT)[layer])] == MatrixId(layer, Kind.M_OUT)
    rebuilt = profile.assemble(
        {
            Kind.QK: qk,
            Kind.V: v,
            Kind.M_IN: profile.per_layer(rows, Kind.M_IN),
            Kind.M_OUT: profile.per_layer(rows, Kind.M_OUT),
        }
    )
    np.testing.assert_array_equal(rebuilt, rows)


def test_order_accessors_refuse_the_wrong_kind_and_position() -> None:
    shape = ModelShape(num_layers=1, hidden_size=4, num_heads=2, ffn_size=4)
    profile = _profile_with_row_numbers(shape)
    with pytest.raises(ValueError):
        profile.per_head(profile.norm_21, Kind.M_IN)
    with pytest.raises(ValueError):
        profile.per_layer(profile.norm_21, Kind.QK)
    for bad in (MatrixId(1, Kind.QK, 0), MatrixId(0, Kind.QK, 2), MatrixId(0, Kind.M_IN, 0), MatrixId(0, Kind.V)):
        with pytest.raises(IndexError):
            profile.index(bad)


def test_rows_of_selects_layers_kinds_and_heads() -> None:
    shape = ModelShape(num_layers=2, hidden_size=4, num_heads=2, ffn_size=4)
    profile = _profile_with_row_numbers(shape)
    assert [profile.ids[i].label for i in profile.rows_of(layers=[1], kinds=[Kind.QK, Kind.M_OUT])] == [
        "L1 QK h0",
        "L1 QK h1",
        "L1 M_out",
    ]
    assert [profile.ids[i].label for i in profile.rows_of(layers=[0], heads=[1])] == [
        "L0 QK h1",
        "L0 V h1",
        "L0 M_in",
        "L0 M_out",
    ]
    assert profile.rows_of().tolist() == list(range(shape.num_matrices))


def test_a_gated_grouped_query_model_lists_m_gate_before_m_in_and_m_out() -> None:
    """Row order within a layer: QK and V per query head, then M_gate, M_in, M_out (L (2H + 3) rows)."""
    shape = ModelShape(num_layers=2, hidden_size=8, num_heads=4, ffn_size=12, num_kv_heads=2, mlp=Mlp.GATED)
    assert shape.kinds == (Kind.QK, Kind.V, Kind.M_GATE, Kind.M_IN, Kind.M_OUT)
    assert shape.num_matrices == 2 * (2 * 4 + 3)
    profile = _profile_with_row_numbers(shape)
    rows = profile.norm_21
    assert [m.kind for m in profile.ids[8:11]] == [Kind.M_GATE, Kind.M_IN, Kind.M_OUT]
    assert profile.index(MatrixId(1, Kind.M_GATE)) == 11 + 8
    np.testing.assert_array_equal(profile.per_layer(rows, Kind.M_GATE), [8, 19])
    np.testing.assert_array_equal(profile.assemble(profile.by_kind(rows)), rows)
    with pytest.raises(ValueError, match="M_gate"):
        _profile_with_row_numbers(ModelShape(1, 8, 4, 12)).per_layer(rows[:10], Kind.M_GATE)
    with pytest.raises(IndexError):
        _profile_with_row_numbers(ModelShape(1, 8, 4, 12)).index(MatrixId(0, Kind.M_GATE))


def test_the_shape_round_trips_through_its_dict_and_reads_the_old_four_sizes() -> None:
    shape = ModelShape(
        2,
        16,
        4,
        40,
        num_kv_heads=2,
        head_dim=6,
        mlp=Mlp.GATED,
        family="llama",
        activation="silu",
        adaptations=(Adaptation.CAUSAL, Adaptation.ROTARY),
    )
    assert ModelShape.from_dict(shape.to_dict()) == shape
    assert ModelShape.from_dict({"num_layers": 2, "hidden_size": 16, "num_heads": 4, "ffn_size": 40}) == ModelShape(
        2, 16, 4, 40
    )
    for bad in ({"num_layers": 2.0}, {"mlp": "wide"}, {"activation": "tanh"}, {"num_kv_heads": 3}):
        with pytest.raises(ValueError):
            ModelShape.from_dict({**shape.to_dict(), **bad})
