"""The bound's terms at one saved step of a training run: one frozen value for every place that follows a
run step by step.

``specbound trajectory`` writes one :meth:`StepTerms.row` per step into ``trajectory.csv`` (with the
step's source and logged losses, :func:`specbound.api.runs.step_row`), the Trainer callback logs its
numbers (:func:`specbound.api.integrations.log_values`), the Training runs page recomputes the rows
from stored spectra, and the lab's run records hold the same terms
(``specbound_lab.trajectory.StepRecord.terms``). Every column
is named by the proxy vocabulary (:class:`~specbound.core.proxies.Proxy`).

Examples:
    >>> from specbound import BoundAnalysis, load_profile
    >>> terms = StepTerms.of(100, BoundAnalysis.from_profile(load_profile("minilm-l6")))
    >>> list(terms.row())[:5]
    ['step', 'ours_log10', 'edelman_log10', 'ours_p0_log10', 'ours_p1_log10']
    >>> terms.proxies[Proxy.OURS] < terms.proxies[Proxy.EDELMAN], len(terms.log10_alpha)
    (True, 6)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.architecture import Kind
from ..core.bounds import BoundAnalysis
from ..core.logspace import to_log10
from ..core.proxies import FIXED_P_PROXIES, PROXIES, Proxy


@dataclass(frozen=True)
class CentredTerms:
    """How far a step's weights are from the run's reference W⁰ (SPEC §14): both proxies centred at it
    (log10) and the distance travelled over the proxy matrices, Σ_W ‖W − W⁰‖_F, in all and per kind.

    The distance sums each matrix's Frobenius distance unsquared. The lab's ``distance_frobenius``
    measure is Jiang et al.'s Σ ‖W − W⁰‖_F² (squared), a different number under the same name: a
    trajectory's column and a lab table's are not to be compared as one quantity."""

    ours_log10: float
    edelman_log10: float
    distance_frobenius: float
    distance_by_kind: Mapping[Kind, float] = field(hash=False)
    changed_matrices: int  # matrices whose difference is not zero

    @classmethod
    def of(cls, centred: BoundAnalysis) -> CentredTerms:
        delta = centred.schatten_profile
        return cls(
            ours_log10=float(to_log10(centred.optimal.log_total)),
            edelman_log10=float(to_log10(centred.log_edelman)),
            distance_frobenius=float(delta.frobenius_norm.sum()),
            distance_by_kind={kind: float(delta.frobenius_norm[delta.mask(kind)].sum()) for kind in delta.model_kinds},
            changed_matrices=int((delta.rank > 0).sum()),
        )


@dataclass(frozen=True)
class StepTerms:
    """The bound's terms at one step: log10 of every proxy, p* of every matrix (profile order), log10 of
    the depth factor α of every layer (bottom first) and, centred at a reference, :class:`CentredTerms`."""

    step: int
    proxies: Mapping[Proxy, float] = field(hash=False)  # log10 of each proxy; NaN where a record lacks it
    p_opt: tuple[float, ...]
    log10_alpha: tuple[float, ...]
    centred: CentredTerms | None = None

    @classmethod
    def of(cls, step: int, bounds: BoundAnalysis, centred: BoundAnalysis | None = None) -> StepTerms:
        """The terms of one step's analysis (and of its analysis centred at the run's reference)."""
        proxies = {
            Proxy.OURS: float(to_log10(bounds.optimal.log_total)),
            Proxy.EDELMAN: float(to_log10(bounds.log_edelman)),
        }
        for proxy in FIXED_P_PROXIES:
            proxies[proxy] = float(to_log10(bounds.evaluate(proxy.fixed_p).log_total))
        return cls(
            step=step,
            proxies=proxies,
            p_opt=tuple(float(p) for p in bounds.p_opt),
            log10_alpha=tuple(float(v) for v in to_log10(bounds.log_alpha)),
            centred=None if centred is None else CentredTerms.of(centred),
        )

    @property
    def p_opt_mean(self) -> float:
        return float(np.mean(self.p_opt))

    @property
    def p_opt_median(self) -> float:
        return float(np.median(self.p_opt))

    @property
    def p_opt_zero_share(self) -> float:
        """The share of matrices whose p* is 0: those the bound reads by their rank."""
        return float(np.mean(np.asarray(self.p_opt) == 0))

    def alpha_columns(self) -> dict[str, float]:
        """``log10_alpha_L{l}`` of every layer."""
        return {f"log10_alpha_L{layer}": value for layer, value in enumerate(self.log10_alpha)}

    def row(self) -> dict[str, Any]:
        """The step as a row of ``trajectory.csv``: ``step``, each proxy's log10 column, the p* mean,
        median and share at 0, ``log10_alpha_L{l}``; centred at a reference also ``ours_centred_log10``,
        ``edelman_centred_log10``, ``distance_frobenius`` and ``changed_matrices``."""
        row: dict[str, Any] = {"step": self.step}
        row |= {proxy.column: self.proxies.get(proxy, math.nan) for proxy in PROXIES}  # ours, Edelman's, p = 0, 1, 2
        row |= {"p_opt_mean": self.p_opt_mean, "p_opt_median": self.p_opt_median}
        row |= {"p_opt_zero_share": self.p_opt_zero_share} | self.alpha_columns()
        if self.centred is not None:
            row |= {
                "ours_centred_log10": self.centred.ours_log10,
                "edelman_centred_log10": self.centred.edelman_log10,
                "distance_frobenius": self.centred.distance_frobenius,
                "changed_matrices": self.centred.changed_matrices,
            }
        return row
