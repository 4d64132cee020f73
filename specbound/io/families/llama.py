"""Llama-family decoders (Llama, Mistral, Qwen2): rotary embeddings, grouped-query attention with
H_kv = ``num_key_value_heads``, an explicit ``head_dim`` when the config has one (H d may differ from
N), and a gated SiLU MLP (``gate_proj``, ``up_proj``, ``down_proj``). Every weight is an ``nn.Linear``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...core.architecture import Adaptation, Mlp, ModelShape
from .base import LinearAdapter
from .config import activation, build_shape, decoder_sizes, initializer_range


class LlamaAdapter(LinearAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("llama", "mistral", "qwen2")
    label = "Llama"
    root = "layers"
    prefixes: ClassVar[tuple[str, ...]] = ("", "model.")
    names: ClassVar[dict[str, str]] = {
        "query": "self_attn.q_proj.weight",
        "key": "self_attn.k_proj.weight",
        "value": "self_attn.v_proj.weight",
        "attn_out": "self_attn.o_proj.weight",
        "gate": "mlp.gate_proj.weight",
        "ffn_in": "mlp.up_proj.weight",
        "ffn_out": "mlp.down_proj.weight",
    }

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        """What a variant adds to the Llama block (QK-norm, a clamp, ...), after the Llama ones."""
        return ()

    def causal(self, config: Mapping[str, Any], where: str) -> bool:
        return True

    def activation_of(self, config: Mapping[str, Any], where: str) -> str:
        return activation(config, "hidden_act", where, "silu")

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        sizes = decoder_sizes(config, where)
        adaptations = [Adaptation.CAUSAL] if self.causal(config, where) else []
        adaptations.append(Adaptation.ROTARY)
        if sizes["num_kv_heads"] < sizes["num_heads"]:
            adaptations.append(Adaptation.GROUPED_QUERY)
        adaptations.append(Adaptation.GATED_MLP)
        adaptations += self.family_adaptations(config, where)
        return build_shape(
            where,
            **sizes,
            mlp=Mlp.GATED,
            family=str(config["model_type"]),
            activation=self.activation_of(config, where),
            adaptations=tuple(adaptations),
            initializer_range=initializer_range(config),
        )
