"""Figures for the Theory page's synthetic-spectrum playground."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..synthetic import SyntheticCurve
from .style import apply_layout, palette_color, set_log_ticks


def playground_figure(sv: np.ndarray, curve: SyntheticCurve, *, source: str | None = None) -> go.Figure:
    """Left: the synthetic singular values (log y). Right: c(W; p) against p, P_m and p* marked."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("synthetic singular values", "c(W; p) against p"))
    positive = sv[sv > 0]
    fig.add_trace(
        go.Scatter(
            x=np.arange(1, positive.size + 1),
            y=positive,
            mode="lines+markers",
            name="σᵢ",
            marker={"size": 4},
            line={"color": palette_color(0)},
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(x=curve.p, y=curve.contribution, mode="lines", name="c(W; p)", line={"color": palette_color(1)}),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=curve.grid,
            y=curve.grid_contribution,
            mode="markers",
            name="grid P_m",
            marker={"size": 7, "symbol": "circle-open", "color": palette_color(1)},
        ),
        row=1,
        col=2,
    )
    best = curve.p_opt_index
    fig.add_trace(
        go.Scatter(
            x=[curve.p_opt],
            y=[curve.grid_contribution[best]],
            mode="markers",
            name=f"p* = {curve.p_opt:.3g}",
            marker={"size": 14, "symbol": "star", "color": palette_color(2), "line": {"color": "black", "width": 1}},
        ),
        row=1,
        col=2,
    )
    if positive.size:
        set_log_ticks(fig, "x", np.arange(1, positive.size + 1), row=1, col=1)
        set_log_ticks(fig, "y", positive, row=1, col=1)
    set_log_ticks(fig, "y", np.concatenate([curve.contribution, curve.grid_contribution]), row=1, col=2)
    fig.update_xaxes(title_text="index i", row=1, col=1)
    fig.update_yaxes(title_text="σᵢ", row=1, col=1)
    fig.update_xaxes(title_text="Schatten index p", row=1, col=2)
    fig.update_yaxes(title_text="c(W; p)", row=1, col=2)
    return apply_layout(fig, "Which p wins for this spectrum", source=source, height=440)
