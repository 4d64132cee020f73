"""How the totals are said: the headline sentence, each kind's share of the total, and the total
against p* as the explorer's first metric (and the browser's live copy of it) writes it.

Values come from the package (``BoundTerms.log_total``, ``BoundAnalysis.log_edelman``) and are written by
:mod:`dashboard.wording.numbers`.
"""

from __future__ import annotations

import math

from dashboard.wording.numbers import DIGITS, format_against, format_change, format_percent, ratio_sentence
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis, BoundTerms

#: How the Overview and the explorer name the two proxies in sentences.
OURS_NAME, EDELMAN_NAME = "Ours at p*", "the Edelman-style proxy"


def headline_sentence(analysis: BoundAnalysis) -> str:
    """ "Ours at p* is 10^20.7 times smaller than the Edelman-style proxy." for this model."""
    return ratio_sentence(OURS_NAME, analysis.optimal.log_total, EDELMAN_NAME, analysis.log_edelman)


def kind_shares(terms: BoundTerms) -> dict[Kind, float]:
    """Each kind's Σ c(W; p) as a share of the total.

    Computed in log space, so it holds where the sums themselves overflow a float; the shares add up
    to 1 less √L's share of the total.
    """
    return {kind: math.exp(log_sum - terms.log_total) for kind, log_sum in terms.log_per_kind().items()}


def kind_shares_sentence(terms: BoundTerms) -> str:
    """ "Share of the total by kind: QK 38.8 % · V 38.8 % · …" (see :func:`kind_shares`)."""
    parts = [f"{kind.value} {format_percent(share)}" for kind, share in kind_shares(terms).items()]
    return "Share of the total by kind: " + " · ".join(parts)


def total_texts(log_total: float, log_optimal: float) -> tuple[str, str]:
    """The total's value and its change against p*, as the explorer's first metric shows them.

    The value carries the digits its difference from p* needs and no more (:func:`format_against`): one
    layer's p moved away from p* shows in the total, while a total twelve decades above p* reads
    '4.415 × 10¹²', not ten digits. The change itself is written to :data:`DIGITS` significant digits.
    One function for the metric and for the table the browser shows while a slider moves
    (:mod:`dashboard.widgets.live_total`), so the two agree to the character.
    """
    return format_against(log_total, log_optimal), f"{format_change(log_total, log_optimal, DIGITS)} vs p*"
