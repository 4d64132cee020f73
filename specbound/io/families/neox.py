"""GPT-NeoX (Pythia): a causal decoder with rotary embeddings, a fused QKV interleaved per head, and
(by default) a parallel residual x + Attn(LN(x)) + MLP(LN'(x)).

``attention.query_key_value.weight`` is (3N, N), (out, in); its output features are viewed as
(H, 3, d): for head h, d query rows, then d key rows, then d value rows (transformers'
``qkv.view(..., -1, 3 * head_size)``). Reading it as three N-row blocks Q | K | V would mix heads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...core.architecture import Adaptation, ModelShape, Residual
from ...core.matrices import LayerWeights
from .base import FamilyAdapter, TensorSpec
from .config import activation, build_shape, flag, fraction, initializer_range, positive_int


def rotary_fraction(config: Mapping[str, Any], where: str, default: float = 0.25) -> float:
    """The share of each head that rotary embeddings rotate (``rotary_pct``, or transformers 5's
    ``rope_parameters.partial_rotary_factor``; ``default`` when neither is given: GPT-NeoX's 0.25)."""
    rope = config.get("rope_parameters")
    if isinstance(rope, Mapping) and "partial_rotary_factor" in rope:
        return fraction(rope, "partial_rotary_factor", where, default)
    if "partial_rotary_factor" in config:
        return fraction(config, "partial_rotary_factor", where, default)
    return fraction(config, "rotary_pct", where, default)


def per_head_qkv(fused: np.ndarray, shape: ModelShape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V (out, in), (H d, N) each, from a (3 H d, N) weight interleaved per head (GPT-NeoX, BLOOM,
    Falcon's oldest layout): its rows viewed as (H, 3, d), [h, 0] = Q_h, [h, 1] = K_h, [h, 2] = V_h."""
    h, d, n = shape.num_heads, shape.head_dim, shape.hidden_size
    qkv = fused.reshape(h, 3, d, n)
    query, key, value = (qkv[:, i].reshape(h * d, n) for i in range(3))
    return query, key, value


class FusedPerHeadAdapter(FamilyAdapter):
    """A block whose attention is one fused ``{attention}.query_key_value`` (3N, N) interleaved per head
    and ``{attention}.dense``, and whose MLP is ``mlp.dense_h_to_4h`` / ``mlp.dense_4h_to_h``: GPT-NeoX
    (``attention``) and BLOOM (``self_attention``) name their modules so."""

    #: the attention module's name in the layer
    attention: ClassVar[str]

    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        n, f = shape.hidden_size, shape.ffn_size
        return {
            "qkv": TensorSpec(f"{self.attention}.query_key_value.weight", (3 * n, n)),
            "attn_out": TensorSpec(f"{self.attention}.dense.weight", (n, n)),
            "ffn_in": TensorSpec("mlp.dense_h_to_4h.weight", (f, n)),
            "ffn_out": TensorSpec("mlp.dense_4h_to_h.weight", (n, f)),
        }

    def to_weights(self, tensors: Mapping[str, np.ndarray], shape: ModelShape) -> LayerWeights:
        query, key, value = self.split_qkv(tensors["qkv"], shape)
        return LayerWeights(
            query=query,
            key=key,
            value=value,
            attn_out=tensors["attn_out"],
            ffn_in=tensors["ffn_in"],
            ffn_out=tensors["ffn_out"],
        )

    def split_qkv(self, fused: np.ndarray, shape: ModelShape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Q, K, V (out, in) from the fused weight: interleaved per head (:func:`per_head_qkv`)."""
        return per_head_qkv(fused, shape)


class GPTNeoXAdapter(FusedPerHeadAdapter):
    model_types = ("gpt_neox",)
    label = "GPT-NeoX"
    root = "layers"
    prefixes = ("", "gpt_neox.")
    attention = "attention"

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        parallel = flag(config, "use_parallel_residual", where, True)
        rotary = Adaptation.ROTARY if rotary_fraction(config, where) >= 1 else Adaptation.PARTIAL_ROTARY
        adaptations = (Adaptation.CAUSAL, rotary, *((Adaptation.PARALLEL_RESIDUAL,) if parallel else ()))
        return build_shape(
            where,
            num_layers=positive_int(config, "num_hidden_layers", where),
            hidden_size=positive_int(config, "hidden_size", where),
            num_heads=positive_int(config, "num_attention_heads", where),
            ffn_size=positive_int(config, "intermediate_size", where),
            residual=Residual.PARALLEL if parallel else Residual.SEQUENTIAL,
            family="gpt_neox",
            activation=activation(config, "hidden_act", where, "gelu"),
            adaptations=adaptations,
            initializer_range=initializer_range(config),
        )
