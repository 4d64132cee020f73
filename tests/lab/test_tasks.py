"""The sparse threshold task: exact balance, determinism by seed, the label-noise rate."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from specbound_lab.limits import LAB_LIMITS
from specbound_lab.tasks import (
    TASKS,
    MarkovTask,
    ModularTask,
    ParityTask,
    Stream,
    Task,
    ThresholdTask,
    balanced_threshold,
    sum_distribution,
)


@pytest.mark.parametrize(("vocab", "terms"), [(8, 3), (5, 2), (3, 4), (10, 1)])
def test_sum_law_matches_enumeration(vocab: int, terms: int) -> None:
    counts = np.zeros(terms * (vocab - 1) + 1)
    for tokens in itertools.product(range(vocab), repeat=terms):
        counts[sum(tokens)] += 1
    np.testing.assert_allclose(sum_distribution(vocab, terms), counts / vocab**terms, rtol=0, atol=1e-15)


def test_default_task_is_exactly_balanced() -> None:
    task = ThresholdTask()
    assert task.cut == 11 == balanced_threshold(8, 3)
    assert task.clean_positive_rate == pytest.approx(0.5, abs=1e-15)
    assert task.describe().endswith("label [x0 + x5 + x9 >= 11]")


def test_balanced_threshold_is_the_closest_to_one_half() -> None:
    task = ThresholdTask(vocab_size=5, length=6, positions=(1, 4))  # sums 0..8, P(sum >= 4) = 15/25
    rates = {
        t: ThresholdTask(vocab_size=5, length=6, positions=(1, 4), threshold=t).clean_positive_rate for t in range(1, 9)
    }
    assert rates[4] == pytest.approx(15 / 25) and rates[5] == pytest.approx(10 / 25)
    assert task.cut == 4  # |0.6 - 0.5| = |0.4 - 0.5|: the tie goes to the smaller t


@pytest.mark.parametrize("task", [ThresholdTask(), ThresholdTask(vocab_size=5, length=6, positions=(1, 4))])
def test_sampled_balance_within_four_standard_errors(task: ThresholdTask) -> None:
    n = 40_000
    sample = task.sample(n, seed=3)
    rate = sample.clean_labels.mean()
    se = math.sqrt(task.clean_positive_rate * (1 - task.clean_positive_rate) / n)
    assert abs(rate - task.clean_positive_rate) < 4 * se
    expected = (sample.tokens[:, list(task.positions)].sum(axis=1) >= task.cut).astype(np.int64)
    np.testing.assert_array_equal(sample.clean_labels, expected)
    assert sample.tokens.min() >= 0 and sample.tokens.max() == task.vocab_size - 1


def test_samples_are_determined_by_seed_and_stream() -> None:
    task = ThresholdTask(label_noise=0.2)
    a, b = task.sample(500, seed=7), task.sample(500, seed=7)
    for field in ("tokens", "labels", "clean_labels"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.tokens, task.sample(500, seed=8).tokens)
    assert not np.array_equal(a.tokens, task.sample(500, seed=7, stream=Stream.TEST).tokens)


@pytest.mark.parametrize("q", [0.0, 0.1, 0.3])
def test_label_noise_flips_at_rate_q(q: float) -> None:
    task = ThresholdTask(label_noise=q)
    n = 40_000
    sample = task.sample(n, seed=1)
    flipped = (sample.labels != sample.clean_labels).mean()
    assert abs(flipped - q) < 4 * math.sqrt(q * (1 - q) / n) + 1e-12
    assert abs(sample.labels.mean() - task.positive_rate) < 4 * math.sqrt(0.25 / n)
    assert task.bayes_error == q


@pytest.mark.parametrize(
    "kwargs",
    [
        {"vocab_size": 1},
        {"positions": (0, 0)},
        {"positions": (16,)},
        {"label_noise": 0.5},
        {"label_noise": -0.1},
        {"threshold": 0},
        {"threshold": 22},
    ],
)
def test_invalid_tasks_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ThresholdTask(**kwargs)


def test_a_markov_chain_s_law_is_solved_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the vocabulary limit the stationary law is a 1,025 x 1,024 solve: a table asks for the entropy
    rate at every saved step, so it is computed once per chain (and equals the uncached formula)."""
    from specbound_lab import tasks

    solved: list[tuple[int, ...]] = []
    original = tasks.stationary_distribution

    def counted(p: np.ndarray) -> np.ndarray:
        solved.append(p.shape)
        return original(p)

    monkeypatch.setattr(tasks, "stationary_distribution", counted)
    tasks.chain_law.cache_clear()
    task = tasks.MarkovTask(states=LAB_LIMITS.max_vocab, chain_seed=11)
    rates = {tasks.MarkovTask(states=LAB_LIMITS.max_vocab, chain_seed=11).optimal_loss for _ in range(50)}
    task.bayes_error, task.sample(4, seed=0)
    assert solved == [(LAB_LIMITS.max_vocab, LAB_LIMITS.max_vocab)]
    p = task.transition_matrix()
    assert not p.flags.writeable and not task.law.stationary.flags.writeable  # shared: read-only
    (rate,) = rates
    assert rate == tasks.entropy_rate(tasks._draw_transition(LAB_LIMITS.max_vocab, task.support, 11))
    assert tasks.MarkovTask(states=16, chain_seed=11).optimal_loss != rate  # another chain, another law
    tasks.chain_law.cache_clear()


def test_a_task_kind_is_its_name_in_every_table_and_record() -> None:
    """Task is a StrEnum: it writes as the kind that runs.csv, records and ``--task`` always had."""
    assert [t.value for t in Task] == ["threshold", "parity", "modular", "markov"]
    assert [f"{t}" for t in Task] == ["threshold", "parity", "modular", "markov"]
    assert json.dumps({"task": Task.MARKOV}) == '{"task": "markov"}'
    written: str = "markov"  # a plain string, as runs.csv and records give it
    assert Task(written) is Task.MARKOV and written == Task.MARKOV
    assert [type(t).kind for t in (ThresholdTask(), ParityTask(), ModularTask(), MarkovTask())] == list(Task)
    assert all(TASKS[t].kind is t and t.default is TASKS[t] for t in Task)


def test_a_task_s_words_and_traits_come_from_its_kind() -> None:
    assert [t.words for t in Task] == ["sparse threshold", "parity", "modular addition", "Markov next-token"]
    assert [t.causal for t in Task] == [False, False, False, True]
    assert [t.noisy for t in Task] == [True, True, False, False]
    for task in Task:  # a task that is not noisy refuses label noise; a noisy one takes it
        if task.noisy:
            assert replace(task.default, label_noise=0.1).label_noise == pytest.approx(0.1, abs=0.0)
        else:
            with pytest.raises(ValueError, match="no label noise"):
                replace(task.default, label_noise=0.1)
