"""Phi-1, Phi-1.5 and Phi-2 (``phi``) and GPT-J (``gptj``): causal decoders of ``nn.Linear`` weights
whose attention and MLP read the same LayerNorm output and add (a parallel residual
x + Attn(LN(x)) + MLP(LN(x))), with rotary embeddings on part of each head and a plain GELU MLP.

Phi rotates ``partial_rotary_factor`` of each head (0.5 when not given) and may normalise queries
and keys (``qk_layernorm``: QK-norm, left out); GPT-J rotates the first ``rotary_dim`` features of
each head, two by two (all of them when ``rotary_dim`` is null).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...core.architecture import Adaptation, ModelShape, Residual
from .base import LinearAdapter
from .config import activation, build_shape, decoder_sizes, flag, initializer_range, optional_int, positive_int
from .neox import rotary_fraction


class PhiAdapter(LinearAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("phi",)
    label = "Phi"
    root = "layers"
    prefixes: ClassVar[tuple[str, ...]] = ("", "model.")
    names: ClassVar[dict[str, str]] = {
        "query": "self_attn.q_proj.weight",
        "key": "self_attn.k_proj.weight",
        "value": "self_attn.v_proj.weight",
        "attn_out": "self_attn.dense.weight",
        "ffn_in": "mlp.fc1.weight",
        "ffn_out": "mlp.fc2.weight",
    }

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        sizes = decoder_sizes(config, where)
        rotary = Adaptation.ROTARY if rotary_fraction(config, where, 0.5) >= 1 else Adaptation.PARTIAL_ROTARY
        adaptations = [Adaptation.CAUSAL, rotary]
        if sizes["num_kv_heads"] < sizes["num_heads"]:
            adaptations.append(Adaptation.GROUPED_QUERY)
        adaptations.append(Adaptation.PARALLEL_RESIDUAL)
        if flag(config, "qk_layernorm", where, False):
            adaptations.append(Adaptation.QK_NORM)
        return build_shape(
            where,
            **sizes,
            residual=Residual.PARALLEL,
            family="phi",
            activation=activation(config, "hidden_act", where, "gelu_new"),
            adaptations=tuple(adaptations),
            initializer_range=initializer_range(config),
        )


class GPTJAdapter(LinearAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("gptj",)
    label = "GPT-J"
    root = "h"
    prefixes: ClassVar[tuple[str, ...]] = ("", "transformer.")
    names: ClassVar[dict[str, str]] = {
        "query": "attn.q_proj.weight",
        "key": "attn.k_proj.weight",
        "value": "attn.v_proj.weight",
        "attn_out": "attn.out_proj.weight",
        "ffn_in": "mlp.fc_in.weight",
        "ffn_out": "mlp.fc_out.weight",
    }

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        hidden = positive_int(config, "n_embd", where)
        heads = positive_int(config, "n_head", where)
        rotary_dim = optional_int(config, "rotary_dim", where)  # 0: null, the whole head
        whole = rotary_dim == 0 or heads * rotary_dim >= hidden
        return build_shape(
            where,
            num_layers=positive_int(config, "n_layer", where),
            hidden_size=hidden,
            num_heads=heads,
            ffn_size=optional_int(config, "n_inner", where) or 4 * hidden,
            residual=Residual.PARALLEL,
            family="gptj",
            activation=activation(config, "activation_function", where, "gelu_new"),
            adaptations=(
                Adaptation.CAUSAL,
                Adaptation.ROTARY if whole else Adaptation.PARTIAL_ROTARY,
                Adaptation.PARALLEL_RESIDUAL,
            ),
            initializer_range=initializer_range(config),
        )
