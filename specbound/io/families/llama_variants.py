"""Llama's block with one more departure: Qwen3 and OLMo-2 normalise queries and keys (``q_norm``,
``k_norm``: Qwen3 per head, OLMo-2 over the whole projection), OLMo may clamp Q, K and V to
[-``clip_qkv``, ``clip_qkv``] (its LayerNorms have no weights, which changes nothing here: every norm
is left out). The weights are Llama's ``nn.Linear`` ones under the same names; the norms and the
clamp are named as adaptations and left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...core.architecture import Adaptation
from .config import optional_positive, sliding_window
from .llama import LlamaAdapter


class Qwen3Adapter(LlamaAdapter):
    """Qwen3: RMS norms on each query and key head (``self_attn.q_norm``, ``self_attn.k_norm``)."""

    model_types: ClassVar[tuple[str, ...]] = ("qwen3",)
    label = "Qwen3"

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        window = (Adaptation.SLIDING_WINDOW,) if sliding_window(config, where) else ()
        return (Adaptation.QK_NORM, *window)


class Olmo2Adapter(LlamaAdapter):
    """OLMo-2: RMS norms over the whole query and key projections, norms after each sub-block."""

    model_types: ClassVar[tuple[str, ...]] = ("olmo2",)
    label = "OLMo-2"

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        return (Adaptation.QK_NORM,)


class OlmoAdapter(LlamaAdapter):
    """OLMo: parameter-free LayerNorms and, when ``clip_qkv`` is set, a clamp of Q, K and V."""

    model_types: ClassVar[tuple[str, ...]] = ("olmo",)
    label = "OLMo"

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        return (Adaptation.CLIPPED_QKV,) if optional_positive(config, "clip_qkv", where) is not None else ()
