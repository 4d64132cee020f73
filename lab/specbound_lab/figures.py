"""Figures of the generalization lab: a run's terms and errors through training, its p* map at one
step, and every measure against the measured gap over a sweep. The proxies and α through training
are :mod:`specbound.present.figures.trajectory`'s, shared with the trajectories of real runs.

Each builder takes the tables of :mod:`specbound_lab.views` (or a run) and returns a ``go.Figure``;
nothing is styled globally. Colours are the Okabe–Ito palette, readable with every common colour
vision deficiency. The spectra at a step are :func:`specbound.present.figures.spectra.singular_value_profiles`
of that step's profile: the lab adds no second way to draw a spectrum.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from specbound.core import Proxy
from specbound.present import format_count
from specbound.present.figures import (
    GREYED,
    NEUTRAL,
    OKABE_ITO,
    PANEL_TITLE_ROOM,
    SEQUENTIAL,
    STEP_AXIS,
    TOP_MARGIN,
    Quantity,
    axis_title,
    figure,
    hover_numbers,
    log_axis,
    on_panel,
    palette_color,
    panel_grid,
    panel_ref,
    quantity_color,
    sequential_colors,
    step_layout,
)

from .answer import LabAnswer
from .correlation import Interval, MeasureCorrelation, TauDifference
from .grokking import POSITIVE_CONTROL, RunGrokking, excursion_shares
from .registry import MEASURES, is_baseline
from .robust import RobustSummary
from .trajectory import RunTrajectory
from .views import MEASURE_LABELS, PStarMap


def _zero_line() -> dict[str, Any]:
    """A vertical line at x = 0 across the plot: where a τ or a difference of τ changes sign."""
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": 0,
        "x1": 0,
        "y0": 0,
        "y1": 1,
        "line": {"color": NEUTRAL},
    }


def power_law_figure(frame: pd.DataFrame, step: int | None = None) -> go.Figure:
    """The mean power-law exponent α of the matrices' spectra and its weighted form α̂ = α log10 λ_max
    against the training step (NaN steps, where no matrix could be fitted, are gaps)."""
    lines = [
        {
            "type": "scatter",
            "x": frame["step"],
            "y": frame[column],
            "name": name,
            "mode": "lines+markers",
            "line": {"color": color},
        }
        for column, name, color in (
            ("alpha", "α", palette_color(0)),
            ("alpha_hat", "α̂ = α log10 λ_max", palette_color(1)),
        )
        if column in frame
    ]
    layout = step_layout(step, yaxis=axis_title("mean over the matrices"))
    return figure(
        lines,
        "Power-law α through training",  # short enough for a phone's width, like the other lab titles
        source="Clauset et al. fit of σ²",
        legend_title="exponent",
        layout=layout,
    )


def p_star_distribution_figure(run: RunTrajectory, step: int | None = None) -> go.Figure:
    """The p* of every proxy matrix at each saved step: one box with all its points per step."""
    boxes = []
    for record in run.steps:
        color = quantity_color(Proxy.OURS) if record.step == step else palette_color(0)
        boxes.append(
            {
                "type": "box",
                "x": [record.step] * len(record.p_opt),
                "y": list(record.p_opt),
                "name": str(record.step),
                "boxpoints": "all",
                "jitter": 0.4,
                "pointpos": 0,
                "showlegend": False,
                "marker": {"color": color, "size": 5},
                "line": {"color": color},
                "hovertext": list(run.matrices),
                "hoverinfo": "y+text",
            }
        )
    layout = {"xaxis": axis_title(STEP_AXIS), "yaxis": axis_title("p*", range=[-0.1, 2.1])}
    return figure(
        boxes, f"p* of the {format_count(len(run.matrices), 'matrix', 'matrices')} through training", layout=layout
    )


def errors_figure(
    frame: pd.DataFrame, step: int | None = None, *, loss_gap: bool = False, floor: float | None = None
) -> go.Figure:
    """Training error, test error (± one standard error) and their gap against the training step.

    With ``loss_gap`` (next-token prediction, where the gap is test minus training loss) the losses and
    their gap instead, in nats, with ``floor`` (the task's entropy rate, the least expected loss) drawn
    as a dotted line: how far the test loss stays above what any predictor can reach.
    """
    line = {"type": "scatter", "x": frame["step"], "mode": "lines+markers"}
    gap = {**line, "y": frame["gap"], "line": {"color": quantity_color(Quantity.GAP), "dash": "dash"}}
    if loss_gap:
        layout = step_layout(step, yaxis=axis_title("cross-entropy (nats)"))
        return figure(_loss_lines(frame, line, gap, floor), "Losses and gap through training", layout=layout)
    lines = [
        {
            **line,
            "y": frame["train_error"],
            "name": "train error",
            "line": {"color": quantity_color(Quantity.TRAIN_ERROR)},
        },
        {
            **line,
            "y": frame["test_error"],
            "name": "test error (± 1 s.e.)",
            "line": {"color": quantity_color(Quantity.TEST_ERROR)},
            "error_y": {"type": "data", "array": frame["test_error_se"], "visible": True},
        },
        {**gap, "name": "gap = test − train"},
    ]
    return figure(lines, "Errors and gap through training", layout=step_layout(step, yaxis=axis_title("error rate")))


def _loss_lines(
    frame: pd.DataFrame, line: dict[str, Any], gap: dict[str, Any], floor: float | None
) -> list[dict[str, Any]]:
    """The training and test losses and their gap through training, and the entropy rate ``floor`` as a
    dotted line where it is known (``line``, ``gap``: the step axis and the gap's style, as for the errors)."""
    lines = [
        {
            **line,
            "y": frame["train_loss"],
            "name": "train loss",
            "line": {"color": quantity_color(Quantity.TRAIN_ERROR)},
        },
        {
            **line,
            "y": frame["test_loss"],
            "name": "test loss",
            "line": {"color": quantity_color(Quantity.TEST_ERROR)},
        },
        {**gap, "name": "gap = test − train loss"},
    ]
    if floor is not None and math.isfinite(floor):
        lines.append(
            {
                "type": "scatter",
                "x": [frame["step"].min(), frame["step"].max()],
                "y": [floor, floor],
                "mode": "lines",
                "name": f"entropy rate {floor:.3f}",
                "line": {"color": NEUTRAL, "dash": "dot"},
            }
        )
    return lines


def p_star_map_figure(p_map: PStarMap) -> go.Figure:
    """A layer x matrix heatmap of p* at one step, each cell labelled with its value."""
    heatmap = {
        "type": "heatmap",
        "z": p_map.values,
        "x": list(p_map.columns),
        "y": [f"layer {l}" for l in p_map.layers],
        "zmin": 0.0,
        "zmax": 2.0,
        "colorscale": SEQUENTIAL,
        "text": [[f"{v:.3g}" for v in row] for row in p_map.values],
        "texttemplate": "%{text}",
        "colorbar": {"title": {"text": "p*"}, "thickness": 10},
        "hovertemplate": "%{y}, %{x}: p* = %{z}<extra></extra>",
    }
    layout = {"xaxis": axis_title("matrix"), "yaxis": axis_title("layer", autorange="reversed")}
    return figure([heatmap], f"p* map at step {p_map.step}", layout=layout)


def _tau_text(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:+.2f}"


def _interval_text(interval: Interval) -> str:
    return f"[{_tau_text(interval.low)}, {_tau_text(interval.high)}]"


def measure_title(name: str, correlation: MeasureCorrelation) -> str:
    """A subplot's title: the measure, its Kendall τ and granulated τ with the gap, and their 95 % intervals."""
    return (
        f"{MEASURE_LABELS[name][0]}<br>τ = {_tau_text(correlation.kendall_tau)} "
        f"{_interval_text(correlation.kendall_tau_ci)}, granulated τ = {_tau_text(correlation.granulated_tau)} "
        f"{_interval_text(correlation.granulated_tau_ci)}"
    )


def measure_panel_texts(table: Sequence[MeasureCorrelation]) -> tuple[list[str], list[str]]:
    """(titles, subtitles) of :func:`measures_figure`'s panels drawn one by one (stacked on a phone): the
    measure, then its τ and granulated τ with their 95 % intervals."""
    shown = [c for c in table if c.measure in MEASURE_LABELS]
    titles = [MEASURE_LABELS[c.measure][0] for c in shown]
    subtitles = [
        f"τ = {_tau_text(c.kendall_tau)} {_interval_text(c.kendall_tau_ci)} · granulated τ = "
        f"{_tau_text(c.granulated_tau)} {_interval_text(c.granulated_tau_ci)}"
        for c in shown
    ]
    return titles, subtitles


def measures_figure(frame: pd.DataFrame, table: Sequence[MeasureCorrelation], columns: int = 3) -> go.Figure:
    """Every measure against the gap over the final checkpoints, one subplot per measure with its τ and
    granulated τ and their 95 % intervals in the panel's title (no source line: it would sit on the
    first row's two-line titles).

    Points are coloured by training-set size n (the axis that moves the gap most) and carry the run's
    name on hover. Plain-number measures (parameters, Σ‖W‖_F²) get a log x axis; the proxies are
    already log10.
    """
    table = [c for c in table if c.measure in MEASURE_LABELS]
    rows = math.ceil(len(table) / columns)
    layout = panel_grid(
        rows,
        columns,
        titles=[measure_title(c.measure, c) for c in table],
        title_size=12,
        vertical_spacing=min(0.16, 0.4 / rows),  # room for the two-line panel titles, not more
        horizontal_spacing=0.07,
    )
    sizes = sorted(frame["n_train"].unique())
    size_colors = sequential_colors(len(sizes))  # training-set size is ordered: smallest n darkest
    points = []
    for panel, correlation in enumerate(table, start=1):
        for n_index, n in enumerate(sizes):
            part = frame[frame["n_train"] == n]
            scatter = {
                "type": "scatter",
                "x": part[correlation.measure],
                "y": part["gap"],
                "mode": "markers",
                "name": f"n = {n}",
                "legendgroup": f"n = {n}",
                "showlegend": panel == 1,
                "text": part["run"],
                "customdata": hover_numbers(part[correlation.measure]),
                "marker": {"color": size_colors[n_index], "size": 7},
                "hovertemplate": "%{text}<br>measure %{customdata}, gap %{y:.3f}<extra></extra>",
            }
            points.append(on_panel(scatter, panel))
        x_axis, y_axis = panel_ref(panel)
        if MEASURE_LABELS[correlation.measure][1]:
            layout[x_axis]["type"] = "linear"
        else:  # full tick labels ("10⁵", "2×10⁵"), not Plotly's "100k"
            layout[x_axis].update(log_axis(frame[correlation.measure]))
        if (panel - 1) % columns == 0:
            layout[y_axis].update(axis_title("gap"))
    # the panel titles take two lines (the measure, then its τ and intervals): one line more room on top
    layout["margin"] = {"t": TOP_MARGIN + 2 * PANEL_TITLE_ROOM, "l": 8, "r": 8, "b": 8}
    return figure(
        points,
        f"Each measure against the gap over the final checkpoints of {format_count(len(frame), 'run')}",
        height=300 * rows + 80,
        legend_title="training set",
        layout=layout,
    )


#: Pixels of the grokking figure: two panels and a legend of a dozen curves below them.
GROKKING_HEIGHT = 860
#: Line styles of the measures beyond the palette's colours, so no two share a look.
_DASHES: tuple[str, ...] = ("solid", "dash", "dot")


def _screen_name(measure: str) -> str:
    return MEASURES[measure].screen_name if measure in MEASURES else measure


def _grokking_line(measure: str, index: int) -> dict[str, Any]:
    """Ours at p* in its own colour and thick, the positive control in black, every other measure grey and
    thin, dashed in turn so that the grey ones can still be told apart."""
    if measure == "ours":
        return {"color": quantity_color(Proxy.OURS), "width": 3}
    if measure == POSITIVE_CONTROL:
        return {"color": OKABE_ITO["black"], "width": 2}
    return {"color": GREYED, "width": 1, "dash": _DASHES[index % len(_DASHES)]}  # context, not the point


def grokking_figure(run: RunGrokking) -> go.Figure:
    """Accuracies (top) and each measure's share of its excursion since saturation (bottom) on one
    step axis, the saturation and the jump marked: a measure that reaches 1/2 before the jump's line
    moved first (:mod:`specbound_lab.grokking`)."""
    steps = list(run.steps)
    accuracy = [
        on_panel(
            {
                "type": "scatter",
                "x": steps,
                "y": list(values),
                "name": name,
                "mode": "lines+markers",
                "line": {"color": quantity_color(quantity)},
                "legendgroup": "accuracy",
            },
            1,
        )
        for values, name, quantity in (
            (run.train_accuracy, "train accuracy", Quantity.TRAIN_ERROR),
            (run.test_accuracy, "test accuracy", Quantity.TEST_ERROR),
        )
    ]
    shares = [
        on_panel(
            {
                "type": "scatter",
                "x": steps,
                "y": excursion_shares(steps, run.curves[lead.measure], run.event.saturation_step),
                "name": _screen_name(lead.measure),
                "mode": "lines",
                "line": _grokking_line(lead.measure, index),
                "legendgroup": "measures",
            },
            2,
        )
        for index, lead in enumerate(run.leads)
    ]
    # the top panel goes untitled (its y axis says "accuracy"): the marks' labels sit where its title would,
    # and a title centred over a jump near the middle of training printed over "test jumps"
    layout = panel_grid(2, 1, titles=["", "Each measure's move since saturation"], vertical_spacing=0.16)
    layout["yaxis"] = {**layout.get("yaxis", {}), **axis_title("accuracy"), "range": [0, 1.02]}
    layout["yaxis2"] = {**layout.get("yaxis2", {}), **axis_title("share of the excursion"), "range": [0, 1.02]}
    layout["xaxis2"] = {**layout.get("xaxis2", {}), **axis_title(STEP_AXIS), "matches": "x"}
    # (step, label, dash, side of its line the label is written on): facing away, so two close marks part
    marks = [
        (run.event.saturation_step, "train fits", "dot", "right"),
        (run.event.jump_step, "test jumps", "dash", "left"),
    ]
    layout["shapes"] = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": step,
            "x1": step,
            "y0": 0,
            "y1": 1,
            "line": {"color": NEUTRAL, "dash": dash, "width": 1},
        }
        for step, _, dash, _ in marks
        if step is not None
    ] + [
        {
            "type": "line",
            "xref": "x2 domain",
            "yref": "y2",
            "x0": 0,
            "x1": 1,
            "y0": 0.5,
            "y1": 0.5,
            "line": {"color": NEUTRAL, "dash": "dot", "width": 1},
        }
    ]
    layout["annotations"] = [
        *layout.get("annotations", []),
        *(
            {
                "x": step,
                "xref": "x",
                "y": 1.0,
                "yref": "y",
                "text": text,
                "showarrow": False,
                "xanchor": anchor,
                "yanchor": "bottom",
                "font": {"size": 11},
            }
            for step, text, _, anchor in marks
            if step is not None
        ),
    ]
    verdict = "groks" if run.event.grokked else "does not grok"
    return figure(
        [*accuracy, *shares],
        f"Grokking: seed {run.seed} {verdict}",
        source="a measure moves at half its excursion from saturation (dotted line)",
        legend_title="curve",
        height=GROKKING_HEIGHT,
        layout=layout,
    )


#: Measures the robust view's CDF draws in colour (ours at p*, the Edelman-style proxy, and the normalised
#: form of ours); the strongest trivial baseline is drawn dashed in black; every other measure in grey.
CDF_HIGHLIGHTS: tuple[str, ...] = ("ours", "edelman", "ours_per_n")
#: The sign-error of a measure unrelated to the gap.
CHANCE_LINE = {"type": "line", "x0": 0.5, "x1": 0.5, "y0": 0, "y1": 1, "line": {"color": NEUTRAL, "dash": "dot"}}


def robust_cdf_figure(rows: Sequence[RobustSummary], *, source: str | None = None) -> go.Figure:
    """Dziugaite et al.'s robust view as a picture: for each measure, the empirical CDF of its sign-errors
    over the couplings of the fitted environments (a step at each coupling's sign-error). A curve that
    rises early (most couplings near 0) is a measure that orders controlled pairs of runs as their gaps;
    0.5 is chance (a dotted line). Ours at p*, the Edelman-style proxy and √(ours / n) are in colour, the
    trivial baseline with the smallest mean sign-error dashed, the rest grey."""
    counted = [r for r in rows if r.couplings]
    baselines = [r for r in counted if is_baseline(r.measure)]
    floor = min(baselines, key=lambda r: r.mean).measure if baselines else None
    order = sorted(counted, key=lambda r: (r.measure in CDF_HIGHLIGHTS or r.measure == floor, r.measure))
    traces = []
    for r in order:  # grey first, so the highlighted curves are drawn on top
        errors = sorted(r.errors)
        x = [0.0, *[e for e in errors for _ in (0, 1)], 1.0]
        y = [0.0, *[v for k in range(len(errors)) for v in (k / len(errors), (k + 1) / len(errors))], 1.0]
        if r.measure in CDF_HIGHLIGHTS:
            line: dict[str, object] = {"color": palette_color(CDF_HIGHLIGHTS.index(r.measure)), "width": 3}
        elif r.measure == floor:
            line = {"color": OKABE_ITO["black"], "width": 2, "dash": "dash"}
        else:
            line = {"color": NEUTRAL, "width": 1}
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": y,
                "mode": "lines",
                "name": f"{_screen_name(r.measure)} (mean {r.mean:.2f})",
                "line": line,
                "opacity": 1.0 if line["color"] != NEUTRAL else 0.6,
                "showlegend": r.measure in CDF_HIGHLIGHTS or r.measure == floor,
                "hovertemplate": f"{_screen_name(r.measure)}<br>sign-error ≤ %{{x:.2f}}: %{{y:.0%}} of couplings"
                "<extra></extra>",
            }
        )
    total = max((r.couplings for r in counted), default=0)
    return figure(
        traces,
        f"Sign-errors over {format_count(total, 'coupling')}",
        source=source,
        height=420,
        layout={
            "xaxis": axis_title("sign-error on a coupling (0 best, 0.5 chance)", range=[0, 1]),
            "yaxis": axis_title("share of couplings", range=[0, 1.02], tickformat=".0%"),
            "shapes": [CHANCE_LINE],
        },
    )


def difference_forest(
    differences: Sequence[TauDifference], name_of: Callable[[str], str] = str, *, source: str | None = None
) -> go.Figure:
    """Each measure's τ minus the other one's (ours at p* on the Lab page) as a forest plot: a point at the
    paired difference and a bar over its 95 % bootstrap interval, one row per measure, the trivial
    baselines marked, a line at 0. A bar clear of 0 is a difference the bootstrap tells apart; the
    colour says which side (a bar across 0 is grey).

    Example::

        >>> from specbound_lab.reference import load_reference
        >>> from specbound_lab.tables import comparisons
        >>> fig = difference_forest(comparisons(load_reference().runs))
    """
    rows = [d for d in differences if math.isfinite(d.kendall_tau)]
    rows.sort(key=lambda d: d.kendall_tau)
    colours = {1: OKABE_ITO["bluish green"], -1: OKABE_ITO["vermillion"], 0: NEUTRAL}
    labels = [name_of(d.measure) + (" (baseline)" if is_baseline(d.measure) else "") for d in rows]
    trace = {
        "type": "scatter",
        "x": [d.kendall_tau for d in rows],
        "y": labels,
        "mode": "markers",
        "marker": {"color": [colours[d.kendall_tau_ci.sign] for d in rows], "size": 9},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": [d.kendall_tau_ci.high - d.kendall_tau for d in rows],
            "arrayminus": [d.kendall_tau - d.kendall_tau_ci.low for d in rows],
            "color": NEUTRAL,
        },
        "customdata": [[d.kendall_tau_ci.low, d.kendall_tau_ci.high] for d in rows],
        "hovertemplate": "%{y}<br>difference in τ %{x:+.3f}<br>95 %: %{customdata[0]:+.3f} to "
        "%{customdata[1]:+.3f}<extra></extra>",
        "showlegend": False,
    }
    other = name_of(rows[0].other) if rows else "the other"
    layout = {
        "xaxis": axis_title("difference in τ, 95 % paired bootstrap"),
        "yaxis": {"automargin": True},
        "shapes": [_zero_line()],
    }
    return figure(
        [trace],
        f"Against {other}: difference in τ",  # short enough for a phone; the caption says how to read it
        source=source,
        height=max(260, 40 + 26 * len(rows)),
        layout=layout,
    )


def verdict_forest(
    answer: LabAnswer, name_of: Callable[[str], str] | None = None, *, source: str | None = None
) -> go.Figure:
    """The lab's answer as a forest plot (:mod:`specbound_lab.answer`): one row per shipped sweep, and in
    it τ with the gap and its 95 % interval over configurations for the bound's proxy (ours at p*), for
    Edelman's proxy and for that sweep's strongest trivial baseline (the largest τ, each baseline read in
    the direction the measure registry declares for it, as the sentence reads it), with a line at 0. A
    sweep that is not fitted is drawn hollow, named so and put last: shown, not counted. Three marks and
    a few rows, so that on a projector the sentence and the plot fit the first screen; every measure's τ
    is in the sweep view's tables.

    Example::

        >>> from specbound_lab.answer import shipped_answer
        >>> fig = verdict_forest(shipped_answer())
        >>> [trace.name for trace in fig.data]
        ['ours at p*', 'Edelman-style proxy', 'strongest trivial baseline']
    """
    name_of = name_of or _screen_name
    finite = [r for r in answer.rows if math.isfinite(r.tau)]
    counted = {r.sweep for r in finite if r.counted}
    sweeps = sorted(answer.sweeps, key=lambda sweep: sweep not in counted)  # those not counted at the bottom
    position = {sweep: len(sweeps) - 1 - k for k, sweep in enumerate(sweeps)}  # the first sweep on top
    strongest = {
        sweep: max(baselines, key=lambda r: r.tau)
        for sweep in sweeps
        if (baselines := [r for r in finite if r.sweep == sweep and r.baseline])
    }
    marks = (
        (Proxy.OURS.key, "circle", quantity_color(Proxy.OURS), 0.18),
        (Proxy.EDELMAN.key, "square", quantity_color(Proxy.EDELMAN), 0.0),
        (None, "diamond", NEUTRAL, -0.18),
    )
    traces = []
    for measure, symbol, colour, offset in marks:
        rows = [r for r in finite if r.measure == measure] if measure else list(strongest.values())
        rows.sort(key=lambda r: -position[r.sweep])  # top first: the legend draws the first point's style
        tau, low, high = [r.tau for r in rows], [r.low for r in rows], [r.high for r in rows]
        fill = [colour if r.counted else "white" for r in rows]
        traces.append(
            {
                "type": "scatter",
                "x": tau,
                "y": [position[r.sweep] + offset for r in rows],
                "mode": "markers",
                "name": name_of(measure) if measure else "strongest trivial baseline",
                "marker": {"symbol": symbol, "size": 9, "color": fill, "line": {"color": colour, "width": 1.5}},
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": [h - t for h, t in zip(high, tau, strict=True)],
                    "arrayminus": [t - lo for t, lo in zip(tau, low, strict=True)],
                    "color": colour,
                    "thickness": 1.5,
                    "width": 0,
                },
                "customdata": [
                    [html.escape(r.sweep), name_of(r.measure), lo, h] for r, lo, h in zip(rows, low, high, strict=True)
                ],
                "hovertemplate": "%{customdata[0]}<br>%{customdata[1]}<br>τ %{x:+.2f}, 95 %: "
                "%{customdata[2]:+.2f} to %{customdata[3]:+.2f}<extra></extra>",
            }
        )
    layout = {
        "xaxis": {"range": [-1.05, 1.05], "zeroline": False},
        "yaxis": {
            "tickmode": "array",
            "tickvals": [position[s] for s in sweeps],
            "ticktext": [s if s in counted else f"{s}, not fitted" for s in sweeps],
            "range": [-0.6, len(sweeps) - 0.4],
            "automargin": True,
            "showgrid": False,
        },
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        "shapes": [_zero_line()],
    }
    return figure(
        traces,
        "Kendall τ with the gap, 95 % intervals",  # one line on a projector; the caption says the rest
        source=source,
        height=max(300, 150 + 34 * len(sweeps)),
        layout=layout,
    )
