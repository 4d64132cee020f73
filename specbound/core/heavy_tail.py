"""Power-law fits of a matrix's empirical spectral density (ESD): the exponent α and its weighted form.

The ESD of W is the set of eigenvalues λ_i = σ_i² of WᵀW. Heavy-tailed self-regularisation (Martin &
Mahoney 2021, "Implicit self-regularization in deep neural networks"; WeightWatcher's ``alpha`` and
``alpha_weighted``) fits its upper tail with a power law p(λ) ∝ λ^(−α) for λ ≥ λ_min, by the method of
Clauset, Shalizi & Newman (2009, "Power-law distributions in empirical data", SIAM Review 51, sections
3.1 and 3.3):

* for a given x_min, the maximum-likelihood exponent of the n values x_i ≥ x_min is (their eq. 3.1)

      α̂ = 1 + n / Σ_i ln(x_i / x_min),       standard error (α̂ − 1) / √n;

* x_min is the candidate whose fit P(x) = 1 − (x / x_min)^(1 − α̂) is closest to the tail's empirical
  CDF S in the Kolmogorov–Smirnov distance (the first of equal distances, i.e. the smallest x_min).

Two conventions of the details, a :class:`PowerLawRule` each:

``WEIGHTWATCHER`` (the default) is WeightWatcher 0.7.7's fit exactly (``WeightWatcher.fit_powerlaw``
with its defaults, which runs ``WW_powerlaw.WWFit``): the eigenvalues ≤ 1e-5 are dropped; every sorted
value but the largest is a candidate (a tail of 2 values is allowed; a repeated value is a candidate at
each of its positions, the tail starting there); the KS distance compares P with the empirical CDF's
left limit only, D = max_i |P(x_(i)) − (i − 1)/n| (for sorted x_(1) ≤ … ≤ x_(n)), and a candidate with
α̂ ≤ 1 gets D = 1. On fewer than 20 values (after the floor) it switches to its small-sample branch:
the bias-corrected α̂ = 1 + (n − 1) / Σ ln(x_i / x_min), candidates only with n ≥ 8 and
Σ ln(x_i / x_min) > 1e-12, the same D (the branch also computes an objective D − 0.868/√n, which
``WWFit.__init__`` then overrides with the argmin of D); with no such candidate (fewer than 8 values)
the whole spectrum is the tail, with the bias-corrected α̂ (0 when Σ ln(x_i / x_min) ≤ 1e-12). Fewer
than 2 values above the floor: WeightWatcher's fit fails, and the matrix is skipped. The lab's proxy
matrices are at least 32 × 32, so WeightWatcher's ``min_evals = 8`` on a layer's size never applies.

``STRICT`` is this module's earlier fit: candidates are the distinct positive values that leave at
least ``min_tail`` values in the tail (default 10), and D is the two-sided distance sup |S − P|,
evaluated at both sides of every step of S (max over i of i/n − P(x_(i)) and P(x_(i)) − (i − 1)/n).
On a spectrum of a few dozen eigenvalues the unrestricted minimum is often a tail of three or four
values that fits by chance, and the left-limit distance can miss the step at the largest value; a
matrix with fewer than ``min_tail`` positive eigenvalues is skipped. It is the fit to use for a
statistically steadier α on small spectra, not to compare with WeightWatcher's numbers.

The weighted exponent of a matrix is α̂_w = α̂ · log10 λ_max (λ_max = σ₁²), WeightWatcher's
``alpha_weighted``. The distances are numpy over all candidates at once (a candidates × values table);
the WeightWatcher sums Σ_{j ≥ i} ln x_j are taken per candidate as it takes them, so α̂ repeats its
rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

#: The fewest values a STRICT tail may hold (a matrix with fewer positive eigenvalues is skipped).
MIN_TAIL: int = 10
#: WeightWatcher 0.7.7's floor: eigenvalues at or below it are not fitted (its ``EVALS_THRESH``).
EIGENVALUE_FLOOR: float = 1e-5
#: Below this many values WeightWatcher fits with its small-sample branch (``WW_powerlaw.SMALL_N_CUTOFF``).
SMALL_SAMPLE: int = 20
#: The fewest values of a tail in that branch (``fit_powerlaw_smallN``'s ``k_min``).
SMALL_SAMPLE_MIN_TAIL: int = 8
#: That branch's bound on Σ ln(x / x_min) below which a tail counts as constant.
_DEGENERATE_SPREAD: float = 1e-12


class PowerLawRule(str, Enum):
    """Which convention chooses x_min and α̂ (see the module docstring)."""

    WEIGHTWATCHER = "weightwatcher"  # WeightWatcher 0.7.7's fit, tails down to 2 values, left-limit KS
    STRICT = "strict"  # tails of at least MIN_TAIL values, two-sided KS


#: The rule of the lab's ``alpha`` and ``alpha_hat``.
DEFAULT_RULE: PowerLawRule = PowerLawRule.WEIGHTWATCHER


@dataclass(frozen=True)
class PowerLawFit:
    """α̂ of the ``tail`` largest values (from ``xmin`` on) and the KS distance of that fit.

    Where x_min is repeated, WeightWatcher may start the tail at a later copy: ``tail`` is then the
    values fitted, one fewer per copy left out than its ``num_pl_spikes`` (every value ≥ x_min).
    """

    alpha: float
    xmin: float
    tail: int
    ks_distance: float

    @property
    def alpha_se(self) -> float:
        """(α̂ − 1) / √n, Clauset et al.'s eq. 3.2."""
        return (self.alpha - 1.0) / math.sqrt(self.tail)


def power_law_alpha(values: np.ndarray, xmin: float) -> float:
    """α̂ = 1 + n / Σ ln(x_i / x_min) over the n values ≥ x_min (inf when they all equal x_min)."""
    tail = np.asarray(values, dtype=np.float64)
    tail = tail[tail >= xmin]
    if tail.size == 0:
        raise ValueError(f"no value is >= xmin = {xmin}")
    total = float(np.log(tail / xmin).sum())
    return 1.0 + tail.size / total if total > 0 else math.inf


def fit_power_law(values: np.ndarray, rule: PowerLawRule = DEFAULT_RULE) -> PowerLawFit | None:
    """The fit of ``values`` by ``rule`` (None where the rule skips them: too few values)."""
    if rule is PowerLawRule.WEIGHTWATCHER:
        return fit_weightwatcher(values)
    return fit_strict(values)


def _left_limit_distances(x: np.ndarray, starts: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """max_{j ≥ i} |1 − (x_j / x_i)^(1 − α_i) − (j − i) / n_i| per candidate start i (WeightWatcher's D,
    evaluated in its order of operations): (K,) from sorted ``x`` (m,)."""
    m = x.size
    n = (m - starts).astype(np.float64)  # (K,)
    j = np.arange(m)
    offset = j[None, :] - starts[:, None]  # (K, m) position in the tail, from 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        fitted = 1.0 - np.power(x[None, :] / x[starts][:, None], -alphas[:, None] + 1.0)  # (K, m)
        gaps = np.abs(fitted - offset / n[:, None])  # (K, m)
    result: np.ndarray = np.where(offset >= 0, gaps, -np.inf).max(axis=1)  # (K,)
    return result


def fit_weightwatcher(values: np.ndarray) -> PowerLawFit | None:
    """WeightWatcher 0.7.7's fit of the values above :data:`EIGENVALUE_FLOOR` (see the module docstring).

    None when fewer than 2 values are above the floor (where WeightWatcher's fit fails).
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    x = np.sort(x[np.isfinite(x) & (x > EIGENVALUE_FLOOR)])
    m = x.size
    if m < 2:
        return None
    logs = np.log(x)  # (m,)
    starts = np.arange(m - 1)  # (K,) every value but the largest
    n = (m - starts).astype(np.float64)  # (K,) tail sizes
    spread = np.array([np.sum(logs[i:]) for i in starts]) - n * logs[starts]  # (K,) Σ ln(x_j / x_i), as WW sums
    if m >= SMALL_SAMPLE:
        with np.errstate(divide="ignore"):
            alphas = 1.0 + n / spread  # (K,)
        valid = alphas > 1.0
    else:  # the small-sample branch: bias-corrected, tails of at least 8, non-constant
        kept = (n >= SMALL_SAMPLE_MIN_TAIL) & (spread > _DEGENERATE_SPREAD)
        with np.errstate(divide="ignore", invalid="ignore"):
            alphas = np.where(kept, 1.0 + (n - 1.0) / spread, 0.0)  # (K,) 0 where not set
        valid = kept & (alphas > 1.0)
        if not valid.any():  # the whole spectrum is the tail
            whole = spread[0] > _DEGENERATE_SPREAD
            alpha = 1.0 + (m - 1.0) / spread[0] if whole else 0.0
            distance = float(_left_limit_distances(x, starts[:1], np.array([alpha]))[0]) if whole else 1.0
            return PowerLawFit(float(alpha), float(x[0]), m, distance)
    distances = np.where(valid, _left_limit_distances(x, starts, alphas), 1.0)  # (K,)
    best = int(np.argmin(distances))
    return PowerLawFit(float(alphas[best]), float(x[best]), int(n[best]), float(distances[best]))


def fit_strict(values: np.ndarray, min_tail: int = MIN_TAIL) -> PowerLawFit | None:
    """The STRICT fit of the positive ``values``: tails of at least ``min_tail``, two-sided KS distance.

    None when fewer than ``min_tail`` values are positive (or every candidate tail is constant).
    """
    if min_tail < 2:
        raise ValueError(f"a tail needs at least 2 values, got min_tail = {min_tail}")
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    x = x[np.isfinite(x) & (x > 0)]
    m = x.size
    if m < min_tail:
        return None
    starts = np.arange(m - min_tail + 1)
    starts = starts[(starts == 0) | (x[starts] != x[np.maximum(starts - 1, 0)])]  # distinct candidates
    xmins = x[starts]  # (K,)
    n = (m - starts).astype(np.float64)  # (K,) tail sizes
    logs = np.log(x)  # (m,)
    suffix = np.concatenate([np.cumsum(logs[::-1])[::-1], [0.0]])  # suffix[k] = sum_{j >= k} ln x_j
    spread = suffix[starts] - n * np.log(xmins)  # (K,) sum over the tail of ln(x_j / x_min)
    with np.errstate(divide="ignore"):
        alphas = np.where(spread > 0, 1.0 + n / spread, np.inf)  # (K,)
    j = np.arange(m)
    in_tail = j[None, :] >= starts[:, None]  # (K, m)
    rank = (j[None, :] - starts[:, None] + 1).astype(np.float64)  # (K, m) 1-based position in the tail
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        fitted = 1.0 - np.power(x[None, :] / xmins[:, None], 1.0 - alphas[:, None])  # (K, m) P(x_j)
        above = rank / n[:, None] - fitted  # S just after x_j minus P
        below = fitted - (rank - 1.0) / n[:, None]  # P minus S just before x_j
    gaps = np.where(in_tail, np.maximum(above, below), -np.inf)  # (K, m)
    distance = np.where(np.isfinite(alphas), gaps.max(axis=1), np.inf)  # (K,)
    if not np.isfinite(distance).any():
        return None
    best = int(np.argmin(distance))  # the first (smallest x_min) of equal distances
    return PowerLawFit(float(alphas[best]), float(xmins[best]), int(n[best]), float(distance[best]))


@dataclass(frozen=True)
class SpectrumAlphas:
    """α̂ and α̂ · log10 λ_max of each fitted matrix, and how many matrices had too few eigenvalues."""

    alpha: np.ndarray  # (fitted,)
    weighted: np.ndarray  # (fitted,)
    skipped: int

    @property
    def mean_alpha(self) -> float:
        """Mean α̂ over the fitted matrices (NaN when none could be fitted)."""
        return float(self.alpha.mean()) if self.alpha.size else math.nan

    @property
    def mean_weighted(self) -> float:
        """Mean α̂ log10 λ_max over the fitted matrices (NaN when none could be fitted)."""
        return float(self.weighted.mean()) if self.weighted.size else math.nan


def spectrum_alphas(
    singular_values: np.ndarray, counted: np.ndarray, rule: PowerLawRule = DEFAULT_RULE
) -> SpectrumAlphas:
    """Fits of the ESDs λ = σ² of M matrices: ``singular_values`` (M, K), ``counted`` (M, K) the values
    above the numerical-rank threshold (zero padding and round-off are not eigenvalues of the ESD; they
    lie far below WeightWatcher's floor, so dropping them does not move its fit): the fitted matrices of
    :func:`power_law_table`, and how many it skipped."""
    table = power_law_table(singular_values, counted, rule)
    fitted = ~table.skipped
    return SpectrumAlphas(table.alpha[fitted], table.alpha_weighted[fitted], int(table.skipped.sum()))


@dataclass(frozen=True, eq=False)
class PowerLawTable:
    """The power-law fit of every matrix of a profile (profile order; NaN where the rule skips a matrix):
    the exponent α, the weighted exponent α · log10 λ_max, the tail's x_min and size, and the fit's
    Kolmogorov–Smirnov distance."""

    alpha: np.ndarray  # (M,)
    alpha_weighted: np.ndarray  # (M,)
    xmin: np.ndarray  # (M,)
    tail: np.ndarray  # (M,) values in the fitted tail (0 where skipped)
    distance: np.ndarray  # (M,)

    @property
    def skipped(self) -> np.ndarray:
        """(M,) True where the rule fitted nothing (too few eigenvalues above its floor)."""
        result: np.ndarray = np.isnan(self.alpha)
        return result


def power_law_table(
    singular_values: np.ndarray, counted: np.ndarray, rule: PowerLawRule = DEFAULT_RULE
) -> PowerLawTable:
    """The fit of each matrix's ESD λ = σ² (its counted singular values) by ``rule``, kept per matrix
    (:func:`spectrum_alphas` keeps the fitted ones, for the lab's means).

    Costs a candidates × values table per matrix: milliseconds for a head's d eigenvalues, about a
    second for a feed-forward matrix of a 7B model, which is why the analysis computes it only on request.

    Example::

        >>> from specbound.io.loading import load_profile
        >>> profile = load_profile("minilm-l6")
        >>> table = power_law_table(profile.singular_values, profile.above_threshold)
        >>> table.alpha.shape
        (156,)
    """
    rows = []
    for sv, keep in zip(np.asarray(singular_values), np.asarray(counted), strict=True):
        eigenvalues = np.square(sv[keep])  # (rank,)
        fit = fit_power_law(eigenvalues, rule)
        if fit is None:
            rows.append((math.nan, math.nan, math.nan, 0, math.nan))
        else:
            weighted = fit.alpha * math.log10(float(eigenvalues.max()))
            rows.append((fit.alpha, weighted, fit.xmin, fit.tail, fit.ks_distance))
    columns = list(zip(*rows, strict=True)) if rows else [()] * 5
    return PowerLawTable(
        np.asarray(columns[0], dtype=np.float64),
        np.asarray(columns[1], dtype=np.float64),
        np.asarray(columns[2], dtype=np.float64),
        np.asarray(columns[3], dtype=np.int64),
        np.asarray(columns[4], dtype=np.float64),
    )
