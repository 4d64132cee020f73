"""OPT: a causal decoder of ``nn.Linear`` weights and a ReLU MLP (``fc1``, ``fc2``).

``word_embed_proj_dim`` only sizes the embeddings' projections, which the analysis leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...core.architecture import Adaptation, ModelShape
from .base import LinearAdapter
from .config import activation, build_shape, initializer_range, positive_int


class OPTAdapter(LinearAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("opt",)
    label = "OPT"
    root = "decoder.layers"
    prefixes: ClassVar[tuple[str, ...]] = ("", "model.")
    names: ClassVar[dict[str, str]] = {
        "query": "self_attn.q_proj.weight",
        "key": "self_attn.k_proj.weight",
        "value": "self_attn.v_proj.weight",
        "attn_out": "self_attn.out_proj.weight",
        "ffn_in": "fc1.weight",
        "ffn_out": "fc2.weight",
    }

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        return build_shape(
            where,
            num_layers=positive_int(config, "num_hidden_layers", where),
            hidden_size=positive_int(config, "hidden_size", where),
            num_heads=positive_int(config, "num_attention_heads", where),
            ffn_size=positive_int(config, "ffn_dim", where),
            family="opt",
            activation=activation(config, "activation_function", where, "relu"),
            adaptations=(Adaptation.CAUSAL,),
            initializer_range=initializer_range(config, "init_std"),
        )
