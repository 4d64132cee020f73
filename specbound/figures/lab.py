"""Figures of the generalization lab: a run's terms and errors through training, its p* map at one
step, and every measure against the measured gap over a sweep.

Each builder takes the tables of :mod:`specbound.lab.views` (or a run) and returns a ``go.Figure``;
nothing is styled globally. Colours are the Okabe–Ito palette, readable with every common colour
vision deficiency. The spectra at a step are :func:`specbound.figures.spectra.singular_value_profiles`
of that step's profile: the lab adds no second way to draw a spectrum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..lab.correlation import MeasureCorrelation
from ..lab.trajectory import RunTrajectory
from ..lab.views import MEASURE_LABELS, PStarMap
from . import style

#: Okabe & Ito (2008), the palette of every figure: black, orange, sky blue, bluish green, yellow, blue,
#: vermillion, reddish purple.
OKABE_ITO: tuple[str, ...] = tuple(style.OKABE_ITO.values())
#: (column of :func:`~specbound.lab.views.trajectory_frame`, legend name, colour, dash) per proxy line.
_PROXY_LINES: tuple[tuple[str, str, str, str], ...] = (
    ("ours_log10", "ours at p*", OKABE_ITO[5], "solid"),
    ("edelman_log10", "Edelman-style", OKABE_ITO[6], "solid"),
    ("ours_p0_log10", "ours at p = 0", OKABE_ITO[3], "dot"),
    ("ours_p1_log10", "ours at p = 1", OKABE_ITO[1], "dot"),
    ("ours_p2_log10", "ours at p = 2", OKABE_ITO[7], "dot"),
)
#: Colours of training-set sizes in the sweep scatter, smallest n first.
_N_COLORS = (OKABE_ITO[1], OKABE_ITO[2], OKABE_ITO[3], OKABE_ITO[5], OKABE_ITO[6], OKABE_ITO[7])
_STEP_AXIS = "training step"


def _step_marker(fig: go.Figure, step: int | None) -> None:
    """A dotted vertical line at the step the slider shows, on every subplot."""
    if step is not None:
        fig.add_vline(x=step, line={"color": "#777777", "dash": "dot", "width": 1})


def proxies_figure(frame: pd.DataFrame, step: int | None = None) -> go.Figure:
    """log10 of ours at p*, Edelman's proxy and ours at p = 0, 1, 2 against the training step."""
    fig = go.Figure()
    for column, name, color, dash in _PROXY_LINES:
        fig.add_trace(
            go.Scatter(
                x=frame["step"], y=frame[column], name=name, mode="lines+markers", line={"color": color, "dash": dash}
            )
        )
    _step_marker(fig, step)
    fig.update_layout(
        title="Proxies through training (log10; ours at p* is the total)",
        xaxis_title=_STEP_AXIS,
        yaxis_title="log10 proxy",
        legend_title_text="proxy",
    )
    return fig


def alpha_figure(frame: pd.DataFrame, step: int | None = None) -> go.Figure:
    """log10 α⁽ℓ⁾ of every layer against the training step."""
    fig = go.Figure()
    columns = [c for c in frame.columns if c.startswith("log10_alpha_L")]
    for index, column in enumerate(columns):
        fig.add_trace(
            go.Scatter(
                x=frame["step"],
                y=frame[column],
                name=f"layer {column.removeprefix('log10_alpha_L')}",
                mode="lines+markers",
                line={"color": OKABE_ITO[(index + 1) % len(OKABE_ITO)]},
            )
        )
    _step_marker(fig, step)
    fig.update_layout(
        title="log10 α per layer through training",
        xaxis_title=_STEP_AXIS,
        yaxis_title="log10 α⁽ℓ⁾",
        legend_title_text="α of",
    )
    return fig


def p_star_distribution_figure(run: RunTrajectory, step: int | None = None) -> go.Figure:
    """The p* of every proxy matrix at each saved step: one box with all its points per step."""
    fig = go.Figure()
    for record in run.steps:
        highlight = record.step == step
        fig.add_trace(
            go.Box(
                x=[record.step] * len(record.p_opt),
                y=list(record.p_opt),
                name=str(record.step),
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                showlegend=False,
                marker={"color": OKABE_ITO[6] if highlight else OKABE_ITO[5], "size": 5},
                line={"color": OKABE_ITO[6] if highlight else OKABE_ITO[5]},
                hovertext=list(run.matrices),
                hoverinfo="y+text",
            )
        )
    fig.update_layout(
        title=f"p* of the {len(run.matrices)} matrices through training",
        xaxis_title=_STEP_AXIS,
        yaxis_title="p*",
        yaxis_range=[-0.1, 2.1],
    )
    return fig


def errors_figure(frame: pd.DataFrame, step: int | None = None) -> go.Figure:
    """Training error, test error (± one standard error) and their gap against the training step."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=frame["step"],
            y=frame["train_error"],
            name="train error",
            mode="lines+markers",
            line={"color": OKABE_ITO[2]},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=frame["step"],
            y=frame["test_error"],
            name="test error (± 1 s.e.)",
            mode="lines+markers",
            line={"color": OKABE_ITO[1]},
            error_y={"type": "data", "array": frame["test_error_se"], "visible": True},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=frame["step"],
            y=frame["gap"],
            name="gap = test − train",
            mode="lines+markers",
            line={"color": OKABE_ITO[0], "dash": "dash"},
        )
    )
    _step_marker(fig, step)
    fig.update_layout(title="Errors and gap through training", xaxis_title=_STEP_AXIS, yaxis_title="error rate")
    return fig


def p_star_map_figure(p_map: PStarMap) -> go.Figure:
    """A layer x matrix heatmap of p* at one step, each cell labelled with its value."""
    text = [[f"{v:.3g}" for v in row] for row in p_map.values]
    fig = go.Figure(
        go.Heatmap(
            z=p_map.values,
            x=list(p_map.columns),
            y=[f"layer {l}" for l in p_map.layers],
            zmin=0.0,
            zmax=2.0,
            colorscale="Cividis",
            text=text,
            texttemplate="%{text}",
            colorbar={"title": {"text": "p*"}},
            hovertemplate="%{y}, %{x}: p* = %{z}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"p* map at step {p_map.step}", xaxis_title="matrix", yaxis_title="layer", yaxis_autorange="reversed"
    )
    return fig


def _tau_text(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:+.2f}"


def measure_title(name: str, correlation: MeasureCorrelation) -> str:
    """A subplot's title: the measure and its Kendall τ and granulated τ with the gap."""
    return (
        f"{MEASURE_LABELS[name][0]}<br>τ = {_tau_text(correlation.kendall_tau)}, "
        f"granulated τ = {_tau_text(correlation.granulated_tau)}"
    )


def measures_figure(frame: pd.DataFrame, table: Sequence[MeasureCorrelation], columns: int = 3) -> go.Figure:
    """Every measure against the gap over the final checkpoints, one subplot per measure with its τ.

    Points are coloured by training-set size n (the axis that moves the gap most) and carry the run's
    name on hover. Plain-number measures (parameters, Σ‖W‖_F²) get a log x axis; the proxies are
    already log10.
    """
    table = [c for c in table if c.measure in MEASURE_LABELS]
    rows = math.ceil(len(table) / columns)
    fig = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[measure_title(c.measure, c) for c in table],
        vertical_spacing=0.16,
        horizontal_spacing=0.07,
    )
    sizes = sorted(frame["n_train"].unique())
    for index, correlation in enumerate(table):
        row, col = index // columns + 1, index % columns + 1
        for n_index, n in enumerate(sizes):
            part = frame[frame["n_train"] == n]
            fig.add_trace(
                go.Scatter(
                    x=part[correlation.measure],
                    y=part["gap"],
                    mode="markers",
                    name=f"n = {n}",
                    legendgroup=f"n = {n}",
                    showlegend=index == 0,
                    text=part["run"],
                    marker={"color": _N_COLORS[n_index % len(_N_COLORS)], "size": 7},
                    hovertemplate="%{text}<br>measure %{x:.4g}, gap %{y:.4f}<extra></extra>",
                ),
                row=row,
                col=col,
            )
        log_axis = not MEASURE_LABELS[correlation.measure][1]
        fig.update_xaxes(type="log" if log_axis else "linear", row=row, col=col)
        if col == 1:
            fig.update_yaxes(title_text="gap", row=row, col=col)
    runs = len(frame)
    fig.update_layout(
        title=f"Each measure against the gap over the final checkpoints of {runs} runs",
        height=300 * rows + 80,
        legend_title_text="training set",
        margin={"t": 110},
    )
    fig.update_annotations(font_size=12)
    return fig
