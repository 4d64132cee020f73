"""Figures for the Theory page's synthetic-spectrum playground."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..synthetic import SyntheticCurve


def playground_figure(sv: np.ndarray, curve: SyntheticCurve) -> go.Figure:
    """Left: the synthetic singular values (log y). Right: c(W; p) against p, P_m and p* marked."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("synthetic singular values", "c(W; p) against p"))
    positive = sv[sv > 0]
    fig.add_trace(go.Scatter(x=np.arange(1, positive.size + 1), y=positive, mode="lines+markers",
                             name="σᵢ", marker={"size": 4}), row=1, col=1)
    fig.add_trace(go.Scatter(x=curve.p, y=curve.contribution, mode="lines", name="c(W; p)"), row=1, col=2)
    fig.add_trace(go.Scatter(x=curve.grid, y=curve.grid_contribution, mode="markers", name="grid P_m",
                             marker={"size": 7, "symbol": "circle-open"}), row=1, col=2)
    best = curve.p_opt_index
    fig.add_trace(go.Scatter(x=[curve.p_opt], y=[curve.grid_contribution[best]], mode="markers",
                             name=f"p* = {curve.p_opt:.3g}", marker={"size": 14, "symbol": "star"}),
                  row=1, col=2)
    fig.update_xaxes(title_text="index i", type="log", row=1, col=1)
    fig.update_yaxes(title_text="σᵢ", type="log", row=1, col=1)
    fig.update_xaxes(title_text="Schatten index p", row=1, col=2)
    fig.update_yaxes(title_text="c(W; p)", type="log", row=1, col=2)
    fig.update_layout(height=420, margin={"t": 40, "b": 40}, legend={"orientation": "h", "y": -0.2})
    return fig
