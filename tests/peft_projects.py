"""A training folder as a researcher leaves it after LoRA fine-tuning, written by peft itself.

``models/my-base`` (a tiny Llama, grouped-query attention) and ``models/my-lora`` (r = 4 on the
query, value and down projections), the adapter saved by peft's own ``save_pretrained`` while the
working directory was the project's, so ``adapter_config.json`` records the relative path
``models/my-base``, as it does for a user who trained from their project folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypedDict

from tiny_models import save_model


class LlamaSizes(TypedDict):
    """The keyword arguments of ``transformers.LlamaConfig`` that :data:`LLAMA` sets."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    pad_token_id: int


class LoraSettings(TypedDict):
    """The keyword arguments of ``peft.LoraConfig`` that :data:`LORA` sets."""

    r: int
    lora_alpha: int
    target_modules: list[str]
    init_lora_weights: bool


#: The tiny Llama's config (GQA: 4 query heads on 2 key/value heads).
LLAMA = LlamaSizes(
    vocab_size=64,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=48,
    pad_token_id=0,
)
#: The adapter: M_out (down_proj) changes with rank 4, M_gate and M_in (gate_proj, up_proj) not at all.
LORA = LoraSettings(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
#: Where the base and the adapter are, inside the project, and what the adapter records.
BASE, ADAPTER = "models/my-base", "models/my-lora"


def llama(seed: int) -> Any:
    """A tiny random Llama (transformers' own class), the same for the same seed."""
    import torch
    import transformers

    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**LLAMA))


def make_project(root: Path) -> Path:
    """Write the project into ``root`` (from inside it, as training would) and return ``root``."""
    import peft
    import torch
    import transformers

    root.mkdir(parents=True, exist_ok=True)
    before = Path.cwd()
    os.chdir(root)
    try:
        save_model(llama(0), BASE)
        base = transformers.LlamaForCausalLM.from_pretrained(BASE)
        torch.manual_seed(1)
        peft.get_peft_model(base, peft.LoraConfig(**LORA)).save_pretrained(ADAPTER)
    finally:
        os.chdir(before)
    return root
