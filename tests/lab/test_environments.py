"""The tasks of SPEC §13: each generator's population quantity in closed form, and its round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound_lab.tasks import (
    TASKS,
    LabeledSample,
    MarkovTask,
    ModularTask,
    ParityTask,
    Stream,
    Task,
    entropy_rate,
    stationary_distribution,
    task_from_dict,
)


def _h(p: float) -> float:
    """Binary entropy in nats."""
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


@pytest.mark.parametrize(("a", "b"), [(0.1, 0.3), (0.5, 0.5), (0.9, 0.2)])
def test_two_state_chain_entropy_rate_by_hand(a: float, b: float) -> None:
    # P = [[1 - a, a], [b, 1 - b]]: pi = (b, a) / (a + b), rate = (b h(a) + a h(b)) / (a + b)
    transition = np.array([[1 - a, a], [b, 1 - b]])
    pi = stationary_distribution(transition)
    assert pi == pytest.approx(np.array([b, a]) / (a + b), abs=1e-12)
    assert entropy_rate(transition) == pytest.approx((b * _h(a) + a * _h(b)) / (a + b), abs=1e-12)


def test_deterministic_cycle_has_zero_entropy_rate() -> None:
    assert entropy_rate(np.roll(np.eye(5), 1, axis=1)) == pytest.approx(0.0, abs=1e-15)


def test_markov_task_is_stationary_and_its_rate_is_the_empirical_loss() -> None:
    task = MarkovTask(states=6, length=64, support=2, chain_seed=3)
    p = task.transition_matrix()
    assert np.allclose(p.sum(axis=1), 1.0) and ((p > 0).sum(axis=1) == 2).all()
    pi = stationary_distribution(p)
    assert pi @ p == pytest.approx(pi, abs=1e-12)
    sample = task.sample(3000, seed=0, stream=Stream.TEST)
    x = sample.tokens
    nll = -np.log(p[x[:, :-1], x[:, 1:]]).mean()  # the true chain's loss on fresh sequences
    assert nll == pytest.approx(task.optimal_loss, abs=0.02)
    assert np.bincount(x[:, 0], minlength=6) / x.shape[0] == pytest.approx(pi, abs=0.03)  # starts from pi
    wrong = (p[x[:, :-1]].argmax(axis=2) != x[:, 1:]).mean()  # the Bayes rule's next-token error
    assert wrong == pytest.approx(task.bayes_error, abs=0.02)
    assert np.array_equal(task.sample(5, 1).tokens, task.sample(5, 1).tokens)
    assert not np.array_equal(task.sample(50, 1).tokens, task.sample(50, 1, Stream.TEST).tokens)


def test_parity_bayes_error_is_zero_and_the_rule_is_exact() -> None:
    task = ParityTask(length=10, positions=(1, 4, 7))
    assert task.bayes_error == 0.0 and task.num_labels == 2
    sample = task.sample(2000, seed=5)
    assert np.array_equal(sample.labels, sample.tokens[:, [1, 4, 7]].sum(axis=1) % 2)  # error 0 for the rule
    assert abs(sample.labels.mean() - 0.5) < 0.05
    noisy_task = ParityTask(length=10, positions=(1, 4, 7), label_noise=0.2)
    assert noisy_task.bayes_error == 0.2
    noisy = noisy_task.sample(20000, seed=5)
    assert (noisy.labels != noisy.clean_labels).mean() == pytest.approx(0.2, abs=0.01)


def test_modular_split_sizes_and_labels() -> None:
    task = ModularTask(modulus=97)
    assert task.pairs == 97**2 == 9409 and task.num_labels == 97 and task.bayes_error == 0.0
    n = int(0.3 * task.pairs)
    train, test = task.datasets(n, 100_000, seed=2)
    assert train.tokens.shape == (n, 2) and test.tokens.shape == (task.pairs - n, 2)  # every held-out pair

    def index(s: LabeledSample) -> set[int]:
        return set((s.tokens[:, 0] * 97 + s.tokens[:, 1]).tolist())

    assert len(index(train)) == n and index(train).isdisjoint(index(test))
    assert index(train) | index(test) == set(range(task.pairs))
    assert np.array_equal(train.labels, train.tokens.sum(axis=1) % 97)
    _, small = task.datasets(n, 500, seed=2)
    assert small.tokens.shape == (500, 2)
    with pytest.raises(ValueError, match="n_train"):
        task.check_n_train(task.pairs)
    with pytest.raises(ValueError, match="prime"):
        ModularTask(modulus=100)


@pytest.mark.parametrize("kind", sorted(TASKS))
def test_every_task_round_trips(kind: Task) -> None:
    task = TASKS[kind]
    assert task.kind == kind and task_from_dict(task.to_dict()) == task
