"""Model shapes (``specbound.core.architecture``): how many proxy matrices each kind of model has and
where each layer's start (SPEC §2, §12), which key/value head a query head reads, the widths of its
MLPs, the weights a layer holds, the checks on a shape, and its file form."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from specbound.core.architecture import DECODER, ENCODER, Kind, Mlp, ModelShape

BERT_BASE = ModelShape(12, 768, 12, 3072)
LLAMA_GQA = ModelShape(4, 64, 8, 172, num_kv_heads=2, mlp=Mlp.GATED, family="llama", activation="silu")
QWEN_MOE = ModelShape(2, 32, 4, 24, num_kv_heads=2, mlp=Mlp.GATED, num_experts=4, experts_per_token=2,
                      shared_expert_size=40, activation="silu")  # fmt: skip
BART = ModelShape(5, 16, 2, 32, encoder_layers=2, decoder_ffn_size=48)


@pytest.mark.parametrize(
    ("shape", "count", "formula", "per_layer"),
    [
        (BERT_BASE, 12 * (2 * 12 + 2), "L(2H + 2)", 26),
        (LLAMA_GQA, 4 * (2 * 8 + 3), "L(2H + 3)", 19),
        (QWEN_MOE, 2 * (2 * 4 + 3 * 4 + 3), "L(2H + 3E + 3)", 23),  # four routed experts and the shared one
        (BART, 2 * (2 * 2 + 2) + 3 * (4 * 2 + 2), "L_enc(2H + 2) + L_dec(4H + 2)", 6),
    ],
)
def test_the_matrices_of_each_kind_of_model(shape: ModelShape, count: int, formula: str, per_layer: int) -> None:
    assert shape.num_matrices == count and shape.matrix_count_formula == formula
    assert shape.matrices_per_layer == per_layer
    assert shape.layer_starts[-1] == count and len(shape.layer_starts) == shape.num_layers + 1


def test_an_encoder_decoders_stacks() -> None:
    assert [BART.stack_of(layer) for layer in range(5)] == [ENCODER, ENCODER, DECODER, DECODER, DECODER]
    assert [BART.stack_layer(layer) for layer in range(5)] == [0, 1, 0, 1, 2]
    assert [BART.layer_size(layer) for layer in range(5)] == [6, 6, 10, 10, 10]  # 2H more with cross-attention
    assert BART.layer_starts == (0, 6, 12, 22, 32, 42)
    assert BART.layers_with(Kind.QK_X) == (2, 3, 4) and BART.layers_with(Kind.QK) == (0, 1, 2, 3, 4)
    assert [BART.expert_ffn_size(None, layer) for layer in (0, 4)] == [32, 48]
    assert BART.stack_ffn_sizes == {ENCODER: 32, DECODER: 48} and BART.max_ffn_size == 48
    assert dataclasses.replace(BART, decoder_ffn_size=32).decoder_ffn_size == 0  # one width: one way to say it


def test_grouped_query_heads_read_their_key_value_head() -> None:
    """g(h) = ⌊h / (H / H_kv)⌋, as transformers' repeat_kv: query heads 0-3 read key/value head 0."""
    assert [LLAMA_GQA.kv_head(h) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert LLAMA_GQA.head_dim == 8 and LLAMA_GQA.queries_per_kv_head == 4


def test_a_mixture_of_experts_lists_the_routed_experts_then_the_shared_one() -> None:
    assert QWEN_MOE.experts == (0, 1, 2, 3, "shared")
    assert [QWEN_MOE.expert_ffn_size(e) for e in QWEN_MOE.experts] == [24, 24, 24, 24, 40]
    assert QWEN_MOE.layer_kinds == (Kind.M_GATE, Kind.M_IN, Kind.M_OUT)
    assert BERT_BASE.experts == (None,) and BERT_BASE.layer_kinds == (Kind.M_IN, Kind.M_OUT)


def test_the_weights_a_layer_holds() -> None:
    # BERT-base: W_Q, W_K, W_V, W_O of 768 × 768 and an MLP of 768 × 3072 twice
    assert BERT_BASE.layer_weight_values == 4 * 768 * 768 + 2 * 768 * 3072 == 7_077_888
    # grouped-query attention: K and V have 2 heads of 8, Q and O 8 heads; a gated MLP has three matrices
    assert LLAMA_GQA.layer_weight_values == 2 * 64 * 64 + 2 * 16 * 64 + 3 * 64 * 172


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"hidden_size": 64, "num_heads": 6}, "not divisible by 6 attention heads"),
        ({"num_kv_heads": 5}, "cannot share 5 key/value heads evenly"),
        ({"num_layers": 0}, "num_layers must be a positive integer"),
        ({"num_experts": 4, "experts_per_token": 5, "mlp": Mlp.GATED}, "routed to 1..4 experts"),
        ({"num_experts": 4, "experts_per_token": 2}, "experts of a mixture of experts are gated"),
        ({"shared_expert_size": 8}, "need routed experts"),
        ({"encoder_layers": 12}, "needs decoder layers"),
        ({"decoder_ffn_size": 48}, "needs an encoder-decoder"),
        ({"activation": "swish7"}, "no known Lipschitz constant"),
    ],
)
def test_a_shape_that_cannot_be_is_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ModelShape(**{"num_layers": 12, "hidden_size": 768, "num_heads": 12, "ffn_size": 3072} | fields)


@pytest.mark.parametrize("shape", [BERT_BASE, LLAMA_GQA, QWEN_MOE, BART])
def test_a_shape_survives_its_file_form(shape: ModelShape) -> None:
    assert ModelShape.from_dict(shape.to_dict()) == shape


def test_a_dense_shapes_file_form_is_as_before_experts_and_stacks() -> None:
    assert not {"num_experts", "encoder_layers", "decoder_ffn_size"} & set(BERT_BASE.to_dict())
    assert ModelShape.from_dict({"num_layers": 12, "hidden_size": 768, "num_heads": 12, "ffn_size": 3072}) == BERT_BASE
