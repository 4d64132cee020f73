"""Gemma, Gemma 2 and Gemma 3 (text): Llama's weights and names with an explicit ``head_dim`` (256 in
the released models, H d ≠ N), multi- or grouped-query attention and a gated GELU-tanh MLP
(``hidden_activation``, or Gemma 1's ``hidden_act``: ``gelu_pytorch_tanh``, L_φ 1.13).

Gemma 2 caps its attention logits (c·tanh(logits / c), ``attn_logit_softcapping``) and alternates
sliding-window and global layers; Gemma 3 normalises queries and keys per head (``q_norm``,
``k_norm``) and has sliding-window layers too. The cap, the window and the norms are adaptations,
left out; the softmax scale ``query_pre_attn_scalar`` is left out like every softmax scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...core.architecture import Adaptation
from .config import activation, flag, optional_positive, sliding_window
from .llama import LlamaAdapter


class GemmaAdapter(LlamaAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("gemma", "gemma2", "gemma3_text")
    label = "Gemma"

    def activation_of(self, config: Mapping[str, Any], where: str) -> str:
        name = "hidden_activation" if config.get("hidden_activation") is not None else "hidden_act"
        return activation(config, name, where, "gelu_pytorch_tanh")

    def causal(self, config: Mapping[str, Any], where: str) -> bool:
        """EmbeddingGemma (a ``gemma3_text`` config with ``use_bidirectional_attention``) is an encoder."""
        return config.get("use_bidirectional_attention") is None or not flag(
            config, "use_bidirectional_attention", where, False
        )

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        adaptations = []
        if optional_positive(config, "attn_logit_softcapping", where) is not None:
            adaptations.append(Adaptation.SOFTCAPPING)
        if config["model_type"] != "gemma" and sliding_window(config, where):
            adaptations.append(Adaptation.SLIDING_WINDOW)
        if config["model_type"] == "gemma3_text":
            adaptations.append(Adaptation.QK_NORM)
        return tuple(adaptations)
