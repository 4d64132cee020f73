"""The config.json readers every family adapter shares: each field checked as the file declares it.

A field the analysis needs and cannot use (absent, a bool where an integer belongs, an activation
without a known Lipschitz constant) is refused with one line naming the file and the field, before
any tensor is read (SPEC §9, §11).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.architecture import ModelShape
from ...core.defaults import ACTIVATION_LIPSCHITZ, BERT_INITIALIZER_RANGE
from ...core.errors import CheckpointError, UnsupportedModelError
from ...core.limits import check_declared_sizes
from ...core.text import described, quoted
from ...core.values import is_genuine_int, is_real_number
from .registry import supported_model_types


def positive_int(config: Mapping[str, Any], name: str, where: str, default: int | None = None) -> int:
    """A positive integer field of the config (a genuine int, not a bool or 2.0)."""
    value = config.get(name)
    if value is None and default is not None:
        return default
    if value is None:
        raise CheckpointError(f"{where} lacks a positive integer '{name}', which the analysis needs")
    if not is_genuine_int(value) or int(value) < 1:
        raise CheckpointError(
            f"{where} gives '{name}' as {described(value)}, not a positive integer, which the analysis needs"
        )
    return int(value)


def optional_int(config: Mapping[str, Any], name: str, where: str) -> int:
    """A positive integer field that may be absent or null (then 0)."""
    return 0 if config.get(name) is None else positive_int(config, name, where)


def activation(config: Mapping[str, Any], name: str, where: str, default: str) -> str:
    """The activation's name, refused by name when its Lipschitz constant is not known (SPEC §11)."""
    value = config.get(name, default)
    if not isinstance(value, str) or value not in ACTIVATION_LIPSCHITZ:
        raise UnsupportedModelError(
            f"{where} names the activation '{quoted(value)}', whose Lipschitz constant is not known "
            f"(supported: {', '.join(sorted(ACTIVATION_LIPSCHITZ))}; supported families: {supported_model_types()}, "
            f"each with one of these)"
        )
    return value


def flag(config: Mapping[str, Any], name: str, where: str, default: bool) -> bool:
    value = config.get(name, default)
    if not isinstance(value, bool):
        raise CheckpointError(f"{where} gives '{name}' as {described(value)}, not true or false")
    return value


def fraction(config: Mapping[str, Any], name: str, where: str, default: float) -> float:
    value = config.get(name, default)
    if not is_real_number(value) or not 0 <= value <= 1:
        raise CheckpointError(f"{where} gives '{name}' as {described(value)}, not a number between 0 and 1")
    return float(value)


def optional_positive(config: Mapping[str, Any], name: str, where: str) -> float | None:
    """A positive number that may be absent or null (then None): a clamp, a cap, a window."""
    value = config.get(name)
    if value is None:
        return None
    if not is_real_number(value) or not 0 < value < float("inf"):
        raise CheckpointError(f"{where} gives '{name}' as {described(value)}, not a positive number or null")
    return float(value)


def sliding_window(config: Mapping[str, Any], where: str) -> bool:
    """Whether some layers attend through a sliding window: ``layer_types`` names a
    ``sliding_attention`` layer, or (without ``layer_types``) a ``sliding_window`` is given."""
    layer_types = config.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
            raise CheckpointError(f"{where} gives 'layer_types' as {described(layer_types)}, not a list of names")
        return "sliding_attention" in layer_types
    return optional_positive(config, "sliding_window", where) is not None


def initializer_range(config: Mapping[str, Any], name: str = "initializer_range") -> float:
    """σ of the family's weight initialisation N(0, σ²), for the random-initialised twin (BERT's 0.02
    when the config has no usable value)."""
    value = config.get(name, BERT_INITIALIZER_RANGE)
    if not is_real_number(value) or not 0 < value < 1e3:
        return BERT_INITIALIZER_RANGE
    return float(value)


def decoder_sizes(config: Mapping[str, Any], where: str) -> dict[str, int]:
    """The sizes of a decoder config in transformers' common names (``num_hidden_layers``,
    ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads`` defaulting to the heads,
    ``intermediate_size``, an optional ``head_dim``), as :class:`ModelShape` fields."""
    heads = positive_int(config, "num_attention_heads", where)
    return {
        "num_layers": positive_int(config, "num_hidden_layers", where),
        "hidden_size": positive_int(config, "hidden_size", where),
        "num_heads": heads,
        "ffn_size": positive_int(config, "intermediate_size", where),
        "num_kv_heads": positive_int(config, "num_key_value_heads", where, default=heads),
        "head_dim": optional_int(config, "head_dim", where),
    }


def build_shape(where: str, **fields: Any) -> ModelShape:
    """A ModelShape, its own consistency errors (heads not dividing N, ...) as one line."""
    check_declared_sizes(fields, where)
    try:
        return ModelShape(**fields)
    except ValueError as exc:
        raise UnsupportedModelError(f"{where}: {exc}") from None
