"""Where an update points (``specbound.core.directions``, SPEC §14b): intruder dimensions, best-match
cosines and top-k subspace overlaps on matrices with planted singular vectors (a rotation is found, a
rescaling is not, a partial rotation has the cosine it was given), the k cap, the near-tie flag, the
rule for a rank-deficient reference, and the per-head route from the factors against a dense float64
SVD of every head's N x N product."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.core.architecture import ModelShape
from specbound.core.directions import (
    DirectionSettings,
    MatrixDirection,
    compare_directions,
    dense_vectors,
    factored_vectors,
    layer_directions,
)
from specbound.core.matrices import LayerWeights

#: Agreement of the factored route with a dense float64 SVD (SPEC §14b's checks: 1e-10).
TOL = 1e-10


def planted(rows: int, cols: int, values: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Orthonormal U (rows, r) and V (cols, r) drawn at random, and the complement of U in R^rows."""
    rng = np.random.default_rng(seed)
    r = len(values)
    q_left, _ = np.linalg.qr(rng.standard_normal((rows, rows)))
    q_right, _ = np.linalg.qr(rng.standard_normal((cols, r)))
    return q_left[:, :r], q_right, q_left[:, r:]


VALUES = np.array([10.0, 8.0, 7.0, 5.0, 4.0, 3.5, 3.0, 2.0, 1.5, 1.0, 0.8, 0.5])


#: (W⁰, U, V, the unit vectors orthogonal to W⁰'s column space)
Planted = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@pytest.fixture
def base() -> Planted:
    """W⁰ = U diag(VALUES) Vᵀ, 40 x 12, and the 28 unit vectors orthogonal to its column space."""
    u, v, rest = planted(40, 12, VALUES, seed=0)
    return u @ np.diag(VALUES) @ v.T, u, v, rest


def test_a_planted_rotation_is_found(base: Planted) -> None:
    """u₂ replaced by a vector orthogonal to every left vector of W⁰: one intruder of cosine 0; the top
    10 left subspaces share 9 directions (overlap 9/10), the right ones all 10."""
    w0, u, v, rest = base
    rotated = u.copy()
    rotated[:, 1] = rest[:, 0]
    found = compare_directions(dense_vectors(rotated @ np.diag(VALUES) @ v.T), dense_vectors(w0), DirectionSettings())
    assert found.intruders == 1
    assert found.min_cosine == pytest.approx(0.0, abs=1e-12)
    assert found.overlap_left == pytest.approx(0.9, abs=1e-12)
    assert found.overlap_right == pytest.approx(1.0, abs=1e-12)
    assert found.top_k == 10 and not found.near_tie
    assert found.chance_cosine == pytest.approx(math.sqrt(2 * math.log(10) / 40), rel=1e-15)


def test_a_rotation_below_the_top_k_is_not_counted(base: Planted) -> None:
    """The same rotation of u₁₁ lies outside the top 10: no intruder; with k = 11 it is one."""
    w0, u, v, rest = base
    rotated = u.copy()
    rotated[:, 10] = rest[:, 3]
    tuned = dense_vectors(rotated @ np.diag(VALUES) @ v.T)
    assert compare_directions(tuned, dense_vectors(w0), DirectionSettings()).intruders == 0
    assert compare_directions(tuned, dense_vectors(w0), DirectionSettings(k=11)).intruders == 1


def test_a_planted_rescaling_is_not_found(base: Planted) -> None:
    """New singular values (reordered too) on the same vectors: no intruder, every cosine 1."""
    w0, u, v, _ = base
    values = VALUES[::-1] * 3.0 + np.arange(12)  # increasing: the order of the vectors changes
    found = compare_directions(dense_vectors(u @ np.diag(values) @ v.T), dense_vectors(w0), DirectionSettings())
    assert found.intruders == 0
    assert found.min_cosine == pytest.approx(1.0, abs=1e-12)
    # the top 10 of W are base vectors 3..12, the base's top 10 are 1..10: they share 8 directions
    assert found.overlap_left == pytest.approx(0.8, abs=1e-12)
    assert found.overlap_right == pytest.approx(0.8, abs=1e-12)


@pytest.mark.parametrize("cosine, eps, intruders", [(0.6, 0.5, 0), (0.6, 0.7, 1), (0.3, 0.5, 1)])
def test_a_partial_rotation_has_the_cosine_it_was_given(
    base: Planted, cosine: float, eps: float, intruders: int
) -> None:
    """u₃ turned to cos θ u₃ + sin θ w (w outside W⁰'s columns): c₃ = cos θ, an intruder iff below ε."""
    w0, u, v, rest = base
    rotated = u.copy()
    rotated[:, 2] = cosine * u[:, 2] + math.sqrt(1 - cosine**2) * rest[:, 0]
    found = compare_directions(
        dense_vectors(rotated @ np.diag(VALUES) @ v.T), dense_vectors(w0), DirectionSettings(eps=eps)
    )
    assert found.min_cosine == pytest.approx(cosine, abs=1e-12)
    assert found.intruders == intruders
    # the principal angles of the top-10 spaces: nine of cosine 1 and one of cos θ
    assert found.overlap_left == pytest.approx((9 + cosine) / 10, abs=1e-12)


def test_k_is_capped_at_the_rank_and_the_chance_level_follows() -> None:
    u, v, rest = planted(30, 8, np.array([3.0, 2.0, 1.0]), seed=1)
    w0 = u @ np.diag([3.0, 2.0, 1.0]) @ v.T  # rank 3
    turned = u.copy()
    turned[:, 0] = rest[:, 0]
    found = compare_directions(
        dense_vectors(turned @ np.diag([3.0, 2.0, 1.0]) @ v.T), dense_vectors(w0), DirectionSettings()
    )
    assert found.top_k == 3 and found.intruders == 1
    assert found.overlap_left == pytest.approx(2 / 3, abs=1e-12)
    assert found.chance_cosine == pytest.approx(math.sqrt(2 * math.log(3) / 30), rel=1e-15)


def test_a_near_tie_is_flagged_not_resolved() -> None:
    u, v, _ = planted(20, 6, np.ones(6), seed=2)
    tied = u @ np.diag([5.0, 4.0, 4.0 * (1 + 1e-10), 3.0, 2.0, 1.0]) @ v.T
    apart = u @ np.diag([5.0, 4.0, 3.9, 3.0, 2.0, 1.0]) @ v.T
    assert compare_directions(dense_vectors(tied), dense_vectors(apart), DirectionSettings(k=3)).near_tie
    assert compare_directions(dense_vectors(apart), dense_vectors(tied), DirectionSettings(k=3)).near_tie  # W⁰'s too
    assert not compare_directions(dense_vectors(apart), dense_vectors(apart), DirectionSettings(k=3)).near_tie
    # a tie below the top k + 1 values does not matter
    late = u @ np.diag([5.0, 4.0, 3.0, 2.0, 1.0, 1.0]) @ v.T
    assert not compare_directions(dense_vectors(late), dense_vectors(apart), DirectionSettings(k=3)).near_tie


def test_a_direction_in_the_null_space_of_a_rank_deficient_reference_is_an_intruder() -> None:
    """W⁰ of rank 2 in R^6: its other four 'singular vectors' are any basis of its null space, so the
    best match is taken over its range only, and a new direction there has cosine 0."""
    w0 = np.zeros((6, 6))
    w0[0, 0], w0[1, 1] = 3.0, 2.0
    w = w0.copy()
    w[4, 2] = 2.5  # a new top-2 direction e₅, outside the range of W⁰
    found = compare_directions(dense_vectors(w), dense_vectors(w0), DirectionSettings(k=3))
    assert dense_vectors(w0).rank == 2
    assert found.intruders == 1 and found.min_cosine == 0.0
    assert found.overlap_left == pytest.approx(2 / 3, abs=1e-12)  # W⁰ has only two top directions


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="eps must be a number in"):
        DirectionSettings(eps=0.0)
    with pytest.raises(ValueError, match=r"k must be an integer >= 1, got 2\.5"):
        DirectionSettings(k=2.5)  # type: ignore[arg-type]


def test_factored_vectors_are_a_compact_svd_of_the_product() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((24, 6)), rng.standard_normal((6, 24))
    found = factored_vectors(a, b)
    assert found.rank == 6
    np.testing.assert_allclose(found.u.T @ found.u, np.eye(6), atol=1e-13)
    np.testing.assert_allclose(found.v.T @ found.v, np.eye(6), atol=1e-13)
    np.testing.assert_allclose(found.u @ np.diag(found.s) @ found.v.T, a @ b, atol=1e-12)
    np.testing.assert_allclose(found.s, np.linalg.svd(a @ b, compute_uv=False)[:6], rtol=1e-12)


def _dense_layer_reference(
    tuned: LayerWeights, base: LayerWeights, shape: ModelShape, settings: DirectionSettings
) -> list[MatrixDirection]:
    """Each head's QK_h and V_h formed as the dense N x N product, then LAPACK's SVD of it."""
    d, group = shape.head_dim, shape.queries_per_kv_head
    pairs = []
    for kind in ("QK", "V"):
        for h in range(shape.num_heads):
            g = h // group  # the key/value head query head h reads
            s, t = slice(h * d, (h + 1) * d), slice(g * d, (g + 1) * d)

            def product(w: LayerWeights, kind: str = kind, s: slice = s, t: slice = t) -> np.ndarray:
                if kind == "QK":
                    qk: np.ndarray = w.query[s].T @ w.key[t]  # (N, N)
                    return qk
                v: np.ndarray = w.value[t].T @ w.attn_out[:, s].T  # (N, N)
                return v

            pairs.append((product(tuned), product(base)))
    for field in ("ffn_in", "ffn_out"):
        pairs.append((getattr(tuned, field), getattr(base, field)))  # (out, in), nn.Linear's layout
    return [compare_directions(dense_vectors(w), dense_vectors(w0), settings) for w, w0 in pairs]


def _layer(rng: np.random.Generator, shape: ModelShape) -> LayerWeights:
    n, d, f = shape.hidden_size, shape.head_dim, shape.ffn_size
    return LayerWeights(
        query=rng.standard_normal((shape.num_heads * d, n)),
        key=rng.standard_normal((shape.num_kv_heads * d, n)),
        value=rng.standard_normal((shape.num_kv_heads * d, n)),
        attn_out=rng.standard_normal((n, shape.num_heads * d)),
        ffn_in=rng.standard_normal((f, n)),
        ffn_out=rng.standard_normal((n, f)),
    )


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_per_head_directions_equal_a_dense_svd_of_each_product(kv_heads: int) -> None:
    """Grouped-query heads of size d = 6 in N = 24 (rank-deficient products): the factored route gives
    the dense SVD's counts, cosines and overlaps to 1e-10."""
    shape = ModelShape(1, 24, 4, 40, num_kv_heads=kv_heads)
    rng = np.random.default_rng(kv_heads)
    base = _layer(rng, shape)
    step = _layer(rng, shape)
    assert base.ffn_in is not None and step.ffn_in is not None  # _layer's dense MLP
    tuned = LayerWeights(
        **{f: getattr(base, f) + 0.6 * getattr(step, f) for f in ("query", "key", "value", "attn_out")},
        ffn_in=base.ffn_in + 0.6 * step.ffn_in,
        ffn_out=base.ffn_out,
    )
    settings = DirectionSettings(k=5)
    ours = layer_directions(tuned, base, shape, settings)
    dense = _dense_layer_reference(tuned, base, shape, settings)
    assert len(ours) == len(dense) == 2 * 4 + 2
    for got, want in zip(ours, dense, strict=True):
        assert got.intruders == want.intruders and got.top_k == want.top_k
        assert got.min_cosine == pytest.approx(want.min_cosine, abs=TOL)
        assert got.overlap_left == pytest.approx(want.overlap_left, abs=TOL)
        assert got.overlap_right == pytest.approx(want.overlap_right, abs=TOL)
    assert sum(d.intruders for d in ours[:8]) > 0  # the heads moved far enough to have some
    assert (ours[-1].intruders, ours[-1].min_cosine, ours[-1].overlap_left) == (0, 1.0, 1.0)  # M_out unchanged


def test_an_unchanged_head_has_no_intruders_and_overlap_one() -> None:
    shape = ModelShape(1, 12, 3, 20)
    base = _layer(np.random.default_rng(5), shape)
    query = base.query.copy()
    query[:4] += 1.0  # head 0's query only: QK_0 changes, QK_1, QK_2 and every V do not
    tuned = LayerWeights(query, base.key, base.value, base.attn_out, ffn_in=base.ffn_in, ffn_out=base.ffn_out)
    found = layer_directions(tuned, base, shape, DirectionSettings(k=3))
    assert found[0].overlap_left < 1.0
    for unchanged in found[1:]:
        assert (unchanged.intruders, unchanged.min_cosine, unchanged.overlap_left, unchanged.overlap_right) == (
            0,
            1.0,
            1.0,
            1.0,
        )


def test_conv1d_layout_reads_the_transposed_matrix() -> None:
    """GPT-2 stores its feed-forward weights (in, out): the left vectors peft compares are the input's."""
    shape = ModelShape(1, 8, 2, 16)
    rng = np.random.default_rng(6)
    base = _layer(rng, shape)
    assert base.ffn_in is not None  # _layer's dense MLP
    ffn_in = base.ffn_in + rng.standard_normal(base.ffn_in.shape)
    tuned = LayerWeights(base.query, base.key, base.value, base.attn_out, ffn_in=ffn_in, ffn_out=base.ffn_out)
    settings = DirectionSettings(k=4)
    stored = layer_directions(tuned, base, shape, settings, module_in_out=True)[4]
    want = compare_directions(dense_vectors(ffn_in.T), dense_vectors(base.ffn_in.T), settings)
    assert stored.min_cosine == pytest.approx(want.min_cosine, abs=TOL)
    assert stored.overlap_left == pytest.approx(want.overlap_left, abs=TOL)
    linear = layer_directions(tuned, base, shape, settings)[4]
    assert linear.overlap_left == pytest.approx(stored.overlap_right, abs=TOL)  # the two layouts swap sides
    assert stored.chance_cosine == pytest.approx(math.sqrt(2 * math.log(4) / 8), rel=1e-15)


@pytest.mark.parametrize("rows, cols", [(40, 12), (12, 40)])
def test_the_gram_route_gives_the_svd_and_falls_back_where_it_would_lose_digits(rows: int, cols: int) -> None:
    """gram_vectors, the feed-forward matrices' route: the SVD's values and (up to sign) vectors on a
    well-conditioned matrix; on a rank-deficient one (values spanning beyond GRAM_CONDITION) the SVD's own."""
    from specbound.core.directions import GRAM_CONDITION, gram_vectors

    rng = np.random.default_rng(rows)
    m = rng.standard_normal((rows, cols))
    found, exact = gram_vectors(m), dense_vectors(m)
    np.testing.assert_allclose(found.s, exact.s, rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(found.u * exact.u, axis=0)), 1.0, atol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(found.v * exact.v, axis=0)), 1.0, atol=1e-10)
    low = m.copy()
    low[:, 3:] = 0.0 if rows > cols else low[:, 3:]
    low[3:, :] = 0.0 if rows <= cols else low[3:, :]  # rank 3
    deficient = gram_vectors(low)
    assert deficient.rank == 3 and deficient.s[-1] > GRAM_CONDITION * deficient.s[0]
    np.testing.assert_allclose(deficient.u @ np.diag(deficient.s) @ deficient.v.T, low, atol=1e-12)
    spread = m @ np.diag(np.logspace(0, -7, min(rows, cols))) if rows > cols else np.diag(np.logspace(0, -7, rows)) @ m
    np.testing.assert_allclose(gram_vectors(spread).s, dense_vectors(spread).s, rtol=1e-9)  # the SVD's own
