"""Rank correlation of complexity measures with the measured generalization gap.

Kendall's tau over pairs (i, j) of runs, with S = sum_{i<j} sign(x_i - x_j) sign(y_i - y_j):

* tau-a = S / (n (n - 1) / 2): ties count as neither agreement nor disagreement;
* tau-b = S / sqrt(P_x P_y), P_x = number of pairs with x_i != x_j (likewise P_y): tau-a corrected
  for ties, +-1 for perfectly (anti-)ordered data even with ties. Undefined (NaN) if x or y is constant.

The overall ``kendall_tau`` is tau-b over the final checkpoints of all runs.

The granulated tau of Jiang et al. (2020, "Fantastic Generalization Measures and Where to Find
Them", eq. 4): for each hyperparameter axis a, the runs are grouped by the values of every other axis
(and of the training settings); psi_a is the mean over groups with at least two values of a of
the tau within the group, and the granulated tau is the mean of psi_a over the axes that have such
groups. Within groups we use tau-a, exactly Jiang et al.'s tau (their sum of sign products over all
pairs): a measure that does not change along an axis (e.g. the parameter count along n) scores 0 there
rather than being left out.

Uncertainty: seeded percentile bootstraps (Efron & Tibshirani 1993, ch. 13), 95 % intervals.

* tau-b is resampled over runs: a draw takes n runs with replacement, i.e. multiplicities c (a
  multinomial count vector), and its tau-b is computed exactly from the pair sign matrices
  A = [sign(x_i - x_j) sign(y_i - y_j)], X = [|sign(x_i - x_j)|], Y = [|sign(y_i - y_j)|]:

      tau-b* = c^T A c / sqrt((c^T X c) (c^T Y c))

  (copies of one run form pairs tied in both x and y, which tau-b leaves out: the diagonal is 0).
* psi_a is resampled over its groups: a draw takes G_a of the G_a groups with replacement and
  averages their tau-a (each group's tau is computed once); the granulated tau of a draw is the mean
  of its psi_a, every axis drawn independently.
* A difference between two measures is bootstrapped paired: both see the same draws of runs (or of
  groups) over the runs where both are finite, so what they share cancels. The difference is
  distinguishable from 0 at the 95 % level when its interval excludes 0.

Draws whose tau-b is undefined (a constant measure among the drawn runs) are left out of the
percentiles. Everything is numpy; scipy is not needed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

#: Bootstrap draws behind every interval, and the seed that makes them repeat.
BOOTSTRAP_DRAWS: int = 2000
BOOTSTRAP_SEED: int = 0
#: Coverage of the intervals.
CONFIDENCE: float = 0.95


def _pair_signs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sign(x_i - x_j) and sign(y_i - y_j) over the pairs i < j."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("x and y must be 1-d arrays of the same length")
    i, j = np.triu_indices(x.size, k=1)
    return np.sign(x[i] - x[j]), np.sign(y[i] - y[j])


def kendall_tau_a(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-a (NaN for fewer than two values)."""
    sx, sy = _pair_signs(np.asarray(x), np.asarray(y))
    return float((sx * sy).sum() / sx.size) if sx.size else math.nan


def kendall_tau_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b (NaN when x or y has no untied pair)."""
    sx, sy = _pair_signs(np.asarray(x), np.asarray(y))
    untied = float(np.abs(sx).sum()) * float(np.abs(sy).sum())
    return float((sx * sy).sum() / math.sqrt(untied)) if untied > 0 else math.nan


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval [low, high] (NaN when no draw was defined)."""

    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    @property
    def sign(self) -> int:
        """+1 when the whole interval lies above 0, -1 below, 0 when it contains 0 (or is undefined)."""
        if self.low > 0:
            return 1
        if self.high < 0:
            return -1
        return 0


#: The interval of a statistic with no defined draw.
UNDEFINED = Interval(math.nan, math.nan)


def percentile_interval(draws: np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """The (1 - confidence) / 2 and (1 + confidence) / 2 percentiles of the defined draws."""
    draws = np.asarray(draws, dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return UNDEFINED
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(draws, [tail, 100.0 - tail])
    return Interval(float(low), float(high))


def bootstrap_counts(n: int, draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """(draws, n) multiplicities of n items drawn n times with replacement, from generator ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=draws).astype(np.float64) if n else np.zeros((draws, 0))


def tau_b_draws(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """tau-b of every bootstrap draw given by its multiplicities ``counts`` (B, n): (B,), NaN where undefined."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    sx = np.sign(x[:, None] - x[None, :])  # (n, n)
    sy = np.sign(y[:, None] - y[None, :])  # (n, n)
    concordance = ((counts @ (sx * sy)) * counts).sum(axis=1)  # (B,) c^T A c, twice the sum over pairs
    untied_x = ((counts @ np.abs(sx)) * counts).sum(axis=1)  # (B,)
    untied_y = ((counts @ np.abs(sy)) * counts).sum(axis=1)  # (B,)
    denominator = np.sqrt(untied_x * untied_y)
    return np.divide(concordance, denominator, out=np.full(concordance.shape, np.nan), where=denominator > 0)


def group_mean_draws(values: np.ndarray, draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """Means of ``values`` (one per group) over bootstrap draws of the groups: (draws,)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.full(draws, np.nan)
    return bootstrap_counts(values.size, draws, seed) @ values / values.size


@dataclass(frozen=True)
class AxisTau:
    """psi of one axis: mean tau-a over ``groups`` groups of runs that differ only in that axis."""

    axis: str
    tau: float  # NaN without any group
    groups: int
    runs: int  # runs inside those groups
    ci: Interval = UNDEFINED  # over bootstrap draws of the groups


@dataclass(frozen=True)
class MeasureCorrelation:
    measure: str
    kendall_tau: float  # tau-b over all runs
    kendall_tau_a: float
    granulated_tau: float  # mean of psi over the axes with groups (NaN if none)
    runs: int  # runs with a finite measure and gap
    axes: tuple[AxisTau, ...]
    kendall_tau_ci: Interval = UNDEFINED  # over bootstrap draws of the runs
    granulated_tau_ci: Interval = UNDEFINED  # over bootstrap draws of the groups

    @property
    def groups(self) -> int:
        return sum(a.groups for a in self.axes)


def axis_groups(keys: Sequence[Mapping[str, Hashable]], axis: str) -> tuple[tuple[int, ...], ...]:
    """Runs grouped by every key but ``axis``; only groups holding at least two values of the axis."""
    groups: dict[tuple[tuple[str, Hashable], ...], list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        groups[tuple(sorted((k, v) for k, v in key.items() if k != axis))].append(i)
    return tuple(tuple(rows) for rows in groups.values() if len({keys[i][axis] for i in rows}) >= 2)


def _group_taus(measure: np.ndarray, gap: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    return np.array([kendall_tau_a(measure[list(rows)], gap[list(rows)]) for rows in groups], dtype=np.float64)


def _granulated_draws(psi_draws: Sequence[np.ndarray]) -> np.ndarray:
    """Per draw, the mean of psi over the axes that have groups."""
    return np.mean(np.stack(psi_draws), axis=0) if psi_draws else np.full(BOOTSTRAP_DRAWS, np.nan)


def granulated_tau(
    measure: np.ndarray,
    gap: np.ndarray,
    keys: Sequence[Mapping[str, Hashable]],
    axes: Sequence[str],
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, tuple[AxisTau, ...], Interval]:
    """Jiang et al.'s granulated tau, its psi per axis (with intervals) and the granulated tau's interval.
    keys[i] gives run i's value on every axis (and any other setting that must match within a group,
    under keys that are not axes)."""
    measure, gap = np.asarray(measure, dtype=np.float64), np.asarray(gap, dtype=np.float64)
    per_axis, psi_draws = [], []
    for index, axis in enumerate(axes):
        groups = axis_groups(keys, axis)
        taus = _group_taus(measure, gap, groups)
        members = sum(len(rows) for rows in groups)
        if taus.size:
            sample = group_mean_draws(taus, draws, seed + 1 + index)
            psi_draws.append(sample)
            per_axis.append(AxisTau(axis, float(taus.mean()), taus.size, members, percentile_interval(sample)))
        else:
            per_axis.append(AxisTau(axis, math.nan, 0, 0))
    psis = [a.tau for a in per_axis if a.groups]
    total = float(np.mean(psis)) if psis else math.nan
    interval = percentile_interval(_granulated_draws(psi_draws)) if psi_draws else UNDEFINED
    return total, tuple(per_axis), interval


def _finite_rows(*arrays: np.ndarray) -> np.ndarray:
    keep = np.ones(np.asarray(arrays[0]).shape, dtype=bool)
    for a in arrays:
        keep &= np.isfinite(np.asarray(a, dtype=np.float64))
    return np.flatnonzero(keep)


def correlate(
    measures: Mapping[str, Sequence[float] | np.ndarray],
    gap: Sequence[float] | np.ndarray,
    keys: Sequence[Mapping[str, Hashable]],
    axes: Sequence[str],
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[MeasureCorrelation, ...]:
    """Overall and granulated tau of each measure with the gap, with their bootstrap intervals; runs with
    a non-finite value are left out. Every measure sees the same seeded draws."""
    gap = np.asarray(gap, dtype=np.float64)
    out = []
    for name, values in measures.items():
        values = np.asarray(values, dtype=np.float64)
        rows = _finite_rows(values, gap)
        x, y = values[rows], gap[rows]
        kept_keys = [keys[int(i)] for i in rows]
        granulated, per_axis, granulated_ci = granulated_tau(x, y, kept_keys, axes, draws=draws, seed=seed)
        tau_ci = percentile_interval(tau_b_draws(x, y, bootstrap_counts(rows.size, draws, seed)))
        out.append(
            MeasureCorrelation(
                name,
                kendall_tau_b(x, y),
                kendall_tau_a(x, y),
                granulated,
                int(rows.size),
                per_axis,
                tau_ci,
                granulated_ci,
            )
        )
    return tuple(out)


class Verdict(str, Enum):
    """How a measure compares with another on one statistic, at the 95 % level."""

    BETTER = "better"
    WORSE = "worse"
    INDISTINGUISHABLE = "indistinguishable"


@dataclass(frozen=True)
class TauDifference:
    """tau(measure) - tau(other), overall (tau-b) and granulated, paired-bootstrapped over ``runs`` runs."""

    measure: str
    other: str
    runs: int
    kendall_tau: float
    kendall_tau_ci: Interval
    granulated_tau: float
    granulated_tau_ci: Interval

    @staticmethod
    def _verdict(interval: Interval) -> Verdict:
        return {1: Verdict.BETTER, -1: Verdict.WORSE, 0: Verdict.INDISTINGUISHABLE}[interval.sign]

    @property
    def kendall_verdict(self) -> Verdict:
        """``measure`` against ``other`` on tau-b: better when the difference's interval lies above 0."""
        return self._verdict(self.kendall_tau_ci)

    @property
    def granulated_verdict(self) -> Verdict:
        return self._verdict(self.granulated_tau_ci)


def compare(
    measure: str,
    values: Sequence[float] | np.ndarray,
    other: str,
    other_values: Sequence[float] | np.ndarray,
    gap: Sequence[float] | np.ndarray,
    keys: Sequence[Mapping[str, Hashable]],
    axes: Sequence[str],
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> TauDifference:
    """The paired bootstrap of tau(values) - tau(other_values) over the runs where both (and the gap) are
    finite: the same draws of runs for tau-b, the same draws of groups for every psi."""
    a, b = np.asarray(values, dtype=np.float64), np.asarray(other_values, dtype=np.float64)
    gap = np.asarray(gap, dtype=np.float64)
    rows = _finite_rows(a, b, gap)
    a, b, y = a[rows], b[rows], gap[rows]
    kept_keys = [keys[int(i)] for i in rows]
    counts = bootstrap_counts(rows.size, draws, seed)
    tau_diff = tau_b_draws(a, y, counts) - tau_b_draws(b, y, counts)
    psi_diffs, psi_draws = [], []
    for index, axis in enumerate(axes):
        groups = axis_groups(kept_keys, axis)
        if groups:
            diffs = _group_taus(a, y, groups) - _group_taus(b, y, groups)
            psi_diffs.append(float(diffs.mean()))
            psi_draws.append(group_mean_draws(diffs, draws, seed + 1 + index))
    return TauDifference(
        measure,
        other,
        int(rows.size),
        kendall_tau_b(a, y) - kendall_tau_b(b, y),
        percentile_interval(tau_diff),
        float(np.mean(psi_diffs)) if psi_diffs else math.nan,
        percentile_interval(_granulated_draws(psi_draws)) if psi_draws else UNDEFINED,
    )
