"""Figures of the bound terms: sums by layer and kind, depth factors, c(W; p) curves, proxy totals.

Builders take a :class:`~specbound.bounds.BoundAnalysis` and, where p matters, the
:class:`~specbound.bounds.BoundTerms` of the current assignment; they return ``go.Figure`` objects.
Values that overflow float64 are drawn as gaps (None); the logarithmic charts use log10 values,
which always exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from ..bounds import BoundAnalysis, BoundTerms, fine_p_axis
from ..matrices import Kind
from ..logspace import to_log10

#: One colour per matrix kind, shared by every bound figure.
KIND_COLORS: Mapping[Kind, str] = {
    Kind.QK: "#4c78a8", Kind.V: "#f58518", Kind.M_IN: "#54a24b", Kind.M_OUT: "#b279a2",
}
SQRT_DEPTH_COLOR = "#9d9d9d"
SQRT_DEPTH_LABEL = "√L"


def _finite_or_gap(values: np.ndarray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=float)]


def kind_layer_sums(terms: BoundTerms, num_layers: int) -> dict[Kind, np.ndarray]:
    """Σ c(W; p) over the matrices of each kind in each layer: kind -> (L,)."""
    return {
        kind: np.bincount(terms.layers, weights=np.where(terms.kinds == kind.value, terms.contribution, 0.0),
                          minlength=num_layers)
        for kind in Kind
    }


def term_sums(analysis: BoundAnalysis, terms: BoundTerms) -> go.Figure:
    """Stacked bars: per layer the sum of c(W; p) split by kind, then a bar for √L.

    The heights of all bars add up to the total Σ_W c(W; p) + √L.
    """
    num_layers = analysis.profile.shape.num_layers
    categories = [f"layer {layer}" for layer in range(num_layers)] + [SQRT_DEPTH_LABEL]
    fig = go.Figure()
    for kind, sums in kind_layer_sums(terms, num_layers).items():
        fig.add_trace(go.Bar(x=categories[:-1], y=_finite_or_gap(sums), name=kind.value,
                             marker_color=KIND_COLORS[kind],
                             hovertemplate=f"%{{x}}<br>Σ c({kind.value}) = %{{y:.4g}}<extra></extra>"))
    fig.add_trace(go.Bar(x=[SQRT_DEPTH_LABEL], y=[terms.sqrt_depth], name=SQRT_DEPTH_LABEL,
                         marker_color=SQRT_DEPTH_COLOR, hovertemplate="√L = %{y:.4g}<extra></extra>"))
    fig.update_layout(barmode="stack", title="Σ c(W; p) by layer and kind, plus √L",
                      xaxis={"categoryorder": "array", "categoryarray": categories},
                      yaxis_title="contribution", legend_title_text="kind", height=380)
    return fig


def depth_factors(analysis: BoundAnalysis) -> go.Figure:
    """log10 α⁽ℓ⁾ (product of the layer factors above ℓ) and log10 ξ⁽ℓ⁾ (Edelman's layer sum)."""
    layers = np.arange(analysis.profile.shape.num_layers)
    fig = go.Figure([
        go.Bar(x=layers, y=to_log10(analysis.log_alpha), name="log10 α<sup>(ℓ)</sup>",
               hovertemplate="layer %{x}<br>log10 α = %{y:.4g}<extra></extra>"),
        go.Bar(x=layers, y=to_log10(analysis.log_xi), name="log10 ξ<sup>(ℓ)</sup> (Edelman)",
               hovertemplate="layer %{x}<br>log10 ξ = %{y:.4g}<extra></extra>"),
    ])
    fig.update_layout(barmode="group", title="Depth factors per layer (log10)", xaxis_title="layer",
                      xaxis_dtick=1, yaxis_title="log10", height=340)
    return fig


def contribution_curves(analysis: BoundAnalysis, rows: Sequence[int], terms: BoundTerms,
                        ps: np.ndarray | None = None) -> go.Figure:
    """c(W; p) against p for the chosen matrices (log y), with the grid P_m, p* and the current p.

    Lines: c on a fine p axis; dots: c on the grid P_m; star: p* (the grid minimum); diamond: the
    p the matrix uses now.
    """
    rows = np.asarray(rows, dtype=int)
    ps = fine_p_axis() if ps is None else np.asarray(ps, dtype=float)
    grid = analysis.grid
    curves = to_log10(analysis.contribution_curves(ps, rows))  # (rows, len(ps))
    on_grid = to_log10(analysis.log_contribution_grid[rows])  # (rows, 2m + 1)
    at_p = to_log10(terms.log_contribution[rows])  # (rows,)
    palette = qualitative.Plotly
    fig = go.Figure()
    for n, i in enumerate(rows):
        label = analysis.profile.ids[i].label
        color = palette[n % len(palette)]
        best = int(analysis.p_opt_index[i])
        fig.add_trace(go.Scatter(x=ps, y=_finite_or_gap(10.0 ** curves[n]), mode="lines", name=label,
                                 legendgroup=label, line={"color": color},
                                 hovertemplate=f"{label}<br>p = %{{x:.3f}}<br>c = %{{y:.4g}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=grid, y=_finite_or_gap(10.0 ** on_grid[n]), mode="markers",
                                 name=f"{label} on P_m", legendgroup=label, showlegend=False,
                                 marker={"color": color, "size": 4}, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=[grid[best]], y=_finite_or_gap([10.0 ** on_grid[n, best]]), mode="markers",
                                 name=f"{label} p*", legendgroup=label, showlegend=False,
                                 marker={"color": color, "size": 14, "symbol": "star",
                                         "line": {"color": "black", "width": 1}},
                                 hovertemplate=f"{label}<br>p* = %{{x:.4g}}<br>c = %{{y:.4g}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[float(terms.p[i])], y=_finite_or_gap([10.0 ** at_p[n]]), mode="markers",
                                 name=f"{label} current p", legendgroup=label, showlegend=False,
                                 marker={"color": "white", "size": 11, "symbol": "diamond",
                                         "line": {"color": color, "width": 2}},
                                 hovertemplate=f"{label}<br>current p = %{{x:.4g}}<br>c = %{{y:.4g}}<extra></extra>"))
    fig.update_layout(title="c(W; p) against p  (★ p*, ◇ current p, dots: grid P_m)",
                      xaxis_title="Schatten index p", yaxis_type="log", yaxis_title="c(W; p)", height=420)
    return fig


def proxy_comparison(log_values: Mapping[str, float]) -> go.Figure:
    """Horizontal bars of log10 of each named proxy (natural logs in), e.g. ours at p, at p*, Edelman."""
    names = list(log_values)
    values = to_log10(np.array([log_values[n] for n in names], dtype=float))
    fig = go.Figure(go.Bar(x=values, y=names, orientation="h", text=[f"10^{v:.2f}" for v in values],
                           textposition="auto", marker_color=["#4c78a8", "#72b7b2", "#e45756"][:len(names)],
                           hovertemplate="%{y}<br>log10 = %{x:.4g}<extra></extra>"))
    fig.update_layout(title="Proxies side by side (log10)", xaxis_title="log10 of the proxy",
                      yaxis={"autorange": "reversed"}, height=260)
    return fig
