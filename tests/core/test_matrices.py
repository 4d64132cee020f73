"""The proxy matrices act on a token exactly as the Hugging Face layer does (head slices, transposes)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from specbound.core.architecture import Kind, Mlp, ModelShape
from specbound.core.matrices import LayerWeights, head_rows, layer_factors


def random_layer(n: int, ffn: int, seed: int = 0) -> LayerWeights:
    rng = np.random.default_rng(seed)
    return LayerWeights(
        query=rng.standard_normal((n, n)),
        key=rng.standard_normal((n, n)),
        value=rng.standard_normal((n, n)),
        attn_out=rng.standard_normal((n, n)),
        ffn_in=rng.standard_normal((ffn, n)),
        ffn_out=rng.standard_normal((n, ffn)),
    )


@pytest.mark.parametrize("n, heads", [(24, 3), (40, 5), (16, 1), (64, 2)])  # head sizes 8, 8, 16, 32
def test_qk_is_the_attention_score_of_each_head(n: int, heads: int) -> None:
    w = random_layer(n, 2 * n, seed=n)
    f = layer_factors(w, ModelShape(1, n, heads, 2 * n))
    d = n // heads
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    q, k = w.query @ x, w.key @ y  # nn.Linear: weight @ input
    qk = f.qk()
    assert qk.shape == (heads, n, n)
    for h in range(heads):
        s = slice(h * d, (h + 1) * d)
        assert x @ qk[h] @ y == pytest.approx(q[s] @ k[s], rel=1e-12)


@pytest.mark.parametrize("n, heads", [(24, 3), (16, 1), (64, 2)])
def test_v_is_the_value_path_of_each_head_through_the_output_projection(n: int, heads: int) -> None:
    w = random_layer(n, 2 * n, seed=n + 1)
    f = layer_factors(w, ModelShape(1, n, heads, 2 * n))
    d = n // heads
    x = np.random.default_rng(3).standard_normal(n)
    value = w.value @ x  # (N,) the concatenated head values
    v = f.v()
    total = np.zeros(n)
    for h in range(heads):
        s = slice(h * d, (h + 1) * d)
        head_only = np.zeros(n)
        head_only[s] = value[s]
        np.testing.assert_allclose(x @ v[h], w.attn_out @ head_only, rtol=1e-12, atol=1e-12)
        total += x @ v[h]
    np.testing.assert_allclose(total, w.attn_out @ value, rtol=1e-11, atol=1e-11)


def test_feed_forward_matrices_in_row_vector_form() -> None:
    n, ffn = 12, 30
    w = random_layer(n, ffn)
    assert w.ffn_in is not None and w.ffn_out is not None  # random_layer's dense MLP
    f = layer_factors(w, ModelShape(1, n, 3, ffn))
    x = np.random.default_rng(5).standard_normal(n)
    assert f.m_in.shape == (n, ffn) and f.m_out.shape == (ffn, n)
    np.testing.assert_allclose(x @ f.m_in, w.ffn_in @ x)
    hidden = np.random.default_rng(6).standard_normal(ffn)
    np.testing.assert_allclose(hidden @ f.m_out, w.ffn_out @ hidden)


def test_head_rows_slices_output_rows() -> None:
    w = np.arange(6 * 4, dtype=float).reshape(6, 4)
    blocks = head_rows(w, 3)
    assert blocks.shape == (3, 2, 4)
    np.testing.assert_array_equal(blocks[1], w[2:4])


def test_encoder_shape() -> None:
    shape = ModelShape(num_layers=6, hidden_size=384, num_heads=12, ffn_size=1536)
    assert shape.head_dim == 32
    assert shape.num_matrices == 6 * (2 * 12 + 2) == 156
    with pytest.raises(ValueError, match="not divisible"):
        ModelShape(2, 100, 12, 10)
    with pytest.raises(ValueError, match="positive"):
        ModelShape(0, 8, 2, 8)


def test_grouped_query_heads_read_their_key_value_head_and_an_explicit_head_size() -> None:
    """H = 4 query heads share H_kv = 2 key/value heads of size d = 6 (H d = 24 != N = 16):
    query head h reads key/value head h // 2, as transformers' repeat_kv does."""
    n, heads, kv, d = 16, 4, 2, 6
    shape = ModelShape(1, n, heads, 20, num_kv_heads=kv, head_dim=d)
    rng = np.random.default_rng(11)
    w = LayerWeights(
        query=rng.standard_normal((heads * d, n)),
        key=rng.standard_normal((kv * d, n)),
        value=rng.standard_normal((kv * d, n)),
        attn_out=rng.standard_normal((n, heads * d)),
        ffn_in=rng.standard_normal((20, n)),
        ffn_out=rng.standard_normal((n, 20)),
    )
    f = layer_factors(w, shape)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    q, k, v = w.query @ x, w.key @ y, w.value @ x
    for h in range(heads):
        g = h // (heads // kv)
        qs, ks = slice(h * d, (h + 1) * d), slice(g * d, (g + 1) * d)
        assert x @ f.qk()[h] @ y == pytest.approx(q[qs] @ k[ks], rel=1e-12)
        head_only = np.zeros(heads * d)
        head_only[qs] = v[ks]  # query head h carries the value of its key/value head g
        np.testing.assert_allclose(x @ f.v()[h], w.attn_out @ head_only, rtol=1e-12, atol=1e-12)
    assert f.qk_left.shape == (heads, n, d) and f.v_right.shape == (heads, d, n)


def test_a_gated_mlp_has_its_gate_first_in_row_vector_form() -> None:
    n, ffn = 8, 12
    rng = np.random.default_rng(2)
    w = random_layer(n, ffn)
    assert w.ffn_in is not None  # random_layer's dense MLP
    gated = dataclasses.replace(w, gate=rng.standard_normal((ffn, n)))
    assert gated.gate is not None
    f = layer_factors(gated, ModelShape(1, n, 2, ffn, mlp=Mlp.GATED))
    assert list(f.mlp) == [Kind.M_GATE, Kind.M_IN, Kind.M_OUT]
    x = rng.standard_normal(n)
    np.testing.assert_allclose(x @ f.mlp[Kind.M_GATE], gated.gate @ x)
    np.testing.assert_allclose(x @ f.mlp[Kind.M_IN], w.ffn_in @ x)
    with pytest.raises(ValueError, match="gate"):
        layer_factors(w, ModelShape(1, n, 2, ffn, mlp=Mlp.GATED))
