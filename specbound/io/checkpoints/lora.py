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
base's. Only the modules the config targets as peft decides it (:class:`Targeting`: ``target_modules``,
``exclude_modules``, ``modules_to_save``, ``layers_to_transform``) are merged, as peft loads no other
factor; every stored module finds its base weight by a suffix at a dot (:class:`BaseNames`).

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
import re
from collections.abc import Iterable, Mapping
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
from .checkpoint import ADAPTER_CONFIG, Checkpoint, read_config_object
from .tensors import SafetensorsFile, TensorInfo, TensorSource

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
    regular expression the bounded matcher runs (:class:`~specbound.core.patterns.SuffixPattern`). Which
    modules it targets is checked where its factors are read (:func:`read_updates`)."""
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

    @property
    def states(self) -> int:
        """The automaton states its pattern keys unroll to together."""
        return sum(key.states for key, _ in (*self.rank_pattern, *self.alpha_pattern))

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


#: peft's shorthand for every linear module but the output head (``INCLUDE_LINEAR_LAYERS_SHORTHAND``).
ALL_LINEAR = "all-linear"
#: The heads peft's task models add to ``modules_to_save`` themselves (``SEQ_CLS_HEAD_NAMES`` and
#: question answering's ``qa_outputs``): a task's new head, which a base saved without it lacks and the
#: analysis never reads.
TASK_HEADS = frozenset({"score", "classifier", "qa_outputs"})


@dataclass(frozen=True)
class _Names:
    """A list of module names as peft matches it: a name equal to one of them, or ending with one after
    a dot (``dot``; ``target_modules``, ``exclude_modules``) or ending with one at all (``modules_to_save``
    when peft wraps a module). Only suffixes of the listed lengths are looked up, one set look-up each, so
    a name costs one step per distinct length (:meth:`cost`) however long the list."""

    names: frozenset[str]
    lengths: tuple[int, ...]

    @classmethod
    def of(cls, value: object, field: str, where: str) -> _Names:
        if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
            raise CheckpointError(f"{where}: {field} must be a string or a list of strings, got {described(value)}")
        names = frozenset(value)
        return cls(names, tuple(sorted({len(name) for name in names})))

    def cost(self, module: str) -> int:
        return sum(1 for length in self.lengths if length <= len(module))

    def ends(self, module: str, dot: bool = True) -> bool:
        if module in self.names:
            return True
        for length in self.lengths:
            if length >= len(module):
                break
            if (not dot or module[-length - 1] == ".") and module[len(module) - length :] in self.names:
                return True
        return False


def _anchored(expression: str, pattern: str, field: str, where: str, budget: int, tail: str = "") -> SuffixPattern:
    """``pattern``, a regular expression from the config, inside peft's ``expression`` (``{}`` where the
    pattern goes), as a bounded matcher of the whole module name (one line if it cannot be one): peft's
    ``re.fullmatch`` / ``re.match`` are never run on it, as Python's backtracking can take minutes. A
    match from the name's start (``re.match``) is a full match of the expression followed by ``tail``,
    ``[\\s\\S]*``."""
    if len(pattern) > _MAX_PATTERN_CHARS:
        raise CheckpointError(f"{where}: {field} has {len(pattern)} characters, more than {_MAX_PATTERN_CHARS}")
    full = expression.format(pattern)
    try:
        re.compile(full)  # compiling runs nothing; an expression peft could not compile, it could not load
    except (re.error, RecursionError, OverflowError, ValueError):
        raise CheckpointError(f"{where}: {field} {quoted(pattern)} is not a valid regular expression") from None
    try:  # the whole name, from its start (\A) to its end (\Z); ``tail`` what may follow a re.match
        return SuffixPattern(rf"\A(?:{full}){tail}\Z", max(budget, 0))
    except PatternError as exc:
        raise CheckpointError(f"{where}: {field} {quoted(pattern)} {exc}") from None


@dataclass(frozen=True)
class Targeting:
    r"""Which modules peft adapts when it loads an adapter, by its own rules
    (``peft.tuners.tuners_utils.check_target_module_exists``), in this order:

    1. ``exclude_modules`` excludes a module: a string as ``re.fullmatch`` of the whole name, a list as
       the name itself or a suffix at a dot;
    2. so does a ``modules_to_save`` entry ``m`` (``re.match(rf"(^|.*\.){m}($|\..*)", name)``): peft never
       puts LoRA on a module it saves whole;
    3. ``target_modules``: a string is a regular expression the whole name must match (``re.fullmatch``;
       ``"c_attn"`` matches no module of GPT-2, ``".*c_attn"`` all of them); ``"all-linear"`` (any case)
       is every linear module but the output head, which specbound never reads; a list matches the name
       itself, then a suffix at a dot, and only this last match is limited to the layers
       ``layers_to_transform`` gives (an int or a list of ints), the layer being the first number part
       that follows ``layers_pattern`` (or, without one, any part after the first).

    ``layers_to_transform`` or ``layers_pattern`` with ``target_modules`` a string (``"all-linear"``
    too), and ``layers_pattern`` without ``layers_to_transform``, are refused as peft's ``LoraConfig``
    refuses them. The rules are applied to
    the modules the file stores factors for, which are named as peft named them when it saved the
    adapter. peft creates LoRA layers on the targeted modules only and loads no factor of another one
    (``load_state_dict`` sets unexpected keys aside), so its loaded model is the base plus the targeted
    updates: specbound merges exactly those and ignores the others, as refusing would refuse adapters
    that peft loads. Regular expressions run in bounded time (:class:`~specbound.core.patterns.SuffixPattern`);
    a ``layers_pattern`` must be a plain name (``layers``, ``h``, ``model.layers``), else it is refused.

    Example:
        >>> targeting = Targeting.of({"target_modules": ["c_attn"], "layers_to_transform": [1]})
        >>> [targeting.adapts(f"transformer.h.{i}.attn.c_attn") for i in (0, 1)]
        [False, True]
        >>> Targeting.of({"target_modules": "c_attn"}).adapts("transformer.h.0.attn.c_attn")  # a full match
        False
    """

    targets: _Names | SuffixPattern | None  # a list, an expression, or None: "all-linear"
    exclude: _Names | SuffixPattern | None = None
    saved: tuple[SuffixPattern, ...] = ()
    saved_names: _Names | None = None  # the same entries as peft matches them when it wraps a module
    layers: frozenset[int] | None = None
    layers_pattern: tuple[SuffixPattern, ...] = ()

    @classmethod
    def of(cls, config: Mapping[str, Any], where: str = ADAPTER_CONFIG, budget: int = MAX_STATES) -> Targeting:
        """The targeting of a config (one line naming the first value peft would not take); its
        expressions unroll to at most ``budget`` automaton states together."""
        left = [budget]

        def expression(template: str, pattern: object, field: str, tail: str = "") -> SuffixPattern:
            if not isinstance(pattern, str):
                raise CheckpointError(
                    f"{where}: {field} must be a string or a list of strings, got {described(pattern)}"
                )
            made = _anchored(template, pattern, field, where, min(MAX_STATES, left[0]), tail)
            left[0] -= made.states
            return made

        given = config.get("target_modules")
        targets: _Names | SuffixPattern | None
        if isinstance(given, str):
            targets = None if given.lower() == ALL_LINEAR else expression("{}", given, "target_modules")
            for field in ("layers_to_transform", "layers_pattern"):
                if config.get(field) is not None:  # "all-linear" too: peft's LoraConfig checks the string
                    raise CheckpointError(
                        f"{where}: {field} cannot be used when target_modules is a string (peft refuses it too)"
                    )
        elif given is None:
            raise CheckpointError(
                f"{where}: target_modules is not given: peft would pick its default for the model type, which "
                "specbound does not guess"
            )
        else:
            targets = _Names.of(given, "target_modules", where)
        excluded = config.get("exclude_modules")
        exclude = (
            None
            if not excluded
            else expression("{}", excluded, "exclude_modules")
            if isinstance(excluded, str)
            else _Names.of(excluded, "exclude_modules", where)
        )
        saved_list = config.get("modules_to_save") or []
        saved_names = _Names.of(saved_list, "modules_to_save", where)
        saved = tuple(expression(r"(^|.*\.){}($|\..*)", m, "modules_to_save", r"[\s\S]*") for m in saved_list)
        layers = config.get("layers_to_transform")
        if layers is not None and not (
            is_genuine_int(layers) or (isinstance(layers, list) and all(is_genuine_int(i) for i in layers))
        ):
            raise CheckpointError(
                f"{where}: layers_to_transform must be a layer index or a list of them, got {described(layers)}"
            )
        listed = layers if isinstance(layers, list) else [] if layers is None else [layers]
        indexes = frozenset(int(index) for index in listed) if layers is not None and layers != [] else None
        by_pattern = config.get("layers_pattern") or []
        if by_pattern and layers is None:
            raise CheckpointError(f"{where}: layers_pattern is given without layers_to_transform (peft refuses it too)")
        names = [by_pattern] if isinstance(by_pattern, str) else by_pattern
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise CheckpointError(f"{where}: layers_pattern must be a string or a list of strings")
        plain = tuple(SuffixPattern(name) for name in names if name)
        if len(plain) != len(names) or not all(pattern.plain for pattern in plain):
            raise CheckpointError(
                f"{where}: layers_pattern must name the layers' list plainly (layers, h, model.layers), got "
                f"{described(by_pattern)}"
            )
        return cls(targets, exclude, saved, saved_names, indexes, plain)

    def cost(self, module: str) -> int:
        """An upper bound of the steps :meth:`adapts` takes on ``module`` (counted before any is run)."""
        steps = sum(pattern.cost(module) for pattern in self.saved)
        for matcher in (self.targets, self.exclude):
            steps += 0 if matcher is None else matcher.cost(module)
        if self.layers_pattern:
            numbers = sum(part.isdecimal() for part in module.split("."))
            steps += numbers * (len(module) + 1) * len(self.layers_pattern)
        return steps

    def adapts(self, module: str) -> bool:
        """Whether peft puts a LoRA layer on ``module`` (rules 1 to 3 of the class's docstring)."""
        if isinstance(self.exclude, SuffixPattern) and self.exclude.matches(module):
            return False
        if isinstance(self.exclude, _Names) and self.exclude.ends(module):
            return False
        if self.saved_whole(module):
            return False
        if self.targets is None:
            return True
        if isinstance(self.targets, SuffixPattern):
            return self.targets.matches(module)
        if module in self.targets.names:
            return True  # named whole: peft applies no layer rule
        if not self.targets.ends(module):
            return False
        return self.layers is None or self.layer_of(module) in self.layers

    def saved_whole(self, module: str) -> bool:
        """Whether a ``modules_to_save`` entry covers ``module`` as peft keeps LoRA off it (rule 2)."""
        return any(pattern.matches(module) for pattern in self.saved)

    def layer_of(self, module: str) -> int | None:
        r"""The layer index peft reads in a module's name: the first number part after a part matching
        ``layers_pattern`` (peft's ``(?:^|.*?\.){pattern}\.(\d+)\.``), or without one the first number
        part after the first two parts (``.*?\.[^.]*\.(\d+)\.``); neither the prefix before the pattern
        nor the number's part may hold a line break, and the number is followed by a dot."""
        parts = module.split(".")
        numbered = [j for j in range(1, len(parts) - 1) if parts[j].isdecimal()]
        if not self.layers_pattern:
            first = next((j for j in numbered if j >= 2), None)
            if first is None or "\n" in ".".join(parts[: first - 1]):
                return None
            return int(parts[first])
        for pattern in self.layers_pattern:
            for j in numbered:
                before = ".".join(parts[:j])
                if not before.endswith("\n") and pattern.matches(before):
                    return int(parts[j])
        return None

    def saves(self, module: str) -> bool:
        """Whether peft wraps ``module`` to load a weight saved whole: an entry of ``modules_to_save``
        ends its name (peft's ``_set_trainable``: ``name.endswith(entry)``, no dot needed)."""
        return self.saved_names is not None and self.saved_names.ends(module, dot=False)


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
        result: np.ndarray = delta.T if self.transposed else delta
        return result


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


class BaseNames:
    """The base's tensor names, indexed once by their dotted suffixes, so that an adapter's module finds
    its base weight in time linear in the module name's length, whatever the names.

    The rule (:meth:`weight_of`): the module's ``{module}.weight`` if the base has it, else the unique base
    name that ends with ``.{module}.weight``, else the same two with the module's first part dropped,
    then its first two, ... The first rule of the list that finds a name decides. It resolves a base
    saved under another task class than the one the adapter was trained on either way round: an adapter
    of ``BertForSequenceClassification`` (``bert.encoder.layer...``) on a ``BertModel`` (``encoder.layer...``),
    or one of ``BertModel`` on a base saved with its task head's prefix. The index is a tree of the
    names' parts read from the end (one node per distinct suffix, counting the names below it), so a
    look-up walks the module's parts once, instead of joining and scanning every name at every split
    point (quadratic in the parts: a 200 KB name took minutes).

    Example:
        >>> names = BaseNames(["bert.encoder.layer.0.output.dense.weight", "bert.pooler.dense.weight"])
        >>> names.weight_of("encoder.layer.0.output.dense"), names.weight_of("base.layer.0.output.dense")
        ('bert.encoder.layer.0.output.dense.weight', 'bert.encoder.layer.0.output.dense.weight')
        >>> names.weight_of("dense") is None  # two names end with it: no guess
        True
    """

    def __init__(self, names: Iterable[str]) -> None:
        #: suffix node: [children by part, names below, one name below, the name ending exactly here]
        self._root: list[Any] = [{}, 0, None, None]
        for name in names:
            node = self._root
            for part in reversed(name.split(".")):
                node = node[0].setdefault(part, [{}, 0, None, None])
                node[1] += 1
                node[2] = name
            node[3] = name

    def __contains__(self, name: object) -> bool:
        """Whether the base has a tensor of exactly this name."""
        if not isinstance(name, str):
            return False
        node = self._root
        for part in reversed(name.split(".")):
            node = node[0].get(part)
            if node is None:
                return False
        return node[3] is not None

    def weight_of(self, module: str) -> str | None:
        """The base's weight tensor of an adapted module by the rule above, or None."""
        found, node = None, self._root[0].get("weight")
        for part in reversed(module.split(".")):  # a candidate holds at least one of the module's parts
            node = None if node is None else node[0].get(part)
            if node is None:
                break
            # the name itself, else the one name that ends with it after a dot
            below = node[1] - (node[3] is not None)
            found = node[3] if node[3] is not None else (node[2] if below == 1 else found)
        return found


def read_updates(
    directory: Path, config: Mapping[str, Any], base: TensorSource, family: FamilyAdapter
) -> tuple[dict[str, LoraUpdate], dict[str, np.ndarray]]:
    """The adapter's updates by base tensor name, and the base tensors it saves whole (``modules_to_save``),
    each checked against the shape of the base tensor it changes, as peft's loaded model has them.

    - **Which factors count**: those of the modules the config targets (:class:`Targeting`, peft's own
      rules); peft loads no other factor, so neither does specbound. A config that targets none of the
      stored modules is refused in one line (peft refuses to load an adapter that targets nothing), and
      so is one whose ``modules_to_save`` covers a module the file stores factors of and not weights for
      (peft wraps the module, looks for its saved weights and stops with a ``KeyError``).
    - **Which base weight** a stored module changes: :meth:`BaseNames.weight_of` (a suffix at a dot, so a
      base saved under another task class's prefix is read right); a module without one is refused.
    - **Weights saved whole** (``modules_to_save``: a module's weight and bias) are matched to the base
      by the same rule, where the config's ``modules_to_save`` wraps their module as peft's does (a
      saved tensor it does not wrap, peft does not load either); one that matches no base weight is
      refused in one line naming it, but a task's head (``classifier``, ``score``, ``qa_outputs``) that
      the base has not got is left out: it is new in the task model, and the analysis never reads it.
      Two stored modules that would change the same base weight are refused.
    - **Layout**: as peft does when it loads the adapter, each update's layout follows the type of the
      module it changes (``family``'s :meth:`~specbound.io.families.base.FamilyAdapter.stores_in_out`:
      GPT-2's ``Conv1D`` stores (in, out), ``nn.Linear`` (out, in)), not the config's ``fan_in_fan_out``,
      which peft overrides with a warning; on a square target no shape would show the difference.
    - **Rank**: factors of another rank than the config gives their module (``r``, ``rank_pattern``) are
      refused, as peft refuses to load them.

    Bounded whatever the file: a tensor name longer than ``LIMITS.max_tensor_name_chars`` is refused
    before any is matched, every name is matched in time linear in its length, and the steps of the
    config's patterns on every module are summed, and bounded, before any is run."""
    where = f"{ADAPTER_CONFIG} in {directory.name}"
    settings = ModuleSettings.of(config, where)
    targeting = Targeting.of(config, where, _MAX_PATTERN_STATES - settings.states)
    path = directory / ADAPTER_WEIGHTS
    if not path.is_file():
        raise CheckpointError(f"{directory.name} has no {ADAPTER_WEIGHTS}: expected peft's safetensors adapter file")
    stored = SafetensorsFile(path)
    keys = stored.names()
    longest = max(keys, key=len, default="")
    if len(longest) > LIMITS.max_tensor_name_chars:
        raise CheckpointError(
            f"the adapter {directory.name} names a tensor of {len(longest):,} characters ({quoted(longest)}), more "
            f"than the {LIMITS.max_tensor_name_chars:,} a module's may have"
        )
    factors: dict[str, dict[str, str]] = {}  # module -> lora_A / lora_B -> its key in the file
    saved: dict[str, dict[str, str]] = {}  # module saved whole -> weight / bias -> its key in the file
    for key in keys:
        module_key = key.removeprefix(PEFT_PREFIX)
        for part in ("lora_A", "lora_B"):
            if module_key.endswith(f".{part}.weight"):
                factors.setdefault(module_key.removesuffix(f".{part}.weight"), {})[part] = key
                break
        else:
            module, _, parameter = module_key.replace(".modules_to_save.default", "").rpartition(".")
            if parameter in ("weight", "bias") and module and "lora_" not in module_key:  # a module saved whole
                saved.setdefault(module, {})[parameter] = key
    steps = sum(settings.match_steps(module) + targeting.cost(module) for module in factors)
    steps += sum(0 if targeting.saved_names is None else targeting.saved_names.cost(module) for module in saved)
    if steps > _MAX_MATCH_STEPS:
        raise CheckpointError(
            f"the adapter {directory.name}'s module patterns would take up to {steps:,} steps to match its "
            f"{len(factors)} modules, more than {_MAX_MATCH_STEPS:,}: too many keys, or keys too complex"
        )
    adapted = {module: pair for module, pair in factors.items() if targeting.adapts(module)}
    unsaved = next((m for m in factors if m not in adapted and m not in saved and targeting.saved_whole(m)), None)
    if unsaved is not None:  # peft wraps the module to load its weights, and finds none (a KeyError)
        raise CheckpointError(
            f"the adapter {directory.name}'s config saves {quoted(unsaved)} whole (modules_to_save), but its file "
            "holds that module's LoRA factors, not its weights, so peft would not load it"
        )
    if factors and not adapted:
        raise CheckpointError(
            f"the adapter {directory.name}'s config targets none of the {len(factors)} modules it stores factors "
            "for (target_modules, exclude_modules, modules_to_save, layers_to_transform): peft would load none of them"
        )
    names = BaseNames(base.names())
    updates = {}
    for module, pair in adapted.items():
        if set(pair) != {"lora_A", "lora_B"}:
            raise CheckpointError(
                f"the adapter {directory.name} has only one of lora_A and lora_B for {quoted(module)}"
            )
        a, b = stored.get(pair["lora_A"]), stored.get(pair["lora_B"])
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
        target = names.weight_of(module)
        if target is None:
            raise CheckpointError(
                f"the adapter {directory.name} adapts {quoted(module)}, which its base has no weight for"
            )
        update = LoraUpdate(a, b, settings.scale_of(module, rank), family.stores_in_out(target))
        produced = (b.shape[0], a.shape[1])[:: -1 if update.transposed else 1]
        if tuple(base.info(target).shape) != produced:
            raise CheckpointError(
                f"the adapter {directory.name}'s update of {quoted(module)} has shape {produced}, but the base's "
                f"{target} has {tuple(base.info(target).shape)}: is it the base this adapter was trained on?"
            )
        if target in updates:
            raise CheckpointError(
                f"the adapter {directory.name} stores two modules that change its base's {quoted(target)}: "
                f"{quoted(module)} is one"
            )
        updates[target] = update
    replaced: dict[str, np.ndarray] = {}
    for module, parameters in saved.items():
        if not targeting.saves(module):
            continue  # peft wraps no such module, so it loads no such tensor
        weight = names.weight_of(module)
        if weight is None and module.rsplit(".", 1)[-1] in TASK_HEADS:
            continue  # a task's new head: not in the base, never read by the analysis
        for parameter, key in sorted(parameters.items(), reverse=True):  # the weight first
            target = None if weight is None else weight.removesuffix("weight") + parameter
            if target is None or target not in names:
                raise CheckpointError(
                    f"the adapter {directory.name} saves {quoted(module)} whole (modules_to_save), but its base "
                    f"has no {parameter} for that module: is it the base this adapter was trained on?"
                )
            if tuple(stored.info(key).shape) != tuple(base.info(target).shape):
                raise CheckpointError(f"the adapter {directory.name} saves {target} with another shape than its base's")
            replaced[target] = stored.get(key)
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
