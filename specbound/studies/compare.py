"""A model against a baseline (another model, or its random-initialised twin): totals and their parts.

Both sides are :class:`~specbound.core.bounds.BoundAnalysis` objects, possibly of different shapes. Every
total is carried as a natural log (plain values may overflow float64 and become inf) and reported as
log10 beside the plain number; ratios are differences of logs, so they always exist.

Per-layer differences need the same depth: with L_model != L_baseline the layers do not correspond
(a 6-layer layer 5 is the top, a 12-layer layer 5 the middle), so ``per_layer_difference`` is None and
only each side's own per-layer sums are given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..core.architecture import Kind
from ..core.bounds import BoundAnalysis, BoundTerms, PAssignment
from ..core.logspace import exp_array, exp_or_inf, to_log10
from ..core.proxies import Proxy

#: What ``compare`` evaluates: a PAssignment, one p for every matrix, a per-matrix array, or None for p*.
PChoice = PAssignment | np.ndarray | float | None


@dataclass(frozen=True)
class ProxyTotals:
    """One model's proxies as natural logs: ours at p*, ours at the chosen assignment, Edelman-style."""

    model: str
    log_ours_opt: float
    log_ours_at: float
    log_edelman: float

    @property
    def log10(self) -> dict[Proxy, float]:
        """log10 of each proxy at its own optimum, by :class:`~specbound.core.proxies.Proxy`: ours at p*
        and the Edelman-style proxy (ours at the chosen assignment is :attr:`log10_at`)."""
        return {Proxy.OURS: float(to_log10(self.log_ours_opt)), Proxy.EDELMAN: float(to_log10(self.log_edelman))}

    @property
    def log10_at(self) -> float:
        """log10 of ours at the chosen assignment of p."""
        return float(to_log10(self.log_ours_at))

    @property
    def plain(self) -> dict[Proxy, float]:
        """:attr:`log10`'s proxies as plain numbers (inf where they overflow float64)."""
        return {Proxy.OURS: exp_or_inf(self.log_ours_opt), Proxy.EDELMAN: exp_or_inf(self.log_edelman)}

    @property
    def plain_at(self) -> float:
        """Ours at the chosen assignment as a plain number (inf where it overflows float64)."""
        return exp_or_inf(self.log_ours_at)


@dataclass(frozen=True, eq=False)
class Comparison:
    """A model against a baseline at the chosen assignments of p (natural logs unless named otherwise).

    ``log_kind_sums_*`` and ``log_layer_sums_*`` hold ln Σ c(W; p) at the chosen assignment.
    """

    model: ProxyTotals
    baseline: ProxyTotals
    log_kind_sums_model: Mapping[Kind, float]
    log_kind_sums_baseline: Mapping[Kind, float]
    log_layer_sums_model: np.ndarray  # (L_model,)
    log_layer_sums_baseline: np.ndarray  # (L_baseline,)

    @property
    def log10_ratio(self) -> dict[Proxy, float]:
        """log10(model / baseline) of each proxy at its optimum (ours at p*, Edelman-style)."""
        a, b = self.model.log10, self.baseline.log10
        return {proxy: a[proxy] - b[proxy] for proxy in a}

    @property
    def log10_ratio_at(self) -> float:
        """log10(model / baseline) of ours at the chosen assignments."""
        return self.model.log10_at - self.baseline.log10_at

    @property
    def kinds(self) -> tuple[Kind, ...]:
        """The kinds either model has, in profile order (a kind one model lacks sums to 0 there)."""
        return tuple(kind for kind in Kind if kind in self.log_kind_sums_model or kind in self.log_kind_sums_baseline)

    @property
    def kind_difference(self) -> dict[Kind, float]:
        """Σ c over each kind of either model, model minus baseline (plain; inf - inf gives nan)."""
        model, baseline = self.log_kind_sums_model, self.log_kind_sums_baseline
        with np.errstate(invalid="ignore"):
            return {
                kind: exp_or_inf(model.get(kind, -math.inf)) - exp_or_inf(baseline.get(kind, -math.inf))
                for kind in self.kinds
            }

    @property
    def layers_match(self) -> bool:
        return self.log_layer_sums_model.shape == self.log_layer_sums_baseline.shape

    @property
    def per_layer_difference(self) -> np.ndarray | None:
        """(L,) Σ c over each layer, model minus baseline; None when the depths differ (see the module)."""
        if not self.layers_match:
            return None
        with np.errstate(invalid="ignore"):
            return exp_array(self.log_layer_sums_model) - exp_array(self.log_layer_sums_baseline)

    @property
    def change_against_p_opt(self) -> float:
        """Ours at the chosen assignment minus ours at p* (the model's own): >= 0 whenever p lies on P_m."""
        with np.errstate(invalid="ignore"):
            return exp_or_inf(self.model.log_ours_at) - exp_or_inf(self.model.log_ours_opt)

    @property
    def change_against_baseline(self) -> float:
        """Ours at the chosen assignment, model minus baseline."""
        with np.errstate(invalid="ignore"):
            return exp_or_inf(self.model.log_ours_at) - exp_or_inf(self.baseline.log_ours_at)


def _totals(analysis: BoundAnalysis, terms: BoundTerms) -> ProxyTotals:
    return ProxyTotals(analysis.profile.model, analysis.optimal.log_total, terms.log_total, analysis.log_edelman)


def compare(model: BoundAnalysis, baseline: BoundAnalysis, p: PChoice = None, baseline_p: PChoice = None) -> Comparison:
    """Compare ``model`` at ``p`` with ``baseline`` at ``baseline_p`` (p = None: the model at its p*).

    ``baseline_p`` None applies the model's ``p`` to the baseline too (a PAssignment's kinds and layers
    carry over; p* stays each matrix's own p*); ``PAssignment()`` puts the baseline at its own p*. A
    per-matrix array fits one shape only, so a baseline of another shape needs its own.
    """
    if baseline_p is None:
        if isinstance(p, np.ndarray) and p.shape != baseline.p_opt.shape:
            raise ValueError("a per-matrix array of p fits one shape: give the baseline its own baseline_p")
        baseline_p = p
    terms, base_terms = model.evaluate(p), baseline.evaluate(baseline_p)
    return Comparison(
        model=_totals(model, terms),
        baseline=_totals(baseline, base_terms),
        log_kind_sums_model=MappingProxyType(terms.log_per_kind()),
        log_kind_sums_baseline=MappingProxyType(base_terms.log_per_kind()),
        log_layer_sums_model=terms.log_per_layer(model.profile.shape.num_layers),
        log_layer_sums_baseline=base_terms.log_per_layer(baseline.profile.shape.num_layers),
    )


#: Relative difference below which two totals at p* count as the same (:func:`totals_agree`).
SAME_TOTAL_RTOL = 1e-9


@dataclass(frozen=True)
class TotalsAgreement:
    """Why ours at p* is the same for a model and its baseline, and where the two still differ.

    ``counts_ranks``: every matrix of both takes p* = 0, where a matrix contributes √(rank · N) whatever
    the size of its singular values, so ours = Σ √(rank · N) + √L counts ranks only (two full-rank models
    of one shape then agree whatever their weights); else the two have the same ranks and the same p*.
    ``at_fixed_p`` compares them at one fixed p, where sizes count, beside the Edelman-style proxy.
    """

    matrices: int
    counts_ranks: bool
    rank_sum: int
    log_edelman: tuple[float, float]  # (model, baseline), natural logs
    fixed_p: float
    log_at_fixed_p: tuple[float, float]


def totals_agree(model: BoundAnalysis, baseline: BoundAnalysis, fixed_p: float) -> TotalsAgreement | None:
    """Why the two totals at p* agree (None when they differ by more than :data:`SAME_TOTAL_RTOL`).

    Example:
        >>> import specbound
        >>> model = specbound.analyze("minilm-l6").bounds
        >>> why = totals_agree(model, model, 1.0)
        >>> why.counts_ranks, why.matrices
        (True, 156)
    """
    a, b = model.optimal.log_total, baseline.optimal.log_total
    if abs(a - b) > SAME_TOTAL_RTOL * max(1.0, abs(a)):
        return None
    fixed = compare(model, baseline, PAssignment(default=fixed_p), PAssignment(default=fixed_p))
    return TotalsAgreement(
        matrices=int(model.profile.rank.size),
        counts_ranks=bool((model.p_opt == 0).all() and (baseline.p_opt == 0).all()),
        rank_sum=int(model.profile.rank.sum()),
        log_edelman=(model.log_edelman, baseline.log_edelman),
        fixed_p=fixed_p,
        log_at_fixed_p=(fixed.model.log_ours_at, fixed.baseline.log_ours_at),
    )
