"""The look shared by every specbound figure: one colour-blind-safe palette, one layout helper, log ticks.

Palette: Okabe & Ito (2008), "Color Universal Design", eight colours told apart under the common
colour-vision deficiencies. Sequential data (p* values, ranks, layers) use Cividis, designed for the
same purpose. Nothing here touches plotly's global templates: :func:`apply_layout` styles one figure.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.colors import sample_colorscale

from ..matrices import Kind

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
#: The order in which unrelated series (curves of several matrices, compared models) take colours.
PALETTE: tuple[str, ...] = tuple(
    OKABE_ITO[name]
    for name in ("blue", "orange", "bluish green", "vermillion", "reddish purple", "sky blue", "black", "yellow")
)
#: One colour per matrix kind, the same in every figure.
KIND_COLORS: Mapping[Kind, str] = {
    Kind.QK: OKABE_ITO["blue"],
    Kind.V: OKABE_ITO["orange"],
    Kind.M_IN: OKABE_ITO["bluish green"],
    Kind.M_OUT: OKABE_ITO["reddish purple"],
}
#: Neutral grey for fixed parts (the √L term, reference lines).
NEUTRAL: str = "#999999"
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


def palette_color(n: int) -> str:
    """The n-th colour of :data:`PALETTE`, cycling."""
    return PALETTE[n % len(PALETTE)]


def sequential_colors(count: int) -> list[str]:
    """``count`` colours along :data:`SEQUENTIAL`, dark to light (stops short of the palest end)."""
    return sample_colorscale(SEQUENTIAL, np.linspace(0.0, 0.9, max(count, 1)).tolist())


def as_text(value: object) -> str:
    """``value`` for a Plotly text field, shown as typed: Plotly reads a small HTML subset (``<a href>``,
    ``<b>``, ``<br>``…) in titles, legends and hover labels, so a model name made of markup is escaped."""
    return html.escape(str(value), quote=False)


def apply_layout(
    fig: go.Figure, title: str, *, source: str | None = None, height: int | None = None, legend_title: str | None = None
) -> go.Figure:
    """Shared layout: short left-aligned title, ``source`` (model and p) as subtitle, legend below.

    The subtitle travels with exported PNGs, so a picture always says which model and p it shows.
    The horizontal legend under the plot wraps on narrow screens instead of taking half the width;
    ``automargin`` keeps tick and axis labels inside the figure.
    """
    fig.update_layout(
        plot_bgcolor="white",
        paper_bgcolor="white",
        title={
            "text": title,
            "x": 0.0,
            "xanchor": "left",
            "xref": "container",
            "pad": {"l": 12},
            "subtitle": {"text": as_text(source or "")},
        },
        margin={"t": TOP_MARGIN_SUBTITLE if source else TOP_MARGIN, "l": 8, "r": 8, "b": 8},
        legend={
            "orientation": "h",
            "yref": "container",
            "y": 0.0,
            "yanchor": "bottom",
            "x": 0.0,
            "xanchor": "left",
            "title": {"text": legend_title or "", "side": "top"},
        },
    )
    if height is not None:
        fig.update_layout(height=height)
    axes = {"automargin": True, "gridcolor": GRID_COLOR, "zeroline": False, "linecolor": GRID_COLOR}
    fig.update_xaxes(**axes)
    fig.update_yaxes(**axes)
    return fig


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
    exponent = math.floor(math.log10(abs(value)))
    mantissa = round(value / 10.0**exponent, 6)
    if mantissa >= 10:  # rounding carried into the next decade
        mantissa, exponent = mantissa / 10, exponent + 1
    power = f"10<sup>{exponent}</sup>"
    return power if mantissa == 1 else f"{mantissa:g}×{power}"


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
    return values, [format_tick(v) for v in values]


def set_log_ticks(fig: go.Figure, axis: str, values: ArrayLike, **selector: int) -> None:
    """Make ``axis`` ('x' or 'y') logarithmic with :func:`log_axis_ticks` over the positive finite ``values``."""
    data = np.asarray(values, dtype=float)
    data = data[np.isfinite(data) & (data > 0)]
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    if not data.size:
        update(type="log", **selector)
        return
    tickvals, ticktext = log_axis_ticks(float(data.min()), float(data.max()))
    update(type="log", tickmode="array", tickvals=tickvals, ticktext=ticktext, **selector)
