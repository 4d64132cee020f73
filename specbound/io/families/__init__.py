"""Family adapters, registered by the ``model_type`` of config.json (SPEC §11).

Adding a family is one module with one :class:`~specbound.io.families.base.FamilyAdapter` and one
line in the registration below; nothing else in the package names a weight. The lookups are
:mod:`specbound.io.families.registry`'s.
"""

from __future__ import annotations

from .base import FamilyAdapter, TensorSpec
from .bert import BertAdapter, DistilBertAdapter, ViTAdapter
from .bloom import BloomAdapter, FalconAdapter
from .gemma import GemmaAdapter
from .gpt2 import GPT2Adapter
from .llama import LlamaAdapter
from .llama_variants import Olmo2Adapter, OlmoAdapter, Qwen3Adapter
from .moe import MixtralAdapter, MoeAdapter, Qwen2MoeAdapter, Qwen3MoeAdapter
from .neox import GPTNeoXAdapter
from .opt import OPTAdapter
from .phi import GPTJAdapter, PhiAdapter
from .phi3 import Phi3Adapter
from .registry import (
    ADAPTERS,
    FAMILY_NAMES,
    adapter_for,
    adapter_of_config,
    family_name,
    matrix_tensors,
    register,
    supported_model_types,
)
from .seq2seq import BartAdapter, T5Adapter

__all__ = [
    "ADAPTERS",
    "FAMILY_NAMES",
    "FamilyAdapter",
    "TensorSpec",
    "adapter_for",
    "adapter_of_config",
    "family_name",
    "matrix_tensors",
    "supported_model_types",
]

for _adapter in (
    BertAdapter(),
    DistilBertAdapter(),
    ViTAdapter(),
    GPT2Adapter(),
    GPTNeoXAdapter(),
    OPTAdapter(),
    LlamaAdapter(),
    Qwen3Adapter(),
    Olmo2Adapter(),
    OlmoAdapter(),
    GemmaAdapter(),
    Phi3Adapter(),
    PhiAdapter(),
    GPTJAdapter(),
    BloomAdapter(),
    FalconAdapter(),
    MixtralAdapter(),
    Qwen2MoeAdapter(),
    Qwen3MoeAdapter(),
    MoeAdapter(),
    T5Adapter(),
    BartAdapter(),
):
    register(_adapter)
