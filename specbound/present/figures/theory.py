"""Figures for the Theory page's synthetic-spectrum playground."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from ...core.proxies import Proxy
from ...core.synthetic import SyntheticCurve
from .style import PROJECTOR_TEXT_COLOR, axis_title, figure, log_axis, on_panel, panel_grid, quantity_color

#: The playground's two panels as separate figures (stacked on a phone).
PLAYGROUND_TITLES: tuple[str, str] = ("Synthetic singular values", "Which p wins: c(W; p)")


def playground_figure(sv: np.ndarray, curve: SyntheticCurve, *, source: str | None = None) -> go.Figure:
    """Left: the synthetic singular values (log y). Right: c(W; p) against p, P_m and p* marked."""
    layout = panel_grid(1, 2, titles=("synthetic singular values", "c(W; p) against p"))
    positive = sv[sv > 0]
    spectrum = {
        "type": "scatter",
        "x": np.arange(1, positive.size + 1),
        "y": positive,
        "mode": "lines+markers",
        "name": "σᵢ",
        "marker": {"size": 4},
        "line": {"color": PROJECTOR_TEXT_COLOR},
    }
    if positive.size:
        layout["xaxis"].update(log_axis(np.arange(1, positive.size + 1)))
        layout["yaxis"].update(log_axis(positive))
    layout["xaxis"].update(axis_title("index i"))
    layout["yaxis"].update(axis_title("σᵢ"))
    layout["xaxis2"].update(axis_title("Schatten index p"))
    layout["yaxis2"].update(
        log_axis(np.concatenate([curve.contribution, curve.grid_contribution]), title={"text": "c(W; p)"})
    )
    traces = [on_panel(spectrum, 1), *(on_panel(trace, 2) for trace in _contribution_traces(curve))]
    # 340 px: the playground's two rows of controls and its charts share one 768-px screen
    return figure(traces, "Which p wins for this spectrum", source=source, height=340, layout=layout)


def _contribution_traces(curve: SyntheticCurve) -> list[dict[str, Any]]:
    """The playground's right panel: c(W; p) on the fine p axis, its values on the grid P_m, and a star
    at p* (the grid's minimum)."""
    best = curve.p_opt_index
    return [
        {
            "type": "scatter",
            "x": curve.p,
            "y": curve.contribution,
            "mode": "lines",
            "name": "c(W; p)",
            "line": {"color": quantity_color(Proxy.OURS)},
        },
        {
            "type": "scatter",
            "x": curve.grid,
            "y": curve.grid_contribution,
            "mode": "markers",
            "name": "grid P_m",
            "marker": {"size": 7, "symbol": "circle-open", "color": quantity_color(Proxy.OURS)},
        },
        {
            "type": "scatter",
            "x": [curve.p_opt],
            "y": [curve.grid_contribution[best]],
            "mode": "markers",
            "name": f"p* = {curve.p_opt:.3g}",
            "marker": {
                "size": 14,
                "symbol": "star",
                "color": quantity_color(Proxy.OURS),
                "line": {"color": "black", "width": 1},
            },
        },
    ]
