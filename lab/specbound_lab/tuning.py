"""Fine-tuning runs: a lab run that starts from a pretrained base instead of a fresh initialization.

A :class:`FineTuning` on a :class:`~specbound_lab.train.RunSpec` makes its run load ``base`` (a model
name, by default the lab's shipped base :data:`specbound.io.FINETUNE_BASE`, a 2-layer BERT of
width 64 pretrained on the threshold task at positions 0, 5, 9) and train it on the run's own task,

* in full (``rank`` 0): every weight trained, or
* through a LoRA adapter of rank r (peft's own ``LoraConfig``, ``lora_alpha`` = 2 r so that the
  update's scale α / r is the same at every rank) on the query, key, value, attention-output and both
  feed-forward weights, the classifier trained in full (``modules_to_save``), the rest frozen.

Checkpoints hold the merged weights (W⁰ + (α / r) B A, by peft's ``merge_and_unload`` on a copy), so a
saved step is an ordinary checkpoint for the analysis, and step 0 is the base itself: the lab's
CENTRED measures, read against a run's first step, are then centred at the base (SPEC §14). The run's
parameter count (a trivial baseline, SPEC §13b) counts the trained parameters: every one in full, the
LoRA factors and the classifier for an adapter. The flatness and sharpness searches perturb the
merged model, every weight, as for a run trained from scratch.

Example:
    >>> FineTuning(rank=4).label, FineTuning().label
    ('lora4', 'full')
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any

from specbound.core import check_number
from specbound.io import FINETUNE_BASE

#: The modules a lab LoRA adapter wraps (BERT's names): every attention and feed-forward weight.
LORA_TARGETS: tuple[str, ...] = (
    "query",
    "key",
    "value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
#: lora_alpha / r of every lab adapter.
LORA_ALPHA_PER_RANK = 2
#: The configuration fields a base must share with the run that fine-tunes it.
_SHAPE_FIELDS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")


class FineTuningError(ValueError):
    """A fine-tuning setting that cannot be used (wrapped as a LabError by the run)."""


@dataclass(frozen=True)
class FineTuning:
    """Start from ``base`` and train in full (``rank`` 0) or through a LoRA adapter of rank ``rank``."""

    base: str = FINETUNE_BASE
    rank: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.base, str) or not self.base:
            raise FineTuningError("a fine-tuning base must be a model name")
        check_number(self.rank, "the LoRA rank", 0, 4096, integer=True, error=FineTuningError)

    @property
    def lora(self) -> bool:
        return self.rank > 0

    @property
    def label(self) -> str:
        """``full`` or ``lora{r}``: the run name's part and the value of the ``fine_tuning`` axis."""
        return f"lora{self.rank}" if self.lora else "full"

    @property
    def words(self) -> str:
        """In plain words: "full fine-tuning" or "LoRA, rank 4"."""
        return f"LoRA, rank {self.rank}" if self.lora else "full fine-tuning"

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "rank": self.rank}

    @classmethod
    def from_dict(cls, data: Any) -> FineTuning:
        if not isinstance(data, dict) or set(data) - {"base", "rank"}:
            raise FineTuningError("fine_tuning must be an object with base and rank")
        return cls(**data)


def start_model(tuning: FineTuning, expected: Any, class_name: str, seed: int) -> Any:
    """The model a fine-tuning run trains: the base loaded with transformers' own ``from_pretrained``,
    checked against the run's configuration ``expected`` (its family, then the first differing
    dimension named: a base of another family with the same sizes would load none of its tensors and
    the run would train from random weights), as the run's transformers class ``class_name``, and for
    LoRA wrapped by peft (its random factors drawn from ``seed``). A LoRA adapter is no base (one line)."""
    import torch
    import transformers

    from specbound.io import adapter_directory, fetch, resolve

    if adapter_directory(tuning.base) is not None:  # transformers would refuse it with its own ValueError
        raise FineTuningError(
            f"the base {tuning.base} is a LoRA adapter, not a model: a fine-tuning run starts from a model's "
            "weights; give the model it adapts (its adapter_config.json names it) or the adapter merged into it"
        )
    path = fetch(resolve(tuning.base))  # a local directory as it is; a Hub name downloaded (offline rules)
    config = transformers.AutoConfig.from_pretrained(path)
    if config.model_type != expected.model_type:  # from_pretrained would load none of its tensors, silently
        raise FineTuningError(
            f"the base {tuning.base} is a {config.model_type} model and the run a {expected.model_type} one: "
            "a fine-tuning run starts from a base of its own family"
        )
    for name in _SHAPE_FIELDS:
        mine, theirs = getattr(expected, name, None), getattr(config, name, None)
        if mine != theirs:
            raise FineTuningError(f"the base {tuning.base} has {name} {theirs}, the run needs {mine}")
    model = getattr(transformers, class_name).from_pretrained(path)
    if not tuning.lora:
        return model
    try:
        import peft
    except ImportError:
        raise FineTuningError("a LoRA fine-tuning run needs peft (pip install peft)") from None
    torch.manual_seed(seed)
    config = peft.LoraConfig(
        r=tuning.rank,
        lora_alpha=LORA_ALPHA_PER_RANK * tuning.rank,
        target_modules=list(LORA_TARGETS),
        modules_to_save=["classifier"],
    )
    with warnings.catch_warnings():  # transformers' deprecation notices from inside peft
        warnings.simplefilter("ignore", FutureWarning)
        return peft.get_peft_model(model, config)


def merged(model: Any) -> Any:
    """The model with its adapter merged into a copy (peft's ``merge_and_unload``); the model itself
    when it has no adapter."""
    if not hasattr(model, "merge_and_unload"):
        return model
    with warnings.catch_warnings():  # transformers' deprecation notices from inside peft's copy
        warnings.simplefilter("ignore", FutureWarning)
        return copy.deepcopy(model).merge_and_unload()


def trained_parameters(model: Any) -> int:
    """The parameters the optimiser updates (every one of a model trained in full)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))
