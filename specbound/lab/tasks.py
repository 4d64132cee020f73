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

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

#: Upper limits that keep a task a small, classroom-sized problem.
MAX_VOCAB: int = 1024
MAX_LENGTH: int = 512
MAX_LABEL_NOISE: float = 0.5  # exclusive: q = 1/2 would make labels independent of the input
_TIE_ATOL = 1e-12


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

    def __post_init__(self) -> None:
        integers = [self.vocab_size, self.length, *self.positions]
        if self.threshold is not None:
            integers.append(self.threshold)
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in integers):
            raise ValueError(
                f"the vocabulary size, length, positions and threshold must be integers, got {integers[:8]}"
            )
        if isinstance(self.label_noise, bool) or not isinstance(self.label_noise, int | float):
            raise ValueError(f"label noise must be a number, got {self.label_noise!r}")
        if not 2 <= self.vocab_size <= MAX_VOCAB:
            raise ValueError(f"the vocabulary size must lie in [2, {MAX_VOCAB}], got {self.vocab_size}")
        if not 1 <= self.length <= MAX_LENGTH:
            raise ValueError(f"the sequence length must lie in [1, {MAX_LENGTH}], got {self.length}")
        if (
            not self.positions
            or len(set(self.positions)) != len(self.positions)
            or not all(0 <= i < self.length for i in self.positions)
        ):
            raise ValueError(f"positions must be distinct indices in [0, {self.length}), got {self.positions}")
        if not 0.0 <= self.label_noise < MAX_LABEL_NOISE:
            raise ValueError(f"label noise must lie in [0, {MAX_LABEL_NOISE:g}), got {self.label_noise}")
        top = len(self.positions) * (self.vocab_size - 1)
        if self.threshold is None:
            object.__setattr__(self, "threshold", balanced_threshold(self.vocab_size, len(self.positions)))
        elif not 1 <= self.threshold <= top:
            raise ValueError(f"the threshold must lie in [1, {top}] so both classes occur, got {self.threshold}")

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

    def to_dict(self) -> dict[str, object]:
        return {
            "task": self.name,
            "vocab_size": self.vocab_size,
            "length": self.length,
            "positions": list(self.positions),
            "threshold": self.cut,
            "label_noise": self.label_noise,
        }
