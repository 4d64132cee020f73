"""Synthetic spectra for teaching: prescribe a decay law and watch which Schatten index wins.

Nothing here comes from a checkpoint. ``synthetic_spectrum`` makes singular values with a chosen
rank, decay law and top value; ``contribution_curve`` evaluates c(W; p) for them with the same
formulas the real analysis uses (:mod:`specbound.core.bounds`), for a chosen scale s_W and width N.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from .bounds import FINE_P_POINTS, fine_p_axis, log_contribution_table, optimal_index, p_grid
from .spectrum import rank_threshold


class Decay(str, Enum):
    """How sigma_i falls with i = 1..rank (sigma_1 is the chosen top value)."""

    FLAT = "flat"  # sigma_i = sigma_1: an exactly low-rank, well-conditioned matrix
    POWER = "power law"  # sigma_i = sigma_1 i^(-rate)
    EXPONENTIAL = "exponential"  # sigma_i = sigma_1 exp(-rate (i - 1))
    STEP = "step"  # a few large values then a floor: sigma_1 for i <= rank / 4, sigma_1 10^(-rate) after


def synthetic_spectrum(rank: int, decay: Decay, rate: float, top: float = 1.0) -> np.ndarray:
    """Descending singular values of a synthetic rank-``rank`` matrix."""
    if rank < 0 or top < 0 or rate < 0:
        raise ValueError("rank, rate and top must be non-negative")
    i = np.arange(1, rank + 1, dtype=np.float64)
    if decay is Decay.FLAT:
        sv = np.ones_like(i)
    elif decay is Decay.POWER:
        sv = i ** (-rate)
    elif decay is Decay.EXPONENTIAL:
        sv = np.exp(-rate * (i - 1))
    else:
        sv = np.where(i <= max(1, rank // 4), 1.0, 10.0 ** (-rate))
    return top * sv


@dataclass(frozen=True, eq=False)
class SyntheticCurve:
    """c(W; p) of a synthetic spectrum on a fine p axis and on the post-hoc grid P_m."""

    p: np.ndarray  # fine axis over [0, 2]
    contribution: np.ndarray
    grid: np.ndarray  # P_m
    grid_contribution: np.ndarray
    p_opt_index: int  # column of p* in ``grid``: argmin over P_m, ties to the smaller p
    rank: int

    @property
    def p_opt(self) -> float:
        return float(self.grid[self.p_opt_index])


def contribution_curve(
    sv: np.ndarray, *, hidden_size: int, scale: float, grid_m: int, points: int = FINE_P_POINTS
) -> SyntheticCurve:
    """c(W; p) = S_p^(1/(p+2)) s^(p/(p+2)) N^((p+1)/(p+2)) for the spectrum sv, with k = N."""
    if scale <= 0:
        raise ValueError("the scale s_W must be positive")
    sv = np.sort(np.asarray(sv, dtype=np.float64))[::-1][None, :]  # (1, K)
    top = sv[0, 0] if sv.size else 0.0
    counted = sv > rank_threshold(top, hidden_size)
    log_s = np.array([np.log(scale)])

    def log_curve(ps: np.ndarray) -> np.ndarray:
        return log_contribution_table(sv, counted, log_s, ps, hidden_size)  # (1, len(ps))

    fine, grid = fine_p_axis(points), p_grid(grid_m)
    log_on_grid = log_curve(grid)
    best = optimal_index(log_on_grid)[0]
    return SyntheticCurve(fine, np.exp(log_curve(fine)[0]), grid, np.exp(log_on_grid[0]), int(best), int(counted.sum()))
