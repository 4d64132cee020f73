"""Wording shared by every page, and number formatting for values carried as natural logs."""

from __future__ import annotations

import math

import streamlit as st

from specbound.logspace import LOG_MAX, to_log10

#: Shown under every bound number: what the proxy is and what it leaves out (SPEC §3).
BOUND_NOTE = (
    "A proxy of the bound's leading complexity factor, not the generalization gap: "
    "the theorem's 1/√n, margin, input-norm and log factors are left out."
)

#: Label of the metric that shows the spectrum-adaptive proxy at the chosen p (tests read it).
TOTAL_LABEL = "Ours at the chosen p"
OPTIMAL_LABEL = "Ours at the optimal p*"
EDELMAN_LABEL = "Edelman-style proxy"
SQRT_DEPTH_LABEL = "√L"


def bound_note() -> None:
    """The one-line reminder placed under every bound number or chart."""
    st.caption(BOUND_NOTE)


def format_log_value(log_value: float) -> str:
    """A positive number given by its natural log: "20,573.03", "6.8537e+28", or "10^812.345" past float64."""
    if math.isnan(log_value):
        return "n/a"
    if log_value == -math.inf:
        return "0"
    if log_value > LOG_MAX:  # exp would overflow float64: keep the decimal exponent only
        return f"10^{float(to_log10(log_value)):.3f}"
    value = math.exp(log_value)
    return f"{value:,.2f}" if 0.01 <= value < 1e6 else f"{value:.4e}"
