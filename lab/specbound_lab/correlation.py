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
rather than being left out. A *noise axis* (the seed: SPEC §13b) gets its psi, reported as seed noise,
but is left out of the granulated tau's mean: seeds are not a hyperparameter a measure should order.

Uncertainty: seeded percentile bootstraps (Efron & Tibshirani 1993, ch. 13), 95 % intervals, over
*clusters*: the seeds of one configuration share its n, depth and width, so they are not independent
draws. A draw takes the K configurations K times with replacement, and every run of a drawn
configuration counts as often as it was drawn: multiplicities c (one per run). Without clusters every
run is its own (the plain bootstrap over runs).

* tau-b of a draw is computed exactly from the pair sign matrices A = [sign(x_i - x_j) sign(y_i - y_j)],
  X = [|sign(x_i - x_j)|], Y = [|sign(y_i - y_j)|]:

      tau-b* = c^T A c / sqrt((c^T X c) (c^T Y c))

  (copies of one run form pairs tied in both x and y, which tau-b leaves out: the diagonal is 0).
* The granulated tau is resampled jointly, from the same draw for every axis: a group's tau-a under
  multiplicities c is c^T S c / ((Σ c)² − Σ c²) (S its pair sign products, the diagonal 0), a group
  counts in a draw while it keeps two values of its axis, psi_a* is the mean over the groups that
  count, and the granulated tau of the draw the mean of its psi_a* over the (non-noise) axes.
* A difference between two measures is bootstrapped paired: both see the same draws over the runs
  where both are finite, so what they share cancels. The difference is distinguishable from 0 at
  the 95 % level when its interval excludes 0.

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


def cluster_ids(clusters: Sequence[Hashable] | None, n: int) -> np.ndarray:
    """(n,) the index of each run's cluster, in order of first appearance (each run its own when None)."""
    if clusters is None:
        return np.arange(n)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} runs")
    first: dict[Hashable, int] = {}
    return np.array([first.setdefault(label, len(first)) for label in clusters], dtype=np.int64)


def cluster_counts(
    clusters: Sequence[Hashable] | None, n: int, draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED
) -> np.ndarray:
    """(draws, n) run multiplicities of a cluster bootstrap: the K clusters drawn K times with replacement
    (:func:`bootstrap_counts`), each run counting as often as its cluster was drawn. Without clusters it
    is :func:`bootstrap_counts` of the runs itself, draw for draw.

    Example: two configurations of two seeds each, ``cluster_counts(["a", "a", "b", "b"], 4, 3)`` gives
    rows such as [2, 2, 0, 0], [1, 1, 1, 1]: the seeds of a configuration are drawn together.
    """
    ids = cluster_ids(clusters, n)
    k = int(ids.max()) + 1 if ids.size else 0
    return bootstrap_counts(k, draws, seed)[:, ids]


def tau_b_draws(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """tau-b of every bootstrap draw given by its multiplicities ``counts`` (B, n): (B,), NaN where undefined."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    sx = np.sign(x[:, None] - x[None, :])  # (n, n)
    sy = np.sign(y[:, None] - y[None, :])  # (n, n)
    concordance = ((counts @ (sx * sy)) * counts).sum(axis=1)  # (B,) c^T A c, twice the sum over pairs
    untied_x = ((counts @ np.abs(sx)) * counts).sum(axis=1)  # (B,)
    untied_y = ((counts @ np.abs(sy)) * counts).sum(axis=1)  # (B,)
    denominator = np.sqrt(untied_x * untied_y)
    result: np.ndarray = np.divide(
        concordance, denominator, out=np.full(concordance.shape, np.nan), where=denominator > 0
    )
    return result


def group_mean_draws(values: np.ndarray, draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """Means of ``values`` (one per group) over bootstrap draws of the groups: (draws,)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.full(draws, np.nan)
    result: np.ndarray = bootstrap_counts(values.size, draws, seed) @ values / values.size
    return result


@dataclass(frozen=True)
class AxisTau:
    """psi of one axis: mean tau-a over ``groups`` groups of runs that differ only in that axis."""

    axis: str
    tau: float  # NaN without any group
    groups: int
    runs: int  # runs inside those groups
    ci: Interval = UNDEFINED  # over the joint bootstrap draws
    noise: bool = False  # a noise axis (the seed): reported, left out of the granulated tau


@dataclass(frozen=True)
class MeasureCorrelation:
    measure: str
    kendall_tau: float  # tau-b over all runs
    kendall_tau_a: float
    granulated_tau: float  # mean of psi over the non-noise axes with groups (NaN if none)
    runs: int  # runs with a finite measure and gap
    axes: tuple[AxisTau, ...]
    kendall_tau_ci: Interval = UNDEFINED  # over bootstrap draws of the configurations
    granulated_tau_ci: Interval = UNDEFINED  # over the same kind of draws, every axis jointly
    configurations: int = 0  # clusters among the runs (0: not given, every run its own)

    @property
    def groups(self) -> int:
        """Groups behind the granulated tau (the noise axes' not counted)."""
        return sum(a.groups for a in self.axes if not a.noise)

    @property
    def seed_noise(self) -> float:
        """psi of the noise axis (the seed): how a measure orders runs that differ only by their seed
        (NaN without such groups)."""
        noise = [a.tau for a in self.axes if a.noise and a.groups]
        return float(np.mean(noise)) if noise else math.nan


def axis_groups(keys: Sequence[Mapping[str, Hashable]], axis: str) -> tuple[tuple[int, ...], ...]:
    """Runs grouped by every key but ``axis``; only groups holding at least two values of the axis."""
    groups: dict[tuple[tuple[str, Hashable], ...], list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        groups[tuple(sorted((k, v) for k, v in key.items() if k != axis))].append(i)
    return tuple(tuple(rows) for rows in groups.values() if len({keys[i][axis] for i in rows}) >= 2)


def _group_taus(measure: np.ndarray, gap: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    return np.array([kendall_tau_a(measure[list(rows)], gap[list(rows)]) for rows in groups], dtype=np.float64)


def _weighted_group_tau(
    measure: np.ndarray, gap: np.ndarray, rows: Sequence[int], values: Sequence[Hashable], counts: np.ndarray
) -> np.ndarray:
    """tau-a of one group under each draw's multiplicities ``counts`` (B, n): c^T S c / ((Σ c)² − Σ c²)
    over the group's runs, NaN in a draw that leaves fewer than two values of the group's axis."""
    rows = list(rows)
    x, y = measure[rows], gap[rows]
    signs = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])  # (k, k), diagonal 0
    w = counts[:, rows]  # (B, k)
    concordance = ((w @ signs) * w).sum(axis=1)
    pairs = w.sum(axis=1) ** 2 - (w**2).sum(axis=1)
    present = np.stack([w[:, [v == value for v in values]].sum(axis=1) > 0 for value in dict.fromkeys(values)])
    valid = (present.sum(axis=0) >= 2) & (pairs > 0)
    result: np.ndarray = np.divide(concordance, pairs, out=np.full(concordance.shape, np.nan), where=valid)
    return result


def _nanmean_rows(stack: list[np.ndarray], draws: int) -> np.ndarray:
    """Per draw, the mean of the finite values of ``stack`` (NaN where there is none)."""
    if not stack:
        return np.full(draws, np.nan)
    values = np.stack(stack)  # (items, B)
    finite = np.isfinite(values)
    total = np.where(finite, values, 0.0).sum(axis=0)
    count = finite.sum(axis=0)
    result: np.ndarray = np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)
    return result


def _granulated(
    measure: np.ndarray,
    gap: np.ndarray,
    keys: Sequence[Mapping[str, Hashable]],
    axes: Sequence[str],
    noise_axes: Sequence[str],
    counts: np.ndarray,
) -> tuple[float, tuple[AxisTau, ...], np.ndarray, list[np.ndarray]]:
    """(granulated tau, psi per axis, the granulated tau of each draw, psi of each axis per draw)."""
    draws = counts.shape[0]
    per_axis: list[AxisTau] = []
    psi_draws: list[np.ndarray] = []
    for axis in axes:
        groups = axis_groups(keys, axis)
        if not groups:
            per_axis.append(AxisTau(axis, math.nan, 0, 0, noise=axis in noise_axes))
            psi_draws.append(np.full(draws, np.nan))
            continue
        taus = _group_taus(measure, gap, groups)
        sample = _nanmean_rows(
            [_weighted_group_tau(measure, gap, rows, [keys[i][axis] for i in rows], counts) for rows in groups], draws
        )
        psi_draws.append(sample)
        members = sum(len(rows) for rows in groups)
        per_axis.append(
            AxisTau(axis, float(taus.mean()), len(groups), members, percentile_interval(sample), axis in noise_axes)
        )
    counted = [i for i, a in enumerate(per_axis) if a.groups and not a.noise]
    total = float(np.mean([per_axis[i].tau for i in counted])) if counted else math.nan
    return total, tuple(per_axis), _nanmean_rows([psi_draws[i] for i in counted], draws), psi_draws


def granulated_tau(
    measure: np.ndarray,
    gap: np.ndarray,
    keys: Sequence[Mapping[str, Hashable]],
    axes: Sequence[str],
    *,
    noise_axes: Sequence[str] = (),
    clusters: Sequence[Hashable] | None = None,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, tuple[AxisTau, ...], Interval]:
    """Jiang et al.'s granulated tau, its psi per axis (with intervals) and the granulated tau's interval,
    from one joint cluster bootstrap (module docstring). keys[i] gives run i's value on every axis (and
    any other setting that must match within a group, under keys that are not axes); ``noise_axes``
    get their psi but stay out of the mean."""
    measure, gap = np.asarray(measure, dtype=np.float64), np.asarray(gap, dtype=np.float64)
    counts = cluster_counts(clusters, measure.size, draws, seed)
    total, per_axis, total_draws, _ = _granulated(measure, gap, keys, axes, noise_axes, counts)
    interval = percentile_interval(total_draws) if math.isfinite(total) else UNDEFINED
    return total, per_axis, interval


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
    noise_axes: Sequence[str] = (),
    clusters: Sequence[Hashable] | None = None,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[MeasureCorrelation, ...]:
    """Overall and granulated tau of each measure with the gap, with their bootstrap intervals over the
    ``clusters`` (a configuration label per run; every run its own when None); runs with a non-finite
    value are left out. Every measure sees the same seeded draws, tau-b and the granulated tau of one
    measure the same draw."""
    gap = np.asarray(gap, dtype=np.float64)
    out = []
    for name, values in measures.items():
        values = np.asarray(values, dtype=np.float64)
        rows = _finite_rows(values, gap)
        x, y = values[rows], gap[rows]
        kept_keys = [keys[int(i)] for i in rows]
        kept = None if clusters is None else [clusters[int(i)] for i in rows]
        counts = cluster_counts(kept, rows.size, draws, seed)
        granulated, per_axis, granulated_draws, _ = _granulated(x, y, kept_keys, axes, noise_axes, counts)
        out.append(
            MeasureCorrelation(
                name,
                kendall_tau_b(x, y),
                kendall_tau_a(x, y),
                granulated,
                int(rows.size),
                per_axis,
                percentile_interval(tau_b_draws(x, y, counts)),
                percentile_interval(granulated_draws) if math.isfinite(granulated) else UNDEFINED,
                int(np.unique(cluster_ids(kept, rows.size)).size),
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


def compare_taus(
    measure: str,
    values: Sequence[float] | np.ndarray,
    other: str,
    other_values: Sequence[float] | np.ndarray,
    gap: Sequence[float] | np.ndarray,
    keys: Sequence[Mapping[str, Hashable]],
    axes: Sequence[str],
    *,
    noise_axes: Sequence[str] = (),
    clusters: Sequence[Hashable] | None = None,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> TauDifference:
    """The paired bootstrap of tau(values) - tau(other_values) over the runs where both (and the gap) are
    finite: the same draws of configurations (``clusters``) for tau-b and for the granulated tau."""
    a, b = np.asarray(values, dtype=np.float64), np.asarray(other_values, dtype=np.float64)
    gap = np.asarray(gap, dtype=np.float64)
    rows = _finite_rows(a, b, gap)
    a, b, y = a[rows], b[rows], gap[rows]
    kept_keys = [keys[int(i)] for i in rows]
    kept = None if clusters is None else [clusters[int(i)] for i in rows]
    counts = cluster_counts(kept, rows.size, draws, seed)
    tau_diff = tau_b_draws(a, y, counts) - tau_b_draws(b, y, counts)
    granulated_a, _, draws_a, _ = _granulated(a, y, kept_keys, axes, noise_axes, counts)
    granulated_b, _, draws_b, _ = _granulated(b, y, kept_keys, axes, noise_axes, counts)
    difference = granulated_a - granulated_b
    return TauDifference(
        measure,
        other,
        int(rows.size),
        kendall_tau_b(a, y) - kendall_tau_b(b, y),
        percentile_interval(tau_diff),
        difference,
        percentile_interval(draws_a - draws_b) if math.isfinite(difference) else UNDEFINED,
    )


# --- paired differences and multiplicity: the helpers every "beats" goes through --------------------------


def bootstrap_p_value(draws: Sequence[float] | np.ndarray) -> float:
    """The two-sided bootstrap p-value of "the statistic is 0" from its draws (Efron & Tibshirani 1993, §15.4,
    the percentile form): 2 min(#{d ≤ 0}, #{d ≥ 0}) over the finite draws, with the add-one correction
    (k + 1) / (B + 1) so that no p-value is 0; at most 1, and NaN without a finite draw. It is below α
    exactly when the (1 − α) percentile interval excludes 0 (up to the add-one correction).

    >>> bootstrap_p_value([0.1, 0.2, 0.3, -0.1])  # one draw of four at or below 0
    0.8
    >>> round(bootstrap_p_value(np.linspace(0.01, 1.0, 99)), 3)  # every draw above 0: 2 / 100
    0.02
    """
    d = np.asarray(draws, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return math.nan
    tail = min(int(np.count_nonzero(d <= 0)), int(np.count_nonzero(d >= 0)))
    return min(1.0, 2.0 * (tail + 1) / (d.size + 1))


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values of m tests: sorted ascending, p_(k) is multiplied by
    m − k + 1 (k = 1..m), made non-decreasing and capped at 1; a test is rejected at level α when its
    adjusted p-value is ≤ α, which controls the family-wise error rate at α for any dependence between
    the tests. NaN p-values are left out of m and stay NaN.

    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()  # 0.01 x 3, then max(0.03 x 2, 0.03), then 0.06 x 1
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = finite.size
    if m == 0:
        return out
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = p[order] * (m - np.arange(m))  # p_(k) (m − k + 1)
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


@dataclass(frozen=True)
class PairedTest:
    """One paired comparison of a candidate with a reference, among ``family`` candidates compared with it:
    the difference of a statistic, its (unadjusted) 95 % percentile interval, the bootstrap p-value and
    Holm's adjusted p-value over the family. ``verdict`` reads the adjusted p-value at 0.05 and the
    difference's sign."""

    measure: str
    other: str
    difference: float
    ci: Interval
    p_value: float
    p_holm: float
    family: int

    @property
    def verdict(self) -> Verdict:
        if not (math.isfinite(self.p_holm) and self.p_holm <= 1.0 - CONFIDENCE):
            return Verdict.INDISTINGUISHABLE
        return Verdict.BETTER if self.difference > 0 else Verdict.WORSE


def paired_tests(
    differences: Mapping[str, tuple[float, np.ndarray]], other: str, *, higher_is_better: bool = True
) -> tuple[PairedTest, ...]:
    """Holm-adjusted paired tests of several candidates against one reference ``other``, from each
    candidate's (observed difference, bootstrap draws of the difference), candidate minus reference, the
    draws of every candidate from the same resampling (so each test is paired). With
    ``higher_is_better`` False (a sign-error) a negative difference is the better one: the tests see the
    difference turned, so ``BETTER`` always means better.

    >>> rng = np.random.default_rng(0)
    >>> tests = paired_tests({"a": (0.3, rng.normal(0.3, 0.05, 999)), "b": (0.0, rng.normal(0, 0.05, 999))}, "c")
    >>> [(t.measure, t.verdict.value, t.family) for t in tests]
    [('a', 'better', 2), ('b', 'indistinguishable', 2)]
    """
    sign = 1.0 if higher_is_better else -1.0
    names = list(differences)
    p = [bootstrap_p_value(sign * np.asarray(differences[n][1])) for n in names]
    adjusted = holm(p)
    family = int(np.isfinite(np.asarray(p, dtype=np.float64)).sum())
    return tuple(
        PairedTest(
            name,
            other,
            sign * differences[name][0],
            percentile_interval(sign * np.asarray(differences[name][1])),
            p_value,
            float(p_holm),
            family,
        )
        for name, p_value, p_holm in zip(names, p, adjusted, strict=True)
    )


def tau_b_differences(
    candidates: Mapping[str, Sequence[float] | np.ndarray],
    other: Sequence[float] | np.ndarray,
    gap: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Hashable] | None = None,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, tuple[float, np.ndarray]]:
    """τ_b(candidate) − τ_b(other) for each candidate, and its draws from one cluster bootstrap over the runs
    where the candidate, ``other`` and the gap are finite (every candidate the same draws of the
    configurations ``clusters``: a paired comparison). The input of :func:`paired_tests`.

    >>> x = np.arange(6.0)
    >>> d, sample = tau_b_differences({"same": x}, x, x, clusters=[0, 0, 1, 1, 2, 2], draws=50)["same"]
    >>> d, float(np.nanmax(np.abs(sample)))
    (0.0, 0.0)
    """
    b, y = np.asarray(other, dtype=np.float64), np.asarray(gap, dtype=np.float64)
    out: dict[str, tuple[float, np.ndarray]] = {}
    reference: dict[bytes, tuple[np.ndarray, float, np.ndarray]] = {}  # rows -> (counts, τ_b, draws) of other
    for name, values in candidates.items():
        a = np.asarray(values, dtype=np.float64)
        rows = _finite_rows(a, b, y)
        key = rows.tobytes()
        if key not in reference:  # the candidates mostly share their finite runs: other's draws once
            kept = None if clusters is None else [clusters[int(i)] for i in rows]
            counts = cluster_counts(kept, rows.size, draws, seed)
            reference[key] = (counts, kendall_tau_b(b[rows], y[rows]), tau_b_draws(b[rows], y[rows], counts))
        counts, tau_other, other_draws = reference[key]
        sample = tau_b_draws(a[rows], y[rows], counts) - other_draws
        out[name] = (kendall_tau_b(a[rows], y[rows]) - tau_other, sample)
    return out
