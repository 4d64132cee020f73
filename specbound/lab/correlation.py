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
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


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
class AxisTau:
    """psi of one axis: mean tau-a over ``groups`` groups of runs that differ only in that axis."""

    axis: str
    tau: float  # NaN without any group
    groups: int
    runs: int  # runs inside those groups


@dataclass(frozen=True)
class MeasureCorrelation:
    measure: str
    kendall_tau: float  # tau-b over all runs
    kendall_tau_a: float
    granulated_tau: float  # mean of psi over the axes with groups (NaN if none)
    runs: int  # runs with a finite measure and gap
    axes: tuple[AxisTau, ...]

    @property
    def groups(self) -> int:
        return sum(a.groups for a in self.axes)


def granulated_tau(
    measure: np.ndarray, gap: np.ndarray, keys: Sequence[Mapping[str, Hashable]], axes: Sequence[str]
) -> tuple[float, tuple[AxisTau, ...]]:
    """Jiang et al.'s granulated tau. keys[i] gives run i's value on every axis (and any other setting
    that must match within a group, under keys that are not axes)."""
    per_axis = []
    for axis in axes:
        groups: dict[tuple[tuple[str, Hashable], ...], list[int]] = defaultdict(list)
        for i, key in enumerate(keys):
            groups[tuple(sorted((k, v) for k, v in key.items() if k != axis))].append(i)
        taus, members = [], 0
        for rows in groups.values():
            if len({keys[i][axis] for i in rows}) < 2:
                continue
            taus.append(kendall_tau_a(measure[rows], gap[rows]))
            members += len(rows)
        per_axis.append(AxisTau(axis, float(np.mean(taus)) if taus else math.nan, len(taus), members))
    psis = [a.tau for a in per_axis if a.groups]
    return (float(np.mean(psis)) if psis else math.nan), tuple(per_axis)


def correlate(
    measures: Mapping[str, Sequence[float] | np.ndarray],
    gap: Sequence[float] | np.ndarray,
    keys: Sequence[Mapping[str, Hashable]],
    axes: Sequence[str],
) -> tuple[MeasureCorrelation, ...]:
    """Overall and granulated tau of each measure with the gap; runs with a non-finite value are left out."""
    gap = np.asarray(gap, dtype=np.float64)
    out = []
    for name, values in measures.items():
        values = np.asarray(values, dtype=np.float64)
        keep = np.isfinite(values) & np.isfinite(gap)
        rows = np.flatnonzero(keep)
        kept_keys = [keys[int(i)] for i in rows]
        granulated, per_axis = granulated_tau(values[rows], gap[rows], kept_keys, axes)
        out.append(
            MeasureCorrelation(
                name,
                kendall_tau_b(values[rows], gap[rows]),
                kendall_tau_a(values[rows], gap[rows]),
                granulated,
                int(rows.size),
                per_axis,
            )
        )
    return tuple(out)
