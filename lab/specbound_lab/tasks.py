"""Synthetic sequence-classification tasks whose population is known exactly.

The sparse threshold task (in the spirit of the sparse variable creation of Edelman et al. 2022):
tokens x_1..x_T are drawn independently and uniformly from {0, ..., V-1}; the clean label is

    y = [ x_{i_1} + ... + x_{i_s} >= t ]

for s fixed positions i_1..i_s. The sum of s uniform tokens has an exactly computable law (an s-fold
convolution of the uniform law on {0..V-1}), so the positive rate P(y = 1) is known exactly and the
default threshold is the t that makes it closest to 1/2. For V = 8 and s = 3 the sum is symmetric
around 10.5 and t = 11 gives exactly 1/2.

Label noise q: every label, in the training set AND in the test samples, is flipped independently
with probability q. The test error is therefore measured against the noisy population (its Bayes
error is q), and the gap test - train is the gap of the noisy learning problem the model was given.

Samples are drawn from a NumPy generator seeded with (seed, stream), so the training set (stream 0)
and the fresh test samples (stream 1) of a run are independent and reproducible.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import ClassVar

import numpy as np

from specbound.core import check_number

from .limits import LAB_LIMITS

_TIE_ATOL = 1e-12


class Task(StrEnum):
    """A task of the lab by its kind: the ``task`` column of runs.csv, the CLI's ``--task``, the first half
    of an environment's name (``threshold/bert``) and a task class's :attr:`~ThresholdTask.kind`.

    A :class:`~enum.StrEnum`, so it is written as that name wherever it goes (a CSV cell, a record, an
    f-string) and equals it: the tables and records read the same as when the kinds were plain strings.
    Its words (the dashboard's name for it) live here and nowhere else.

    Examples:
        >>> Task("markov") is Task.MARKOV, f"{Task.MARKOV}", Task.MARKOV.words
        (True, 'markov', 'Markov next-token')
        >>> Task.MARKOV.causal, Task.THRESHOLD.causal, Task.PARITY.noisy, Task.MODULAR.noisy
        (True, False, True, False)
        >>> Task.MODULAR.default
        ModularTask(modulus=97, label_noise=0.0)
    """

    THRESHOLD = "threshold"
    PARITY = "parity"
    MODULAR = "modular"
    MARKOV = "markov"

    @property
    def words(self) -> str:
        """Its name in a sentence: ``sparse threshold``, ``Markov next-token``."""
        return _TASK_WORDS[self]

    @property
    def default(self) -> LabTask:
        """The task's default instance (what ``--task`` trains on)."""
        return TASKS[self]

    @property
    def causal(self) -> bool:
        """Next-token prediction (the Markov task): trained by decoders only, its gap on the loss."""
        return self.default.causal

    @property
    def noisy(self) -> bool:
        """Whether it takes label noise (the threshold and parity tasks; the modular and Markov tasks
        reject any)."""
        return self in (Task.THRESHOLD, Task.PARITY)


_TASK_WORDS: dict[Task, str] = {
    Task.THRESHOLD: "sparse threshold",
    Task.PARITY: "parity",
    Task.MODULAR: "modular addition",
    Task.MARKOV: "Markov next-token",
}


class Stream(IntEnum):
    """Independent random streams of one seed."""

    TRAIN = 0
    TEST = 1


def sum_distribution(vocab_size: int, terms: int) -> np.ndarray:
    """P(x_1 + ... + x_s = k) for k = 0 .. s (V - 1), the x_i uniform on {0..V-1}: (s (V - 1) + 1,)."""
    uniform = np.full(vocab_size, 1.0 / vocab_size)
    law = np.ones(1)
    for _ in range(terms):
        law = np.convolve(law, uniform)
    return law


def balanced_threshold(vocab_size: int, terms: int) -> int:
    """The threshold t whose positive rate P(sum >= t) is closest to 1/2 (ties to the smaller t)."""
    tail = np.cumsum(sum_distribution(vocab_size, terms)[::-1])[::-1]  # tail[t] = P(sum >= t)
    distance = np.abs(tail - 0.5)
    return int(np.argmax(distance <= distance.min() + _TIE_ATOL))  # exact ties differ by rounding only


@dataclass(frozen=True)
class LabeledSample:
    """n sequences with their labels: tokens (n, T) int64, labels and clean_labels (n,) int64."""

    tokens: np.ndarray
    labels: np.ndarray  # after label noise: what the model is trained and tested on
    clean_labels: np.ndarray  # the noiseless rule


@dataclass(frozen=True)
class ThresholdTask:
    """The sparse threshold task: y = [sum of the tokens at ``positions`` >= threshold], noise q.

    ``threshold=None`` is replaced on construction by :func:`balanced_threshold`, so two tasks with the
    same rule compare equal.
    """

    vocab_size: int = 8
    length: int = 16
    positions: tuple[int, ...] = (0, 5, 9)
    threshold: int | None = None
    label_noise: float = 0.0

    kind: ClassVar[Task] = Task.THRESHOLD
    num_labels: ClassVar[int | None] = 2
    causal: ClassVar[bool] = False
    optimal_loss: ClassVar[float] = math.nan  # the least expected loss is not needed: the gap is on errors

    def __post_init__(self) -> None:
        integers = [self.vocab_size, self.length, *self.positions]
        if self.threshold is not None:
            integers.append(self.threshold)
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in integers):
            raise ValueError(
                f"the vocabulary size, length, positions and threshold must be integers, got {integers[:8]}"
            )
        _check_noise(self.label_noise)
        check_number(self.vocab_size, "the vocabulary size", 2, LAB_LIMITS.max_vocab, integer=True)
        check_number(self.length, "the sequence length", 1, LAB_LIMITS.max_length, integer=True)
        if (
            not self.positions
            or len(set(self.positions)) != len(self.positions)
            or not all(0 <= i < self.length for i in self.positions)
        ):
            raise ValueError(f"positions must be distinct indices in [0, {self.length}), got {self.positions}")
        top = len(self.positions) * (self.vocab_size - 1)
        if self.threshold is None:
            object.__setattr__(self, "threshold", balanced_threshold(self.vocab_size, len(self.positions)))
        else:  # within [1, top], so that both classes occur
            check_number(self.threshold, "the threshold", 1, top, integer=True)

    @property
    def name(self) -> str:
        return "sparse-threshold"

    @property
    def cut(self) -> int:
        """The threshold t in use."""
        assert self.threshold is not None  # resolved in __post_init__
        return self.threshold

    @property
    def clean_positive_rate(self) -> float:
        """P(sum >= t), exact."""
        return float(sum_distribution(self.vocab_size, len(self.positions))[self.cut :].sum())

    @property
    def positive_rate(self) -> float:
        """P(observed label = 1) = r (1 - q) + (1 - r) q with r the clean positive rate."""
        r, q = self.clean_positive_rate, self.label_noise
        return r * (1.0 - q) + (1.0 - r) * q

    @property
    def bayes_error(self) -> float:
        """Smallest possible error against the noisy labels: q (the clean rule is deterministic)."""
        return self.label_noise

    def describe(self) -> str:
        picks = " + ".join(f"x{i}" for i in self.positions)
        noise = f", labels flipped with probability {self.label_noise:g}" if self.label_noise else ""
        return (
            f"{self.name}: tokens uniform on {{0..{self.vocab_size - 1}}}, length {self.length}, "
            f"label [{picks} >= {self.cut}]{noise}"
        )

    def sample(self, n: int, seed: int, stream: Stream = Stream.TRAIN) -> LabeledSample:
        """n fresh examples from generator (seed, stream); the same arguments give the same sample."""
        if n < 0:
            raise ValueError(f"the number of examples must be non-negative, got {n}")
        rng = np.random.default_rng(np.random.SeedSequence([seed, int(stream)]))
        tokens = rng.integers(0, self.vocab_size, size=(n, self.length), dtype=np.int64)  # (n, T)
        clean = (tokens[:, list(self.positions)].sum(axis=1) >= self.cut).astype(np.int64)  # (n,)
        flips = rng.random(n) < self.label_noise  # (n,)
        return LabeledSample(tokens=tokens, labels=np.where(flips, 1 - clean, clean), clean_labels=clean)

    def datasets(self, n_train: int, test_samples: int, seed: int) -> tuple[LabeledSample, LabeledSample]:
        """The training set (stream TRAIN) and the fresh test samples (stream TEST) of a run."""
        return self.sample(n_train, seed, Stream.TRAIN), self.sample(test_samples, seed, Stream.TEST)

    def check_n_train(self, n_train: int) -> None:
        """Every training-set size within the lab's limits is valid (fresh samples never run out)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "task": self.name,
            "vocab_size": self.vocab_size,
            "length": self.length,
            "positions": list(self.positions),
            "threshold": self.cut,
            "label_noise": self.label_noise,
        }


# --- the tasks of §13 beyond the threshold -------------------------------------------------------
#
# Every task offers what the trainer reads: ``kind`` (its short name, the ``task`` column of runs.csv),
# ``name``, ``vocab_size`` and ``length`` (the data tokens), ``label_noise``, ``num_labels`` (classes, or
# None for next-token prediction), ``causal`` (next-token prediction: the gap is then on the loss),
# ``optimal_loss`` (the least expected loss, where it is known exactly), ``datasets``, ``check_n_train``,
# ``describe`` and ``to_dict``.


def _check_integers(what: str, values: list[object]) -> None:
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{what} must be integers, got {values[:8]}")


def _check_noise(label_noise: object) -> None:
    check_number(label_noise, "label noise", 0.0, LAB_LIMITS.max_label_noise, open_high=True)


@dataclass(frozen=True)
class ParityTask:
    """Parity of k of the n tokens: y = (x_{i_1} + ... + x_{i_k}) mod 2, tokens uniform on {0..V-1}.

    The clean label is a deterministic function of the input (Bayes error 0); with label noise q every
    label, train and test, is flipped with probability q (Bayes error q). For V even both classes have
    probability exactly 1/2.
    """

    vocab_size: int = 2
    length: int = 16
    positions: tuple[int, ...] = (0, 5, 9)
    label_noise: float = 0.0

    kind: ClassVar[Task] = Task.PARITY
    num_labels: ClassVar[int | None] = 2
    causal: ClassVar[bool] = False
    optimal_loss: ClassVar[float] = math.nan

    def __post_init__(self) -> None:
        _check_integers("the vocabulary size, length and positions", [self.vocab_size, self.length, *self.positions])
        _check_noise(self.label_noise)
        check_number(self.vocab_size, "the vocabulary size", 2, LAB_LIMITS.max_vocab, integer=True)
        check_number(self.length, "the sequence length", 1, LAB_LIMITS.max_length, integer=True)
        if (
            not self.positions
            or len(set(self.positions)) != len(self.positions)
            or not all(0 <= i < self.length for i in self.positions)
        ):
            raise ValueError(f"positions must be distinct indices in [0, {self.length}), got {self.positions}")

    @property
    def name(self) -> str:
        return "parity"

    @property
    def bayes_error(self) -> float:
        return self.label_noise

    def label(self, tokens: np.ndarray) -> np.ndarray:
        """The clean label of each row of ``tokens`` (n, T): (n,) int64."""
        result: np.ndarray = (tokens[:, list(self.positions)].sum(axis=1) % 2).astype(np.int64)
        return result

    def sample(self, n: int, seed: int, stream: Stream = Stream.TRAIN) -> LabeledSample:
        if n < 0:
            raise ValueError(f"the number of examples must be non-negative, got {n}")
        rng = np.random.default_rng(np.random.SeedSequence([seed, int(stream)]))
        tokens = rng.integers(0, self.vocab_size, size=(n, self.length), dtype=np.int64)  # (n, T)
        clean = self.label(tokens)
        flips = rng.random(n) < self.label_noise  # (n,)
        return LabeledSample(tokens=tokens, labels=np.where(flips, 1 - clean, clean), clean_labels=clean)

    def datasets(self, n_train: int, test_samples: int, seed: int) -> tuple[LabeledSample, LabeledSample]:
        return self.sample(n_train, seed, Stream.TRAIN), self.sample(test_samples, seed, Stream.TEST)

    def check_n_train(self, n_train: int) -> None:
        """Every size is valid."""

    def describe(self) -> str:
        picks = " + ".join(f"x{i}" for i in self.positions)
        noise = f", labels flipped with probability {self.label_noise:g}" if self.label_noise else ""
        return (
            f"{self.name}: tokens uniform on {{0..{self.vocab_size - 1}}}, length {self.length}, "
            f"label ({picks}) mod 2{noise}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "task": self.name,
            "vocab_size": self.vocab_size,
            "length": self.length,
            "positions": list(self.positions),
            "label_noise": self.label_noise,
        }


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


#: The stream of a run's seed that draws the modular task's split of the P² pairs.
_SPLIT_STREAM = 2


@dataclass(frozen=True)
class ModularTask:
    """Modular addition: input (a, b), label (a + b) mod P, P prime (the grokking task).

    The population is the P² pairs, each once. A run's seed draws a permutation of them: the first
    n_train pairs are the training set, the test set is the next min(test_samples, P² - n_train) pairs,
    disjoint from it. The label is a function of the input (Bayes error 0); label noise is not offered.
    """

    modulus: int = 97
    label_noise: float = 0.0

    kind: ClassVar[Task] = Task.MODULAR
    causal: ClassVar[bool] = False
    optimal_loss: ClassVar[float] = math.nan

    def __post_init__(self) -> None:
        _check_integers("the modulus", [self.modulus])
        if not (_is_prime(self.modulus) and 2 <= self.modulus <= LAB_LIMITS.max_vocab):
            raise ValueError(f"the modulus must be a prime in [2, {LAB_LIMITS.max_vocab}], got {self.modulus}")
        if self.label_noise != 0:
            raise ValueError(f"the modular task has no label noise, got {self.label_noise}")

    @property
    def name(self) -> str:
        return "modular-addition"

    @property
    def vocab_size(self) -> int:
        return self.modulus

    @property
    def length(self) -> int:
        return 2

    @property
    def num_labels(self) -> int:
        return self.modulus

    @property
    def pairs(self) -> int:
        return self.modulus**2

    @property
    def bayes_error(self) -> float:
        return 0.0

    def check_n_train(self, n_train: int) -> None:
        if not 1 <= n_train < self.pairs:
            raise ValueError(
                f"the modular task mod {self.modulus} has {self.pairs} pairs: n_train must lie in [1, {self.pairs})"
            )

    def split(self, n_train: int, test_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices a P + b of the training pairs and of the test pairs: disjoint, drawn by the seed."""
        self.check_n_train(n_train)
        rng = np.random.default_rng(np.random.SeedSequence([seed, _SPLIT_STREAM]))
        order = rng.permutation(self.pairs)
        return order[:n_train], order[n_train : n_train + min(test_samples, self.pairs - n_train)]

    def _labeled(self, index: np.ndarray) -> LabeledSample:
        tokens = np.stack([index // self.modulus, index % self.modulus], axis=1).astype(np.int64)  # (n, 2)
        labels = tokens.sum(axis=1) % self.modulus
        return LabeledSample(tokens=tokens, labels=labels, clean_labels=labels)

    def datasets(self, n_train: int, test_samples: int, seed: int) -> tuple[LabeledSample, LabeledSample]:
        train, test = self.split(n_train, test_samples, seed)
        return self._labeled(train), self._labeled(test)

    def describe(self) -> str:
        return f"{self.name}: (a, b) -> (a + b) mod {self.modulus}, a share of the {self.pairs} pairs for training"

    def to_dict(self) -> dict[str, object]:
        return {"task": self.name, "modulus": self.modulus, "label_noise": self.label_noise}


def stationary_distribution(transition: np.ndarray) -> np.ndarray:
    """π with π P = π and Σ π = 1 for an irreducible chain P (V, V): the least-squares solution of the
    stacked system [Pᵀ - I; 1ᵀ] π = [0; 1], exact for an irreducible chain."""
    transition = np.asarray(transition, dtype=np.float64)
    v = transition.shape[0]
    system = np.vstack([transition.T - np.eye(v), np.ones((1, v))])  # (V + 1, V)
    target = np.concatenate([np.zeros(v), [1.0]])
    pi = np.linalg.lstsq(system, target, rcond=None)[0]
    pi = np.clip(pi, 0.0, None)
    result: np.ndarray = pi / pi.sum()
    return result


def entropy_rate(transition: np.ndarray, stationary: np.ndarray | None = None) -> float:
    """Σ_i π_i H(P_i·) in nats, π the stationary law (computed when not given): the per-token entropy of
    the stationary chain, the least expected cross-entropy of any next-token predictor."""
    transition = np.asarray(transition, dtype=np.float64)
    logs = np.log(np.where(transition > 0, transition, 1.0))
    row_entropy = -(transition * logs).sum(axis=1)  # (V,)
    pi = stationary_distribution(transition) if stationary is None else stationary
    return float(pi @ row_entropy)


@dataclass(frozen=True, eq=False)
class ChainLaw:
    """Everything the lab needs of one Markov chain, computed once per process (:func:`chain_law`): the
    transition matrix P (V, V), its stationary law π (V,), the entropy rate Σ_i π_i H(P_i·) in nats and
    the least next-token error 1 - Σ_i π_i max_j P_ij. The arrays are read-only: they are shared."""

    transition: np.ndarray  # (V, V), rows summing to 1
    stationary: np.ndarray  # (V,)
    entropy_rate: float
    bayes_error: float


def _draw_transition(states: int, support: int, chain_seed: int) -> np.ndarray:
    """The chain of :class:`MarkovTask` (V, V), a function of its three fields only (see there)."""
    v = states
    rng = np.random.default_rng(np.random.SeedSequence([chain_seed, v, support]))
    p = np.zeros((v, v))
    for i in range(v):
        forced = {(i + 1) % v} | ({0} if i == 0 else set())
        others = [j for j in rng.permutation(v) if j not in forced]
        chosen = sorted(forced | set(int(j) for j in others[: max(0, support - len(forced))]))
        p[i, chosen] = rng.dirichlet(np.ones(len(chosen)))
    return p


@functools.lru_cache(maxsize=4)
def chain_law(states: int, support: int, chain_seed: int) -> ChainLaw:
    """The :class:`ChainLaw` of the chain drawn from these fields, cached: at the vocabulary limit
    (1,024 states) the stationary law is a 1,025 x 1,024 least-squares solve of about a second, and a
    table asks for the entropy rate once per saved step of every run (at most a few chains per process,
    8 MB each at that size)."""
    transition = _draw_transition(states, support, chain_seed)
    stationary = stationary_distribution(transition)
    transition.flags.writeable = False
    stationary.flags.writeable = False
    return ChainLaw(
        transition=transition,
        stationary=stationary,
        entropy_rate=entropy_rate(transition, stationary),
        bayes_error=float(1.0 - stationary @ transition.max(axis=1)),
    )


@dataclass(frozen=True)
class MarkovTask:
    """Next-token prediction on a random sparse Markov chain over V states, drawn from ``chain_seed``.

    Row i of the transition matrix has ``support`` next states: (i + 1) mod V (so the chain is
    irreducible) and support - 1 others drawn at random, with Dirichlet(1) weights; row 0 also keeps
    state 0 (a self-loop: aperiodic), so the stationary law π is unique. A sequence starts from π, so
    every position's prediction has expected loss at least the entropy rate Σ_i π_i H(P_i·), computed
    exactly (:func:`entropy_rate`): the excess of a model's test loss over it is measured, not guessed.
    The training set is n_train sequences (stream TRAIN), the test set fresh ones (stream TEST).
    """

    states: int = 16
    length: int = 32
    support: int = 3
    chain_seed: int = 0
    label_noise: float = 0.0

    kind: ClassVar[Task] = Task.MARKOV
    num_labels: ClassVar[int | None] = None
    causal: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_integers(
            "the states, length, support and chain seed", [self.states, self.length, self.support, self.chain_seed]
        )
        check_number(self.states, "the number of states", 2, LAB_LIMITS.max_vocab, integer=True)
        check_number(self.length, "the sequence length", 2, LAB_LIMITS.max_length, integer=True)
        check_number(self.support, "the support", 1, self.states, integer=True)
        check_number(self.chain_seed, "the chain seed", 0, 2**31 - 1, integer=True)
        if self.label_noise != 0:
            raise ValueError(f"the Markov task has no label noise, got {self.label_noise}")

    @property
    def name(self) -> str:
        return "markov-chain"

    @property
    def vocab_size(self) -> int:
        return self.states

    @property
    def law(self) -> ChainLaw:
        """The chain's transition matrix, stationary law, entropy rate and least error, computed once
        per process for a chain (:func:`chain_law`)."""
        return chain_law(self.states, self.support, self.chain_seed)

    @property
    def bayes_error(self) -> float:
        """The least next-token error: 1 - Σ_i π_i max_j P_ij."""
        return self.law.bayes_error

    def transition_matrix(self) -> np.ndarray:
        """The chain (V, V), rows summing to 1, a function of the task's fields only (read-only)."""
        return self.law.transition

    @property
    def optimal_loss(self) -> float:
        """The entropy rate in nats (:func:`entropy_rate`)."""
        return self.law.entropy_rate

    def sample(self, n: int, seed: int, stream: Stream = Stream.TRAIN) -> LabeledSample:
        """n sequences of the stationary chain; labels are the tokens (the targets, shifted by the model)."""
        if n < 0:
            raise ValueError(f"the number of examples must be non-negative, got {n}")
        law = self.law
        cumulative = np.cumsum(law.transition, axis=1)  # (V, V)
        cumulative[:, -1] = 1.0
        start = np.cumsum(law.stationary)
        start[-1] = 1.0
        rng = np.random.default_rng(np.random.SeedSequence([seed, int(stream)]))
        uniforms = rng.random((n, self.length))  # (n, T)
        tokens = np.empty((n, self.length), dtype=np.int64)
        tokens[:, 0] = np.searchsorted(start, uniforms[:, 0], side="right")
        for t in range(1, self.length):
            rows = cumulative[tokens[:, t - 1]]  # (n, V)
            tokens[:, t] = (rows <= uniforms[:, t, None]).sum(axis=1)
        np.minimum(tokens, self.states - 1, out=tokens)
        return LabeledSample(tokens=tokens, labels=tokens, clean_labels=tokens)

    def datasets(self, n_train: int, test_samples: int, seed: int) -> tuple[LabeledSample, LabeledSample]:
        return self.sample(n_train, seed, Stream.TRAIN), self.sample(test_samples, seed, Stream.TEST)

    def check_n_train(self, n_train: int) -> None:
        """Every size is valid."""

    def describe(self) -> str:
        return (
            f"{self.name}: next-token prediction on a random Markov chain over {self.states} states "
            f"({self.support} next states each, chain seed {self.chain_seed}), length {self.length}, "
            f"entropy rate {self.optimal_loss:.4f} nats"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "task": self.name,
            "states": self.states,
            "length": self.length,
            "support": self.support,
            "chain_seed": self.chain_seed,
            "label_noise": self.label_noise,
        }


#: A task of the lab.
LabTask = ThresholdTask | ParityTask | ModularTask | MarkovTask
#: Each task by its kind (the ``task`` column of runs.csv and the CLI's ``--task``), its default instance.
TASKS: dict[Task, LabTask] = {
    Task.THRESHOLD: ThresholdTask(),
    Task.PARITY: ParityTask(),
    Task.MODULAR: ModularTask(),
    Task.MARKOV: MarkovTask(),
}
_BY_NAME: dict[str, type] = {
    "sparse-threshold": ThresholdTask,
    "parity": ParityTask,
    "modular-addition": ModularTask,
    "markov-chain": MarkovTask,
}


def task_from_dict(data: dict[str, object] | object) -> LabTask:
    """Inverse of ``to_dict`` for every task (ValueError for an unknown or malformed one); integers must
    be genuine (int(2.7) would quietly read another task)."""
    if not isinstance(data, dict):
        raise ValueError("a task must be an object")
    cls = _BY_NAME.get(str(data.get("task", "sparse-threshold")))
    if cls is None:
        raise ValueError(f"unknown task {data.get('task')!r}")
    fields = {k: v for k, v in data.items() if k != "task"}
    for key, value in fields.items():
        if key == "positions":
            if not isinstance(value, list):
                raise ValueError("positions must be a list")
            _check_integers("positions", list(value))
            fields[key] = tuple(int(i) for i in value)
        elif key == "label_noise":
            check_number(value, "label noise")
            fields[key] = float(value)  # type: ignore[arg-type]
        else:
            _check_integers(key, [value])
    task: LabTask = cls(**fields)
    return task
