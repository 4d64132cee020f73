"""Phi-3 and Phi-4 (``phi3``): Llama's block with two fused ``nn.Linear`` weights.

``self_attn.qkv_proj.weight`` is ((H + 2 H_kv) d, N), (out, in): its output rows are Q (H d rows),
then K (H_kv d), then V (H_kv d), as transformers slices them (``qkv[..., :query_pos]``, ...).
``mlp.gate_up_proj.weight`` is (2 d_ff, N): rows [0, d_ff) are the gate, rows [d_ff, 2 d_ff) the up
projection (``up_states.chunk(2, dim=-1)`` gives ``gate, up_states``). Both MLP fields are read from
that one tensor (:meth:`mlp_roles`), each a view of its rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.architecture import Adaptation, Mlp, ModelShape
from ...core.matrices import LayerWeights
from .base import FamilyAdapter, TensorSpec
from .config import activation, build_shape, decoder_sizes, initializer_range
from .neox import rotary_fraction


class Phi3Adapter(FamilyAdapter):
    model_types = ("phi3",)
    label = "Phi-3"
    root = "layers"
    prefixes = ("", "model.")

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        sizes = decoder_sizes(config, where)
        rotary = Adaptation.ROTARY if rotary_fraction(config, where, 1.0) >= 1 else Adaptation.PARTIAL_ROTARY
        grouped = (Adaptation.GROUPED_QUERY,) if sizes["num_kv_heads"] < sizes["num_heads"] else ()
        return build_shape(
            where,
            **sizes,
            mlp=Mlp.GATED,
            family="phi3",
            activation=activation(config, "hidden_act", where, "silu"),
            adaptations=(Adaptation.CAUSAL, rotary, *grouped, Adaptation.GATED_MLP),
            initializer_range=initializer_range(config),
        )

    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        n, f, d = shape.hidden_size, shape.ffn_size, shape.head_dim
        qkv_rows = (shape.num_heads + 2 * shape.num_kv_heads) * d
        return {
            "qkv": TensorSpec("self_attn.qkv_proj.weight", (qkv_rows, n)),
            "attn_out": TensorSpec("self_attn.o_proj.weight", (n, shape.num_heads * d)),
            "gate_up": TensorSpec("mlp.gate_up_proj.weight", (2 * f, n)),
            "ffn_out": TensorSpec("mlp.down_proj.weight", (n, f)),
        }

    def mlp_roles(self, field: str, shape: ModelShape) -> tuple[str, ...]:
        return ("gate_up",) if field in ("gate", "ffn_in") else (field,)

    def to_weights(self, tensors: Mapping[str, np.ndarray], shape: ModelShape) -> LayerWeights:
        q_rows, kv_rows, f = shape.num_heads * shape.head_dim, shape.num_kv_heads * shape.head_dim, shape.ffn_size
        qkv, gate_up = tensors["qkv"], tensors["gate_up"]
        return LayerWeights(
            query=qkv[:q_rows],  # (H d, N)
            key=qkv[q_rows : q_rows + kv_rows],  # (H_kv d, N)
            value=qkv[q_rows + kv_rows :],  # (H_kv d, N)
            attn_out=tensors["attn_out"],
            gate=gate_up[:f],  # (d_ff, N)
            ffn_in=gate_up[f:],  # (d_ff, N)
            ffn_out=tensors["ffn_out"],
        )
