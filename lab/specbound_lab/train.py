"""Training one small Transformer (a BERT encoder or a GPT-2, Llama or GPT-NeoX decoder) on a synthetic
task, with checkpoints and measured errors.

Families (``RunSpec.family``, SPEC §13), each built from transformers' own classes with the same sizes:
``bert`` (``BertForSequenceClassification``; the [CLS] id V in front of the tokens), ``gpt2``,
``llama`` (grouped-query attention with H / 2 key/value heads, gated SiLU MLP) and ``neox``
(``use_parallel_residual``), as ``...ForSequenceClassification`` for a classification task (the
summary id V *after* the tokens: a causal model reads the whole input there) and ``...ForCausalLM``
for next-token prediction (the Markov task: the input is the tokens themselves, the loss and error are
over the T - 1 predicted positions, and the gap is test loss minus training loss). Every family and
task is trained by the code below. The rest of this docstring describes the BERT case; a decoder
differs only where said.

The model is transformers' ``BertForSequenceClassification`` (two labels) built from a ``BertConfig``:
L layers of width N with H heads, intermediate size 4 N (BERT's ratio), no dropout (the lab studies
the trained function itself, without explicit regularisation besides AdamW's weight decay). The input is
the task's T tokens behind one [CLS] token (id V), so max_position_embeddings = T + 1; the padding id
V + 1 never occurs, so every data token keeps a trainable embedding.

Optimisation: AdamW with a constant learning rate on minibatches drawn with replacement (the whole
training set when it is smaller than the batch), seeded; ``torch.use_deterministic_algorithms(True)``
and a fixed thread count make a run reproducible bit for bit on one CPU.

Measured at every saved step (in eval mode): the training error on the whole training set and the test
error on ``test_samples`` fresh examples (stream TEST of the run's seed, the same set at every step),
with standard error sqrt(e (1 - e) / m). After the last step, the measures that need the model itself
(the MODEL measures of :mod:`specbound_lab.registry`: PAC-Bayes flatness and sharpness) are computed
on the final weights and the training set. Checkpoints are written with ``save_pretrained``
(config.json + model.safetensors) at step 0 and every ``save_every`` steps, and at the last step.

The passes without gradients (fit checks, error measurements, the searches' errors) run under
``torch.inference_mode``, through the process's compiled graph of the architecture where compiling pays
(:mod:`~specbound_lab.compiled`; ``compile=False``: eagerly); training steps are eager.

torch and transformers are imported inside the functions that train, so reading lab results stays light.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from specbound.core import ProgressCallback, ProgressEvent, SpecboundError, check_number, silent, torch_threads

from .limits import LAB_LIMITS
from .registry import ModelProbe, model_measures
from .tasks import LabeledSample, LabTask, Task, ThresholdTask
from .tuning import FineTuning, FineTuningError, merged, start_model, trained_parameters

if TYPE_CHECKING:
    import torch

#: Feed-forward width as a multiple of N, as in BERT.
FFN_RATIO: int = 4
#: A classification run has fitted its training set when its training cross-entropy is at most this
#: (Jiang et al. 2020, §4: the stopping criterion of their models), or, with label noise, its training
#: error is 0 (:func:`fits_training_set`).
FIT_LOSS: float = 0.01
#: The fit-check cadence of the first sweeps trained to a fit (their run names carry no cadence).
_FIRST_FIT_CADENCE: int = 100
#: AdamW's moment decays: torch's defaults (beta2 is a setting, :attr:`TrainSettings.adam_beta2`).
ADAM_BETA1: float = 0.9
ADAM_BETA2: float = 0.999


class Family(StrEnum):
    """A model family of the lab (SPEC §13), by the name ``--family`` takes, the ``family`` column of
    runs.csv and a record's ``family`` key; bert is the default.

    A :class:`~enum.StrEnum`, so it is written as that name wherever it goes and equals it (records and
    tables read the same as when families were plain strings). A family's name in words lives here and
    nowhere else.

    Examples:
        >>> Family("gpt2") is Family.GPT2, f"{Family.GPT2}", Family.GPT2.decoder, Family.BERT.decoder
        (True, 'gpt2', True, False)
        >>> Family.NEOX.words, Family.BERT.words, Family.BERT.short_words
        ('GPT-NeoX decoder', 'BERT encoder', 'encoder')
    """

    BERT = "bert"
    GPT2 = "gpt2"
    LLAMA = "llama"
    NEOX = "neox"

    @property
    def decoder(self) -> bool:
        """A causal decoder: the only families trained on next-token prediction."""
        return self is not Family.BERT

    @property
    def words(self) -> str:
        """One model of the family in words: ``BERT encoder``, ``GPT-2 decoder`` (a label, a sentence)."""
        return _FAMILY_WORDS[self]

    @property
    def short_words(self) -> str:
        """:attr:`words` on the dashboard: the lab's default family is ``encoder`` there, so that its
        small models never read as the BERT Miniatures the other pages open."""
        return "encoder" if self is Family.BERT else self.words

    @property
    def grouped_query(self) -> bool:
        """Llama's grouped-query attention: H / 2 key/value heads, so H must be even."""
        return self is Family.LLAMA

    @property
    def gated_mlp(self) -> bool:
        """Llama's gated MLP: three feed-forward matrices (gate, up, down) where the others have two."""
        return self is Family.LLAMA


_FAMILY_WORDS: dict[Family, str] = {
    Family.BERT: "BERT encoder",
    Family.GPT2: "GPT-2 decoder",
    Family.LLAMA: "Llama decoder",
    Family.NEOX: "GPT-NeoX decoder",
}
#: The model families of the lab, in the order ``--family`` lists them.
FAMILIES: tuple[Family, ...] = tuple(Family)
#: The decoders among them (the only ones trained on next-token prediction).
DECODERS: frozenset[Family] = frozenset(f for f in Family if f.decoder)
CHECKPOINTS_DIR = "checkpoints"
#: About this many progress events per run (often enough for a bar, rare enough to cost nothing).
PROGRESS_EVENTS: int = 100
_EVAL_CHUNK = 2048  # examples per forward pass when measuring errors (fewer for long sequences)
#: Of which the activations of one evaluation pass (the chunk shrinks to fit).
_EVAL_BYTES: int = 128 * 1024**2


def _activation_bytes(spec: RunSpec, examples: int) -> int:
    """float32 bytes of one layer's activations for ``examples`` sequences of T + 1 tokens.

    Attention scores and probabilities (2 H (T+1)^2 per example) and about 12 N (T+1) for the
    projections, the feed-forward block (4 N) and the residual stream.
    """
    tokens = spec.task.length + 1
    return 4 * examples * (2 * spec.heads * tokens * tokens + 12 * spec.hidden * tokens)


def eval_chunk(spec: RunSpec) -> int:
    """Examples per evaluation pass: at most 2048, and few enough for :data:`_EVAL_BYTES`."""
    return max(1, min(_EVAL_CHUNK, _EVAL_BYTES // max(1, _activation_bytes(spec, 1))))


def memory_estimate(spec: RunSpec) -> int:
    """Bytes a run needs beyond the model: its samples (int64 tokens, drawn then copied with [CLS]),
    the training batch's activations of every layer (kept for the backward pass) and one
    evaluation pass's."""
    samples = spec.n_train + spec.settings.test_samples
    data = 2 * 8 * samples * (spec.task.length + 1)
    batch = min(spec.settings.batch_size, spec.n_train)
    training = spec.layers * _activation_bytes(spec, batch)
    return data + training + _activation_bytes(spec, eval_chunk(spec))


def _settings_dict(settings: TrainSettings) -> dict[str, Any]:
    """The settings as a record stores them; ``until_fit``, ``fit_every``, ``adam_beta2``,
    ``model_measures`` and ``fused_adam`` only when they differ from their defaults (older records have
    none of them)."""
    values = asdict(settings)
    if not values["until_fit"]:
        del values["until_fit"]
    if not values["fit_every"]:
        del values["fit_every"]
    if values["adam_beta2"] == ADAM_BETA2:
        del values["adam_beta2"]
    if values["model_measures"]:
        del values["model_measures"]
    if not values["fused_adam"]:
        del values["fused_adam"]
    return values


class LabError(SpecboundError):
    """A lab setting or file that cannot be used."""


def family_of(name: str) -> Family:
    """The :class:`Family` of ``name`` (a Family or its name), LabError for an unknown one.

    >>> family_of("llama") is Family.LLAMA
    True
    """
    try:
        return Family(name)
    except ValueError:
        raise LabError(f"unknown family {name!r} (known: {', '.join(FAMILIES)})") from None


def task_of(name: str) -> Task:
    """The :class:`~specbound_lab.tasks.Task` of ``name`` (a Task or its kind), LabError for an unknown one.

    >>> task_of("parity") is Task.PARITY
    True
    """
    try:
        return Task(name)
    except ValueError:
        raise LabError(f"unknown task {name!r} (known: {', '.join(Task)})") from None


class TrainingCancelled(SpecboundError):
    """The cancel hook asked the run to stop; its partial checkpoints are not a finished run."""


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation and measurement settings shared by the runs of a sweep."""

    steps: int = 600
    save_every: int = 150
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 64
    test_samples: int = 4000
    threads: int = 1
    #: train until the training set is fitted (SPEC §13b: :data:`FIT_LOSS`, checked on the whole training
    #: set every ``fit_every`` steps; the run ends at the first check where it holds, saved there as its
    #: last checkpoint), ``steps`` being the cap; a next-token task cannot fit and trains its ``steps``
    until_fit: bool = False
    #: steps between two fit checks; 0: at every saved step. A check measures the training set alone, so
    #: checking often and saving (test error, checkpoint, analysis) rarely is what keeps a run cheap
    fit_every: int = 0
    #: AdamW's second-moment decay. torch's default suits the sweeps; grokking recipes use 0.98 (Power et
    #: al. 2022, Nanda et al. 2023), with which full-batch training does not fall back to high training
    #: error mid-run the way it does at 0.999
    adam_beta2: float = ADAM_BETA2
    #: compute the MODEL measures (the PAC-Bayes flatness and sharpness searches) on the final weights.
    #: They take most of a fitted run's time; a study whose endpoints read none of them (the
    #: pre-registered one) turns them off, and its records hold NaN for them, as every earlier step does
    model_measures: bool = True
    #: AdamW's fused kernel (torch's ``fused=True``): its update step took 0.4x the time of the
    #: per-parameter one on one core (BERT L = 2, N = 64), but it rounds differently, so its weights
    #: drift from the default loop's (by up to 7e-3 after 60 steps there) and the trajectory with them
    #: (a tiny bert run fitted at step 160 instead of 180, a gpt2 run's training loss at step 100 was
    #: 0.14 instead of 0.26): off by default, and a run with it is another run (its name says so)
    fused_adam: bool = False

    def __post_init__(self) -> None:
        _check_int("steps", self.steps, 1, LAB_LIMITS.max_steps)
        _check_int("save_every", self.save_every, 1, LAB_LIMITS.max_steps)
        _check_int("batch_size", self.batch_size, 1, LAB_LIMITS.max_train)
        _check_int("test_samples", self.test_samples, 1, LAB_LIMITS.max_test_samples)
        _check_int("threads", self.threads, 1, LAB_LIMITS.max_threads)
        low, high = LAB_LIMITS.min_learning_rate, LAB_LIMITS.max_learning_rate
        check_number(self.learning_rate, "the learning rate", low, high, error=LabError)
        check_number(self.weight_decay, "the weight decay", 0, 1, error=LabError)
        if not isinstance(self.until_fit, bool):
            raise LabError(f"until_fit must be true or false, got {self.until_fit!r}")
        _check_int("fit_every", self.fit_every, 0, LAB_LIMITS.max_steps)
        if not isinstance(self.model_measures, bool):
            raise LabError(f"model_measures must be true or false, got {self.model_measures!r}")
        if not isinstance(self.fused_adam, bool):
            raise LabError(f"fused_adam must be true or false, got {self.fused_adam!r}")
        check_number(self.adam_beta2, "adam_beta2", 0, 1, open_low=True, open_high=True, error=LabError)

    @property
    def fit_check_every(self) -> int:
        """Steps between two fit checks: ``fit_every``, or ``save_every`` when it is 0."""
        return self.fit_every or self.save_every

    @property
    def save_steps(self) -> tuple[int, ...]:
        """0, k, 2k, ... and the last step."""
        return tuple(sorted({*range(0, self.steps + 1, self.save_every), self.steps}))


def _check_int(name: str, value: int, low: int, high: int) -> None:
    """An integer setting of a run: :func:`~specbound.core.check_number`, refused as a LabError."""
    check_number(value, name, low, high, integer=True, error=LabError)


@dataclass(frozen=True)
class RunSpec:
    """One training run: architecture, data, seed and settings. Its name identifies it in a sweep."""

    layers: int
    hidden: int
    heads: int
    n_train: int
    seed: int = 0
    task: LabTask = field(default_factory=ThresholdTask)
    settings: TrainSettings = field(default_factory=TrainSettings)
    #: the model family (its name is read too: ``family="gpt2"`` is Family.GPT2)
    family: Family = Family.BERT
    #: start from a pretrained base (:mod:`specbound_lab.tuning`) instead of a fresh initialization
    fine_tuning: FineTuning | None = None

    def __post_init__(self) -> None:
        _check_int("layers", self.layers, 1, LAB_LIMITS.max_layers)
        _check_int("hidden", self.hidden, 2, LAB_LIMITS.max_hidden)
        _check_int("heads", self.heads, 1, LAB_LIMITS.max_heads)
        _check_int("n_train", self.n_train, 1, LAB_LIMITS.max_train)
        _check_int("seed", self.seed, 0, LAB_LIMITS.max_seed)
        if self.hidden % self.heads:
            raise LabError(f"the width {self.hidden} is not divisible by {self.heads} heads")
        object.__setattr__(self, "family", family_of(self.family))
        if self.task.causal and not self.family.decoder:
            raise LabError(
                f"the {self.task.kind} task is next-token prediction: use a decoder family "
                f"({', '.join(sorted(DECODERS))})"
            )
        if self.fine_tuning is not None and not isinstance(self.fine_tuning, FineTuning):
            raise LabError("fine_tuning must be a FineTuning")
        if self.fine_tuning is not None and self.fine_tuning.lora and self.family is not Family.BERT:
            raise LabError(f"the lab's LoRA runs adapt BERT's modules: a {self.family} run can be fine-tuned in full")
        if self.family.grouped_query and (self.heads < 2 or self.heads % 2):
            raise LabError(f"a llama run has H / 2 key/value heads (grouped-query): H must be even, got {self.heads}")
        try:
            self.task.check_n_train(self.n_train)
        except ValueError as exc:
            raise LabError(str(exc)) from None
        need = memory_estimate(self)
        if need > LAB_LIMITS.max_run_bytes:
            raise LabError(
                f"this run would need about {need / 2**30:.1f} GiB for its samples and activations "
                f"(sequence length {self.task.length} with {self.n_train} training and "
                f"{self.settings.test_samples} test samples, batch {self.settings.batch_size}, "
                f"{self.heads} heads, {self.layers} layers), more than the lab's "
                f"{LAB_LIMITS.max_run_bytes / 2**30:.0f} GiB: "
                f"use shorter sequences, fewer samples or a smaller batch"
            )

    @property
    def label_noise(self) -> float:
        return self.task.label_noise

    @property
    def default_environment(self) -> bool:
        """A bert run on the threshold task: the lab's first environment, whose names and records carry
        neither (records and run names older than the other environments stay valid)."""
        return (self.family, self.task.kind) == (Family.BERT, Task.THRESHOLD)

    @property
    def name(self) -> str:
        """``lab-L{L}-N{N}-H{H}-n{n}-q{q}-s{seed}-t{steps}``: always marked as a lab model; a run of
        another family or task than bert on the threshold task is ``lab-{family}-{task}-L{L}-...``.

        A run whose task (noise aside) or optimiser settings differ from the defaults gets a suffix
        ``-v{hash}`` of them, so such runs never take each other's place in a directory. The
        checkpoint schedule, the test sample size and the thread count do not change the trained
        model and are not part of the name (a run differing only there replaces the earlier one).
        """
        environment = "" if self.default_environment else f"{self.family}-{self.task.kind}-"
        name = (
            f"lab-{environment}L{self.layers}-N{self.hidden}-H{self.heads}-n{self.n_train}-q{self.label_noise:g}"
            f"-s{self.seed}-t{self.settings.steps}"
        )
        if self.fine_tuning is not None:
            name += f"-{self.fine_tuning.label}"
        variant = self._variant()
        if variant != RunSpec._default_variant(self.task, self.family):
            name += "-v" + hashlib.sha256(json.dumps(variant, sort_keys=True).encode()).hexdigest()[:8]
        return name

    def _variant(self) -> dict[str, Any]:
        task = {k: v for k, v in self.task.to_dict().items() if k != "label_noise"}
        s = self.settings
        variant = {"task": task, "lr": s.learning_rate, "wd": s.weight_decay, "batch": s.batch_size}
        if s.adam_beta2 != ADAM_BETA2:  # another optimiser; the default keeps every earlier name
            variant["beta2"] = s.adam_beta2
        if s.fused_adam:  # another rounding of the same optimiser: other weights, another run
            variant["fused"] = True
        if self.fine_tuning is not None:  # another starting point
            variant["base"] = self.fine_tuning.base
        if not s.until_fit:
            return variant
        # a run trained to a fit is another run, and so is one checked at another cadence (it may stop
        # elsewhere); the cadence of the first fit sweeps, every 100 steps, keeps their names
        cadence = s.fit_check_every
        return {**variant, "fit": True if cadence == _FIRST_FIT_CADENCE else cadence}

    @staticmethod
    def _default_variant(task: LabTask, family: Family) -> dict[str, Any]:
        """The variant of the default task of the same kind (the threshold task for a bert run, as always)."""
        default = type(task)()
        heads = 2 if family.grouped_query else 1
        return RunSpec(layers=1, hidden=2, heads=heads, n_train=1, task=default, family=family)._variant()

    def to_dict(self) -> dict[str, Any]:
        """The spec as a record stores it; ``family`` only when it is not bert (older records have none)."""
        out = {
            "layers": self.layers,
            "hidden": self.hidden,
            "heads": self.heads,
            "n_train": self.n_train,
            "label_noise": self.label_noise,
            "seed": self.seed,
            "task": self.task.to_dict(),
            "settings": _settings_dict(self.settings),
        }
        if self.family is not Family.BERT:
            out["family"] = self.family
        if self.fine_tuning is not None:
            out["fine_tuning"] = self.fine_tuning.to_dict()
        return out

    @property
    def kv_heads(self) -> int:
        """Key/value heads: H / 2 for llama (grouped-query attention), H otherwise."""
        return self.heads // 2 if self.family.grouped_query else self.heads


def standard_error(error: float, samples: int) -> float:
    """sqrt(e (1 - e) / m): the standard error of an error rate e measured on m independent samples."""
    return math.sqrt(error * (1.0 - error) / samples)


@dataclass(frozen=True)
class StepErrors:
    """Errors measured at one saved step while training; ``checkpoint`` is relative to the run directory.
    The record adds the bound's terms and the measures to it (:class:`~specbound_lab.trajectory.StepRecord`)."""

    step: int
    train_loss: float  # mean cross-entropy on the training set
    train_error: float
    test_error: float
    test_samples: int
    checkpoint: str
    test_loss: float = math.nan  # mean cross-entropy on the test set
    loss_gap: bool = False  # next-token prediction: the gap is on the loss

    @property
    def test_error_se(self) -> float:
        return standard_error(self.test_error, self.test_samples)

    @property
    def gap(self) -> float:
        """Test minus training error; test minus training loss for next-token prediction."""
        return self.test_loss - self.train_loss if self.loss_gap else self.test_error - self.train_error


@dataclass(frozen=True)
class TrainResult:
    spec: RunSpec
    params: int  # every parameter of the model (embeddings, pooler, head included)
    steps: tuple[StepErrors, ...]
    seconds: float  # training and measuring the errors
    #: the MODEL measures of :mod:`specbound_lab.registry` on the final checkpoint, by name
    model_values: Mapping[str, float] = field(default_factory=dict, hash=False)
    model_seconds: float = 0.0  # computing them


def bert_config(spec: RunSpec) -> Any:
    """The ``transformers.BertConfig`` of a run (see the module docstring for each choice)."""
    import transformers

    vocab = spec.task.vocab_size
    return transformers.BertConfig(
        vocab_size=vocab + 2,
        hidden_size=spec.hidden,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        intermediate_size=FFN_RATIO * spec.hidden,
        max_position_embeddings=spec.task.length + 1,
        type_vocab_size=1,
        pad_token_id=vocab + 1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=spec.task.num_labels,  # type: ignore[call-arg]
    )


def model_config(spec: RunSpec) -> Any:
    """The transformers config of a run: :func:`bert_config` for bert, else the decoder's own config with
    the same sizes (L layers, width N, H heads, feed-forward 4 N, no dropout, positions T + 1, vocabulary
    V + 2 with the padding id V + 1 that never occurs)."""
    import transformers

    if spec.family is Family.BERT:
        return bert_config(spec)
    vocab, positions = spec.task.vocab_size, spec.task.length + 1
    labels: dict[str, Any] = {} if spec.task.causal else {"num_labels": spec.task.num_labels}
    common: dict[str, Any] = {"vocab_size": vocab + 2, "pad_token_id": vocab + 1, **labels}
    if spec.family is Family.GPT2:
        return transformers.GPT2Config(
            n_embd=spec.hidden,
            n_layer=spec.layers,
            n_head=spec.heads,
            n_inner=FFN_RATIO * spec.hidden,
            n_positions=positions,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            **common,
        )
    if spec.family is Family.LLAMA:
        return transformers.LlamaConfig(
            hidden_size=spec.hidden,
            num_hidden_layers=spec.layers,
            num_attention_heads=spec.heads,
            num_key_value_heads=spec.kv_heads,
            intermediate_size=FFN_RATIO * spec.hidden,
            max_position_embeddings=positions,
            attention_dropout=0.0,
            tie_word_embeddings=False,
            **common,
        )
    return transformers.GPTNeoXConfig(
        hidden_size=spec.hidden,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        intermediate_size=FFN_RATIO * spec.hidden,
        max_position_embeddings=positions,
        use_parallel_residual=True,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        tie_word_embeddings=False,
        **common,
    )


_CLASSES: dict[tuple[Family, bool], str] = {
    (Family.BERT, False): "BertForSequenceClassification",
    (Family.GPT2, False): "GPT2ForSequenceClassification",
    (Family.GPT2, True): "GPT2LMHeadModel",
    (Family.LLAMA, False): "LlamaForSequenceClassification",
    (Family.LLAMA, True): "LlamaForCausalLM",
    (Family.NEOX, False): "GPTNeoXForSequenceClassification",
    (Family.NEOX, True): "GPTNeoXForCausalLM",
}


def model_class_name(spec: RunSpec) -> str:
    """The transformers class a run trains."""
    return _CLASSES[spec.family, spec.task.causal]


def build_model(spec: RunSpec) -> Any:
    """A freshly initialised model of the run (seed the generator first for a reproducible one)."""
    import transformers

    return getattr(transformers, model_class_name(spec))(model_config(spec))


def model_inputs(
    sample: LabeledSample, vocab_size: int, family: Family | str = Family.BERT, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids and labels of a sample.

    bert: (n, T + 1) with the [CLS] id V in front, labels (n,); a decoder classifying: (n, T + 1) with
    the summary id V at the end (the last token reads the whole input); next-token prediction: the
    tokens (n, T) as both input and labels (the model shifts them).
    """
    import torch

    if causal:
        tokens = torch.from_numpy(np.ascontiguousarray(sample.tokens))
        return tokens, tokens
    n = sample.tokens.shape[0]
    summary = np.full((n, 1), vocab_size, dtype=np.int64)
    parts = [sample.tokens, summary] if family_of(family).decoder else [summary, sample.tokens]
    ids = np.concatenate(parts, axis=1)  # (n, T + 1)
    return torch.from_numpy(ids), torch.from_numpy(sample.labels)


@contextmanager
def _training_context(threads: int) -> Iterator[None]:
    """Deterministic kernels, a fixed thread count and a quiet transformers (no bars or notices on
    stderr: progress goes through the callback) for the block; the previous state is restored."""
    import torch
    from transformers.utils import logging as hf_logging

    old_flag = torch.are_deterministic_algorithms_enabled()
    old_verbosity, old_bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    with torch_threads(threads):
        torch.use_deterministic_algorithms(True)
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(old_flag)
            hf_logging.set_verbosity(old_verbosity)
            if old_bars:
                hf_logging.enable_progress_bar()


def _measure(
    model: Any, ids: torch.Tensor, labels: torch.Tensor, chunk: int = _EVAL_CHUNK, causal: bool = False
) -> tuple[float, float]:
    """(mean cross-entropy, error rate) of the model on a labelled set, in eval mode, no gradients; for
    next-token prediction over the n (T - 1) predicted positions."""
    import torch

    loss_sum, wrong, count = 0.0, 0, 0
    training = model.training  # restored after: an evaluation graph stays in eval mode
    model.eval()
    with torch.inference_mode():  # no autograd state at all (and the compiled graph's mode)
        for start in range(0, ids.shape[0], chunk):
            logits = model(input_ids=ids[start : start + chunk]).logits  # (chunk, C) or (chunk, T, V)
            target = labels[start : start + chunk]
            if causal:
                logits = logits[:, :-1].reshape(-1, logits.shape[-1])  # (chunk (T - 1), V)
                target = target[:, 1:].reshape(-1)
            loss_sum += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
            wrong += int((logits.argmax(dim=1) != target).sum())
            count += int(target.shape[0])
    model.train(training)
    return loss_sum / count, wrong / count


_SAID: set[str] = set()


def _once(notice: Callable[[str], None]) -> Callable[[str], None]:
    """``notice``, passed each line once per process (a sweep's runs share the reason)."""

    def say(line: str) -> None:
        if line not in _SAID:
            _SAID.add(line)
            notice(line)

    return say


def _probe_model(model: Any, ids: torch.Tensor, labels: torch.Tensor, causal: bool) -> tuple[Any, Any, Any]:
    """What the MODEL measures see: the model itself for a classifier; for next-token prediction a view
    of the language model that predicts each training sequence's last token from the others (so a
    probe's error is the next-token error at the last position): the model itself when it computes the
    last position's logits alone (a summary forward, :func:`~specbound_lab.compiled.summary_route`)."""
    if not causal:
        return model, ids, labels
    if getattr(model, "summary", False) is True:
        return model, ids[:, :-1].contiguous(), ids[:, -1].contiguous()
    import torch

    class _LastToken(torch.nn.Module):
        def __init__(self, lm: Any) -> None:
            super().__init__()
            self.lm = lm

        def forward(self, input_ids: torch.Tensor) -> Any:
            from types import SimpleNamespace

            return SimpleNamespace(logits=self.lm(input_ids=input_ids).logits[:, -1, :])  # (n, V)

    return _LastToken(model), ids[:, :-1].contiguous(), ids[:, -1].contiguous()


def checkpoint_dir(step: int) -> str:
    """Checkpoint directory of a step, relative to the run directory."""
    return f"{CHECKPOINTS_DIR}/step-{step:06d}"


def fits_training_set(train_loss: float, train_error: float, label_noise: float = 0.0) -> bool:
    """Whether a classification run has fitted its training set (SPEC §13b): its training cross-entropy is
    at most :data:`FIT_LOSS` (Jiang et al.'s criterion), or, with label noise, its training error is 0
    (every flipped label memorised: a noisy set may take long to reach the loss)."""
    return bool(train_loss <= FIT_LOSS or (label_noise > 0 and train_error == 0.0))


def _fine_tuning_model(spec: RunSpec) -> Any:
    """The base a fine-tuning run starts from, checked against the run's architecture (LabError)."""
    assert spec.fine_tuning is not None
    try:
        return start_model(spec.fine_tuning, model_config(spec), model_class_name(spec), spec.seed)
    except FineTuningError as exc:
        raise LabError(str(exc)) from None


#: Training steps whose minibatches are drawn and gathered at once (:func:`_hoisted_batches`), fewer
#: where their inputs would take more than :data:`_BLOCK_BYTES`.
BATCH_BLOCK: int = 100
_BLOCK_BYTES: int = 16 * 1024**2


def _hoisted_batches(
    ids: torch.Tensor, labels: torch.Tensor, batch: int, generator: torch.Generator
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Each training step's (input_ids, labels): the whole training set when it is no larger than the
    batch, else ``batch`` rows drawn with replacement, :data:`BATCH_BLOCK` steps' rows in one draw.

    One draw of (k, B) indices takes from the generator the same numbers, in the same order, as k draws
    of (B,) (a serial kernel: one 32-bit number per index), so every step's rows are the per-step
    loop's (:func:`_per_step_batches`); a run that ends within a block leaves the rest unused (the
    generator serves nothing else).

    >>> import torch
    >>> ids, labels = torch.arange(30).reshape(10, 3), torch.arange(10)
    >>> a = _hoisted_batches(ids, labels, 4, torch.Generator().manual_seed(0))
    >>> b = _per_step_batches(ids, labels, 4, torch.Generator().manual_seed(0))
    >>> all(torch.equal(x, y) for _ in range(150) for x, y in zip(next(a), next(b)))
    True
    """
    import torch

    n = int(ids.shape[0])
    if batch >= n:
        while True:
            yield ids, labels
    steps = max(1, min(BATCH_BLOCK, _BLOCK_BYTES // (ids[0].numel() * ids.element_size() * batch)))
    while True:
        rows = torch.randint(0, n, (steps, batch), generator=generator)  # (k, B)
        block_ids, block_labels = ids[rows], labels[rows]  # (k, B, T + 1), (k, B)
        for i in range(steps):
            yield block_ids[i], block_labels[i]


def _per_step_batches(
    ids: torch.Tensor, labels: torch.Tensor, batch: int, generator: torch.Generator
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The former loop's minibatches: one draw and one gather per step (the reference of
    :func:`_hoisted_batches`)."""
    import torch

    n = int(ids.shape[0])
    all_rows = torch.arange(n)
    while True:
        rows = all_rows if batch == n else torch.randint(0, n, (batch,), generator=generator)  # (B,)
        yield ids[rows], labels[rows]


def train_run(
    spec: RunSpec,
    directory: Path | str,
    *,
    progress: ProgressCallback = silent,
    should_stop: Callable[[], bool] = lambda: False,
    compile: bool = True,
    graph_runs: int = 1,
    notice: Callable[[str], None] = lambda line: None,
    hoisted: bool = True,
) -> TrainResult:
    """Train one run, saving checkpoints under ``directory`` and measuring errors at each saved step.

    ``progress`` receives ("train", step, steps) events; ``should_stop`` is checked between steps and
    raises :class:`TrainingCancelled` when it returns True. The passes without gradients (fit checks,
    error measurements, the flatness searches' errors) run through the process's compiled graph of
    the architecture (:mod:`~specbound_lab.compiled`) when ``compile`` is True and compiling pays over
    ``graph_runs`` runs of it; ``notice`` receives one line when a requested compilation is not used
    (why), once per reason and process. Training steps are eager (compiled, they measured slower).

    The loop does per step only what a step needs (:func:`_hoisted_batches`): the minibatches' rows
    are drawn :data:`BATCH_BLOCK` steps at a time and their inputs gathered at once, and AdamW runs its
    multi-tensor (``foreach``) update; both give the per-step loop's weights bit for bit (the same draws
    from the same generator, the same arithmetic per element). ``hoisted=False`` runs the former loop
    (a draw and a gather per step, the per-parameter AdamW), kept as the reference of the equivalence
    test and the benchmark.
    """
    import torch

    from .compiled import evaluation_graph

    directory = Path(directory)
    settings = spec.settings
    causal = spec.task.causal
    train, test = spec.task.datasets(spec.n_train, settings.test_samples, spec.seed)
    train_ids, train_labels = model_inputs(train, spec.task.vocab_size, spec.family, causal)
    test_ids, test_labels = model_inputs(test, spec.task.vocab_size, spec.family, causal)
    test_count = int(test_ids.shape[0])  # fewer than test_samples when the population runs out (modular)
    save_at = set(settings.save_steps)
    chunk = eval_chunk(spec)
    records: list[StepErrors] = []
    started = time.perf_counter()
    with _training_context(settings.threads), ExitStack() as held:
        torch.manual_seed(spec.seed)
        model = build_model(spec) if spec.fine_tuning is None else _fine_tuning_model(spec)
        params = trained_parameters(model)
        optimizer = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad],
            lr=settings.learning_rate,
            weight_decay=settings.weight_decay,
            betas=(ADAM_BETA1, settings.adam_beta2),
            # the multi-tensor update: the same arithmetic per element, fewer dispatches; fused: another rounding
            **({"fused": True} if settings.fused_adam else {"foreach": hoisted}),
        )
        batches = torch.Generator().manual_seed(spec.seed)
        batch = min(settings.batch_size, spec.n_train)
        if hoisted:
            minibatches = _hoisted_batches(train_ids, train_labels, batch, batches)
        else:
            minibatches = _per_step_batches(train_ids, train_labels, batch, batches)
        lent = evaluation_graph(spec, model, compile=compile, runs=graph_runs, notice=_once(notice))
        graph, why = held.enter_context(lent)  # the graph is this run's until it ends
        if compile and why is not None:
            _once(notice)(why)

        def load() -> Any:
            """The evaluation graph with the model's current weights copied in."""
            if graph is not model:
                with torch.no_grad():
                    graph.module.load_state_dict(model.state_dict())
            return graph

        def measure(ids: torch.Tensor, labels: torch.Tensor, *, fresh: bool) -> tuple[float, float]:
            """(loss, error) of the current weights through the evaluation graph; ``fresh``: copy them in
            first (once per step, however many sets are measured there)."""
            return _measure(load() if fresh else graph, ids, labels, chunk, causal)

        model.train()
        check_fit = settings.until_fit and not causal
        fit_every = settings.fit_check_every
        report_every = max(1, settings.steps // PROGRESS_EVENTS)
        for step in range(settings.steps + 1):
            checked = check_fit and step % fit_every == 0
            if checked:
                train_loss, train_error = measure(train_ids, train_labels, fresh=True)
            fitted = checked and fits_training_set(train_loss, train_error, spec.label_noise)
            if step in save_at or fitted:
                relative = checkpoint_dir(step)
                merged(model).save_pretrained(directory / relative)
                if not checked:  # the training set was not measured at this step yet
                    train_loss, train_error = measure(train_ids, train_labels, fresh=True)
                test_loss, test_error = measure(test_ids, test_labels, fresh=False)
                records.append(
                    StepErrors(step, train_loss, train_error, test_error, test_count, relative, test_loss, causal)
                )
            if fitted:
                break  # fitted: the run ends at this check, saved as its last checkpoint
            if step == settings.steps:
                break
            if should_stop():
                raise TrainingCancelled(f"training of {spec.name} was cancelled at step {step}")
            batch_ids, batch_labels = next(minibatches)  # (B, T + 1), (B,)
            loss = model(input_ids=batch_ids, labels=batch_labels).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if (step + 1) % report_every == 0 or step + 1 == settings.steps:
                detail = f"{spec.name} loss {float(loss.detach()):.3f}"
                progress(ProgressEvent("train", step + 1, settings.steps, detail))
        trained = time.perf_counter()
        values: dict[str, float] = {}
        if settings.model_measures:  # through the summary-position forward where the family has one
            lent = evaluation_graph(
                spec, merged(model), compile=compile, runs=graph_runs, notice=_once(notice), summary=True
            )
            with lent as (searched, why):
                if compile and why is not None:
                    _once(notice)(why)
                probe = ModelProbe(*_probe_model(searched, train_ids, train_labels, causal), spec.seed)
                values = {m.name: float(m.compute(probe)) for m in model_measures()}
    finished = time.perf_counter()
    return TrainResult(spec, int(params), tuple(records), trained - started, values, finished - trained)
