"""The family adapters by the ``model_type`` of config.json (SPEC §11), and how each family is written.

The adapters register here once, in :mod:`specbound.io.families` (:func:`register`); this module
imports none of them, so the config readers they use (:mod:`specbound.io.families.config`) can name
the supported families in their messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.errors import UnsupportedModelError
from ...core.profile import SpectralProfile
from ...core.text import quoted
from .base import FamilyAdapter

#: model_type -> adapter, one instance per family (filled by :func:`register`).
ADAPTERS: dict[str, FamilyAdapter] = {}


def register(adapter: FamilyAdapter) -> None:
    """Read every ``model_type`` of ``adapter`` with it."""
    for model_type in adapter.model_types:
        ADAPTERS[model_type] = adapter


#: How each model_type is written for people.
FAMILY_NAMES: dict[str, str] = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "xlm-roberta": "XLM-RoBERTa",
    "camembert": "CamemBERT",
    "electra": "ELECTRA",
    "distilbert": "DistilBERT",
    "vit": "ViT",
    "gpt2": "GPT-2",
    "gpt_neox": "GPT-NeoX (Pythia)",
    "opt": "OPT",
    "llama": "Llama",
    "mistral": "Mistral",
    "qwen2": "Qwen2",
    "qwen3": "Qwen3",
    "olmo": "OLMo",
    "olmo2": "OLMo-2",
    "gemma": "Gemma",
    "gemma2": "Gemma 2",
    "gemma3_text": "Gemma 3",
    "phi3": "Phi-3",
    "phi": "Phi",
    "gptj": "GPT-J",
    "bloom": "BLOOM",
    "falcon": "Falcon",
    "mixtral": "Mixtral",
    "qwen2_moe": "Qwen2-MoE",
    "qwen3_moe": "Qwen3-MoE",
    "olmoe": "OLMoE",
    "t5": "T5",
    "mt5": "mT5",
    "bart": "BART",
    "mbart": "mBART",
}


def family_name(model_type: str) -> str:
    """'GPT-2' for 'gpt2'; an unknown model_type as it is."""
    return FAMILY_NAMES.get(model_type, model_type)


def supported_model_types() -> str:
    return ", ".join(sorted(ADAPTERS))


def adapter_for(model_type: str) -> FamilyAdapter:
    """The adapter of a family, by model_type; UnsupportedModelError naming the supported ones."""
    adapter = ADAPTERS.get(model_type)
    if adapter is None:
        raise UnsupportedModelError(
            f"model type '{quoted(model_type)}' is not supported (supported families: {supported_model_types()})"
        )
    return adapter


def adapter_of_config(config: Mapping[str, Any], where: str) -> FamilyAdapter:
    """The adapter for a config.json, refusing remote code, unknown families and experts in a family
    whose adapter does not read them."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in ADAPTERS:
        raise UnsupportedModelError(
            f"model type '{quoted(model_type)}' is not supported (supported families: {supported_model_types()})"
        )
    if "auto_map" in config:
        raise UnsupportedModelError(
            f"{where} asks for remote code (auto_map), which is never run "
            f"(supported families: {supported_model_types()})"
        )
    for field in ("num_local_experts", "num_experts", "moe_num_experts"):
        if config.get(field) and not ADAPTERS[model_type].reads_experts:
            raise UnsupportedModelError(
                f"{where} describes a mixture of experts ({field}), which is not supported "
                f"(supported families: {supported_model_types()})"
            )
    return ADAPTERS[model_type]


def matrix_tensors(profile: SpectralProfile) -> list[tuple[str, ...]]:
    """For every matrix of a profile (profile order), the checkpoint tensors it is built from
    (:meth:`FamilyAdapter.matrix_tensors`); empty tuples for a family no adapter reads (a profile from
    an atlas may carry one)."""
    adapter = ADAPTERS.get(profile.shape.family)
    if adapter is None:
        return [() for _ in profile.ids]
    return [adapter.matrix_tensors(profile.shape, matrix) for matrix in profile.ids]
