"""The headline numbers: the Overview's summary and the Bound explorer's sticky row of totals.

Values come from the package (``BoundTerms.log_total``, ``BoundAnalysis.log_edelman``, a
:class:`~specbound.studies.compare.Comparison`) and are written by :mod:`dashboard.wording.numbers`; the total at the
chosen p carries its change against p* (and the baseline row its change against the model), each
written with the digits that change needs (:mod:`dashboard.wording.totals`).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.widgets.presentation import metric_row
from dashboard.wording.numbers import format_against, format_change, format_number
from dashboard.wording.text import (
    EDELMAN_LABEL,
    OPTIMAL_LABEL,
    SQRT_DEPTH_LABEL,
    TOTAL_LABEL,
    plain,
    with_centring,
)
from dashboard.wording.totals import total_texts
from specbound.core.bounds import BoundAnalysis, BoundTerms
from specbound.core.logspace import to_log10
from specbound.present.numbers import format_log
from specbound.studies.compare import Comparison

BASELINE_LABEL = "Baseline at the same p"


def _delta_style(log_value: float, log_reference: float) -> dict[str, Any]:
    """Arrow and colour of a change of a bound (lower is better): red up, green down, grey and no arrow for none."""
    if log_value == log_reference:
        return {"delta_color": "off", "delta_arrow": "off"}
    return {"delta_color": "inverse"}


def explorer_headline(
    analysis: BoundAnalysis,
    terms: BoundTerms,
    comparison: Comparison | None,
    baseline_name: str | None,
    caption: str,
    centring: str | None = None,
) -> None:
    """The explorer's row of totals, drawn where the caller is (its sticky headline container).

    Ours at the chosen p (change against p*), ours at p*, Edelman-style, and the baseline at the same p
    (change: model minus baseline), or √L when there is no baseline. A centred analysis's totals say
    what they are centred at in their labels (``centring``, "centred at BASE"), not only in the caption.
    """
    optimal = analysis.optimal
    value, change = total_texts(terms.log_total, optimal.log_total)
    row = metric_row()
    row.metric(
        with_centring(TOTAL_LABEL, centring),
        value,
        delta=change,
        **_delta_style(terms.log_total, optimal.log_total),
        help="Σ c(W; p) + √L at the p the controls set; the change is against the same sum at p*.",
    )
    row.metric(with_centring(OPTIMAL_LABEL, centring), format_log(optimal.log_total))
    row.metric(
        with_centring(EDELMAN_LABEL, centring),
        format_log(analysis.log_edelman),
        help=f"log10 = {float(to_log10(analysis.log_edelman)):.2f}",
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
