"""A peft ``PeftModel`` held in memory, read as its merged model and its base (SPEC §14).

A notebook user fine-tuning with LoRA holds a ``PeftModel``: the base model with LoRA layers wrapped
around its targeted modules. Its state dict names the base's weights ``...q_proj.base_layer.weight``
beside ``lora_A`` and ``lora_B``, which no family adapter reads. What it computes is the merged model

    W = W⁰ + scale · B A      (scale = lora_alpha / r, or / √r with ``use_rslora``; per module),

so :func:`peft_parts` hands over exactly that, through peft's own code on copies: the merged model
from ``merge_and_unload`` (of the active adapter alone), and the base from ``unload`` (the LoRA layers
taken out, nothing merged). The model given is left as it was. The pair is then read like any model
and base in memory: the merged model's numbers, centred at the base, as an adapter directory on disk
is read. Only the active adapter is merged, and named; a model with several active adapters, or whose
active adapter is not plain LoRA (DoRA, IA³, prompts), is refused in one line.

The copies cost the model's memory twice more while the analysis runs; a model too large for that
is better saved (``save_pretrained``) and read from its adapter directory, one tensor at a time.

Example (a peft model in memory; see ``tests/io/test_peft_model.py``)::

    >>> parts = peft_parts(peft_model)                                  # doctest: +SKIP
    >>> parts.adapter, type(parts.merged).__name__                      # doctest: +SKIP
    ('default', 'LlamaForCausalLM')
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ...core.errors import UnsupportedModelError
from ...core.text import quoted

__all__ = ["PeftParts", "is_peft_model", "peft_parts"]


def is_peft_model(source: object) -> bool:
    """Whether ``source`` is a peft ``PeftModel`` (decided without importing peft when it is not one)."""
    if not type(source).__module__.startswith("peft"):
        return False
    from peft import PeftModel

    return isinstance(source, PeftModel)


@dataclass(frozen=True, eq=False)
class PeftParts:
    """A ``PeftModel`` taken apart: its merged model, its base, the active adapter's name, and the
    names the two are shown under."""

    merged: Any  # a transformers PreTrainedModel, the active adapter merged in
    base: Any  # the same model with the LoRA layers taken out
    adapter: str
    model_name: str
    base_name: str


def peft_parts(model: Any, name: str | None = None) -> PeftParts:
    """The merged model and the base of a ``PeftModel`` (module docstring), through peft's own
    ``merge_and_unload`` and ``unload`` on deep copies; ``name`` labels the merged model (default: the
    base's name with the adapter's, ``"my-base + LoRA 'default' (in memory)"``).

    Raises :class:`UnsupportedModelError` (one line) for several active adapters or one that is not
    plain LoRA."""
    active = list(getattr(model, "active_adapters", None) or [])
    configs = dict(getattr(model, "peft_config", {}) or {})
    if len(active) != 1:
        raise UnsupportedModelError(
            f"the PeftModel has {len(active)} active adapters ({', '.join(map(quoted, active)) or 'none'}) of "
            f"{len(configs)} ({', '.join(map(quoted, configs))}): make one active with set_adapter(name)"
        )
    adapter = active[0]
    config = configs.get(adapter)
    kind = getattr(getattr(config, "peft_type", None), "value", None)
    if kind != "LORA":
        raise UnsupportedModelError(
            f"the PeftModel's active adapter '{quoted(adapter)}' is a {quoted(kind)} adapter: "
            "specbound reads LoRA adapters only"
        )
    if getattr(config, "use_dora", False):
        raise UnsupportedModelError(
            f"the PeftModel's active adapter '{quoted(adapter)}' is a DoRA adapter (use_dora): its update is "
            "not scale · B A, and specbound reads plain LoRA adapters only"
        )
    merged = copy.deepcopy(model).merge_and_unload(adapter_names=[adapter])
    base = copy.deepcopy(model).unload()
    recorded = getattr(config, "base_model_name_or_path", None)
    base_label = recorded if isinstance(recorded, str) and recorded else type(base).__name__
    base_name = f"{base_label} (in memory)"
    model_name = name or f"{base_label} + LoRA '{adapter}' (in memory)"
    return PeftParts(merged, base, adapter, model_name, base_name)
