"""Figures of a spectral profile: singular-value profiles, layer x head heatmaps, cumulative energy.

Every builder takes a :class:`~specbound.profile.SpectralProfile` (and a selection) and returns a
``go.Figure``; nothing is drawn or styled globally. Singular values at or below the numerical-rank
threshold are exact zeros of the analysis (SPEC §3): a log axis cannot show them, so they are left
out of the curves and counted in the subplot titles instead.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from ..matrices import Kind
from ..profile import SpectralProfile
from ..spectrum import cumulative_energy

#: Sequential colours from the bottom layer to the top one, so depth reads as a gradient.
LAYER_COLORSCALE = "Viridis"
#: The per-head quantities of :func:`head_heatmaps`: (title, colour scale).
HEATMAP_QUANTITIES: tuple[tuple[str, str], ...] = (
    ("numerical rank", "Blues"), ("stable rank", "Greens"), ("spectral norm σ₁", "Oranges"),
)


def selected_rows(profile: SpectralProfile, layers: Iterable[int] | None = None,
                  kinds: Iterable[Kind | str] | None = None) -> np.ndarray:
    """Indices (profile order) of the matrices in the chosen layers and kinds; None selects all."""
    keep = np.ones(profile.shape.num_matrices, dtype=bool)
    if layers is not None:
        keep &= np.isin(profile.layers, list(layers))
    if kinds is not None:
        keep &= np.isin(profile.kinds, [Kind(k).value for k in kinds])
    return np.flatnonzero(keep)


def layer_colors(num_layers: int) -> list[str]:
    """One colour per layer, bottom (dark) to top (light)."""
    return sample_colorscale(LAYER_COLORSCALE, np.linspace(0.0, 0.9, max(num_layers, 1)).tolist())


def _kinds_present(profile: SpectralProfile, rows: np.ndarray) -> list[Kind]:
    present = set(profile.kinds[rows])
    return [kind for kind in Kind if kind.value in present]


def _per_kind_lines(profile: SpectralProfile, rows: np.ndarray, title: str, y_title: str,
                    values_of, subplot_title) -> go.Figure:
    """One subplot per kind, one line per matrix coloured by layer, one legend entry per layer."""
    kinds = _kinds_present(profile, rows)
    titles = [subplot_title(kind, rows[profile.kinds[rows] == kind.value]) for kind in kinds]
    fig = make_subplots(rows=1, cols=max(len(kinds), 1), subplot_titles=titles or None,
                        horizontal_spacing=0.06)
    colors = layer_colors(profile.shape.num_layers)
    in_legend: set[int] = set()
    for col, kind in enumerate(kinds, start=1):
        for i in rows[profile.kinds[rows] == kind.value]:
            matrix = profile.ids[i]
            x, y = values_of(int(i))
            fig.add_trace(go.Scatter(
                x=x, y=y, mode="lines", name=matrix.label, legendgroup=f"layer {matrix.layer}",
                showlegend=False, line={"color": colors[matrix.layer], "width": 1.2},
                hovertemplate=f"{matrix.label}<br>i = %{{x}}<br>{y_title} = %{{y:.4g}}<extra></extra>",
            ), row=1, col=col)
            if matrix.layer not in in_legend:
                in_legend.add(matrix.layer)
                # a marker-free stand-in so the legend lists layers, not 100+ matrices
                fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"layer {matrix.layer}",
                                         legendgroup=f"layer {matrix.layer}", showlegend=True,
                                         line={"color": colors[matrix.layer]}, hoverinfo="skip"),
                              row=1, col=col)
        fig.update_xaxes(type="log", dtick=1, title_text="index i", row=1, col=col)  # ticks at 1, 10, 100
        fig.update_yaxes(type="log", dtick=1, exponentformat="power", row=1, col=col)
    fig.update_yaxes(title_text=y_title, row=1, col=1)
    fig.update_layout(title=title, legend={"title": {"text": "layer (0 = bottom)"}},
                      margin={"t": 80}, height=420)
    return fig


def singular_value_profiles(profile: SpectralProfile, layers: Iterable[int] | None = None,
                            kinds: Iterable[Kind | str] | None = None, *,
                            normalise: bool = False) -> go.Figure:
    """σ_i against i on log-log axes (or σ_i / σ₁ when ``normalise``), per kind and matrix.

    Only the rank(W) nonzero values of each matrix are drawn; the subplot title counts the zeros.
    """
    rows = selected_rows(profile, layers, kinds)
    ranks, dims = profile.rank, profile.full_dims

    def values_of(i: int) -> tuple[np.ndarray, np.ndarray]:
        r = int(ranks[i])
        sv = profile.singular_values[i, :r]  # (rank,) descending, all > threshold
        if normalise and r:
            sv = sv / sv[0]
        return np.arange(1, r + 1), sv

    def subplot_title(kind: Kind, kind_rows: np.ndarray) -> str:
        zeros = int((dims[kind_rows] - ranks[kind_rows]).sum())
        return f"{kind.value} · {zeros:,} zero σ not drawn" if zeros else kind.value

    what = "σᵢ / σ₁" if normalise else "σᵢ"
    return _per_kind_lines(profile, rows, f"Singular-value profiles ({what}, log-log)", what,
                           values_of, subplot_title)


def cumulative_energy_curves(profile: SpectralProfile, layers: Iterable[int] | None = None,
                             kinds: Iterable[Kind | str] | None = None) -> go.Figure:
    """Σ_{j ≤ i} σ_j² / ‖W‖_F² against i (log x): how few directions carry the Frobenius mass.

    Each curve stops at the numerical rank, where it has reached 1.
    """
    rows = selected_rows(profile, layers, kinds)
    ranks = profile.rank

    def values_of(i: int) -> tuple[np.ndarray, np.ndarray]:
        r = int(ranks[i])
        return np.arange(1, r + 1), cumulative_energy(profile.singular_values[i, :r])

    fig = _per_kind_lines(profile, rows, "Cumulative energy of the singular values", "energy fraction",
                          values_of, lambda kind, _: kind.value)
    fig.update_yaxes(type="linear", range=[0, 1.02])
    return fig


def head_quantities(profile: SpectralProfile, kind: Kind | str) -> dict[str, np.ndarray]:
    """Numerical rank, stable rank and spectral norm of every head of a per-head kind, each (L, H)."""
    kind = Kind(kind)
    if kind not in (Kind.QK, Kind.V):
        raise ValueError(f"{kind.value} has one matrix per layer, not one per head")
    mask = profile.mask(kind)
    per_head = (profile.shape.num_layers, profile.shape.num_heads)
    values = (profile.rank, profile.stable_rank, profile.spectral_norm)
    return {name: v[mask].reshape(per_head) for (name, _), v in zip(HEATMAP_QUANTITIES, values)}


def head_heatmaps(profile: SpectralProfile, kind: Kind | str) -> go.Figure:
    """Layer x head heatmaps of numerical rank, stable rank and spectral norm for QK or V."""
    kind = Kind(kind)
    quantities = head_quantities(profile, kind)
    fig = make_subplots(rows=1, cols=len(quantities), subplot_titles=list(quantities),
                        horizontal_spacing=0.09)
    heads = np.arange(profile.shape.num_heads)
    layers = np.arange(profile.shape.num_layers)
    for col, ((name, z), (_, scale)) in enumerate(zip(quantities.items(), HEATMAP_QUANTITIES), start=1):
        domain = fig.layout[f"xaxis{'' if col == 1 else col}"].domain
        fig.add_trace(go.Heatmap(
            z=z, x=heads, y=layers, name=name, colorscale=scale,
            colorbar={"x": domain[1] + 0.005, "thickness": 10, "len": 0.9},
            texttemplate="%{z:.3~g}", textfont={"size": 9},
            hovertemplate=f"layer %{{y}}, head %{{x}}<br>{name} = %{{z:.4g}}<extra></extra>",
        ), row=1, col=col)
        fig.update_xaxes(title_text="head", dtick=1, row=1, col=col)
        fig.update_yaxes(title_text="layer" if col == 1 else None, dtick=1, row=1, col=col)
    fig.update_layout(title=f"{kind.value} heads: layer × head", height=360 + 12 * len(layers))
    return fig

