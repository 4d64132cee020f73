"""LoRA adapters read as a model: peft's layout, merged into their base one tensor at a time (SPEC §14).

A LoRA adapter directory holds ``adapter_config.json`` and ``adapter_model.safetensors``. For every
targeted module it stores ``lora_A`` (r x in) and ``lora_B`` (out x r), and the adapted weight is

    W = W⁰ + scale · B A,      scale = lora_alpha / r      (lora_alpha / √r with ``use_rslora``),

with r the module's rank (the config's ``r``, or ``rank_pattern``'s for that module: stored factors of
another rank are refused, as peft refuses to load them) and lora_alpha the config's or
``alpha_pattern``'s for that module (:class:`ModuleSettings`; pattern keys matched in bounded time by
:mod:`specbound.core.patterns`). A module stored (in, out), GPT-2's Conv1D, takes the update
transposed, (B A)ᵀ (peft's ``fan_in_fan_out``, which peft sets from the module's type whatever the
config says, and so does specbound: where the two could read an adapter differently, peft's reading
is the reference). The config's flags are JSON booleans, its numbers real numbers. A fused
target (GPT-2's ``c_attn``, Phi-3's ``qkv_proj``, ``gate_up_proj``) is one stored tensor like any
other: the update is added to it before the family adapter splits it into its parts, so the analysis
sees exactly the merged model. Weights the adapter saves whole (``modules_to_save``) replace the
base's.

The base comes from ``base_model_name_or_path`` (a local directory or a Hub id, under the same offline
rules as any model name) or is given. :class:`LoraTensors` lays the updates over the base's tensors:
a tensor is merged in float64 when a layer asks for it, so neither the base nor the merged model is
ever held whole. Other adapter kinds (DoRA, IA³, prompt tuning, ...) are refused by name in one line.

Example:
    >>> scale_of({"lora_alpha": 16, "use_rslora": False}, "h.0.attn.c_attn", rank=4)
    4.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import CheckpointError, UnsupportedModelError
from ...core.limits import LIMITS
from ...core.patterns import MAX_STATES, PatternError, PatternTooLarge, SuffixPattern
from ...core.text import described, quoted
from ...core.values import is_genuine_int, is_real_number
from ..families.base import FamilyAdapter
from .checkpoint import Checkpoint, read_config_object
from .tensors import SafetensorsFile, TensorInfo, TensorSource

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: The key prefix peft puts before every module of the wrapped model.
PEFT_PREFIX = "base_model.model."
#: Adapter settings that make it another method than plain LoRA, refused by name.
_OTHER_METHODS: dict[str, str] = {"use_dora": "DoRA", "use_qalora": "QALoRA"}
#: At most this many characters in a rank or alpha pattern (they are regular expressions).
_MAX_PATTERN_CHARS = 200
#: The automaton states all of a config's pattern keys may unroll to together, and the steps matching
#: them to the adapter's modules may take, each of bounded time (:class:`~specbound.core.limits.Limits`).
_MAX_PATTERN_STATES, _MAX_MATCH_STEPS = LIMITS.max_pattern_states, LIMITS.max_pattern_match_steps
#: The config's settings peft reads as flags: each a JSON boolean where given (null: peft's default, false).
_FLAGS = ("use_rslora", "fan_in_fan_out", "use_dora", "use_qalora", "lora_bias", "inference_mode")
#: peft's rank where a config gives no ``r`` (``LoraConfig.r``).
PEFT_DEFAULT_RANK = 8


def is_adapter_directory(directory: Path) -> bool:
    """Whether a directory holds a peft adapter (its ``adapter_config.json``) and no model config."""
    return (directory / ADAPTER_CONFIG).is_file() and not (directory / "config.json").is_file()


def read_adapter_config(directory: Path) -> dict[str, Any]:
    """The adapter's config, checked to be a LoRA adapter that specbound can merge (one line otherwise):
    its flags JSON booleans (a string ``"false"`` is not false), ``r`` a positive integer, ``lora_alpha``
    and every ``rank_pattern`` / ``alpha_pattern`` value a real number (not a boolean), each pattern a
    regular expression the bounded matcher runs (:class:`~specbound.core.patterns.SuffixPattern`)."""
    where = f"{ADAPTER_CONFIG} in {directory.name}"
    config = read_config_object(directory / ADAPTER_CONFIG, where)
    kind = config.get("peft_type")
    if kind != "LORA":
        raise UnsupportedModelError(
            f"{directory.name} is a {quoted(kind) if isinstance(kind, str) else 'non-LoRA'} adapter: "
            "specbound reads LoRA adapters only"
        )
    for flag in _FLAGS:
        if config.get(flag) is not None and not isinstance(config[flag], bool):
            raise CheckpointError(f"{where}: {flag} must be true or false, got {described(config[flag])}")
    for flag, method in _OTHER_METHODS.items():
        if config.get(flag):
            raise UnsupportedModelError(
                f"{directory.name} is a {method} adapter ({flag}): its update is not scale · B A, "
                "and specbound reads plain LoRA adapters only"
            )
    ModuleSettings.of(config, where)  # r, lora_alpha and the patterns, checked
    return config


@dataclass(frozen=True)
class ModuleSettings:
    """What an adapter config gives each module, as peft reads it: its rank r (``rank_pattern``'s where
    a key matches the module's name, else ``r``) and its scale, lora_alpha / r or lora_alpha / √r with
    ``use_rslora`` (lora_alpha likewise from ``alpha_pattern``). A pattern key matches as peft's
    ``(.*\\.)?(key)$`` does, the first that matches deciding, through
    :class:`~specbound.core.patterns.SuffixPattern` (bounded time, whoever wrote the key).

    Example:
        >>> settings = ModuleSettings.of({"r": 4, "lora_alpha": 8, "alpha_pattern": {"c_fc": 16}})
        >>> fc, attn = "h.0.mlp.c_fc", "h.0.attn.c_attn"
        >>> settings.rank_of(fc), settings.scale_of(fc, 4), settings.scale_of(attn, 4)
        (4, 4.0, 2.0)
    """

    rank: int
    alpha: float
    rslora: bool
    rank_pattern: tuple[tuple[SuffixPattern, int], ...] = ()
    alpha_pattern: tuple[tuple[SuffixPattern, float], ...] = ()

    @classmethod
    def of(cls, config: Mapping[str, Any], where: str = ADAPTER_CONFIG) -> ModuleSettings:
        """The settings of a config (checked: one line naming the first bad value)."""
        rank, alpha = config.get("r", PEFT_DEFAULT_RANK), config.get("lora_alpha")
        if not is_genuine_int(rank) or rank < 1:
            raise CheckpointError(f"{where}: r must be a positive integer, got {described(rank)}")
        if not is_real_number(alpha, finite=True):
            raise CheckpointError(f"{where}: lora_alpha must be a number, got {described(alpha)}")
        patterns: dict[str, list[tuple[SuffixPattern, Any]]] = {}
        budget = _MAX_PATTERN_STATES
        for name in ("rank_pattern", "alpha_pattern"):
            given = config.get(name) or {}
            if not isinstance(given, dict):
                raise CheckpointError(f"{where}: {name} must map module patterns to numbers")
            patterns[name] = []
            for key, value in given.items():
                wanted = "a positive integer" if name == "rank_pattern" else "a number"
                ok = (
                    is_genuine_int(value) and value >= 1
                    if name == "rank_pattern"
                    else is_real_number(value, finite=True)
                )
                if not ok:
                    raise CheckpointError(f"{where}: {name}'s {quoted(key)} is {described(value)}, not {wanted}")
                pattern = _pattern(key, name, where, min(MAX_STATES, budget))
                budget -= pattern.states
                patterns[name].append((pattern, value))
        return cls(
            int(rank),
            float(alpha),
            config.get("use_rslora") is True,
            tuple((key, int(value)) for key, value in patterns["rank_pattern"]),
            tuple((key, float(value)) for key, value in patterns["alpha_pattern"]),
        )

    def match_steps(self, module: str) -> int:
        """An upper bound of the steps :meth:`rank_of` and :meth:`scale_of` take on ``module``."""
        return sum(key.cost(module) for key, _ in (*self.rank_pattern, *self.alpha_pattern))

    def rank_of(self, module: str) -> int:
        """The rank peft gives ``module`` (the factors it stores must have it)."""
        return next((value for key, value in self.rank_pattern if key.matches(module)), self.rank)

    def scale_of(self, module: str, rank: int) -> float:
        """The update's scale for ``module`` of rank ``rank``."""
        alpha = next((value for key, value in self.alpha_pattern if key.matches(module)), self.alpha)
        return alpha / math.sqrt(rank) if self.rslora else alpha / rank


def _pattern(key: object, name: str, where: str, max_states: int = MAX_STATES) -> SuffixPattern:
    """One key of ``rank_pattern`` or ``alpha_pattern``, ready to match in bounded time (one line if not)."""
    if not isinstance(key, str):
        raise CheckpointError(f"{where}: {name} must map module patterns to numbers")
    if len(key) > _MAX_PATTERN_CHARS:
        raise CheckpointError(f"{where}: a key of {name} has {len(key)} characters, more than {_MAX_PATTERN_CHARS}")
    try:
        return SuffixPattern(key, max(max_states, 0))
    except PatternTooLarge as exc:
        if max_states < MAX_STATES:  # the keys before took the rest of the budget
            raise CheckpointError(
                f"{where}: the keys of rank_pattern and alpha_pattern unroll to more than {_MAX_PATTERN_STATES} "
                "automaton states together"
            ) from None
        raise CheckpointError(f"{where}: the {name} key {quoted(key)} {exc}") from None
    except PatternError as exc:
        raise CheckpointError(f"{where}: the {name} key {quoted(key)} {exc}") from None


def scale_of(config: Mapping[str, Any], module: str, rank: int) -> float:
    """The update's scale for one module: lora_alpha / r, or lora_alpha / √r with ``use_rslora``
    (lora_alpha from ``alpha_pattern`` where one matches the module): :meth:`ModuleSettings.scale_of`."""
    return ModuleSettings.of({"r": rank, **config}).scale_of(module, rank)


@dataclass(frozen=True, eq=False)
class LoraUpdate:
    """One module's update scale · B A, in the layout its base tensor is stored in."""

    a: np.ndarray  # (r, in)
    b: np.ndarray  # (out, r)
    scale: float
    transposed: bool  # the base module is a Conv1D, stored (in, out): peft's fan_in_fan_out

    def dense(self) -> np.ndarray:
        delta = self.scale * (self.b @ self.a)  # (out, in)
        return delta.T if self.transposed else delta


class LoraTensors:
    """A base checkpoint's tensors with an adapter's updates laid over them (:class:`TensorSource`).

    A targeted tensor is read from the base and merged in float64 when asked for; its memory map is
    withheld, so a feed-forward matrix is merged whole (one matrix at a time, as the base is read).
    """

    def __init__(
        self, base: TensorSource, updates: Mapping[str, LoraUpdate], replaced: Mapping[str, np.ndarray]
    ) -> None:
        self._base, self.updates, self.replaced = base, updates, replaced

    def names(self) -> list[str]:
        return self._base.names()

    def info(self, name: str) -> TensorInfo:
        return self._base.info(name)

    def get(self, name: str) -> np.ndarray:
        if name in self.replaced:
            return self.replaced[name]
        weight = self._base.get(name)
        update = self.updates.get(name)
        return weight if update is None else weight + update.dense()

    def shard_of(self, name: str) -> Path:
        return self._base.shard_of(name)

    def release(self, path: Path) -> None:
        self._base.release(path)

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None:
        return None if name in self.updates or name in self.replaced else self._base.mapped(name)


def _base_tensor(module: str, names: set[str], directory: Path) -> str:
    """The base's weight tensor of an adapted module: ``{module}.weight``, or the same with leading
    parts of the module's path dropped (a base saved without its task head's prefix, ``transformer.``)."""
    parts = module.split(".")
    for start in range(len(parts)):
        candidate = ".".join(parts[start:]) + ".weight"
        if candidate in names:
            return candidate
        prefixed = [name for name in names if name.endswith("." + candidate)]
        if len(prefixed) == 1:
            return prefixed[0]
    raise CheckpointError(f"the adapter {directory.name} adapts {quoted(module)}, which its base has no weight for")


def read_updates(
    directory: Path, config: Mapping[str, Any], base: TensorSource, family: FamilyAdapter
) -> tuple[dict[str, LoraUpdate], dict[str, np.ndarray]]:
    """The adapter's updates by base tensor name, and the base tensors it saves whole (``modules_to_save``),
    each checked against the shape of the base tensor it changes.

    As peft does when it loads the adapter, each update's layout follows the type of the module it
    changes (``family``'s :meth:`~specbound.io.families.base.FamilyAdapter.stores_in_out`: GPT-2's
    ``Conv1D`` stores (in, out), ``nn.Linear`` (out, in)), not the config's ``fan_in_fan_out``, which
    peft overrides with a warning; on a square target no shape would show the difference. Factors of
    another rank than the config gives their module (``r``, ``rank_pattern``) are refused, as peft
    refuses to load them."""
    settings = ModuleSettings.of(config, f"{ADAPTER_CONFIG} in {directory.name}")
    path = directory / ADAPTER_WEIGHTS
    if not path.is_file():
        raise CheckpointError(f"{directory.name} has no {ADAPTER_WEIGHTS}: expected peft's safetensors adapter file")
    stored = SafetensorsFile(path)
    names = set(base.names())
    factors: dict[str, dict[str, np.ndarray]] = {}
    replaced: dict[str, np.ndarray] = {}
    for key in stored.names():
        module_key = key.removeprefix(PEFT_PREFIX)
        for part in ("lora_A", "lora_B"):
            if module_key.endswith(f".{part}.weight"):
                module = module_key.removesuffix(f".{part}.weight")
                factors.setdefault(module, {})[part] = stored.get(key)
                break
        else:
            if module_key.endswith(".weight") and "lora_" not in module_key:  # a module saved whole
                name = module_key.replace(".modules_to_save.default", "")
                if name in names:
                    replaced[name] = stored.get(key)
    steps = sum(settings.match_steps(module) for module in factors)
    if steps > _MAX_MATCH_STEPS:
        raise CheckpointError(
            f"the adapter {directory.name}'s rank_pattern and alpha_pattern would take up to {steps:,} steps to "
            f"match its {len(factors)} modules, more than {_MAX_MATCH_STEPS:,}: too many keys, or keys too complex"
        )
    updates = {}
    for module, pair in factors.items():
        if set(pair) != {"lora_A", "lora_B"}:
            raise CheckpointError(
                f"the adapter {directory.name} has only one of lora_A and lora_B for {quoted(module)}"
            )
        a, b = pair["lora_A"], pair["lora_B"]
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
            raise CheckpointError(
                f"the adapter {directory.name}'s factors of {quoted(module)} have shapes {a.shape} and {b.shape}, "
                "not (r, in) and (out, r)"
            )
        rank = settings.rank_of(module)
        if a.shape[0] != rank:
            raise CheckpointError(
                f"the adapter {directory.name} stores {quoted(module)} at rank {a.shape[0]} but its config gives "
                f"it rank {rank} (r or rank_pattern), so peft would not load it: is {ADAPTER_CONFIG} the one "
                "saved with these weights?"
            )
        target = _base_tensor(module, names, directory)
        update = LoraUpdate(a, b, settings.scale_of(module, rank), family.stores_in_out(target))
        produced = (b.shape[0], a.shape[1])[:: -1 if update.transposed else 1]
        if tuple(base.info(target).shape) != produced:
            raise CheckpointError(
                f"the adapter {directory.name}'s update of {quoted(module)} has shape {produced}, but the base's "
                f"{target} has {tuple(base.info(target).shape)}: is it the base this adapter was trained on?"
            )
        updates[target] = update
    for name, weight in replaced.items():
        if tuple(weight.shape) != tuple(base.info(name).shape):
            raise CheckpointError(f"the adapter {directory.name} saves {name} with another shape than its base's")
    if not updates:
        raise CheckpointError(f"the adapter {directory.name} holds no lora_A / lora_B pair")
    return updates, replaced


def base_reference(directory: Path, config: Mapping[str, Any]) -> str:
    """The base the adapter was trained on, as its config names it (a directory or a Hub id)."""
    base = config.get("base_model_name_or_path")
    if not isinstance(base, str) or not base:
        raise CheckpointError(
            f"the adapter {directory.name} does not name its base (base_model_name_or_path): give the base with --base"
        )
    return base


def open_adapter(directory: Path, base: Checkpoint) -> Checkpoint:
    """The adapted model: ``base``'s checkpoint with the adapter in ``directory`` merged into it as its
    tensors are read. Its layers are not cached one by one (a layer's revision would be the pair's)."""
    config = read_adapter_config(directory)
    updates, replaced = read_updates(directory, config, base.reader, base.adapter)
    return Checkpoint(base.shape, base.adapter, LoraTensors(base.reader, updates, replaced), directory.name)
