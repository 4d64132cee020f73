"""Figures of the bound terms: sums by layer and kind, depth factors, c(W; p) curves, proxy totals, and
why p* wins (p* map and histogram, break-even scales) and a model against its baseline.

Builders take a :class:`~specbound.core.bounds.BoundAnalysis` and, where p matters, the
:class:`~specbound.core.bounds.BoundTerms` of the current assignment; they return ``go.Figure`` objects.
Values that overflow float64 are drawn as gaps (None); the logarithmic charts use log10 values,
which always exist. ``source`` (model and p, e.g. "minilm-l6 · p*") becomes the subtitle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.colors import sample_colorscale

from ...core.architecture import DECODER, ENCODER, Expert, Kind, ModelShape, expert_label
from ...core.bounds import BoundAnalysis, BoundTerms, fine_p_axis
from ...core.logspace import to_log10
from ...core.profile import MatrixId
from ...core.proxies import Proxy
from ...io.models import short_model_name
from ...studies.compare import Comparison
from ..explain import break_even
from ..numbers import DIGITS, format_count, format_percent, format_power
from .style import (
    CELL_TEXT_PX,
    KIND_COLORS,
    NEUTRAL,
    SEQUENTIAL,
    TOP_MARGIN,
    TOP_MARGIN_SUBTITLE,
    Quantity,
    as_text,
    axis_title,
    cell_axis,
    cell_labels,
    colorbar_gap,
    figure,
    hover_numbers,
    layer_rows_axis,
    log_axis,
    on_panel,
    palette_color,
    panel_grid,
    panel_ref,
    quantity_color,
    spaced_ticks,
    split_panels,
    stack_marks,
)

SQRT_DEPTH_COLOR = NEUTRAL
SQRT_DEPTH_LABEL = "√L"
#: Sizes of the p* stars, largest first: stars of curves that meet at one point nest instead of hiding.
STAR_SIZES: tuple[int, ...] = (18, 14, 10, 7)
#: Line styles of c(W; p) curves of one kind (which share the kind's colour), in order.
CURVE_DASHES: tuple[str, ...] = ("solid", "dash", "dot", "dashdot")
#: The proxies of :func:`proxy_comparison` and :func:`compare_bars` as the figures name them.
PROXY_LABELS: Mapping[Quantity | Proxy, str] = {
    Quantity.OURS_AT_P: "ours at the chosen p",
    Proxy.OURS: Proxy.OURS.label,
    Proxy.EDELMAN: Proxy.EDELMAN.label,
}


class SumsView(str, Enum):
    """How :func:`term_sums` draws the per-layer sums."""

    LINEAR = "linear"  # stacked bars, plain values: heights add up to the total
    LOG = "log"  # bars per kind side by side on a log axis: every layer visible whatever layer 0 holds
    SHARE = "share"  # stacked bars of each kind's share of the layer's sum (%), the layer's share of the total in hover


def _finite_or_gap(values: ArrayLike) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=float)]


def kind_layer_sums(terms: BoundTerms, num_layers: int) -> dict[Kind, np.ndarray]:
    """Σ c(W; p) over the matrices of each kind in each layer: kind -> (L,)."""
    return {
        kind: np.bincount(
            terms.layers, weights=np.where(terms.kinds == kind.value, terms.contribution, 0.0), minlength=num_layers
        )
        for kind in terms.model_kinds
    }


def term_sums(
    analysis: BoundAnalysis, terms: BoundTerms, view: SumsView | str = SumsView.LINEAR, *, source: str | None = None
) -> go.Figure:
    """Per layer the sum of c(W; p) split by kind, then a bar for √L.

    ``view``: LINEAR stacks plain values (all bars add up to Σ_W c(W; p) + √L); LOG puts the kinds side by
    side on a log axis so layers far below layer 0 stay visible; SHARE stacks each kind's percentage of
    the layer's sum, with the layer's share of the total in the hover.

    Example::

        >>> analysis = specbound.analyze("minilm-l6").bounds
        >>> figure = term_sums(analysis, analysis.optimal)
        >>> len(figure.data) >= 3  # a bar per kind, and the √L bar
        True
    """
    view = SumsView(view)
    num_layers = analysis.profile.shape.num_layers
    categories = [f"layer {layer}" for layer in range(num_layers)] + [SQRT_DEPTH_LABEL]
    sums = kind_layer_sums(terms, num_layers)
    layer_total = sum(sums.values())  # (L,)
    share_of_total = 100.0 * layer_total / terms.total if np.isfinite(terms.total) else np.full(num_layers, np.nan)
    layer_shares = [format_percent(float(s) / 100.0) for s in np.atleast_1d(share_of_total)]
    traces = [
        _kind_sums_bar(kind, values, layer_total, layer_shares, categories[:-1], view) for kind, values in sums.items()
    ]
    if view is not SumsView.SHARE:
        traces.append(
            {
                "type": "bar",
                "x": [SQRT_DEPTH_LABEL],
                "y": [terms.sqrt_depth],
                "name": SQRT_DEPTH_LABEL,
                "marker": {"color": SQRT_DEPTH_COLOR},
                "customdata": hover_numbers([terms.sqrt_depth]),
                "hovertemplate": "√L = %{customdata}<extra></extra>",
            }
        )
    if view is SumsView.LOG:
        y_axis = log_axis(
            np.append(np.concatenate(list(sums.values())), terms.sqrt_depth), title={"text": "Σ c(W; p) (log)"}
        )
    else:
        y_axis = axis_title("% of the layer's sum" if view is SumsView.SHARE else "Σ c(W; p)")
    layout = {
        "barmode": "group" if view is SumsView.LOG else "stack",
        "xaxis": {"categoryorder": "array", "categoryarray": categories},
        "yaxis": y_axis,
        **stack_marks(analysis.profile.shape),  # the ℓ-th category is layer ℓ
    }
    return figure(traces, "Σ c(W; p) by layer and kind", source=source, height=400, legend_title="kind", layout=layout)


def _kind_sums_bar(
    kind: Kind,
    values: np.ndarray,
    layer_total: np.ndarray | float,
    layer_shares: list[str],
    layers: list[str],
    view: SumsView,
) -> dict[str, Any]:
    """One kind's bars of :func:`term_sums`, a bar per layer: its Σ c(W; p), or with ``view`` SHARE its
    percentage of the layer's sum; the hover adds the layer's share of the total (``layer_shares``)."""
    if view is SumsView.SHARE:
        y = 100.0 * np.divide(values, layer_total, out=np.zeros_like(values), where=layer_total > 0)
        shown = [format_percent(v / 100.0) for v in y]
        hover = (
            f"%{{x}}<br>{kind.value}: %{{customdata[1]}} of the layer<br>"
            f"layer: %{{customdata[0]}} of the total<extra></extra>"
        )
    else:
        y, shown = values, hover_numbers(values)
        hover = f"%{{x}}<br>Σ c({kind.value}) = %{{customdata[1]}}<extra></extra>"
    return {
        "type": "bar",
        "x": layers,
        "y": _finite_or_gap(y),
        "name": kind.value,
        "marker": {"color": KIND_COLORS[kind]},
        "customdata": [[share, value] for share, value in zip(layer_shares, shown, strict=True)],
        "hovertemplate": hover,
    }


def depth_factors(analysis: BoundAnalysis, *, source: str | None = None) -> go.Figure:
    """log10 α⁽ℓ⁾ (product of the layer factors above ℓ) and log10 ξ⁽ℓ⁾ (Edelman's layer sum)."""
    layers = np.arange(analysis.profile.shape.num_layers)
    bars = [
        {
            "type": "bar",
            "x": layers,
            "y": to_log10(analysis.log_alpha),
            "name": "log10 α<sup>(ℓ)</sup>",
            "marker": {"color": quantity_color(Quantity.ALPHA)},
            "hovertemplate": "layer %{x}<br>log10 α = %{y:.4g}<extra></extra>",
        },
        {
            "type": "bar",
            "x": layers,
            "y": to_log10(analysis.log_xi),
            "name": "log10 ξ<sup>(ℓ)</sup> (Edelman)",
            "marker": {"color": quantity_color(Proxy.EDELMAN)},
            "hovertemplate": "layer %{x}<br>log10 ξ = %{y:.4g}<extra></extra>",
        },
    ]
    layout = {
        "barmode": "group",
        "xaxis": axis_title("layer", dtick=1),
        "yaxis": axis_title("log10"),
        **stack_marks(analysis.profile.shape),  # an encoder-decoder's two stacks, marked
    }
    return figure(bars, "Depth factors per layer (log10)", source=source, height=340, layout=layout)


def contribution_curves(
    analysis: BoundAnalysis,
    rows: Sequence[int],
    terms: BoundTerms,
    ps: np.ndarray | None = None,
    *,
    source: str | None = None,
) -> go.Figure:
    """c(W; p) against p for the chosen matrices (log y), with the grid P_m, p* and the current p.

    Lines: c on a fine p axis; dots: c on the grid P_m; star: p* (the grid minimum, at
    ``analysis.p_opt_index``), one size smaller per curve so stars at one point nest; open diamond:
    the p the matrix uses now.

    Example::

        >>> analysis = specbound.analyze("minilm-l6").bounds
        >>> top = analysis.profile.rows_of(layers=[5], heads=[0])  # QK h0, V h0, M_in, M_out of the top layer
        >>> figure = contribution_curves(analysis, top, analysis.optimal)
        >>> len(top)
        4
    """
    chosen = np.asarray(rows, dtype=int)
    ps = fine_p_axis() if ps is None else np.asarray(ps, dtype=float)
    grid = analysis.grid
    curves = 10.0 ** to_log10(analysis.contribution_curves(ps, chosen))  # (rows, len(ps))
    on_grid = 10.0 ** to_log10(analysis.log_contribution_grid[chosen])  # (rows, 2m + 1)
    at_p = 10.0 ** to_log10(terms.log_contribution[chosen])  # (rows,)
    traces = []
    seen: dict[Kind, int] = {}  # curves drawn so far per kind: a second curve of a kind gets another dash
    for n, i in enumerate(chosen):
        matrix = analysis.profile.ids[i]
        label, color = matrix.label, KIND_COLORS[matrix.kind]
        dash = CURVE_DASHES[seen.get(matrix.kind, 0) % len(CURVE_DASHES)]
        seen[matrix.kind] = seen.get(matrix.kind, 0) + 1
        traces += _curve_traces(
            label,
            {"color": color, "dash": dash},
            ps=ps,
            curve=curves[n],
            grid=grid,
            on_grid=on_grid[n],
            best=int(analysis.p_opt_index[i]),
            current_p=float(terms.p[i]),
            at_p=at_p[n],
            star_size=STAR_SIZES[n % len(STAR_SIZES)],
        )
    layout = {
        "xaxis": axis_title("Schatten index p"),
        "yaxis": log_axis(np.concatenate([curves.ravel(), on_grid.ravel(), at_p]), title={"text": "c(W; p)"}),
        "showlegend": len(chosen) > 1,  # one matrix (a drill-down) is named by the subtitle
    }
    return figure(traces, "c(W; p) against p (★ p*, ◇ current p)", source=source, height=420, layout=layout)


def _curve_traces(
    label: str,
    line: dict[str, str],
    *,
    ps: np.ndarray,
    curve: np.ndarray,
    grid: np.ndarray,
    on_grid: np.ndarray,
    best: int,
    current_p: float,
    at_p: float,
    star_size: int,
) -> list[dict[str, Any]]:
    """One matrix's traces of :func:`contribution_curves`, in its colour and dash (``line``): c on the fine
    p axis, its dots on the grid P_m, the star at p* (grid index ``best``, of size ``star_size`` so stars
    at one point nest) and the open diamond at the p it uses now."""
    color = line["color"]
    point = {"type": "scatter", "mode": "markers", "legendgroup": label, "showlegend": False}
    return [
        _curve_line(label, line, ps, curve),
        {
            **point,
            "x": grid,
            "y": _finite_or_gap(on_grid),
            "name": f"{label} on P_m",
            "marker": {"color": color, "size": 4},
            "hoverinfo": "skip",
        },
        {
            **point,
            "x": [grid[best]],
            "y": _finite_or_gap([on_grid[best]]),
            "name": f"{label} p*",
            "marker": {
                "color": color,
                "size": star_size,
                "symbol": "star",
                "line": {"color": "black", "width": 1},
            },
            "customdata": hover_numbers([on_grid[best]]),
            "hovertemplate": f"{label}<br>p* = %{{x:.3f}}<br>c = %{{customdata}}<extra></extra>",
        },
        {
            **point,
            "x": [current_p],
            "y": _finite_or_gap([at_p]),
            "name": f"{label} current p",
            "marker": {"color": "white", "size": 11, "symbol": "diamond", "line": {"color": color, "width": 2}},
            "customdata": hover_numbers([at_p]),
            "hovertemplate": f"{label}<br>current p = %{{x:.3f}}<br>c = %{{customdata}}<extra></extra>",
        },
    ]


def _curve_line(label: str, line: dict[str, str], ps: np.ndarray, curve: np.ndarray) -> dict[str, Any]:
    """c(W; p) of one matrix on the fine p axis ``ps``, the line its legend entry names."""
    return {
        "type": "scatter",
        "x": ps,
        "y": _finite_or_gap(curve),
        "mode": "lines",
        "name": label,
        "legendgroup": label,
        "line": line,
        "customdata": hover_numbers(curve),
        "hovertemplate": f"{label}<br>p = %{{x:.3f}}<br>c = %{{customdata}}<extra></extra>",
    }


#: Room past the longest bar of a labelled bar chart, as a fraction of its length: the value written
#: just outside the bar's end ("6.854 × 10²⁸", in large type on a projector) stays inside the chart.
LABEL_ROOM: float = 0.6


def labelled_bar_axis(values: ArrayLike, title: str) -> dict[str, Any]:
    """An x axis for horizontal bars whose values are written past their ends (``textposition="outside"``):
    from 0 (or the smallest value) to the largest plus :data:`LABEL_ROOM` of the span for the labels."""
    finite = [float(v) for v in np.ravel(np.asarray(values, dtype=float)) if np.isfinite(v)]
    low, high = min([0.0, *finite]), max([0.0, *finite])
    span = (high - low) or 1.0
    return axis_title(title, range=[low - (LABEL_ROOM * span if low < 0 else 0.0), high + LABEL_ROOM * span])


def proxy_comparison(log_values: Mapping[Quantity | Proxy, float], *, source: str | None = None) -> go.Figure:
    """Horizontal bars of log10 of each proxy (natural logs in: ours at p, at p*, Edelman), each in its
    colour, its value written past the bar's end (inside the chart at any width and type size)."""
    quantities = list(log_values)
    values = to_log10(np.array([log_values[q] for q in quantities], dtype=float))
    texts = [format_power(float(v), DIGITS) for v in values]
    bars = {
        "type": "bar",
        "x": values,
        "y": [PROXY_LABELS[q] for q in quantities],
        "orientation": "h",
        "text": texts,
        "textposition": "outside",
        "cliponaxis": False,
        "marker": {"color": [quantity_color(q) for q in quantities]},
        "customdata": texts,
        "hovertemplate": "%{y}: %{customdata}<br>log10 = %{x:.4~g}<extra></extra>",
    }
    layout = {"xaxis": labelled_bar_axis(values, "log10 of the proxy"), "yaxis": {"autorange": "reversed"}}
    return figure([bars], "Proxies side by side (log10)", source=source, height=260, layout=layout)


# --- why p* wins --------------------------------------------------------------------------------


def p_star_colorscale(grid: np.ndarray) -> list[list[float | str]]:
    """A stepped colour scale with one flat colour band per grid value of p* (for zmin/zmax of p_star_range)."""
    n = len(grid)
    colors = sample_colorscale(SEQUENTIAL, np.linspace(0.0, 1.0, n).tolist())
    scale: list[list[float | str]] = []
    for k, color in enumerate(colors):
        scale += [[k / n, color], [(k + 1) / n, color]]
    return scale


def p_star_range(grid: np.ndarray) -> tuple[float, float]:
    """zmin, zmax that centre each grid value in its band of :func:`p_star_colorscale`."""
    half = 0.5 * (grid[1] - grid[0]) if len(grid) > 1 else 0.5
    return float(grid[0] - half), float(grid[-1] + half)


#: The p* map's panels as separate figures (side by side, stacked on a phone; see
#: :func:`~specbound.present.figures.style.split_panels`): short titles, and relative widths that leave the
#: layer strip room for its colour bar. At 1024 px with the sidebar open that is about 185 px: the strip
#: needs its layer axis, a plot area of at least 64 px (Plotly squeezes the margins to keep one) and
#: the colour bar with labels such as "0.667"; narrower, the labels run past the chart's edge.
P_STAR_PANEL_TITLES: tuple[str, ...] = ("p* of QK heads", "p* of V heads", "p* per layer")
P_STAR_PANEL_WIDTHS: tuple[float, ...] = (1.6, 1.6, 1.7)


def p_star_heatmap(
    analysis: BoundAnalysis, *, source: str | None = None, expert: Expert = None, stack: str | None = None
) -> go.Figure:
    """p* of every matrix: layer x head heatmaps for QK and V, a layer strip for M_in and M_out (in a
    mixture of experts, those of ``expert``, expert 0 when not given).

    An encoder-decoder's map is one stack's (``stack``: "encoder" or "decoder"; both in series when
    not given), the decoder's with QK_x and V_x panels after QK and V; its layers keep their numbers
    in series on the axis (so a click finds the matrix) and are labelled by their number in the stack.
    One flat colour per grid value of P_m (a stepped Cividis scale), the value written in each cell
    while the cells are wide enough; layer ticks on the first panel only, as in the head heatmaps.

    Example::

        >>> analysis = specbound.analyze("minilm-l6").bounds
        >>> figure = p_star_heatmap(analysis)
        >>> figure.layout.title.text.startswith("p*")
        True
    """
    grid, shape = analysis.grid, analysis.profile.shape
    H = shape.num_heads
    layers = list(shape.layers_of(stack))
    if not layers:
        raise ValueError(f"this model has no {stack} layers")
    panels, mlp_title = _p_star_panels(analysis, layers, stack, expert)
    where = f"{stack} " if stack else ""
    layout = _p_star_layout(shape, stack, mlp_title)
    zmin, zmax = p_star_range(grid)
    height = 320 + 14 * len(layers)
    gap = colorbar_gap(height, TOP_MARGIN_SUBTITLE if source else TOP_MARGIN, CELL_TEXT_PX) * (zmax - zmin) / 0.8
    used = spaced_ticks(np.union1d(analysis.p_opt, [grid[0], grid[-1]]), gap)
    # cell labels only while they fit; the hover always carries the value
    labels = cell_labels(H * len(shape.stack_head_kinds(stack)) // 2)
    common = {"colorscale": p_star_colorscale(grid), "zmin": zmin, "zmax": zmax, "y": layers, **labels}
    last = len(panels)
    numbers = [shape.stack_layer(layer) for layer in layers]
    strip = {"range": [-0.5, len(shape.layer_kinds) - 0.5], **({"tickangle": -90} if stack else {})}  # every kind named
    heatmaps = []
    for col, (z, x, name) in enumerate(panels, start=1):
        trace = _p_star_trace(z, x, name, numbers=numbers, where=where, ticks=used, scale=col == last)
        heatmaps.append(on_panel({**trace, **common}, col))
        x_axis, y_axis = panel_ref(col)
        layout[y_axis].update(layer_rows_axis(where, layers, numbers, first=col == 1))
        layout[x_axis].update(cell_axis("head", H) if col < last else strip)
    title = f"p* of every matrix of the {stack}" if stack else "p* of every matrix"
    return figure(heatmaps, title, source=source, height=height, layout=layout)


#: One panel of the p* map: its cells (layers, columns), the columns' labels, its name.
_Panel = tuple[np.ndarray, np.ndarray | list[str], str]


def _p_star_panels(
    analysis: BoundAnalysis, layers: list[int], stack: str | None, expert: Expert
) -> tuple[list[_Panel], str]:
    """The p* map's panels, left to right: per head kind of ``stack`` a (layers, H) grid of p*, NaN in
    a layer without the kind; then the MLP strip, (layers, kinds), of ``expert``'s matrices in a mixture
    of experts (expert 0 when not given). Also the strip's title, the kinds it holds (and the expert)."""
    profile, p_opt = analysis.profile, analysis.p_opt
    shape = profile.shape
    H = shape.num_heads
    mlp_kinds = shape.layer_kinds
    mlp_title = ", ".join(kind.value for kind in mlp_kinds)
    if shape.moe:
        expert = shape.experts[0] if expert is None else expert
        mlp_title += f" ({expert_label(expert)})"
    else:
        expert = None

    def head_grid(kind: Kind) -> np.ndarray:  # (layers, H), NaN in a layer without the kind
        rows = [
            [p_opt[profile.index(MatrixId(layer, kind, h))] for h in range(H)]
            if kind in shape.head_kinds_of(layer)
            else [np.nan] * H
            for layer in layers
        ]
        return np.array(rows, dtype=np.float64)

    mlp_grid = np.array(
        [[p_opt[profile.index(MatrixId(layer, kind, expert=expert))] for kind in mlp_kinds] for layer in layers]
    )  # (layers, 2) or (layers, 3)
    panels: list[_Panel] = [(head_grid(kind), np.arange(H), kind.value) for kind in shape.stack_head_kinds(stack)]
    panels.append((mlp_grid, [k.value for k in mlp_kinds], mlp_title))
    return panels, mlp_title


def _p_star_layout(shape: ModelShape, stack: str | None, mlp_title: str) -> dict[str, Any]:
    """The p* map's panel grid: one panel per head kind, then the MLP strip, with their widths and titles."""
    head_kinds, mlp_kinds, H = shape.stack_head_kinds(stack), shape.layer_kinds, shape.num_heads
    heads = len(head_kinds)
    # the MLP strip's share of the width: 0.12, or on one stack's (narrower) map at least its share of the
    # cells, so that a small model's strip keeps room for every kind's tick
    strip_width = max(0.12, len(mlp_kinds) / (heads * H + len(mlp_kinds))) if stack else 0.12
    head_width = (1.0 - strip_width) / heads
    return panel_grid(
        1,
        heads + 1,
        column_widths=[head_width] * heads + [strip_width],
        horizontal_spacing=0.05 if heads <= 2 else 0.03,
        # one stack's map is drawn beside the other's, at half the width: its panels are named by their kind
        # alone (the axes say layer and head) so that their titles do not run into each other
        titles=[kind.value if stack else f"{kind.value} (layer × head)" for kind in head_kinds]
        + ["MLP" if stack else mlp_title],
    )


def _p_star_trace(
    z: np.ndarray,
    x: np.ndarray | list[str],
    name: str,
    *,
    numbers: list[int],
    where: str,
    ticks: np.ndarray,
    scale: bool,
) -> dict[str, Any]:
    """One panel's heatmap: its cells, the hover (the layer by its number in its stack, ``numbers``), and
    the colour bar (``scale``: on the last panel only) with the grid values ``ticks``."""
    return {
        "type": "heatmap",
        "z": z,
        "x": x,
        "name": name,
        "showscale": scale,
        "colorbar": {
            "title": {"text": "p*"},
            # from the bottom up to 4/5 of the plot: its title stays below the titles above the plot
            "len": 0.8,
            "y": 0,
            "yanchor": "bottom",
            "thickness": 10,
            "tickvals": ticks,
            "ticktext": [f"{p:.3g}" for p in ticks],
        },
        "customdata": np.repeat(np.array(numbers)[:, None], z.shape[1], axis=1),
        "hovertemplate": f"{name}<br>{where}layer %{{customdata}}, %{{x}}<br>p* = %{{z:.4g}}<extra></extra>",
    }


@dataclass(frozen=True)
class PStarPanels:
    """The p* map as a page draws it: its figures side by side, their relative widths and, per figure,
    the stack it shows (None for a model of one stack, whose figures are the map's split panels)."""

    figures: tuple[go.Figure, ...]
    widths: tuple[float, ...]
    stacks: tuple[str | None, ...]


#: An encoder-decoder's two maps side by side: the encoder's has two head panels, the decoder's four.
STACK_PANEL_WIDTHS: tuple[float, float] = (2.0, 3.0)


def p_star_heatmap_panels(
    analysis: BoundAnalysis,
    *,
    source: str | None = None,
    expert: Expert = None,
    prepare: Callable[[go.Figure], go.Figure] = lambda fig: fig,
) -> PStarPanels:
    """:func:`p_star_heatmap` laid out for the model it is given (SPEC §12: stacks and experts come from the
    model): an encoder-decoder's encoder map beside its decoder map (with QK_x and V_x); any other
    model's one map split into its panels (:func:`~specbound.present.figures.style.split_panels`), with the
    MLP strip of ``expert`` in a mixture of experts. ``prepare`` is applied to each whole map before
    it is split (a page makes the cells clickable there).
    """
    shape = analysis.profile.shape
    if shape.encoder_decoder:
        stacks = (ENCODER, DECODER)
        maps = tuple(prepare(p_star_heatmap(analysis, source=source, stack=stack)) for stack in stacks)
        return PStarPanels(maps, STACK_PANEL_WIDTHS, stacks)
    whole = prepare(p_star_heatmap(analysis, source=source, expert=expert))
    parts = tuple(split_panels(whole, titles=P_STAR_PANEL_TITLES))
    return PStarPanels(parts, P_STAR_PANEL_WIDTHS, (None,) * len(parts))


def p_star_histogram(analysis: BoundAnalysis, *, source: str | None = None) -> go.Figure:
    """How many matrices take each grid value of p*, stacked by kind."""
    grid, prof = analysis.grid, analysis.profile
    counts = {
        kind: np.bincount(analysis.p_opt_index[prof.mask(kind)], minlength=len(grid)) for kind in prof.model_kinds
    }
    bars = [
        {
            "type": "bar",
            "x": grid,
            "y": counts[kind],
            "name": kind.value,
            "marker": {"color": KIND_COLORS[kind]},
            "width": 0.8 * (grid[1] - grid[0]) if len(grid) > 1 else 0.8,
            "customdata": [format_count(int(n), "matrix", "matrices") for n in counts[kind]],
            "hovertemplate": f"{kind.value}<br>p* = %{{x:.3f}}: %{{customdata}}<extra></extra>",
        }
        for kind in prof.model_kinds
    ]
    tallest = int(np.sum(list(counts.values()), axis=0).max()) if counts else 0
    layout = {
        "barmode": "stack",
        "xaxis": axis_title("p* (grid P_m)", range=[grid[0] - 0.1, grid[-1] + 0.1]),
        "yaxis": axis_title("matrices", **count_ticks(tallest)),
    }
    return figure(bars, "How often each p* wins", source=source, height=340, legend_title="kind", layout=layout)


def count_ticks(tallest: int, most: int = 6) -> dict[str, Any]:
    """Ticks of an axis of counts up to ``tallest``: whole numbers only, at most about ``most`` of them,
    and a range with a tenth of room above the tallest bar, so nothing written at the top of the plot
    (a subtitle, a legend) sits on a bar. Plotly's own ticks step by 0.5 below a count of about 4.

    The step is the smallest of 1, 2, 5, 10, 20, 50, ... that gives at most ``most`` ticks above zero::

        >>> count_ticks(3)
        {'dtick': 1, 'tick0': 0, 'tickformat': ',d', 'range': [0, 3.3]}
        >>> count_ticks(40)["dtick"]
        10
    """
    scale = 1
    while (step := next((m * scale for m in (1, 2, 5) if tallest <= most * m * scale), 0)) == 0:
        scale *= 10
    return {"dtick": step, "tick0": 0, "tickformat": ",d", "range": [0, round(max(tallest, 1) * 1.1, 6)]}


def _fitted_range(values: np.ndarray) -> tuple[float, float]:
    """An axis range that fits ``values`` with a margin (5 % of their span, at least a tenth of a decade)."""
    if not values.size:
        return 0.0, 1.0
    low, high = float(values.min()), float(values.max())
    margin = max(0.1, 0.05 * (high - low))
    return low - margin, high + margin


def break_even_figure(analysis: BoundAnalysis, *, source: str | None = None) -> go.Figure:
    """log10 s_W against the log10 break-even scale of every nonzero matrix, with the diagonal s_W = s*_W.

    Above the diagonal p = 0 wins (p* = 0); below it some p > 0 beats counting rank
    (see :mod:`specbound.present.explain`).
    """
    even = break_even(analysis)
    prof = analysis.profile
    nonzero = prof.rank > 0
    labels = np.array([m.label for m in prof.ids])
    points = []
    for kind in prof.model_kinds:
        keep = prof.mask(kind) & nonzero
        points.append(
            {
                "type": "scatter",
                "x": even.log10_break_even[keep],
                "y": even.log10_scale[keep],
                "mode": "markers",
                "name": kind.value,
                "marker": {"color": KIND_COLORS[kind], "size": 7},
                "customdata": np.stack([labels[keep], analysis.p_opt[keep]], axis=1),
                "hovertemplate": "%{customdata[0]}<br>log10 s* = %{x:.3g}<br>log10 s_W = %{y:.3g}"
                "<br>p* = %{customdata[1]}<extra></extra>",
            }
        )
    x_low, x_high = _fitted_range(even.log10_break_even[nonzero])
    y_low, y_high = _fitted_range(even.log10_scale[nonzero])
    # each axis fits its own points (MiniLM's break-even scales span a tenth of a decade, its scales 25);
    # the diagonal runs across both ranges and the plot clips it
    ends = [min(x_low, y_low), max(x_high, y_high)]
    diagonal = {
        "type": "scatter",
        "x": ends,
        "y": ends,
        "mode": "lines",
        "name": "s_W = s*_W",
        "line": {"color": NEUTRAL, "dash": "dash"},
        "hoverinfo": "skip",
    }
    annotations = _break_even_notes(x_low, x_high, y_low, y_high)
    layout = {
        "annotations": annotations,
        "xaxis": axis_title("log10 break-even scale s*_W", range=[x_low, x_high]),
        "yaxis": axis_title("log10 s_W", range=[y_low, y_high]),
    }
    return figure(
        [*points, diagonal], "Scale against break-even", source=source, height=420, legend_title="kind", layout=layout
    )


def _break_even_notes(x_low: float, x_high: float, y_low: float, y_high: float) -> list[dict[str, Any]]:
    """The corners' words of :func:`break_even_figure` for the axes' ranges: which side of the diagonal
    s_W = s*_W each corner in view lies on, or that the whole view lies above it."""
    corner = {"xref": "paper", "yref": "paper", "showarrow": False}
    annotations = []
    if y_high > x_low:  # the top-left corner lies above the diagonal
        annotations.append(
            {**corner, "x": 0.02, "y": 0.98, "xanchor": "left", "yanchor": "top", "text": "above the line: p* = 0"}
        )
    if y_low < x_high:  # the bottom-right corner lies below it
        annotations.append(
            {
                **corner,
                "x": 0.98,
                "y": 0.02,
                "xanchor": "right",
                "yanchor": "bottom",
                "text": "below the line: some p > 0 wins",
            }
        )
    if y_low > x_high:
        annotations.append(
            {**corner, "x": 0.98, "y": 0.02, "xanchor": "right", "yanchor": "bottom",
             "text": "the line s_W = s*_W lies below this view: every matrix is above it"}
        )  # fmt: skip
    return annotations


# --- a model against its baseline --------------------------------------------------------------

#: The bars of :func:`compare_bars`, in order: ours at p*, ours at the chosen p, the Edelman-style proxy.
COMPARED_PROXIES: tuple[Proxy | Quantity, ...] = (Proxy.OURS, Quantity.OURS_AT_P, Proxy.EDELMAN)


def compared_values(at_optimum: Mapping[Proxy, float], at_chosen: float) -> list[float]:
    """The values of :data:`COMPARED_PROXIES` in order, from a comparison's proxies at their optimum
    (``ProxyTotals.log10``, ``Comparison.log10_ratio``) and ours at the chosen p."""
    return [at_optimum[q] if isinstance(q, Proxy) else at_chosen for q in COMPARED_PROXIES]


def compare_bars(comparison: Comparison, *, source: str | None = None) -> go.Figure:
    """log10 of each proxy for the model and the baseline, side by side, the ratio in the hover."""
    labels = [PROXY_LABELS[q] for q in COMPARED_PROXIES]
    ratio = comparison.log10_ratio
    bars = []
    drawn: list[float] = []
    for n, totals in enumerate((comparison.model, comparison.baseline)):
        values = compared_values(totals.log10, totals.log10_at)
        drawn += values
        name = as_text(short_model_name(totals.model))  # a directory by its name, not the server's path to it
        bars.append(
            {
                "type": "bar",
                "y": labels,
                "x": values,
                "orientation": "h",
                "name": name,
                "marker": {"color": palette_color(n)},
                "text": [format_power(float(v), DIGITS) for v in values],
                "textposition": "outside",
                "cliponaxis": False,
                "customdata": compared_values(ratio, comparison.log10_ratio_at),
                "hovertemplate": f"{name}<br>%{{y}}: log10 = %{{x:.4g}}"
                "<br>log10(model / baseline) = %{customdata:.3g}<extra></extra>",
            }
        )
    layout = {
        "barmode": "group",
        "xaxis": labelled_bar_axis(drawn, "log10 of the proxy"),
        "yaxis": {"autorange": "reversed"},
    }
    return figure(bars, "Model against baseline (log10)", source=source, height=320, layout=layout)
