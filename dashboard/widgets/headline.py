"""The headline numbers: the Overview's summary and the Bound explorer's sticky row of totals.

Values come from the package (``BoundTerms.log_total``, ``BoundAnalysis.log_edelman``, a
:class:`~specbound.studies.compare.Comparison`) and are written by :mod:`dashboard.wording.numbers`; the total at the
chosen p carries its change against p* (and the baseline row its change against the model), each
written with the digits that change needs.
"""

from __future__ import annotations

import math

import streamlit as st

from dashboard.widgets.presentation import metric_row
from dashboard.wording.numbers import (
    DIGITS,
    comparison_sentence,
    format_against,
    format_change,
    format_number,
    format_percent,
)
from dashboard.wording.text import EDELMAN_LABEL, OPTIMAL_LABEL, SQRT_DEPTH_LABEL, TOTAL_LABEL, plain
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis, BoundTerms
from specbound.core.logspace import to_log10
from specbound.present.numbers import format_log
from specbound.studies.compare import Comparison

BASELINE_LABEL = "Baseline at the same p"
#: How the Overview and the explorer name the two proxies in sentences.
OURS_NAME, EDELMAN_NAME = "Ours at p*", "the Edelman-style proxy"


def headline_sentence(analysis: BoundAnalysis) -> str:
    """ "Ours at p* is 10^20.7 times smaller than the Edelman-style proxy." for this model."""
    return comparison_sentence(OURS_NAME, analysis.optimal.log_total, EDELMAN_NAME, analysis.log_edelman)


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


def _delta_style(log_value: float, log_reference: float) -> dict[str, str]:
    """Arrow and colour of a change of a bound (lower is better): red up, green down, grey and no arrow for none."""
    if log_value == log_reference:
        return {"delta_color": "off", "delta_arrow": "off"}
    return {"delta_color": "inverse"}


def total_texts(log_total: float, log_optimal: float) -> tuple[str, str]:
    """The total's value and its change against p*, as the explorer's first metric shows them.

    The value carries the digits its difference from p* needs and no more (:func:`format_against`): one
    layer's p moved away from p* shows in the total, while a total twelve decades above p* reads
    '4.415 × 10¹²', not ten digits. The change itself is written to :data:`DIGITS` significant digits.
    One function for the metric and for the table the browser shows while a slider moves
    (:mod:`dashboard.widgets.live_total`), so the two agree to the character.
    """
    return format_against(log_total, log_optimal), f"{format_change(log_total, log_optimal, DIGITS)} vs p*"


def explorer_headline(
    analysis: BoundAnalysis, terms: BoundTerms, comparison: Comparison | None, baseline_name: str | None, caption: str
) -> None:
    """The explorer's row of totals, drawn where the caller is (its sticky headline container).

    Ours at the chosen p (change against p*), ours at p*, Edelman-style, and the baseline at the same p
    (change: model minus baseline), or √L when there is no baseline.
    """
    optimal = analysis.optimal
    value, change = total_texts(terms.log_total, optimal.log_total)
    row = metric_row()
    row.metric(
        TOTAL_LABEL,
        value,
        delta=change,
        **_delta_style(terms.log_total, optimal.log_total),
        help="Σ c(W; p) + √L at the p the controls set; the change is against the same sum at p*.",
    )
    row.metric(OPTIMAL_LABEL, format_log(optimal.log_total))
    row.metric(
        EDELMAN_LABEL, format_log(analysis.log_edelman), help=f"log10 = {float(to_log10(analysis.log_edelman)):.2f}"
    )
    if comparison is None:
        row.metric(SQRT_DEPTH_LABEL, format_number(terms.sqrt_depth))
    else:
        model_at, base_at = comparison.model.log_ours_at, comparison.baseline.log_ours_at
        row.metric(
            BASELINE_LABEL,
            format_against(base_at, model_at),
            delta=f"{format_change(model_at, base_at)} ours − baseline",
            **_delta_style(model_at, base_at),
            help=f"{plain(baseline_name or '')} at the same p settings",
        )
    st.caption(caption if baseline_name is None else f"{caption} · baseline: {plain(baseline_name)}")
