"""A peft ``PeftModel`` held in memory, read as its tuned weights and its base (SPEC §14).

A notebook user fine-tuning with LoRA holds a ``PeftModel``: the base model with LoRA layers wrapped
around its targeted modules. Its state dict names the base's weights ``...q_proj.base_layer.weight``
beside ``lora_A`` and ``lora_B``, which no family adapter reads. What its active adapter computes is,
per LoRA layer,

    W = W⁰ + scale · B A      (scale = ``scaling[adapter]``: lora_alpha / r, or / √r with ``use_rslora``),

with ``B A`` transposed for a Conv1D layer (``fan_in_fan_out``, GPT-2) and for an embedding, exactly as
peft's own ``get_delta_weight`` lays it out. :func:`peft_parts` reads the adapter as it is defined,
not through peft's merge, which works in the model's dtype (in float32, ``W − W⁰`` would be rounding
noise of full rank where it is exactly rank ≤ r):

- a LoRA layer: W⁰ is its base layer's weight, and ``W = W⁰ + scale · B A`` in float64 from the active
  adapter's own ``lora_A``/``lora_B`` and ``scaling``. A layer whose adapters were merged in
  (``merge_adapter()``; peft records them in ``merged_adapters``) holds ``W⁰ + Σ ΔW`` rounded to its
  dtype: W⁰ is recovered by subtracting each merged adapter's ΔW (peft's own, as peft added it) in
  float64, rounded back to the weight's dtype, and accepted only if peft's merge of it gives the
  stored weights again bit for bit; else the model is refused in one line. The numbers are then those
  of the model before merging.
- a ``modules_to_save`` module: W⁰ is its ``original_module``'s weights, W its trained copy
  ``modules_to_save[adapter]``'s (the original where the active adapter has no copy).
- everything else: the base's tensors, unchanged, in both.

Inside peft's ``disable_adapter()`` context (or after ``disable_adapter_layers()``) a layer computes its
base alone, so it is read as its base: W = W⁰ there (peft's forward skips both the LoRA factors and a
``modules_to_save`` copy of a disabled layer, and unmerges a merged one). Each layer is read by its own
flag, as peft's forward reads it; a model whose every layer is disabled is named "adapters disabled",
and its analysis is the base's, centred at itself: every difference of rank 0.

Only the active adapter is read, and named; several active adapters, an adapter that is not plain
LoRA (DoRA, IA³, prompts), or LoRA on a layer kind whose update is not a matrix product (convolutions,
attention modules) is refused in one line. The model given is left as it was: nothing is merged,
copied whole or moved; the tuned state dict holds float64 copies of the adapted matrices only.

Example (a peft model in memory; see ``tests/io/test_peft_model.py``)::

    >>> parts = peft_parts(peft_model)                                  # doctest: +SKIP
    >>> parts.adapter, parts.tuned["model.layers.0.self_attn.q_proj.weight"].dtype  # doctest: +SKIP
    ('default', torch.float64)
"""

from __future__ import annotations

from collections.abc import Mapping
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
    """A ``PeftModel`` taken apart: the state dicts of its tuned model and of its base (the plain
    model's tensor names), the plain model's config, the active adapter's name, and the names the two
    are shown under."""

    tuned: Mapping[str, Any]  # name -> tensor: the active adapter applied (float64 where it changes a tensor)
    base: Mapping[str, Any]  # name -> tensor: W⁰, the model's own tensors where nothing was merged in
    config: Any  # the plain model's PretrainedConfig
    adapter: str
    model_name: str
    base_name: str


def peft_parts(model: Any, name: str | None = None) -> PeftParts:
    """The tuned weights and the base of a ``PeftModel`` (module docstring), read from its LoRA
    factors in float64; ``name`` labels the tuned model (default: the base's name with the adapter's,
    ``"my-base + LoRA 'default' (in memory)"``).

    Raises :class:`UnsupportedModelError` (one line) for several active adapters, one that is not
    plain LoRA, a LoRA layer of another kind than linear, Conv1D or embedding, or merged weights
    whose base cannot be recovered exactly."""
    adapter, config = _active_lora(model)
    import torch

    inner = model.get_base_model()
    with torch.no_grad():
        changed = _adapted_tensors(inner, adapter)
        base: dict[str, Any] = {}
        tuned: dict[str, Any] = {}
        for key, tensor in inner.state_dict().items():
            if not _inside(key, changed):
                base[key] = tuned[key] = tensor
        for module, tensors in changed.items():
            for leaf, (before, after) in tensors.items():
                base[f"{module}.{leaf}"], tuned[f"{module}.{leaf}"] = before, after
    recorded = getattr(config, "base_model_name_or_path", None)
    base_label = recorded if isinstance(recorded, str) and recorded else type(inner).__name__
    base_name = f"{quoted(base_label)} (in memory)"
    state = "adapters disabled, " if _all_disabled(inner) else ""
    model_name = name or f"{quoted(base_label)} + LoRA '{quoted(adapter)}' ({state}in memory)"
    return PeftParts(tuned, base, inner.config, adapter, model_name, base_name)


def _active_lora(model: Any) -> tuple[str, Any]:
    """The active adapter's name and config, refused in one line unless it is one plain LoRA adapter."""
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
    return adapter, config


def _adapted_tensors(inner: Any, adapter: str) -> dict[str, dict[str, tuple[Any, Any]]]:
    """Per peft module (its name in the plain model), the tensors it replaces: leaf name -> (W⁰, W)."""
    from peft.tuners.lora import LoraLayer
    from peft.utils import ModulesToSaveWrapper
    from peft.utils.other import AuxiliaryTrainingWrapper

    changed: dict[str, dict[str, tuple[Any, Any]]] = {}
    for module_name, module in inner.named_modules():
        if _inside(module_name, changed):
            continue  # inside a peft module already read (its base layer, its adapters)
        if isinstance(module, LoraLayer):
            changed[module_name] = _lora_layer(module, module_name, adapter)
        elif isinstance(module, ModulesToSaveWrapper):
            original = module.original_module.state_dict()
            copies = module.modules_to_save
            trained = copies[adapter].state_dict() if adapter in copies and not _disabled(module) else original
            changed[module_name] = {leaf: (tensor, trained[leaf]) for leaf, tensor in original.items()}
        elif isinstance(module, AuxiliaryTrainingWrapper):
            raise UnsupportedModelError(
                f"the PeftModel's module '{quoted(module_name)}' is a {type(module).__name__} "
                "(trainable tokens): specbound reads LoRA layers and modules_to_save only"
            )
    return changed


def _disabled(module: Any) -> bool:
    """Whether peft module ``module`` (a LoRA layer, a ``modules_to_save`` wrapper) has its adapters
    disabled (peft's ``disable_adapter()`` context, ``disable_adapter_layers()``): its forward is its base's."""
    return bool(getattr(module, "disable_adapters", False))


def _all_disabled(inner: Any) -> bool:
    """Whether every peft module of the model has its adapters disabled (and there is at least one)."""
    from peft.tuners.lora import LoraLayer
    from peft.utils import ModulesToSaveWrapper

    flags = [_disabled(m) for m in inner.modules() if isinstance(m, LoraLayer | ModulesToSaveWrapper)]
    return bool(flags) and all(flags)


def _inside(name: str, modules: Mapping[str, Any]) -> bool:
    """Whether the dotted ``name`` lies inside one of ``modules`` (by name): one look-up per prefix,
    so a model's tensors are sorted in time linear in their count."""
    parts = name.split(".")
    return any(".".join(parts[:end]) in modules for end in range(1, len(parts)))


def _lora_layer(module: Any, module_name: str, adapter: str) -> dict[str, tuple[Any, Any]]:
    """(W⁰, W) of one LoRA layer's tensors (module docstring): W⁰ its base layer's (recovered if
    adapters are merged in), W = W⁰ + scale · B A in float64 where the active adapter adapts it and the
    layer's adapters are not disabled (else W = W⁰); a bias likewise, where an adapter has ``lora_bias``
    (its ``lora_B`` bias times the scale)."""
    merged = list(getattr(module, "merged_adapters", []))
    for name in [*merged, adapter]:
        if name in getattr(module, "lora_variant", {}):
            raise UnsupportedModelError(
                f"the PeftModel's layer '{quoted(module_name)}' holds adapter '{quoted(name)}' as a LoRA variant "
                f"({type(module.lora_variant[name]).__name__}): specbound reads plain LoRA adapters only"
            )
    stored = dict(module.get_base_layer().state_dict())
    parts: dict[str, tuple[Any, Any]] = {leaf: (tensor, tensor) for leaf, tensor in stored.items()}
    weight = _unmerged(module, module_name, stored["weight"], merged) if merged else stored["weight"]
    bias = stored.get("bias")
    biased = [name for name in merged if _has_lora_bias(module, name)]
    if bias is not None and biased:
        bias = bias.double() - sum(_bias_delta(module, name) for name in biased)
    adapted = _has_adapter(module, adapter) and not _disabled(module)
    parts["weight"] = (weight, weight.double() + _delta(module, module_name, adapter) if adapted else weight)
    if bias is not None:
        parts["bias"] = (
            bias,
            bias.double() + _bias_delta(module, adapter) if adapted and _has_lora_bias(module, adapter) else bias,
        )
    return parts


def _has_lora_bias(module: Any, adapter: str) -> bool:
    """Whether ``adapter`` trains a bias in LoRA layer ``module`` (peft's ``lora_bias``)."""
    return bool(getattr(module, "lora_bias", {}).get(adapter, False))


def _has_adapter(module: Any, adapter: str) -> bool:
    """Whether LoRA layer ``module`` holds factors of ``adapter`` (a linear or an embedding layer)."""
    return adapter in module.lora_A or adapter in getattr(module, "lora_embedding_A", {})


def _delta(module: Any, module_name: str, adapter: str) -> Any:
    """scale · B A of ``adapter`` in the base layer's weight layout, in float64, laid out as peft's
    ``get_delta_weight`` lays it out: ``B A`` (out × in) for a linear layer, transposed for a Conv1D
    one (``fan_in_fan_out``, in × out), and transposed for an embedding (``lora_embedding_B`` dim × r,
    ``lora_embedding_A`` r × vocabulary; the weight is vocabulary × dim)."""
    from peft.tuners.lora import Embedding, Linear

    scale = float(module.scaling[adapter])
    if isinstance(module, Embedding):
        b, a = module.lora_embedding_B[adapter].double(), module.lora_embedding_A[adapter].double()
        return (b @ a).T * scale  # (vocabulary, dim)
    if isinstance(module, Linear):
        up: Any = module.lora_B[adapter].weight  # (out, r)
        down: Any = module.lora_A[adapter].weight  # (r, in)
        product = up.double() @ down.double()  # (out, in)
        return (product.T if module.fan_in_fan_out else product) * scale
    raise UnsupportedModelError(
        f"the PeftModel's LoRA layer '{quoted(module_name)}' is a {type(module).__name__} layer: specbound "
        "reads LoRA on linear, Conv1D and embedding layers only"
    )


def _bias_delta(module: Any, adapter: str) -> Any:
    """What ``lora_bias`` adds to a linear layer's bias: ``lora_B``'s bias times the scale, float64."""
    return module.lora_B[adapter].bias.double() * float(module.scaling[adapter])


def _unmerged(module: Any, module_name: str, weight: Any, merged: list[str]) -> Any:
    """W⁰ of a layer holding ``merged`` adapters merged in: ``weight − Σ ΔW`` in float64, each ΔW
    peft's own ``get_delta_weight`` cast to the weight's dtype as peft added it, rounded back to that
    dtype. Accepted only when merging again as peft does (``W⁰ + ΔW`` in the weight's dtype, adapter
    by adapter) gives ``weight`` bit for bit: a base that peft's merge maps to the stored weights, the
    original up to that merge's own rounding; else refused in one line."""
    import torch

    unknown = [name for name in merged if not _has_adapter(module, name)]
    if unknown:
        raise UnsupportedModelError(
            f"the PeftModel's layer '{quoted(module_name)}' has adapter '{quoted(unknown[0])}' merged into its "
            "weights, and its factors are gone: its base weights cannot be recovered; analyse the model before merging"
        )
    deltas = [module.get_delta_weight(name).to(weight.dtype) for name in merged]
    recovered = weight.double()
    for delta in deltas:
        recovered = recovered - delta.double()
    candidate = recovered.to(weight.dtype)
    again = candidate.clone()
    for delta in deltas:
        again += delta
    if not torch.equal(again, weight):
        raise UnsupportedModelError(
            f"the PeftModel's layer '{quoted(module_name)}' has adapter(s) {', '.join(map(quoted, merged))} merged "
            f"into its {str(weight.dtype).removeprefix('torch.')} weights (merge_adapter()), and its base weights "
            "cannot be recovered exactly from them: analyse the model before merging"
        )
    return candidate
