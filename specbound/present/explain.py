"""Why p* wins: the p* pattern of a model, break-even scales, and rank against its structural maximum.

Break-even scale. With ln c(W; p) = [ln S_p + p ln s_W + (p + 1) ln N] / (p + 2) (SPEC §3) and
c(W; 0) = sqrt(rank N), for p > 0

    c(W; p) < c(W; 0)
    <=> 2 [ln S_p + p ln s_W + (p + 1) ln N] < (p + 2)(ln rank + ln N)
    <=> ln s_W < b_W(p) := [((p + 2) / 2) ln rank - ln S_p] / p - (1/2) ln N.

So some grid point p > 0 beats p = 0 exactly when ln s_W < ln s*_W := max_{p in P_m, p > 0} b_W(p), the
**break-even scale**; above it p*_W = 0. The smallest p > 0 of the grid with ln s_W < b_W(p) is the
first index that would win at the current scale. For a flat spectrum (sigma_i = sigma, i <= r) S_p =
r sigma^p, b(p) = (1/2) ln(r / N) - ln sigma for every p, so s* = sqrt(r / N) / sigma. A zero matrix
(rank 0) has c = 0 at every p: no scale makes p > 0 win, its break-even is -inf.

On trained BERTs s_W = gamma alpha L carries the depth factor alpha (about 10^22 at MiniLM's layer
0), far above any break-even scale, so every term with p > 0 explodes and p* = 0 throughout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..core.architecture import Kind
from ..core.bounds import TIE_RTOL, BoundAnalysis, log_schatten_table
from ..core.logspace import to_log10
from ..core.profile import SpectralProfile
from .numbers import format_power

#: A scale this many decades away from its break-even counts as "far" above or below it in the sentence.
FAR_DECADES: float = 1.0
#: The depth factor is named as the cause when the largest alpha exceeds 10^this.
LARGE_ALPHA_DECADES: float = 1.0


# --- break-even scales -----------------------------------------------------------------------


def log_break_even_table(
    singular_values: np.ndarray, counted: np.ndarray, ps: np.ndarray, hidden_size: int
) -> np.ndarray:
    """b_W(p) = [((p + 2)/2) ln rank - ln S_p] / p - (1/2) ln N for each matrix and each p > 0: (M, len(ps)).

    ln s_W < b_W(p) exactly when c(W; p) < c(W; 0). Rank-0 rows are -inf (nothing ever beats c = 0).
    """
    ps = np.asarray(ps, dtype=np.float64)
    if np.any(ps <= 0):
        raise ValueError("break-even scales compare p > 0 with p = 0: every p must be positive")
    rank = counted.sum(axis=1)  # (M,)
    log_rank = np.log(np.maximum(rank, 1)).astype(np.float64)  # ln rank; rank-0 rows are masked below
    log_s = log_schatten_table(singular_values, counted, ps)  # (M, len(ps))
    table = ((ps + 2.0) / 2.0 * log_rank[:, None] - log_s) / ps - 0.5 * math.log(hidden_size)
    table[rank == 0] = -np.inf
    result: np.ndarray = table
    return result


@dataclass(frozen=True, eq=False)
class BreakEven:
    """Per matrix (profile order): log10 s_W, the log10 break-even scale, the first winning p > 0.

    ``first_winning_p`` is the smallest grid p > 0 with c(W; p) < c(W; 0) at the current s_W, NaN when
    p = 0 wins (s_W at or above the break-even scale) or the matrix is zero. Both are read off the
    analysis' own table of c on P_m with its tie rule (within TIE_RTOL, to p = 0), so a scale that
    equals its break-even up to rounding agrees with p*.
    """

    log10_scale: np.ndarray  # (M,)
    log10_break_even: np.ndarray  # (M,) log10 of max over grid p > 0 of exp(b_W(p))
    first_winning_p: np.ndarray  # (M,)

    @property
    def p_zero_wins(self) -> np.ndarray:
        """(M,) True where no p > 0 beats p = 0 (s_W >= s*_W): exactly where p* = 0."""
        result: np.ndarray = np.isnan(self.first_winning_p)
        return result

    @property
    def decades_above(self) -> np.ndarray:
        """(M,) log10 s_W - log10 s*_W: how many decades the scale lies above its break-even (inf for rank 0)."""
        with np.errstate(invalid="ignore"):
            result: np.ndarray = self.log10_scale - self.log10_break_even
            return result


def break_even(analysis: BoundAnalysis) -> BreakEven:
    """Break-even scales of every matrix on the analysis' grid P_m (see the module docstring)."""
    prof = analysis.profile
    positive = analysis.grid[1:]  # the grid points p > 0
    table = log_break_even_table(prof.singular_values, prof.above_threshold, positive, prof.shape.hidden_size)
    log_c = analysis.log_contribution_grid  # (M, 2m + 1)
    wins = log_c[:, 1:] + TIE_RTOL < log_c[:, :1]  # (M, 2m): c(W; p) < c(W; 0) beyond a tie
    first = np.where(wins.any(axis=1), positive[np.argmax(wins, axis=1)], np.nan)
    return BreakEven(to_log10(analysis.log_scale), to_log10(table.max(axis=1)), first)


# --- the p* pattern --------------------------------------------------------------------------


def _format_p(p: float) -> str:
    return f"{p:.3g}"


@dataclass(frozen=True)
class PStarSummary:
    """How many matrices take each grid value of p*, overall and per kind."""

    grid: tuple[float, ...]
    counts: tuple[int, ...]  # per grid value
    counts_by_kind: Mapping[Kind, tuple[int, ...]]

    @property
    def total(self) -> int:
        return sum(self.counts)

    def used(self, kind: Kind | None = None) -> dict[float, int]:
        """{p: count} over the grid values some matrix (of ``kind``, or any) takes."""
        counts = self.counts if kind is None else self.counts_by_kind[Kind(kind)]
        return {p: n for p, n in zip(self.grid, counts, strict=True) if n}

    def headline(self) -> str:
        """'p* = 0 for 156 of 156 matrices', naming the most common value."""
        p, n = max(self.used().items(), key=lambda item: (item[1], -item[0]))
        return f"p* = {_format_p(p)} for {n:,} of {self.total:,} matrices"


def p_star_summary(analysis: BoundAnalysis) -> PStarSummary:
    """Counts of p* per grid value, overall and for each kind."""
    columns = len(analysis.grid)
    counts = np.bincount(analysis.p_opt_index, minlength=columns)
    by_kind = {
        kind: tuple(int(n) for n in np.bincount(analysis.p_opt_index[analysis.profile.mask(kind)], minlength=columns))
        for kind in analysis.profile.model_kinds
    }
    return PStarSummary(
        tuple(float(p) for p in analysis.grid), tuple(int(n) for n in counts), MappingProxyType(by_kind)
    )


def p_star_by_kind(analysis: BoundAnalysis) -> dict[Kind, np.ndarray]:
    """p* laid out per kind: (L, H) for QK and V, (L,) for each MLP kind of the model."""
    return analysis.profile.by_kind(analysis.p_opt)


def _span(low: str, high: str) -> str:
    return low if low == high else f"{low} to {high}"


def _decades(values: np.ndarray) -> str:
    return _span(format_power(float(np.min(values))), format_power(float(np.max(values))))


def explain_p_star(analysis: BoundAnalysis) -> str:
    """One plain-English sentence that explains the model's p* pattern from its own s_W and break-evens."""
    summary, even = p_star_summary(analysis), break_even(analysis)
    nonzero = analysis.profile.rank > 0
    zero_note = "" if nonzero.all() else f" ({int((~nonzero).sum())} zero matrices contribute nothing)"
    total, p0 = summary.total, summary.used().get(0.0, 0)
    scales, evens = even.log10_scale[nonzero], even.log10_break_even[nonzero]
    if not nonzero.any():
        return f"p* = 0 for all {total:,} matrices because every one is zero: c(W; p) = 0 at every p."
    if p0 == total:
        gap = float(np.min(scales - evens))
        where = "far above" if gap >= FAR_DECADES else "above"
        alpha = float(np.max(to_log10(analysis.log_alpha)))
        cause = (
            f"the depth factor α (up to {format_power(alpha)}) inflates s_W, and every Schatten term with p > 0 "
            "grows like s_W to the power p/(p+2)"
            if alpha >= LARGE_ALPHA_DECADES
            else "at such scales a Schatten term with p > 0, which grows like s_W to the power p/(p+2), "
            "costs more than counting rank"
        )
        return (
            f"p* = 0 for all {total:,} matrices because their scales s_W are {_decades(scales)}, {where} the "
            f"break-even scales (at most {format_power(float(np.max(evens)))}) below which some p > 0 would win: "
            f"{cause}{zero_note}."
        )
    winning = analysis.p_opt > 0  # rank-0 matrices always take p* = 0
    winners = analysis.p_opt[winning]
    if p0 == 0 or p0 == int((~nonzero).sum()):
        values = np.unique(winners)
        which = f"p* = {_span(_format_p(values[0]), _format_p(values[-1]))}"
        gap = float(np.max(scales - evens))
        where = "far below" if gap <= -FAR_DECADES else "below"
        return (
            f"{which} for all {winners.size:,} nonzero matrices because their scales s_W "
            f"({_decades(scales)}) lie {where} their break-even scales "
            f"(at least {format_power(float(np.min(evens)))}): "
            f"at such small scales a norm-based term with p > 0 is cheaper than counting rank{zero_note}."
        )
    kinds = ", ".join(
        f"{sum(n for p, n in summary.used(kind).items() if p > 0)} {kind.value}"
        for kind in analysis.profile.model_kinds
        if any(p > 0 for p in summary.used(kind))
    )
    above, below = ~winning & nonzero, winning
    return (
        f"p* = 0 for {p0:,} of {total:,} matrices, whose scales s_W ({_decades(even.log10_scale[above])}) lie "
        f"above their break-even scales, and p* = {_span(_format_p(winners.min()), _format_p(winners.max()))} "
        f"for the other {winners.size:,} ({kinds}), whose s_W ({_decades(even.log10_scale[below])}) lie below "
        f"theirs: a small scale lets a norm-based term with p > 0 undercut counting rank{zero_note}."
    )


# --- rank against its structural maximum ----------------------------------------------------


def structural_rank(profile: SpectralProfile) -> np.ndarray:
    """(M,) the largest rank each matrix can have: min(d, N) for the per-head kinds, min(N, d_ff) (the
    matrix's full dimension, an expert's own d_ff in a mixture of experts) for the MLP kinds."""
    shape = profile.shape
    per_head = np.array([matrix.kind.per_head for matrix in profile.ids])  # (M,)
    return np.where(per_head, min(shape.head_dim, shape.hidden_size), profile.full_dims)


def rank_and_maximum(profile: SpectralProfile) -> tuple[np.ndarray, np.ndarray]:
    """(rank, structural maximum) per matrix, both (M,) in profile order."""
    return profile.rank, structural_rank(profile)
