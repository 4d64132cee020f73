"""The proxy matrices act on a token exactly as the Hugging Face layer does (head slices, transposes)."""

from __future__ import annotations

import numpy as np
import pytest

from specbound.matrices import EncoderShape, LayerWeights, head_rows, layer_factors


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
    f = layer_factors(w, heads)
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
    f = layer_factors(w, heads)
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
    f = layer_factors(w, 3)
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
    shape = EncoderShape(num_layers=6, hidden_size=384, num_heads=12, ffn_size=1536)
    assert shape.head_dim == 32
    assert shape.num_matrices == 6 * (2 * 12 + 2) == 156
    with pytest.raises(ValueError, match="not divisible"):
        EncoderShape(2, 100, 12, 10)
    with pytest.raises(ValueError, match="positive"):
        EncoderShape(0, 8, 2, 8)
