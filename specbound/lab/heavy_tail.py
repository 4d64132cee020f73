"""Power-law fits of a matrix's empirical spectral density (ESD): the exponent α and its weighted form.

The ESD of W is the set of eigenvalues λ_i = σ_i² of WᵀW. Heavy-tailed self-regularisation (Martin &
Mahoney 2021, "Implicit self-regularization in deep neural networks"; the weight-spectrum tool's
``alpha`` and ``alpha_weighted``) fits its upper tail with a power law p(λ) ∝ λ^(−α) for λ ≥ λ_min,
by the method of Clauset, Shalizi & Newman (2009, "Power-law distributions in empirical data", SIAM
Review 51, sections 3.1 and 3.3):

* for a given x_min, the maximum-likelihood exponent of the n values x_i ≥ x_min is (their eq. 3.1)

      α̂ = 1 + n / Σ_i ln(x_i / x_min),       standard error (α̂ − 1) / √n;

* x_min is the candidate that minimises the Kolmogorov–Smirnov distance between the tail's empirical
  CDF S and the fitted CDF P(x) = 1 − (x / x_min)^(1 − α̂):  D = sup_{x ≥ x_min} |S(x) − P(x)|,
  evaluated at both sides of every step of S (for sorted x_(1) ≤ … ≤ x_(n): max over i of
  i/n − P(x_(i)) and P(x_(i)) − (i − 1)/n).

Candidates are the distinct values that leave at least ``min_tail`` values in the tail (default 10):
on a spectrum of a few dozen eigenvalues, the unrestricted minimum is often a tail of three or four
values that fits by chance. A matrix with fewer than ``min_tail`` positive eigenvalues has no
candidate; it is skipped and counted, not fitted.

The weighted exponent of a matrix is α̂_w = α̂ · log10 λ_max (λ_max = σ₁²). Everything is numpy over
all candidates at once: an (x_min candidates × values) table per matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The fewest values a fitted tail may hold (a matrix with fewer positive eigenvalues is skipped).
MIN_TAIL: int = 10


@dataclass(frozen=True)
class PowerLawFit:
    """α̂ of the values ≥ ``xmin`` (``tail`` of them) and the KS distance of that fit."""

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


def fit_power_law(values: np.ndarray, min_tail: int = MIN_TAIL) -> PowerLawFit | None:
    """The Clauset et al. fit of the positive ``values``, x_min chosen by the KS distance.

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


def spectrum_alphas(singular_values: np.ndarray, counted: np.ndarray, min_tail: int = MIN_TAIL) -> SpectrumAlphas:
    """Fits of the ESDs λ = σ² of M matrices: ``singular_values`` (M, K), ``counted`` (M, K) the values
    above the numerical-rank threshold (zero padding and round-off are not eigenvalues of the ESD)."""
    alphas, weighted, skipped = [], [], 0
    for sv, keep in zip(np.asarray(singular_values), np.asarray(counted), strict=True):
        eigenvalues = np.square(sv[keep])  # (rank,)
        fit = fit_power_law(eigenvalues, min_tail)
        if fit is None:
            skipped += 1
            continue
        alphas.append(fit.alpha)
        weighted.append(fit.alpha * math.log10(float(eigenvalues.max())))
    return SpectrumAlphas(np.asarray(alphas, dtype=np.float64), np.asarray(weighted, dtype=np.float64), skipped)
