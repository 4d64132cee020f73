"""GPT-2: a causal decoder whose linear maps are ``Conv1D``, stored (in, out), with Q, K and V fused.

``attn.c_attn.weight`` is (N, 3N) and x @ W gives [q | k | v], so its transpose holds the three
(out, in) weights as consecutive row blocks; ``attn.c_proj``, ``mlp.c_fc`` and ``mlp.c_proj`` are
transposed likewise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.architecture import Adaptation, ModelShape
from ...core.matrices import LayerWeights
from .base import FamilyAdapter, TensorSpec
from .config import activation, build_shape, initializer_range, optional_int, positive_int


class GPT2Adapter(FamilyAdapter):
    model_types = ("gpt2",)
    label = "GPT-2"
    root = "h"
    prefixes = ("", "transformer.")
    module_in_out = True  # Conv1D

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        hidden = positive_int(config, "n_embd", where)
        return build_shape(
            where,
            num_layers=positive_int(config, "n_layer", where),
            hidden_size=hidden,
            num_heads=positive_int(config, "n_head", where),
            ffn_size=optional_int(config, "n_inner", where) or 4 * hidden,
            family="gpt2",
            activation=activation(config, "activation_function", where, "gelu_new"),
            adaptations=(Adaptation.CAUSAL,),
            initializer_range=initializer_range(config),
        )

    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        n, f = shape.hidden_size, shape.ffn_size
        return {
            "qkv": TensorSpec("attn.c_attn.weight", (n, 3 * n)),  # (in, out)
            "attn_out": TensorSpec("attn.c_proj.weight", (n, n)),
            "ffn_in": TensorSpec("mlp.c_fc.weight", (n, f)),
            "ffn_out": TensorSpec("mlp.c_proj.weight", (f, n)),
        }

    def init_scale(self, field: str, shape: ModelShape) -> float:
        """GPT-2 draws its residual projections (attn.c_proj, mlp.c_proj) with σ / √(2L)."""
        return 1.0 / math.sqrt(2 * shape.num_layers) if field in ("attn_out", "ffn_out") else 1.0

    def to_weights(self, tensors: Mapping[str, np.ndarray], shape: ModelShape) -> LayerWeights:
        query, key, value = np.split(tensors["qkv"].T, 3, axis=0)  # (3N, N) -> 3 x (N, N), (out, in)
        return LayerWeights(
            query=query,
            key=key,
            value=value,
            attn_out=tensors["attn_out"].T,
            ffn_in=tensors["ffn_in"].T,  # (d_ff, N)
            ffn_out=tensors["ffn_out"].T,  # (N, d_ff)
        )
