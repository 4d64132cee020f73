"""Dziugaite et al.'s robust view of a measure (2020, "In search of robust measures of generalization"):
a measure is judged by its worst environment, not its average.

An *environment* is one task × family of the lab (``threshold/bert``, ``modular/llama``, ...). In each,
a measure's **sign-error** against the gap is the share of run pairs it orders opposite to the gap,

    sign-error = D / (C + D),

C and D the concordant and discordant pairs among the pairs that neither the measure nor the gap ties
(for untied data this is (1 − τ_a) / 2; it is 0 when the measure orders every pair as the gap does, 1/2
for a measure unrelated to it, 1 when it orders every pair the wrong way). An environment where no pair
is untied in both has no sign-error (NaN) and is left out of the summary.

Over environments, a measure's row gives its sign-error in each, the mean, the worst (largest) and
the environment where it is worst: the row says where the measure fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


def sign_error(measure: Sequence[float] | np.ndarray, gap: Sequence[float] | np.ndarray) -> tuple[float, int]:
    """(D / (C + D), C + D) over the pairs of runs where both values are finite and neither is tied."""
    x, y = np.asarray(measure, dtype=np.float64), np.asarray(gap, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("the measure and the gap must be 1-d arrays of the same length")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    i, j = np.triu_indices(x.size, k=1)
    product = np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
    untied = int(np.count_nonzero(product))
    return (float(np.count_nonzero(product < 0)) / untied if untied else math.nan), untied


@dataclass(frozen=True)
class RobustRow:
    """One measure over the environments: its sign-error in each (NaN without an untied pair)."""

    measure: str
    environments: tuple[str, ...]
    sign_errors: tuple[float, ...]
    pairs: tuple[int, ...]  # untied pairs behind each sign-error

    def _defined(self) -> list[tuple[float, str]]:
        return [(e, env) for e, env in zip(self.sign_errors, self.environments, strict=True) if math.isfinite(e)]

    @property
    def mean(self) -> float:
        """Mean sign-error over the environments that have one."""
        defined = self._defined()
        return float(np.mean([e for e, _ in defined])) if defined else math.nan

    @property
    def worst(self) -> float:
        defined = self._defined()
        return max(e for e, _ in defined) if defined else math.nan

    @property
    def worst_environment(self) -> str:
        """The environment of the largest sign-error (the first in order on a tie; '' if none)."""
        defined = self._defined()
        return max(defined, key=lambda item: item[0])[1] if defined else ""

    @property
    def defined(self) -> int:
        """Environments with a sign-error."""
        return len(self._defined())


def robust_view(
    environments: Mapping[str, tuple[Mapping[str, Sequence[float] | np.ndarray], Sequence[float] | np.ndarray]],
) -> tuple[RobustRow, ...]:
    """For each measure, its sign-error in every environment; ``environments`` maps an environment's name
    to (the measures' values by name, the gap), one value per run. A measure an environment lacks reads
    as NaN there. Rows in the order the measures first appear."""
    names = list(dict.fromkeys(name for measures, _ in environments.values() for name in measures))
    rows = []
    for name in names:
        errors, pairs = [], []
        for measures, gap in environments.values():
            values = measures.get(name)
            error, count = sign_error(values, gap) if values is not None else (math.nan, 0)
            errors.append(error)
            pairs.append(count)
        rows.append(RobustRow(name, tuple(environments), tuple(errors), tuple(pairs)))
    return tuple(rows)


def environment_column(environment: str) -> str:
    """The robust.csv column of an environment's sign-error: ``sign_error_<task>_<family>``."""
    return "sign_error_" + environment.replace("/", "_")
