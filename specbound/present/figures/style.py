"""The look shared by every specbound figure: one colour-blind-safe palette, one layout helper, log ticks.

Palette: Okabe & Ito (2008), "Color Universal Design", eight colours told apart under the common
colour-vision deficiencies. Sequential data (p* values, ranks, layers) use Cividis, designed for the
same purpose. Nothing here touches plotly's global templates: :func:`figure` styles one figure as it builds it.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from ...core.architecture import Kind, ModelShape
from ...core.proxies import Proxy
from ..numbers import format_number

#: Okabe-Ito colours by name.
OKABE_ITO: Mapping[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}
#: The order in which unrelated series (compared models, the layers' α lines of a run) take colours.
PALETTE: tuple[str, ...] = tuple(
    OKABE_ITO[name]
    for name in ("blue", "orange", "bluish green", "vermillion", "reddish purple", "sky blue", "black", "yellow")
)
#: One colour per matrix kind, the same in every figure.
KIND_COLORS: Mapping[Kind, str] = {
    Kind.QK: OKABE_ITO["blue"],
    Kind.V: OKABE_ITO["orange"],
    # an encoder-decoder's cross-attention: darker shades of its self-attention counterparts
    Kind.QK_X: "#00466E",
    Kind.V_X: "#8F6200",
    Kind.M_GATE: OKABE_ITO["sky blue"],
    Kind.M_IN: OKABE_ITO["bluish green"],
    Kind.M_OUT: OKABE_ITO["reddish purple"],
}


class Quantity(str, Enum):
    """The quantities drawn on more than one page that are not a proxy, each in one colour everywhere
    (:data:`QUANTITY_COLORS`); the proxies are :class:`~specbound.core.proxies.Proxy`'s (ours at p* is
    ``Proxy.OURS``, Edelman's baseline and its layer sums ξ ``Proxy.EDELMAN``), named there once."""

    OURS_AT_P = "ours at the chosen p"  # ours at the sliders' p: a paler shade of ours
    ALPHA = "α"  # the depth factor shared by both proxies
    SQRT_DEPTH = "√L"
    TRAIN_ERROR = "train error"
    TEST_ERROR = "test error"
    GAP = "gap"


#: The colour of each :class:`Quantity`. Ours and Edelman's proxy take colours no matrix kind has, so
#: a chart of both never reads as one of kinds; the errors of the lab, drawn only beside each other,
#: reuse two of the palette's.
QUANTITY_COLORS: Mapping[Quantity | Proxy, str] = {
    Proxy.OURS: OKABE_ITO["vermillion"],
    Quantity.OURS_AT_P: "#EBA477",  # vermillion mixed half with white
    Proxy.EDELMAN: OKABE_ITO["black"],
    Quantity.ALPHA: "#777777",
    Quantity.SQRT_DEPTH: "#999999",
    Quantity.TRAIN_ERROR: OKABE_ITO["sky blue"],
    Quantity.TEST_ERROR: OKABE_ITO["blue"],
    Quantity.GAP: OKABE_ITO["black"],
}
#: Neutral grey for fixed parts (the √L term, reference lines).
NEUTRAL: str = QUANTITY_COLORS[Quantity.SQRT_DEPTH]
#: A pale grey for series drawn only as context beside highlighted ones (the grokking chart's other measures).
GREYED: str = "#C8C8C8"
#: Black, for a fitted curve over data (the ESD's power law) and a chart's one reference series.
INK: str = OKABE_ITO["black"]


def quantity_color(quantity: Quantity | Proxy) -> str:
    """The one colour of ``quantity`` (a proxy or another drawn quantity) in every figure.

    >>> quantity_color(Proxy.OURS) == OKABE_ITO["vermillion"], quantity_color(Quantity.OURS_AT_P)
    (True, '#EBA477')
    """
    return QUANTITY_COLORS[quantity]


def p_color(p: float) -> str:
    """The colour of a Schatten index p ∈ [0, 2]: its place on :data:`SEQUENTIAL`, as in the p* map, so
    "ours at p = 0 / 1 / 2" read as points along the same scale as every p* value."""
    return str(sample_colorscale(SEQUENTIAL, [min(max(p / 2.0, 0.0), 1.0) * 0.9])[0])


#: Colour scale of sequential quantities (colour-blind safe).
SEQUENTIAL: str = "Cividis"
#: Grid lines on the white background of every figure (set per figure: copying a whole template into
#: each figure cost more than building its traces).
GRID_COLOR: str = "#E5E5E5"

#: Heatmaps with more heads than this leave cell numbers to the hover (they would overlap in a narrow column).
MAX_LABELLED_HEADS: int = 8
#: Top margin without and with a subtitle; titles are left-aligned so a narrow column never clips them.
TOP_MARGIN: int = 56
TOP_MARGIN_SUBTITLE: int = 84
#: Extra top margin of a figure whose panel titles sit right under its subtitle (side-by-side panels).
PANEL_TITLE_ROOM: int = 24


def cell_labels(columns: int, template: str = "%{z:.3~g}") -> dict[str, Any]:
    """Heatmap settings that write each cell's value, for at most :data:`MAX_LABELLED_HEADS` columns.

    Wider heatmaps leave the numbers to the hover: in a narrow column they would overlap.
    """
    return {"texttemplate": template, "textfont": {"size": 9}} if columns <= MAX_LABELLED_HEADS else {}


def cell_axis(title: str | None, count: int, **axis: Any) -> dict[str, Any]:
    """The axis of a heatmap with ``count`` cells along it (at 0, 1, ...): exactly the cells, whatever
    else is drawn on it (the dashboard lays invisible click targets over them), and a tick on every
    cell, or on every k-th past :data:`MAX_LABELLED_HEADS` so the labels do not run together."""
    step = max(1, math.ceil(count / MAX_LABELLED_HEADS))
    return axis_title(title, range=[-0.5, count - 0.5], dtick=step, **axis)


def stack_marks(shape: ModelShape) -> dict[str, list[dict[str, Any]]]:
    """For an encoder-decoder, the layout entries that mark its two stacks on a chart whose x axis runs
    over the layers in series (layer ℓ at x = ℓ, or the ℓ-th category): a dashed line between the last
    encoder layer and the first decoder layer, and "encoder" / "decoder" over each block. Empty for a model
    of one stack; merge it into a figure's layout (its ``shapes`` and ``annotations``)."""
    if not shape.encoder_decoder:
        return {}
    boundary = shape.encoder_layers - 0.5
    line = {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": boundary,
        "x1": boundary,
        "y0": 0,
        "y1": 1,
        "line": {"color": NEUTRAL, "dash": "dash", "width": 1},
    }
    label = {"xref": "x", "yref": "paper", "y": 1.0, "yanchor": "bottom", "showarrow": False, "font": {"size": 12}}
    return {
        "shapes": [line],
        "annotations": [
            {**label, "x": (shape.encoder_layers - 1) / 2, "text": "encoder"},
            {**label, "x": shape.encoder_layers + (shape.decoder_layers - 1) / 2, "text": "decoder"},
        ],
    }


def layer_rows_axis(where: str, layers: Sequence[int], numbers: Sequence[int], *, first: bool) -> dict[str, Any]:
    """The layer axis of a heatmap's rows: one tick per layer in series (``layers``), labelled with its
    number in its stack (``numbers``; the same for a model of one stack), titled and labelled on the
    ``first`` panel of a row only. ``where`` is "" or a stack's prefix, "decoder "."""
    return axis_title(
        f"{where}layer" if first else None,
        tickvals=list(layers),
        ticktext=[str(n) for n in numbers],
        range=[layers[0] - 0.5, layers[-1] + 0.5],
        showticklabels=first,
    )


def hover_numbers(values: ArrayLike | Sequence[float | None]) -> list[str]:
    """Values as every page writes them (:func:`specbound.present.numbers.format_number`: 4 significant digits,
    "1.499 × 10¹²", "—" for a gap), for a trace's ``customdata`` and its hovertemplate's ``%{customdata}``:
    Plotly's own number formats write large values as "1.499e+12"."""
    return [
        format_number(float(v)) if v is not None else format_number(None)
        for v in np.ravel(np.asarray(values, dtype=object))
    ]


def hover_grid(values: ArrayLike) -> list[list[str]]:
    """:func:`hover_numbers` of a 2-D array (a heatmap's z), row by row."""
    return [hover_numbers(row) for row in np.asarray(values, dtype=float)]


#: Size of the chart text Plotly draws by default (ticks, colour-bar labels), in pixels.
CELL_TEXT_PX: int = 12
#: Height a figure keeps below its plot area (x ticks and title, a legend), in pixels.
BELOW_PLOT_PX: int = 90


def colorbar_gap(height: float, top: float, font_px: float, below: float = BELOW_PLOT_PX) -> float:
    """The least distance between two colour-bar labels, as a fraction of the bar, for labels of
    ``font_px`` on a bar as tall as the plot area of a figure ``height`` high with ``top`` margin and
    ``below`` pixels under its plot."""
    bar = max(height - top - below, 60.0)
    return min(0.5, 1.4 * font_px / bar)


def spaced_ticks(values: ArrayLike, gap: float) -> np.ndarray:
    """The sorted ``values`` less those within ``gap`` of a kept neighbour, both ends always kept (the
    labels of the p* values taken: 0, 0.0833 and 0.25 would be written over each other)."""
    ordered = np.sort(np.asarray(values, dtype=float))
    if ordered.size <= 2:
        return ordered
    kept = [ordered[0]]
    for value in ordered[1:-1]:
        if value - kept[-1] >= gap and ordered[-1] - value >= gap:
            kept.append(value)
    return np.array([*kept, ordered[-1]])


def palette_color(n: int) -> str:
    """The n-th colour of :data:`PALETTE`, cycling."""
    return PALETTE[n % len(PALETTE)]


def sequential_colors(count: int) -> list[str]:
    """``count`` colours along :data:`SEQUENTIAL`, dark to light (stops short of the palest end)."""
    result: list[str] = sample_colorscale(SEQUENTIAL, np.linspace(0.0, 0.9, max(count, 1)).tolist())
    return result


def transparent(color: str, opacity: float) -> str:
    """'rgb(r, g, b)' or '#rrggbb' -> 'rgba(r, g, b, opacity)'."""
    if color.startswith("#"):
        r, g, b = (int(color[k : k + 2], 16) for k in (1, 3, 5))
    else:
        r, g, b = (int(float(c)) for c in color[color.index("(") + 1 : -1].split(","))
    return f"rgba({r}, {g}, {b}, {opacity})"


def as_text(value: object) -> str:
    """``value`` for a Plotly text field, shown as typed: Plotly reads a small HTML subset (``<a href>``,
    ``<b>``, ``<br>``…) in titles, legends and hover labels, so a model name made of markup is escaped."""
    return html.escape(str(value), quote=False)


#: The look of every axis, under each figure's own axis settings.
AXIS_STYLE: Mapping[str, object] = {
    "automargin": True,
    "gridcolor": GRID_COLOR,
    "zeroline": False,
    "linecolor": GRID_COLOR,
}
#: Layout keys that name an axis: xaxis, yaxis, xaxis2, ...
_AXIS_KEY = re.compile(r"[xy]axis\d*")


def base_layout(
    title: str,
    *,
    source: str | None = None,
    height: int | None = None,
    legend_title: str | None = None,
    panel_titles: bool = False,
) -> dict[str, object]:
    """The shared layout: short left-aligned title, ``source`` (model and p) as subtitle, legend below.

    The subtitle travels with exported PNGs, so a picture always says which model and p it shows.
    The horizontal legend under the plot wraps on narrow screens instead of taking half the width.
    ``panel_titles`` leaves :data:`PANEL_TITLE_ROOM` more at the top, so the subtitle stays off them.
    """
    layout: dict[str, object] = {
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "title": {
            "text": title,
            "x": 0.0,
            "xanchor": "left",
            "xref": "container",
            "pad": {"l": 12},
            "subtitle": {"text": as_text(source or "")},
        },
        "margin": {
            "t": (TOP_MARGIN_SUBTITLE if source else TOP_MARGIN) + (PANEL_TITLE_ROOM if panel_titles else 0),
            "l": 8,
            "r": 8,
            "b": 8,
        },
        "legend": {
            "orientation": "h",
            "yref": "container",
            "y": 0.0,
            "yanchor": "bottom",
            "x": 0.0,
            "xanchor": "left",
            "title": {"text": legend_title or "", "side": "top"},
        },
    }
    if height is not None:
        layout["height"] = height
    return layout


def figure(
    data: Iterable[Any],
    title: str,
    *,
    source: str | None = None,
    height: int | None = None,
    legend_title: str | None = None,
    layout: Mapping[str, Any] | None = None,
) -> go.Figure:
    """A figure with the shared look (:func:`base_layout`), built in one constructor call.

    ``data`` are traces (plain dicts or graph objects); ``layout`` holds the figure's own settings
    (axes, bar mode, annotations, a :func:`panel_grid`), which win over the shared ones; every axis
    gets :data:`AXIS_STYLE` beneath its own keys, and ``automargin`` keeps tick and axis labels inside.
    Titles above the top panels (a :func:`panel_grid` with titles) get room under the subtitle by
    themselves (``panel_titles`` of :func:`base_layout`).
    One call matters for speed: plotly validates each property once at construction, while every later
    ``update_layout``, ``update_xaxes`` or ``add_trace`` re-parses property paths at a few milliseconds
    each, ten times the cost of the whole figure, and the p-dependent figures are redrawn on every
    slider move.
    """
    shared = base_layout(
        title, source=source, height=height, legend_title=legend_title, panel_titles=has_top_panel_titles(layout or {})
    )
    merged: dict[str, Any] = {**shared}
    merged.update(layout or {})
    for name in {"xaxis", "yaxis", *(key for key in merged if _AXIS_KEY.fullmatch(key))}:
        merged[name] = {**AXIS_STYLE, **merged.get(name, {})}
    return go.Figure(data=list(data), layout=merged)


def has_top_panel_titles(layout: Mapping[str, Any]) -> bool:
    """Whether a panel title sits on top of the plot area (where make_subplots puts the top row's:
    at y = 1 of the paper, anchored by its bottom), where the subtitle would run into it."""
    return any(
        note.get("yref", "paper") == "paper" and note.get("yanchor") == "bottom" and note.get("y", 0) >= 1
        for note in layout.get("annotations", ())
    )


def axis_title(text: str | None, **axis: Any) -> dict[str, Any]:
    """An axis dict with a title: ``axis_title("layer", dtick=1)``."""
    return {"title": {"text": text}, **axis} if text is not None else dict(axis)


def panel_ref(panel: int) -> tuple[str, str]:
    """The layout keys of panel ``panel`` (1-based, row by row) of a :func:`panel_grid`: ('xaxis2', 'yaxis2')."""
    suffix = "" if panel == 1 else str(panel)
    return f"xaxis{suffix}", f"yaxis{suffix}"


def on_panel(trace: Mapping[str, Any], panel: int) -> dict[str, Any]:
    """``trace`` (a plain dict) drawn on panel ``panel`` of a :func:`panel_grid`."""
    suffix = "" if panel == 1 else str(panel)
    return {**trace, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}


@functools.cache
def _panel_grid_json(
    rows: int,
    cols: int,
    titles: tuple[str, ...] | None,
    column_widths: tuple[float, ...] | None,
    horizontal_spacing: float | None,
    vertical_spacing: float | None,
    shared_yaxes: bool,
) -> str:
    grid = make_subplots(
        rows=rows,
        cols=cols,
        shared_yaxes=shared_yaxes,
        subplot_titles=titles,
        column_widths=list(column_widths) if column_widths else None,
        horizontal_spacing=horizontal_spacing,
        vertical_spacing=vertical_spacing,
    )
    layout = grid.layout.to_plotly_json()
    layout.pop("template", None)
    return json.dumps(layout)


def panel_grid(
    rows: int,
    cols: int,
    *,
    titles: Sequence[str] | None = None,
    title_size: int | None = None,
    column_widths: Sequence[float] | None = None,
    horizontal_spacing: float | None = None,
    vertical_spacing: float | None = None,
    shared_yaxes: bool = False,
) -> dict[str, Any]:
    """The layout of a ``rows`` x ``cols`` grid of panels as plain data, for :func:`figure`'s ``layout``.

    Axes carry their domains and anchors, panel titles are annotations; panels are numbered row by
    row from 1 (see :func:`panel_ref`, :func:`on_panel`); ``shared_yaxes`` ties the y axes of each row.
    Plotly's ``make_subplots`` does the
    arithmetic once per shape (it costs about 12 ms); each call returns a fresh copy to fill in.
    """
    layout = json.loads(
        _panel_grid_json(
            rows,
            cols,
            tuple(titles) if titles else None,
            tuple(column_widths) if column_widths else None,
            horizontal_spacing,
            vertical_spacing,
            shared_yaxes,
        )
    )
    if title_size is not None:
        for note in layout.get("annotations", []):
            note.setdefault("font", {})["size"] = title_size
    return dict(layout)


# --- log-axis ticks ----------------------------------------------------------------------------

#: Plain decimals are written out between these values; outside them, as m×10^k.
PLAIN_RANGE: tuple[float, float] = (1e-3, 1e5)
#: At most about this many ticks on a log axis.
MAX_TICKS: int = 8
#: Spacings, in decades, between the ticks of a long log axis.
DECADE_STEPS: tuple[int, ...] = (1, 2, 3, 5, 10, 20, 25, 50, 100)


def format_tick(value: float) -> str:
    """A full tick label: '0.5', '20', '10<sup>12</sup>', '2×10<sup>-4</sup>' (never a bare mantissa)."""
    if value == 0 or PLAIN_RANGE[0] <= abs(value) < PLAIN_RANGE[1]:
        return f"{value:.6g}"
    return _power_tick(value)


def _nice_step(span: float) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about four intervals over ``span``."""
    raw = span / 4.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)


def log_axis_ticks(vmin: float, vmax: float) -> tuple[list[float], list[str]]:
    """Tick values and full labels for a log axis showing [vmin, vmax] (both > 0).

    Less than a decade: evenly spaced 1-2-5 steps inside the range (a log axis with ``dtick=1`` would
    show no tick at all). One to two decades: 1, 2 and 5 times each power of ten. More: every k-th
    power of ten (k from :data:`DECADE_STEPS`), so at most :data:`MAX_TICKS` ticks remain.
    """
    if not (vmin > 0 and vmax > 0 and math.isfinite(vmin) and math.isfinite(vmax)):
        raise ValueError(f"a log axis needs a positive finite range, got [{vmin}, {vmax}]")
    vmin, vmax = min(vmin, vmax), max(vmin, vmax)
    lo, hi = math.log10(vmin), math.log10(vmax)
    if hi - lo < 1.0:
        if vmax == vmin:
            return [vmin], [format_tick(vmin)]
        step = _nice_step(vmax - vmin)
        first = math.ceil(vmin / step - 1e-9)
        values = [float(f"{k * step:.12g}") for k in range(first, math.floor(vmax / step + 1e-9) + 1)]
    elif hi - lo <= 2.0:
        values = [m * 10.0**e for e in range(math.floor(lo), math.ceil(hi) + 1) for m in (1, 2, 5)]
        values = [float(f"{v:.12g}") for v in values if vmin * (1 - 1e-9) <= v <= vmax * (1 + 1e-9)]
    else:
        first, last = math.ceil(lo - 1e-9), math.floor(hi + 1e-9)
        needed = (last - first + 1) / MAX_TICKS
        every = next((k for k in DECADE_STEPS if k >= needed), math.ceil(needed))
        values = [10.0**e for e in range(math.ceil(first / every) * every, last + 1, every)]
    return values, axis_tick_labels(values)


#: On an axis whose other labels are powers of ten, values from this size up (and from its inverse
#: down) are written as powers too.
POWER_FROM: float = 1000.0


def axis_tick_labels(values: Sequence[float]) -> list[str]:
    """:func:`format_tick` of each value, in one notation per axis: where some label is a power of ten,
    every value of at least :data:`POWER_FROM`, or at most its inverse, is written as one ("5×10⁴" beside
    "10⁶", never "50000"; "10⁻³" beside "10⁻⁴"), values near 1 ("20", "0.5") staying as they read best."""
    labels = [format_tick(v) for v in values]
    if not any("<sup>" in label for label in labels):
        return labels
    far = [v != 0 and not 1 / POWER_FROM < abs(v) < POWER_FROM for v in values]
    return [_power_tick(v) if out else label for v, out, label in zip(values, far, labels, strict=True)]


def _power_tick(value: float) -> str:
    exponent = math.floor(math.log10(abs(value)))
    mantissa = round(value / 10.0**exponent, 6)
    if mantissa >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    power = f"10<sup>{exponent}</sup>"
    return power if mantissa == 1 else f"{mantissa:g}×{power}"


def log_axis(values: ArrayLike, **axis: Any) -> dict[str, Any]:
    """A logarithmic axis dict with :func:`log_axis_ticks` over the positive finite ``values`` (plus ``axis``)."""
    data = np.asarray(values, dtype=float)
    data = data[np.isfinite(data) & (data > 0)]
    if not data.size:
        return {"type": "log", **axis}
    tickvals, ticktext = log_axis_ticks(float(data.min()), float(data.max()))
    return {"type": "log", "tickmode": "array", "tickvals": tickvals, "ticktext": ticktext, **axis}


# --- large type for a projector ---------------------------------------------------------------------

#: Chart text on a projector: at least this many pixels, in a dark colour (the dashboard's presentation mode).
PROJECTOR_FONT_PX: int = 18
PROJECTOR_TITLE_PX: int = 22
PROJECTOR_TEXT_COLOR: str = "#1F2328"
#: Characters per line of a title, a subtitle and a panel title in large type: what fits a chart in half
#: of a 1024-pixel-wide window (a two-column row) and a panel of three side by side.
PROJECTOR_TITLE_CHARS, PROJECTOR_SUBTITLE_CHARS, PROJECTOR_PANEL_CHARS = 34, 44, 20


def _hyphen_pieces(word: str, chars: int) -> list[str]:
    """A word longer than ``chars`` cut after its hyphens into pieces of at most ``chars`` where it can be
    (a model name: 'lab-L2-N32-H2-' / 'n1600-q0-s0-t500'); a word without hyphens stays whole."""
    if len(word) <= chars or "-" not in word:
        return [word]
    pieces: list[str] = []
    for part in re.findall(r"[^-]*-|[^-]+$", word):
        if pieces and len(pieces[-1]) + len(part) <= chars:
            pieces[-1] += part
        else:
            pieces.append(part)
    return pieces


def wrap_words(text: str, chars: int) -> str:
    """``text`` broken into lines of at most ``chars`` characters at spaces (Plotly's ``<br>``); a word
    longer than a line is cut after a hyphen, or else stays whole on its own line."""
    lines: list[str] = []
    for word in text.split(" "):
        pieces = _hyphen_pieces(word, chars)
        for n, piece in enumerate(pieces):
            if n == 0 and lines and len(lines[-1]) + 1 + len(piece) <= chars:
                lines[-1] += " " + piece
            else:
                lines.append(piece)
    return "<br>".join(lines)


#: Characters per line of a title and a subtitle in a chart of half the width of a 1024-pixel window with
#: the sidebar open (a two-column row), in the normal type.
HALF_TITLE_CHARS, HALF_SUBTITLE_CHARS = 30, 40


def fit_share(fig: go.Figure, share: float) -> go.Figure:
    """``fig`` with its title and subtitle wrapped for a chart of ``share`` of the page's width (normal type)."""
    if share >= 1.0:
        return fig
    return fit_title(fig, max(12, round(2 * HALF_TITLE_CHARS * share)), max(14, round(2 * HALF_SUBTITLE_CHARS * share)))


def fit_title(fig: go.Figure, title_chars: int, subtitle_chars: int) -> go.Figure:
    """``fig`` with its title and subtitle wrapped to these widths and room at the top for the extra lines."""
    title = str(fig.layout.title.text or "")
    subtitle = str(fig.layout.title.subtitle.text or "")
    wrapped, wrapped_sub = wrap_words(title, title_chars), wrap_words(subtitle, subtitle_chars)
    extra = 22 * wrapped.count("<br>") + 16 * wrapped_sub.count("<br>")
    if extra:
        fig.update_layout(
            title={"text": wrapped, "subtitle": {"text": wrapped_sub}},
            margin={"t": (fig.layout.margin.t or TOP_MARGIN) + extra},
        )
    return fig


def for_projector(fig: go.Figure, share: float = 0.5) -> go.Figure:
    """``fig`` in large dark type that fits its panel: every chart text at :data:`PROJECTOR_FONT_PX` or more,
    titles wrapped to the widths above, the top margin grown to hold the extra lines. One layout update
    (presentation mode only: the slider path of the normal mode stays as it is).

    ``share``: the part of the page's width the chart has; below half (a column of three), titles wrap
    to proportionally shorter lines."""
    layout = fig.layout
    narrow = min(1.0, share / 0.5)
    title = wrap_words(str(layout.title.text or ""), max(12, round(PROJECTOR_TITLE_CHARS * narrow)))
    subtitle = wrap_words(str(layout.title.subtitle.text or ""), max(14, round(PROJECTOR_SUBTITLE_CHARS * narrow)))
    dark = {"size": PROJECTOR_FONT_PX, "color": PROJECTOR_TEXT_COLOR}
    notes = []
    panel_lines = 0
    for note in layout.annotations or ():
        text = str(note.text or "")
        on_top = note.yref in (None, "paper") and note.yanchor == "bottom" and (note.y or 0) >= 1
        if on_top:
            text = wrap_words(text, PROJECTOR_PANEL_CHARS)
            panel_lines = max(panel_lines, text.count("<br>") + 1)
        notes.append({**note.to_plotly_json(), "text": text, "font": dark})
    top = 24 + 30 * (title.count("<br>") + 1) + (30 * (subtitle.count("<br>") + 1) + 8 if subtitle else 0)
    top += 18 if "<br>" in title else 0  # the lower start of a title of several lines (its pad, below)
    top += 24 * panel_lines
    height = float(layout.height or 450)
    update: dict[str, Any] = {
        "font": dark,
        "title": {
            "text": title,
            "font": {"size": PROJECTOR_TITLE_PX, "color": PROJECTOR_TEXT_COLOR},
            "subtitle": {"text": subtitle, "font": dark},
            # hung from the top, so its lines run down into the margin made for them, not into the plot
            "y": 1.0,
            "yref": "container",
            "yanchor": "top",
            # Plotly sets a title of several lines about 15 px higher than one of a single line
            "pad": {"t": 12 + (18 if "<br>" in title else 0), "l": 12},
        },
        "legend": {"font": dark, "title": {"font": dark}},
        "margin": {"t": top},
        # the plot keeps its height: the larger titles take more room above it, not from it
        "height": round(height + max(0, top - (layout.margin.t or TOP_MARGIN))),
        "annotations": notes,
        "hoverlabel": {"font": {"size": PROJECTOR_FONT_PX}},
    }
    for name in layout:
        if _AXIS_KEY.fullmatch(name) and layout[name] is not None:
            update[name] = {"tickfont": dark, "title": {"font": dark}}
    for trace in fig.data:
        if "colorbar" in trace:
            trace.colorbar.tickfont = dark
            # the chart's title names what the colours mean; in large type the bar's own title would
            # sit on its top label
            trace.colorbar.title.text = None
            ticks = trace.colorbar.tickvals
            if ticks is not None and len(ticks) > 2 and trace.colorbar.ticktext is not None:
                labels = dict(zip(ticks, trace.colorbar.ticktext, strict=True))
                span = float(trace.zmax - trace.zmin) if trace.zmax is not None and trace.zmin is not None else 1.0
                below = 2 * BELOW_PLOT_PX  # x ticks and title in large type, turned labels of a narrow panel
                bar = colorbar_gap(height, layout.margin.t or TOP_MARGIN, PROJECTOR_FONT_PX, below)
                bar /= trace.colorbar.len or 1
                kept = spaced_ticks(list(ticks), bar * span)
                trace.colorbar.tickvals, trace.colorbar.ticktext = list(kept), [labels[v] for v in kept]
        if trace.type == "heatmap":
            trace.texttemplate = None  # cell numbers in large type would overlap: the hover has them
        elif "textfont" in trace:
            trace.textfont.size = max(PROJECTOR_FONT_PX, trace.textfont.size or 0)
            trace.textfont.color = PROJECTOR_TEXT_COLOR
        if trace.type == "bar" and trace.text is not None:
            trace.textposition = "outside"  # dark on white, not white on a coloured bar
            trace.cliponaxis = False
    fig.update_layout(update)
    return fig


# --- panels as figures of their own ----------------------------------------------------------------

#: Layout keys an axis of a grid carries that a figure of one panel must not keep.
_GRID_AXIS_KEYS: tuple[str, ...] = ("domain", "anchor", "matches", "scaleanchor", "position", "overlaying")
#: Room a stand-alone panel keeps at the bottom for its axis title and a legend, in pixels.
PANEL_FIGURE_MIN_HEIGHT: int = 300
#: Height below the plot area of a part: its x axis title and its legend, in pixels.
PANEL_FIGURE_BOTTOM: int = 100


def _panel_of(trace: Mapping[str, Any]) -> int:
    axis = str(trace.get("xaxis") or "x")
    return int(axis[1:] or 1)


def _panel_title(notes: Sequence[dict[str, Any]], layout: Mapping[str, Any], panel: int) -> dict[str, Any] | None:
    """The title annotation make_subplots puts above ``panel``: centred on its x domain, at the top of its y domain."""
    x_key, y_key = panel_ref(panel)
    x_domain = layout.get(x_key, {}).get("domain", [0, 1])
    y_top = layout.get(y_key, {}).get("domain", [0, 1])[1]
    return next(
        (
            n
            for n in notes
            if n.get("xref", "paper") == "paper"
            and n.get("yref", "paper") == "paper"
            and n.get("yanchor") == "bottom"
            and abs(float(n.get("x", -1)) - (x_domain[0] + x_domain[1]) / 2) < 1e-6
            and abs(float(n.get("y", -1)) - y_top) < 1e-6
        ),
        None,
    )


def decoded(value: Any) -> Any:
    """A figure's JSON (``fig.to_plotly_json()``) with Plotly's base64 typed arrays (``{"dtype", "bdata"}``)
    back as numpy arrays, exact, so code that reads it sees values, not their encoding."""
    if isinstance(value, dict):
        if set(value) >= {"dtype", "bdata"}:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            if "shape" in value:
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return array.copy()
        return {key: decoded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [decoded(item) for item in value]
    return value


def split_panels(
    fig: go.Figure,
    *,
    titles: Sequence[str] | None = None,
    subtitles: Sequence[str] | None = None,
    height: int | None = None,
) -> list[go.Figure]:
    """Each panel of a :func:`panel_grid` figure as a figure of its own, in panel order.

    On a narrow screen side-by-side panels run their titles together and their colour bars into the
    next panel; drawn as separate figures in ``st.columns``, they stack instead (Streamlit stacks
    columns under about 640 px) and stay side by side on a wide screen. Each part keeps the whole
    figure's look and source line; its title is the figure's title and the panel's; its legend lists
    the entries of the traces it draws (a stand-in without points for an entry shown on another
    panel), so a part saved as a picture still explains itself. ``titles`` replaces the parts' titles
    (short ones for narrow columns) and ``subtitles`` their subtitles; ``height`` is the whole grid's.
    A figure of one panel comes back as is.
    """
    whole = decoded(fig.to_plotly_json())
    layout: dict[str, Any] = whole["layout"]
    traces: list[dict[str, Any]] = whole["data"]
    panels = sorted({_panel_of(t) for t in traces} | {1})
    if len(panels) == 1:
        return [fig]
    notes = list(layout.get("annotations", ()))
    title_notes = [_panel_title(notes, layout, number) for number in panels]
    rows = len({round(float(layout.get(panel_ref(n)[1], {}).get("domain", [0, 1])[1]), 3) for n in panels})
    title = str(layout.get("title", {}).get("text") or "")
    total = height or int(layout.get("height") or 450)
    margin = dict(layout.get("margin", {}))
    legend_traces = [t for t in traces if t.get("showlegend", True) is not False and t.get("name")]
    parts = []
    for number in panels:
        x_key, y_key = panel_ref(number)
        suffix = "" if number == 1 else str(number)
        own = [t for t in traces if _panel_of(t) == number]
        drawn = [{**t, "xaxis": "x", "yaxis": "y"} for t in own]
        groups = {t.get("legendgroup") or t.get("name") for t in own}
        shown = {t.get("legendgroup") or t.get("name") for t in own if t.get("showlegend", True) is not False}
        for entry in legend_traces:  # an entry drawn on another panel, for the traces of this one
            group = entry.get("legendgroup") or entry.get("name")
            if group in groups and group not in shown:
                shown.add(group)
                stand_in: dict[str, Any] = {
                    k: entry[k] for k in ("type", "name", "legendgroup", "line", "marker", "mode") if k in entry
                }
                drawn.append({**stand_in, "x": [None], "y": [None], "xaxis": "x", "yaxis": "y", "hoverinfo": "skip"})
        for trace in drawn:
            if isinstance(trace.get("colorbar"), dict):
                trace["colorbar"] = {k: v for k, v in trace["colorbar"].items() if k != "x"}
        note = title_notes[panels.index(number)]
        panel_title = str(note.get("text", "")) if note else ""
        own_layout: dict[str, Any] = {
            k: v for k, v in layout.items() if not _AXIS_KEY.fullmatch(k) and k not in ("annotations", "height")
        }
        own_layout["xaxis"] = {k: v for k, v in layout.get(x_key, {}).items() if k not in _GRID_AXIS_KEYS}
        own_layout["yaxis"] = {k: v for k, v in layout.get(y_key, {}).items() if k not in _GRID_AXIS_KEYS}
        own_layout["yaxis"]["showticklabels"] = True  # a panel alone needs its own ticks and axis title
        if not (own_layout["yaxis"].get("title") or {}).get("text"):
            own_layout["yaxis"]["title"] = layout.get("yaxis", {}).get("title", {})
        own_layout["annotations"] = [
            {**n, "xref": "x", "yref": "y"}
            for n in notes
            if n not in title_notes and n.get("xref") == f"x{suffix}" and n.get("yref") == f"y{suffix}"
        ]
        text = titles[number - 1] if titles else f"{title}: {panel_title}" if panel_title else title
        own_layout["title"] = {**layout.get("title", {}), "text": text}
        if subtitles:
            own_layout["title"]["subtitle"] = {**own_layout["title"].get("subtitle", {}), "text": subtitles[number - 1]}
        own_layout["margin"] = {**margin, "t": max(int(margin.get("t", TOP_MARGIN)) - PANEL_TITLE_ROOM, TOP_MARGIN)}
        if subtitles:
            own_layout["margin"]["t"] = max(own_layout["margin"]["t"], TOP_MARGIN_SUBTITLE)
        fixed = int(margin.get("t", TOP_MARGIN)) + PANEL_FIGURE_BOTTOM  # what every part repeats
        own_layout["height"] = max(PANEL_FIGURE_MIN_HEIGHT, round((total - fixed) / rows) + fixed)
        if not own_layout["annotations"]:
            del own_layout["annotations"]  # as a validated figure drops an empty list
        # every value came out of a validated figure: validating it again was most of a split's time
        parts.append(go.Figure(data=drawn, layout=own_layout, _validate=False))
    return parts
