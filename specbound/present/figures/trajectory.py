"""Figures of a trajectory through training, for the lab's runs and for real runs alike.

Each takes a table with one row per saved step (a ``step`` column and the columns of
``trajectory.csv``, :func:`specbound.api.runs.step_row`, which the lab's
:func:`~specbound_lab.views.trajectory_frame` also has) and returns a ``go.Figure``, with a dotted
line at the step a slider shows.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ...core.proxies import FIXED_P_PROXIES, Proxy
from .style import NEUTRAL, Quantity, axis_title, figure, p_color, palette_color, quantity_color

#: (column of the table, legend name, colour, dash) per proxy line: ours and Edelman's in their colours,
#: ours at a fixed p in the colour of that p.
_PROXY_LINES: tuple[tuple[str, str, str, str], ...] = (
    (Proxy.OURS.column, Proxy.OURS.label, quantity_color(Proxy.OURS), "solid"),
    (Proxy.EDELMAN.column, Proxy.EDELMAN.label, quantity_color(Proxy.EDELMAN), "solid"),
    *((proxy.column, proxy.label, p_color(proxy.fixed_p or 0.0), "dot") for proxy in FIXED_P_PROXIES),
)
STEP_AXIS = "training step"


def step_layout(step: int | None, x_title: str = STEP_AXIS, **axes: Any) -> dict[str, Any]:
    """Axes of a figure against the training step, with a dotted line at the step the slider shows."""
    layout: dict[str, Any] = {"xaxis": axis_title(x_title), **axes}
    if step is not None:
        marker = {"color": NEUTRAL, "dash": "dot", "width": 1}
        layout["shapes"] = [
            {"type": "line", "xref": "x", "yref": "y domain", "x0": step, "x1": step, "y0": 0, "y1": 1, "line": marker}
        ]
    return layout


def proxies_figure(frame: pd.DataFrame, step: int | None = None) -> go.Figure:
    """log10 of ours at p*, Edelman's proxy and ours at p = 0, 1, 2 against the training step."""
    lines = [
        {
            "type": "scatter",
            "x": frame["step"],
            "y": frame[column],
            "name": name,
            "mode": "lines+markers",
            "line": {"color": color, "dash": dash},
        }
        for column, name, color, dash in _PROXY_LINES
    ]
    layout = step_layout(step, yaxis=axis_title("log10 proxy"))
    return figure(
        lines, "Proxies through training (log10)", source="ours at p* is the total", legend_title="proxy", layout=layout
    )


def alpha_figure(frame: pd.DataFrame, step: int | None = None) -> go.Figure:
    """log10 α⁽ℓ⁾ of every layer against the training step."""
    columns = [c for c in frame.columns if c.startswith("log10_alpha_L")]
    lines = [
        {
            "type": "scatter",
            "x": frame["step"],
            "y": frame[column],
            "name": f"layer {column.removeprefix('log10_alpha_L')}",
            "mode": "lines+markers",
            "line": {"color": palette_color(index)},
        }
        for index, column in enumerate(columns)
    ]
    layout = step_layout(step, yaxis=axis_title("log10 α⁽ℓ⁾"))
    return figure(lines, "log10 α per layer through training", legend_title="α of", layout=layout)


def loss_figure(frame: pd.DataFrame, step: int | None = None) -> go.Figure | None:
    """The ``loss`` and ``eval_loss`` a Trainer logged at the saved steps, or None when it logged neither."""
    columns = [c for c in ("loss", "eval_loss") if c in frame.columns and frame[c].notna().any()]
    if not columns:
        return None
    colors = {"loss": quantity_color(Quantity.TRAIN_ERROR), "eval_loss": quantity_color(Quantity.TEST_ERROR)}
    lines = [
        {"type": "scatter", "x": frame["step"], "y": frame[c], "name": c, "mode": "lines+markers",
         "line": {"color": colors[c]}}
        for c in columns
    ]  # fmt: skip
    return figure(
        lines, "Losses the Trainer logged", legend_title="", layout=step_layout(step, yaxis=axis_title("loss"))
    )
