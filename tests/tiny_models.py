"""Tiny checkpoints of every family the suite builds, from one table (family → config): real models of
transformers' own classes, saved by its own ``save_pretrained``.

:func:`tiny_model` builds one in memory, :func:`save_tiny` writes it; both take the four sizes by their
common names (``layers``, ``hidden``, ``heads``, ``ffn``), translated into the family's own config
fields, and any other config field as it is (``num_key_value_heads=2``). The weights are torch's default
initialisation after ``torch.manual_seed(seed)``, so a checkpoint is rebuilt bit for bit from its
arguments. A model whose config a test writes out in full (a head class, a family outside the table) is
:func:`transformers_model`'s, by the names of its classes; and every checkpoint a test writes, of a model
built here or changed in memory after (fine-tuned, perturbed, cast), goes through :func:`save_model`
(adapters are written by peft's own ``save_pretrained``, which is what they test). The per-family
descriptions of where each weight sits, for the parity tests of every family, are
``tests/io/families/family_models.py``'s. For example ``save_tiny(tmp / "llama", "llama", layers=1,
num_key_value_heads=2)`` writes a one-layer grouped-query Llama.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class TinyFamily:
    """How to build a tiny model of one family: its classes and its config's fields."""

    config_class: str
    model_class: str  # the bare model; a head class may be asked for instead
    #: the config's names of the number of layers, the width, the heads and the feed-forward width
    sizes: tuple[str, str, str, str] = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
    #: every other field the tiny model sets
    fixed: Mapping[str, Any] = field(default_factory=dict)


FAMILIES: dict[str, TinyFamily] = {
    "bert": TinyFamily("BertConfig", "BertModel", fixed={"vocab_size": 50, "max_position_embeddings": 16}),
    "roberta": TinyFamily("RobertaConfig", "RobertaModel", fixed={"vocab_size": 50, "max_position_embeddings": 24}),
    "distilbert": TinyFamily(
        "DistilBertConfig",
        "DistilBertModel",
        sizes=("n_layers", "dim", "n_heads", "hidden_dim"),
        fixed={"vocab_size": 50, "max_position_embeddings": 16},
    ),
    "gpt2": TinyFamily(
        "GPT2Config", "GPT2Model", sizes=("n_layer", "n_embd", "n_head", "n_inner"), fixed={"vocab_size": 40}
    ),
    "gpt_neox": TinyFamily("GPTNeoXConfig", "GPTNeoXModel", fixed={"vocab_size": 32, "max_position_embeddings": 16}),
    "llama": TinyFamily("LlamaConfig", "LlamaModel", fixed={"vocab_size": 40, "max_position_embeddings": 32}),
    "qwen2_moe": TinyFamily("Qwen2MoeConfig", "Qwen2MoeModel", fixed={"vocab_size": 40, "max_position_embeddings": 32}),
    "t5": TinyFamily(
        "T5Config",
        "T5Model",
        sizes=("num_layers", "d_model", "num_heads", "d_ff"),
        fixed={"vocab_size": 40, "decoder_start_token_id": 0},
    ),
}


class MakeCheckpoint(Protocol):
    """The ``make_checkpoint`` fixture (tests/conftest.py): a tiny encoder of ``family`` ("bert", "roberta" or
    "distilbert") saved under the test's temporary folder, its directory returned; ``safe`` picks
    model.safetensors (True) or pytorch_model.bin.

    >>> make_checkpoint("roberta", layers=1, safe=False)  # doctest: +SKIP
    """

    def __call__(
        self,
        family: str = "bert",
        *,
        layers: int = 2,
        hidden: int = 32,
        heads: int = 4,
        ffn: int = 48,
        safe: bool = True,
        seed: int = 0,
        name: str | None = None,
    ) -> Path: ...


def tiny_model(
    family: str = "bert",
    *,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 4,
    ffn: int | None = 48,
    seed: int = 0,
    head: str | None = None,
    **fields: Any,
) -> Any:
    """A randomly initialised model of ``family`` (:data:`FAMILIES`), of class ``head`` if given
    (``"BertForSequenceClassification"``); ``ffn=None`` leaves the family's default width."""

    spec = FAMILIES[family]
    sizes = dict(zip(spec.sizes, (layers, hidden, heads, ffn), strict=True))
    if ffn is None:
        del sizes[spec.sizes[3]]
    return transformers_model(spec.config_class, head or spec.model_class, {**spec.fixed, **sizes, **fields}, seed=seed)


def transformers_model(
    config_class: str,
    model_class: str,
    fields: Mapping[str, Any],
    *,
    seed: int | None = 0,
    dtype: str | None = None,
    set_after: Mapping[str, Any] | None = None,
) -> Any:
    """A randomly initialised ``model_class`` of transformers configured by ``config_class(**fields)``, both
    named as transformers exports them, after ``torch.manual_seed(seed)`` (None: torch's generator as it
    stands), cast to ``dtype`` ("float64") if given. ``set_after`` holds the config's attributes its
    constructor does not take, set before the model is built (``{"_attn_implementation": "eager"}``).

    >>> sizes = dict(num_hidden_layers=1, hidden_size=8, num_attention_heads=2, intermediate_size=16, vocab_size=20)
    >>> transformers_model("BertConfig", "BertModel", sizes).config.hidden_size  # doctest: +SKIP
    8
    """
    import torch
    import transformers

    if seed is not None:
        torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**fields)
    for attribute, value in (set_after or {}).items():
        setattr(config, attribute, value)
    model = getattr(transformers, model_class)(config)
    return model if dtype is None else model.to(getattr(torch, dtype))


def save_tiny(
    directory: Path,
    family: str = "bert",
    *,
    safe: bool = True,
    dtype: str | None = None,
    max_shard_size: str | None = None,
    **model: Any,
) -> Path:
    """:func:`tiny_model` saved into ``directory`` (in ``dtype``, in shards of at most ``max_shard_size``);
    ``safe=False`` writes the state dict pickled as transformers 4 wrote it (``pytorch_model.bin``)."""
    return save_model(tiny_model(family, **model), directory, safe=safe, dtype=dtype, max_shard_size=max_shard_size)


def save_model(
    model: Any,
    directory: Path | str,
    *,
    safe: bool = True,
    dtype: str | None = None,
    max_shard_size: str | None = None,
    original_format: bool = True,
) -> Path:
    """A transformers model in memory written into ``directory`` by its own ``save_pretrained`` (cast to
    ``dtype`` first, in shards of at most ``max_shard_size``); ``safe=False`` writes the state dict pickled
    as transformers 4 wrote it (``pytorch_model.bin``), which transformers 5 no longer does itself (it
    writes safetensors whatever ``safe_serialization`` says). ``original_format=False`` keeps the layout
    transformers holds in memory (a mixture's experts fused, 3-D) where it would write each expert's own
    matrices. The directory is returned.

    >>> save_model(tiny_model("gpt2", layers=1), tmp / "gpt2", safe=False)  # doctest: +SKIP
    """
    import torch

    directory = Path(directory)
    if dtype is not None:
        model = model.to(getattr(torch, dtype))
    options: dict[str, Any] = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.save_pretrained(directory, save_original_format=original_format, **options)
    if not safe:  # the same config beside the pickled state dict
        for shard in directory.glob("*.safetensors*"):
            shard.unlink()
        torch.save(model.state_dict(), directory / "pytorch_model.bin")
    return directory
