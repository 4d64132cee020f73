"""Figures of a spectral profile: singular-value profiles, cumulative energy, layer x head heatmaps.

Every builder takes a :class:`~specbound.core.profile.SpectralProfile` (and a selection) and returns a
``go.Figure``; nothing is drawn or styled globally. Singular values at or below the numerical-rank
threshold are exact zeros of the analysis (SPEC §3): a log axis cannot show them, so they are left
out of the curves and counted in the subplot titles instead.

Curves are aggregated by default: per layer and per-head kind, the median over the heads with a band
from their minimum to their maximum (3 traces instead of H), so MiniLM's 156 matrices draw as 48
traces. ``heads=`` draws the chosen heads one by one instead. At index i the aggregate runs over the
heads whose rank reaches i.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go

from ...core.architecture import Expert, Kind, expert_label
from ...core.directions import Directions
from ...core.profile import HEAD_KINDS, SpectralProfile
from ...core.spectrum import cumulative_energy
from ...io.models import short_model_name
from ..explain import rank_and_maximum
from ..numbers import format_count, format_integer
from .style import (
    INK,
    KIND_COLORS,
    NEUTRAL,
    SEQUENTIAL,
    as_text,
    axis_title,
    cell_axis,
    cell_labels,
    figure,
    hover_grid,
    hover_numbers,
    layer_rows_axis,
    log_axis,
    on_panel,
    palette_color,
    panel_grid,
    panel_ref,
    sequential_colors,
    transparent,
)

if TYPE_CHECKING:
    from ...core.heavy_tail import PowerLawFit

#: The per-head quantities of :func:`head_heatmaps`, in panel order.
HEATMAP_QUANTITIES: tuple[str, ...] = ("numerical rank", "stable rank", "spectral norm σ₁")
#: Panels per row of the per-kind figures (2 x 2 for the four kinds: readable in a narrow column).
PANEL_COLUMNS: int = 2
#: Height of one row of panels, in pixels.
PANEL_HEIGHT: int = 260
#: Opacity of the min-max band around a median curve.
BAND_OPACITY: float = 0.2

#: Per-matrix curves: rows (profile order) -> (x, (rows, K) y) with NaN where a row has no value.
CurveValues = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def selected_rows(
    profile: SpectralProfile,
    layers: Iterable[int] | None = None,
    kinds: Iterable[Kind | str] | None = None,
    experts: Iterable[Expert] | None = None,
) -> np.ndarray:
    """Indices (profile order) of the matrices in the chosen layers, kinds and (for the MLP kinds of a
    mixture of experts) experts; None selects all."""
    return profile.rows_of(layers=layers, kinds=kinds, experts=experts)


def layer_colors(num_layers: int) -> list[str]:
    """One colour per layer, bottom (dark) to top (light)."""
    return sequential_colors(num_layers)


def _kinds_present(profile: SpectralProfile, rows: np.ndarray) -> list[Kind]:
    present = set(profile.kinds[rows])
    return [kind for kind in Kind if kind.value in present]


def _median_band(x: np.ndarray, y: np.ndarray, name: str, color: str, group: str, y_title: str) -> list[dict[str, Any]]:
    """Median over rows of y (NaN ignored) with a min-max band: lower edge, upper edge (filled), median.

    Traces are plain dicts: plotly validates them once, when they join the figure.
    """
    counted = np.isfinite(y).any(axis=0)  # (K,) an index some head reaches
    x, y = x[counted], y[:, counted]
    low, high, mid = np.nanmin(y, axis=0), np.nanmax(y, axis=0), np.nanmedian(y, axis=0)
    edge = {
        "type": "scatter",
        "x": x,
        "mode": "lines",
        "line": {"width": 0, "color": color},
        "legendgroup": group,
        "showlegend": False,
        "hoverinfo": "skip",
    }
    return [
        {**edge, "y": low, "name": f"{name} min"},
        {**edge, "y": high, "name": f"{name} max", "fill": "tonexty", "fillcolor": transparent(color, BAND_OPACITY)},
        {
            "type": "scatter",
            "x": x,
            "y": mid,
            "mode": "lines",
            "name": name,
            "legendgroup": group,
            "showlegend": False,
            "line": {"color": color, "width": 1.6},
            "customdata": hover_numbers(mid),
            "hovertemplate": f"{name}<br>i = %{{x}}<br>{y_title} = %{{customdata}}<extra></extra>",
        },
    ]


def _line(x: np.ndarray, y: np.ndarray, name: str, color: str, group: str, y_title: str) -> dict[str, Any]:
    keep = np.isfinite(y)
    return {
        "type": "scatter",
        "x": x[keep],
        "y": y[keep],
        "mode": "lines",
        "name": name,
        "legendgroup": group,
        "showlegend": False,
        "line": {"color": color, "width": 1.2},
        "customdata": hover_numbers(y[keep]),
        "hovertemplate": f"{name}<br>i = %{{x}}<br>{y_title} = %{{customdata}}<extra></extra>",
    }


def _per_kind_lines(
    profile: SpectralProfile,
    rows: np.ndarray,
    title: str,
    y_title: str,
    values_of: CurveValues,
    subplot_title: Callable[[Kind, np.ndarray], str],
    heads: Iterable[int] | None,
    source: str | None,
    y_axis: Mapping[str, Any] | None = None,
) -> go.Figure:
    """One subplot per kind; per layer a median with a min-max band over heads, or the chosen heads.

    The y axes are logarithmic unless ``y_axis`` (settings of every y axis) says otherwise.
    """
    kinds = _kinds_present(profile, rows)
    titles = [subplot_title(kind, rows[profile.kinds[rows] == kind.value]) for kind in kinds]
    grid_cols = min(max(len(kinds), 1), PANEL_COLUMNS)
    grid_rows = -(-max(len(kinds), 1) // grid_cols)
    layout = panel_grid(
        grid_rows,
        grid_cols,
        titles=titles,
        title_size=12,
        horizontal_spacing=0.1,
        vertical_spacing=0.22 if grid_rows > 1 else 0.0,
    )
    colors = layer_colors(profile.shape.num_layers)
    chosen = None if heads is None else set(heads)
    # one matrix (a drill-down): drawn in its kind's colour, with no legend of layers to explain
    single = len(kinds) == 1 and _drawn_count(profile, rows, chosen) == 1
    traces: list[dict[str, Any]] = []
    in_legend: set[int] = set()
    for panel, kind in enumerate(kinds, start=1):
        x_axis, y_axis_key = panel_ref(panel)
        kind_rows = rows[profile.kinds[rows] == kind.value]
        x, y = values_of(kind_rows)  # (K,), (rows, K)
        y_drawn = []
        for layer in np.unique(profile.layers[kind_rows]):
            at = profile.layers[kind_rows] == layer
            group, color = f"layer {layer}", KIND_COLORS[kind] if single else colors[layer]
            if kind in HEAD_KINDS and chosen is None:
                name = f"L{layer} {kind.value} median of {format_count(int(at.sum()), 'head')}"
                traces += [on_panel(t, panel) for t in _median_band(x, y[at], name, color, group, y_title)]
                y_drawn.append(y[at])
            else:
                for i, values in zip(kind_rows[at], y[at], strict=True):
                    if kind not in HEAD_KINDS or (chosen is not None and profile.heads[i] in chosen):
                        traces.append(on_panel(_line(x, values, profile.ids[i].label, color, group, y_title), panel))
                        y_drawn.append(values[None, :])  # the axis spans what is drawn, not the other heads
            if layer not in in_legend and not single:
                in_legend.add(layer)
                # a point-free stand-in so the legend lists layers, not matrices
                stand_in = {
                    "type": "scatter",
                    "x": [None],
                    "y": [None],
                    "mode": "lines",
                    "name": group,
                    "legendgroup": group,
                    "line": {"color": color},
                    "hoverinfo": "skip",
                }
                traces.append(on_panel(stand_in, panel))
        layout[x_axis].update(log_axis(x[np.isfinite(y).any(axis=0)], title={"text": "index i"}))
        if y_axis is not None:
            layout[y_axis_key].update(y_axis)
        elif y_drawn:
            layout[y_axis_key].update(log_axis(np.concatenate(y_drawn).ravel()))
        if (panel - 1) % grid_cols == 0:
            layout[y_axis_key].update(axis_title(y_title))
    return figure(
        traces,
        title,
        source=source,
        height=PANEL_HEIGHT * grid_rows + 140,
        legend_title=None if single else "layer (0 = bottom)",
        layout={**layout, "showlegend": not single},
    )


def _drawn_count(profile: SpectralProfile, rows: np.ndarray, chosen: set[int] | None) -> int:
    """How many matrices :func:`_per_kind_lines` draws one by one or as one median: a median counts as one."""
    per_head = np.isin(profile.kinds[rows], [k.value for k in HEAD_KINDS])
    heads_drawn = per_head & (np.isin(profile.heads[rows], list(chosen)) if chosen is not None else True)
    medians = 0 if chosen is not None else len({(profile.layers[i], profile.kinds[i]) for i in rows[per_head]})
    return int((~per_head).sum()) + (int(heads_drawn.sum()) if chosen is not None else medians)


def _masked_singular_values(profile: SpectralProfile, rows: np.ndarray, normalise: bool) -> np.ndarray:
    """(rows, K) singular values above the rank threshold, NaN elsewhere; divided by σ₁ when normalising."""
    sv = np.where(profile.above_threshold[rows], profile.singular_values[rows], np.nan)  # (rows, K)
    if normalise:
        top = profile.spectral_norm[rows][:, None]
        sv = np.divide(sv, top, out=np.full_like(sv, np.nan), where=top > 0)
    return sv


def _one_expert(profile: SpectralProfile, rows: np.ndarray) -> str:
    """' of expert 3' when the rows are one expert's MLP matrices in a mixture of experts, else ''."""
    experts = {profile.ids[i].expert for i in rows}
    if not profile.shape.moe or len(experts) != 1 or None in experts:
        return ""
    return f" of {expert_label(experts.pop())}"


def singular_value_profiles(
    profile: SpectralProfile,
    layers: Iterable[int] | None = None,
    kinds: Iterable[Kind | str] | None = None,
    *,
    normalise: bool = False,
    heads: Iterable[int] | None = None,
    experts: Iterable[Expert] | None = None,
    source: str | None = None,
) -> go.Figure:
    """σ_i against i on log-log axes (or σ_i / σ₁ when ``normalise``), one panel per kind.

    Per layer, QK and V show the median over heads with a min-max band; ``heads`` draws those heads
    individually instead; ``experts`` keeps those experts' MLP matrices in a mixture of experts.
    Only the rank(W) nonzero values are drawn; the panel titles count the zeros.

    Example::

        >>> profile = specbound.analyze("minilm-l6").profile
        >>> figure = singular_value_profiles(profile, layers=[0], kinds=["QK"], heads=[0, 1])
        >>> figure.layout.yaxis.type
        'log'
    """
    rows = selected_rows(profile, layers, kinds, experts)
    ranks, dims = profile.rank, profile.full_dims

    def values_of(kind_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        width = max(int(ranks[kind_rows].max()), 1)
        return np.arange(1, width + 1), _masked_singular_values(profile, kind_rows, normalise)[:, :width]

    def subplot_title(kind: Kind, kind_rows: np.ndarray) -> str:
        zeros = int((dims[kind_rows] - ranks[kind_rows]).sum())
        name = kind.value + _one_expert(profile, kind_rows)
        return f"{name} · {zeros:,} zero σ not drawn" if zeros else name

    what = "σᵢ / σ₁" if normalise else "σᵢ"
    return _per_kind_lines(
        profile, rows, f"Singular-value profiles ({what})", what, values_of, subplot_title, heads, source
    )


def cumulative_energy_curves(
    profile: SpectralProfile,
    layers: Iterable[int] | None = None,
    kinds: Iterable[Kind | str] | None = None,
    *,
    heads: Iterable[int] | None = None,
    experts: Iterable[Expert] | None = None,
    source: str | None = None,
) -> go.Figure:
    """Σ_{j ≤ i} σ_j² / ‖W‖_F² against i (log x): how few directions carry the Frobenius mass.

    Each matrix's curve stops at its numerical rank, where it has reached 1; aggregation as in
    :func:`singular_value_profiles`.
    """
    rows = selected_rows(profile, layers, kinds, experts)
    ranks = profile.rank

    def values_of(kind_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        width = max(int(ranks[kind_rows].max()), 1)
        counted = profile.above_threshold[kind_rows, :width]
        energy = cumulative_energy(np.where(counted, profile.singular_values[kind_rows, :width], 0.0))
        return np.arange(1, width + 1), np.where(counted, energy, np.nan)  # (width,), (rows, width)

    return _per_kind_lines(
        profile,
        rows,
        "Cumulative energy",
        "energy fraction",
        values_of,
        lambda kind, kind_rows: kind.value + _one_expert(profile, kind_rows),
        heads,
        source,
        y_axis={"type": "linear", "range": [0, 1.02]},
    )


def head_quantities(profile: SpectralProfile, kind: Kind | str, stack: str | None = None) -> dict[str, np.ndarray]:
    """Numerical rank, stable rank and spectral norm of every head of a per-head kind, each (L_k, H) over
    the layers that have the kind (:func:`head_layers`; one stack's with ``stack``)."""
    kind = Kind(kind)
    if kind not in HEAD_KINDS:
        raise ValueError(f"{kind.value} has one matrix per layer, not one per head")
    rows = np.isin(profile.shape.layers_with(kind), head_layers(profile, kind, stack))
    values = (profile.rank, profile.stable_rank, profile.spectral_norm)
    return {name: profile.per_head(v, kind)[rows] for name, v in zip(HEATMAP_QUANTITIES, values, strict=True)}


def head_layers(profile: SpectralProfile, kind: Kind | str, stack: str | None = None) -> list[int]:
    """The layers (in series) with matrices of a per-head kind, those of one stack with ``stack``."""
    shape = profile.shape
    return [layer for layer in shape.layers_of(stack) if layer in shape.layers_with(Kind(kind))]


def head_heatmaps(
    profile: SpectralProfile, kind: Kind | str, *, source: str | None = None, stack: str | None = None
) -> go.Figure:
    """Layer x head heatmaps of numerical rank, stable rank and spectral norm for QK or V (or an
    encoder-decoder's QK_x, V_x; one stack's layers with ``stack``, numbered in the stack on the axis
    and by their place in series in the cells' y, so a click finds the matrix).

    Both ranks share the colour range [0, d], so a full-rank model reads as full instead of noise
    around d. The panels stay readable side by side in a narrow column (a projector at 1024 px):
    cell numbers only up to :data:`~specbound.present.figures.style.MAX_LABELLED_HEADS` heads (the hover
    always has them), layer ticks on the first panel only, where no colour bar runs into them.

    Example::

        >>> figure = head_heatmaps(specbound.analyze("minilm-l6").profile, "V")
        >>> [trace.name for trace in figure.data]
        ['numerical rank', 'stable rank', 'spectral norm σ₁']
    """
    kind = Kind(kind)
    shape = profile.shape
    quantities = head_quantities(profile, kind, stack)
    # each cell's value as the hover writes it, in ``text`` (a heatmap's cell text reads x, y, z and text
    # only); one stack's figure is drawn beside the other's at half the width, too narrow for cell numbers
    labels = cell_labels(shape.num_heads, "%{text}") if stack is None else {}
    # room for each colour bar and its tick labels before the next panel at 1024 px
    layout = panel_grid(1, len(quantities), titles=list(quantities), horizontal_spacing=0.13)
    heads = np.arange(shape.num_heads)
    layers = head_layers(profile, kind, stack)
    if not layers:
        raise ValueError(f"the {stack} has no {kind.value} matrices")
    numbers = [shape.stack_layer(layer) for layer in layers]
    where = f"{stack} " if stack else ""
    ranges = {"numerical rank": (0, shape.head_dim), "stable rank": (0, shape.head_dim)}
    heatmaps = []
    for col, (name, z) in enumerate(quantities.items(), start=1):
        x_axis, y_axis = panel_ref(col)
        colorbar = {"x": layout[x_axis]["domain"][1] + 0.005, "thickness": 10, "len": 0.9}
        heatmap = _head_trace(name, z, heads, layers, numbers=numbers, stack=stack, zrange=ranges.get(name))
        heatmaps.append(on_panel({**heatmap, "colorbar": colorbar, **labels}, col))
        layout[x_axis].update(cell_axis("head", len(heads)))
        layout[y_axis].update(layer_rows_axis(where, layers, numbers, first=col == 1))
    title = f"{kind.value} heads of the {stack}: layer × head" if stack else f"{kind.value} heads: layer × head"
    return figure(
        heatmaps,
        title,
        source=source,
        height=360 + 12 * len(layers),
        layout=layout,
    )


def _head_trace(
    name: str,
    z: np.ndarray,
    heads: np.ndarray,
    layers: list[int],
    *,
    numbers: list[int],
    stack: str | None,
    zrange: tuple[int, int] | None,
) -> dict[str, Any]:
    """One quantity's layer x head heatmap: its colour range (both ranks share [0, d]), each cell's value as
    the hover writes it (in ``text``), and the hover naming a layer by its y, or on one stack's figure by its
    number in the stack (``numbers``, in ``customdata``)."""
    where = f"{stack} " if stack else ""
    layer_ref = "%{y}" if stack is None else "%{customdata}"
    stack_numbers = {} if stack is None else {"customdata": np.repeat(np.array(numbers)[:, None], len(heads), axis=1)}
    zmin, zmax = zrange or (None, None)
    return {
        "type": "heatmap",
        "z": z,
        "x": heads,
        "y": layers,
        "name": name,
        "colorscale": SEQUENTIAL,
        "zmin": zmin,
        "zmax": zmax,
        "text": [[format_integer(v) for v in row] for row in z] if name == "numerical rank" else hover_grid(z),
        "hovertemplate": f"{where}layer {layer_ref}, head %{{x}}<br>{name} = %{{text}}<extra></extra>",
        **stack_numbers,
    }


def rank_against_maximum(profile: SpectralProfile, kind: Kind | str, *, source: str | None = None) -> go.Figure:
    """Rank of each matrix of ``kind`` against its structural maximum ("32 of 32"), colours fixed to [0, max].

    QK and V: a layer x head heatmap (maximum d); M_in and M_out: one column per layer (maximum
    min(N, d_ff)), or a layer x expert heatmap in a mixture of experts.
    """
    kind = Kind(kind)
    rank, maximum = rank_and_maximum(profile)
    x: np.ndarray | list[str]
    if kind in HEAD_KINDS:
        z, top = profile.per_head(rank, kind), profile.per_head(maximum, kind)  # (L, H)
        x, x_title = np.arange(profile.shape.num_heads), "head"
    elif profile.shape.moe:
        z, top = profile.per_expert(rank, kind), profile.per_expert(maximum, kind)  # (L, U)
        x, x_title = [expert_label(e) for e in profile.shape.experts], "expert"
    else:
        z, top = profile.per_layer(rank, kind)[:, None], profile.per_layer(maximum, kind)[:, None]  # (L, 1)
        x, x_title = [kind.value], ""
    text = np.char.add(np.char.add(z.astype(str), " of "), top.astype(str))
    # cell labels only while they fit; the hover always says "32 of 32"
    labels = cell_labels(z.shape[1], "%{text}")
    heatmap = {
        "type": "heatmap",
        "z": z,
        "x": x,
        "y": np.arange(profile.shape.num_layers),
        "text": text,
        "colorscale": SEQUENTIAL,
        "zmin": 0,
        "zmax": int(top.max()),
        "colorbar": {"thickness": 10, "title": {"text": "rank"}},
        "hovertemplate": "layer %{y}<br>rank %{text}<extra></extra>",
        "name": "rank",
        **labels,
    }
    layout = {
        "xaxis": cell_axis(x_title, z.shape[1]),
        "yaxis": axis_title("layer", dtick=1, range=[-0.5, profile.shape.num_layers - 0.5]),
    }
    full = int((z == top).sum())
    return figure(
        [heatmap],
        f"{kind.value}: {full} of {format_count(z.size, 'matrix', 'matrices')} at maximum rank",
        source=source,
        height=320 + 12 * profile.shape.num_layers,
        layout=layout,
    )


def overlaid_spectra(
    profile_a: SpectralProfile,
    profile_b: SpectralProfile,
    kind: Kind | str,
    layer: int,
    *,
    normalise: bool = False,
    source: str | None = None,
) -> go.Figure:
    """σ_i of one kind and layer of two models on the same log-log axes (median and min-max band over
    heads, or over experts for the MLP kinds of a mixture of experts)."""
    kind = Kind(kind)
    traces: list[dict[str, Any]] = []
    drawn = []
    for n, profile in enumerate((profile_a, profile_b)):
        if not 0 <= layer < profile.shape.num_layers:
            raise ValueError(f"{profile.model} has no layer {layer} (layers 0..{profile.shape.num_layers - 1})")
        rows = profile.rows_of(layers=[layer], kinds=[kind])
        width = max(int(profile.rank[rows].max()), 1)
        x, y = np.arange(1, width + 1), _masked_singular_values(profile, rows, normalise)[:, :width]
        what = "σᵢ / σ₁" if normalise else "σᵢ"
        name = as_text(short_model_name(profile.model))  # a directory by its name, not the server's path to it
        model_traces = (
            _median_band(x, y, name, palette_color(n), profile.model, what)
            if len(rows) > 1  # the heads of QK and V, or the experts of a mixture of experts' MLP kinds
            else [_line(x, y[0], name, palette_color(n), profile.model, what)]
        )
        model_traces[-1]["showlegend"] = True
        traces += model_traces
        drawn.append(y)
    layout = {
        "xaxis": log_axis(np.arange(1, max(d.shape[1] for d in drawn) + 1), title={"text": "index i"}),
        "yaxis": log_axis(np.concatenate([d.ravel() for d in drawn]), title={"text": "σᵢ / σ₁" if normalise else "σᵢ"}),
    }
    return figure(traces, f"Spectra overlaid: {kind.value}, layer {layer}", source=source, height=400, layout=layout)


def difference_spectrum(
    profile: SpectralProfile, delta: SpectralProfile, index: int, *, source: str | None = None
) -> go.Figure:
    """One matrix's singular values beside those of its difference from a reference (SPEC §14): σᵢ of W
    and σᵢ of W − W⁰ on the same log-log axes, so a low-rank update (a LoRA adapter's, rank ≤ r per
    matrix, ≤ 2r for a head's QK) reads as a short line under the weights' long one. ``delta`` is the
    difference's profile (the same matrices in the same order); zero singular values are not drawn, and a
    matrix left unchanged says so in its title.

    Example::

        >>> lora = specbound.analyze("finetune-lora")  # the shipped adapter, centred at its base
        >>> figure = difference_spectrum(lora.centred.profile, lora.centred.schatten_profile, 0)
        >>> [trace.name for trace in figure.data]
        ['W (the weights)', 'W − W⁰ (the difference)']
    """
    matrix = profile.ids[index]
    rows = np.array([index])
    traces = []
    drawn = []
    for n, (what, prof) in enumerate((("W (the weights)", profile), ("W − W⁰ (the difference)", delta))):
        width = max(int(prof.rank[index]), 1)
        y = _masked_singular_values(prof, rows, False)[0, :width]
        x = np.arange(1, width + 1)
        trace = _line(x, y, what, palette_color(n), what, "σᵢ")
        trace["showlegend"] = True
        traces.append(trace)
        drawn.append(y[np.isfinite(y)])
    values = np.concatenate(drawn)
    title = f"{matrix.label}: the weights' spectrum and the difference's"
    if int(delta.rank[index]) == 0:
        title += " (unchanged: rank 0)"
    layout = {
        "xaxis": log_axis(np.arange(1, max(int(profile.rank[index]), 1) + 1), title={"text": "index i"}),
        "yaxis": log_axis(values if values.size else np.ones(1), title={"text": "σᵢ"}),
    }
    return figure(traces, title, source=source, height=400, layout=layout)


#: Bins per decade of the ESD histogram (:func:`esd_figure`).
ESD_BINS_PER_DECADE: int = 8


def esd_figure(profile: SpectralProfile, index: int, *, source: str | None = None) -> go.Figure:
    """The empirical spectral density of one matrix, its eigenvalues λ = σ² of WᵀW (the counted ones), as
    a histogram on log-spaced bins, with the power law WeightWatcher 0.7.7 fits to its tail
    (:func:`specbound.core.heavy_tail.fit_weightwatcher`): the count each bin from x_min on would hold under
    the fit, n_tail · [P(λ ≤ right edge) − P(λ ≤ left edge)] with P(λ) = 1 − (λ / x_min)^(1 − α), and
    x_min marked.

    Example::

        >>> from specbound.io.loading import load_profile
        >>> fig = esd_figure(load_profile("minilm-l6"), 0)  # layer 0, QK head 0
    """
    from ...core.heavy_tail import fit_power_law

    matrix = profile.ids[index]
    eigenvalues = np.square(profile.singular_values[index, profile.above_threshold[index]])  # (rank,)
    fit = fit_power_law(eigenvalues)
    positive = eigenvalues[eigenvalues > 0]
    color = KIND_COLORS[matrix.kind]
    if positive.size == 0:
        return figure([], f"ESD of {matrix.label}: no nonzero eigenvalue", source=source, height=360)
    low, high = np.log10(positive.min()), np.log10(positive.max())
    count = max(1, int(np.ceil((high - low) * ESD_BINS_PER_DECADE)))
    edges = np.logspace(low, high, count + 1) if high > low else np.array([positive.min() / 1.1, positive.max() * 1.1])
    counts, _ = np.histogram(positive, bins=edges)
    centres = np.sqrt(edges[:-1] * edges[1:])
    traces: list[dict[str, Any]] = [
        {
            "type": "bar",
            "x": centres,
            "y": counts,
            "width": np.diff(edges),
            "name": "eigenvalues",
            "marker": {"color": color, "opacity": 0.6},
            "hovertemplate": "λ from %{customdata[0]:.3g} to %{customdata[1]:.3g}<br>%{y} eigenvalues<extra></extra>",
            "customdata": np.stack([edges[:-1], edges[1:]], axis=1),
        }
    ]
    title = f"ESD of {matrix.label}: {format_count(positive.size, 'eigenvalue')} λ = σ²"
    shapes: list[dict[str, Any]] = []
    if fit is not None:
        curve, x_min = _power_law_marks(fit, edges, centres)
        traces.append(curve)
        shapes.append(x_min)
        title += f"<br>α = {fit.alpha:.2f} from x_min = {fit.xmin:.3g} ({fit.tail} in the tail), WeightWatcher's fit"
    else:
        title += "<br>too few eigenvalues for WeightWatcher's fit"
    layout = {
        "xaxis": log_axis(edges, **axis_title("eigenvalue λ = σ²")),
        "yaxis": axis_title("eigenvalues per bin"),
        "shapes": shapes,
        "bargap": 0,
    }
    return figure(traces, title, source=source, height=380, layout=layout)


def _power_law_marks(fit: PowerLawFit, edges: np.ndarray, centres: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fitted power law drawn over the ESD's bins from x_min on, as the count each bin would hold,
    n_tail · [P(λ ≤ right edge) − P(λ ≤ left edge)] with P(λ) = 1 − (λ / x_min)^(1 − α); and a dashed
    vertical line at x_min."""
    tail_edges = np.clip(edges, fit.xmin, None)
    cdf = 1.0 - np.power(tail_edges / fit.xmin, 1.0 - fit.alpha)
    expected = fit.tail * np.diff(cdf)  # (bins,) zero below x_min
    shown = edges[1:] > fit.xmin
    curve = {
        "type": "scatter",
        "x": centres[shown],
        "y": expected[shown],
        "mode": "lines+markers",
        "name": f"power law, α = {fit.alpha:.2f}",
        "line": {"color": INK, "width": 2},
        "hovertemplate": "fitted: %{y:.2f} eigenvalues<extra></extra>",
    }
    x_min = {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": fit.xmin,
        "x1": fit.xmin,
        "y0": 0,
        "y1": 1,
        "line": {"color": NEUTRAL, "dash": "dash", "width": 1},
    }
    return curve, x_min


def relative_change(base: SpectralProfile, delta: SpectralProfile) -> np.ndarray:
    """(M,) ‖W - W⁰‖₂ / ‖W⁰‖₂ of every proxy matrix: how far a fine-tune moved it, relative to its base
    (0 for a matrix left unchanged; NaN where the base's matrix is zero)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(base.spectral_norm > 0, delta.spectral_norm / base.spectral_norm, np.nan)


def change_columns(profile: SpectralProfile) -> list[tuple[str, Kind, Expert]]:
    """The columns of :func:`change_heatmaps`' MLP panel: (label, kind, expert) for every feed-forward
    kind of every expert ("M_in", or "M_in E3" in a mixture of experts), in the panel's order."""
    kinds = [kind for kind in profile.model_kinds if not kind.per_head]
    return [
        (kind.value + ("" if expert is None else f" {expert_label(expert)}"), kind, expert)
        for expert in profile.shape.experts
        for kind in kinds
    ]


def change_heatmaps(base: SpectralProfile, delta: SpectralProfile, *, source: str | None = None) -> go.Figure:
    """What a fine-tune changed (SPEC §14): ‖W - W⁰‖₂ / ‖W⁰‖₂ per matrix, a layer x head panel for each
    per-head kind (QK, V, and an encoder-decoder's QK_x, V_x) and a layer x matrix panel for the
    feed-forward matrices (per expert in a mixture of experts). All panels share one colour range from
    0, so a head the fine-tune left alone reads as 0 beside the ones it moved; the hover gives the value
    and the difference's rank. ``delta`` is the difference's profile (:func:`specbound.io.loading.difference_profile`).

    Example::

        >>> lora = specbound.analyze("finetune-lora")  # the lab's shipped adapter, against its base
        >>> base = specbound.analyze("finetune-base").profile
        >>> figure = change_heatmaps(base, lora.centred.schatten_profile)
        >>> [trace.hovertemplate.split("<br>")[1].split(" =")[0] for trace in figure.data][:2]
        ['‖ΔQK‖₂ / ‖QK⁰‖₂', '‖ΔV‖₂ / ‖V⁰‖₂']
    """
    ratio = relative_change(base, delta)
    finite = ratio[np.isfinite(ratio)]
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    return _matrix_maps(
        base,
        ratio,
        delta.rank,
        head_value=lambda kind: f"‖Δ{kind.value}‖₂ / ‖{kind.value}⁰‖₂",
        mlp_value="‖ΔW‖₂ / ‖W⁰‖₂",
        extra="rank of the difference %{customdata}",
        colour_title="‖ΔW‖₂/‖W⁰‖₂",
        top=top,
        title="What changed: ‖W − W⁰‖₂ / ‖W⁰‖₂",
        source=source,
    )


def intruder_heatmaps(base: SpectralProfile, directions: Directions, *, source: str | None = None) -> go.Figure:
    """Where a fine-tune pointed (SPEC §14b): the number of intruder dimensions of every proxy matrix,
    laid out as :func:`change_heatmaps` (a layer x head panel per per-head kind, a layer x matrix panel
    for the feed-forward matrices), one colour range from 0 to k. The hover gives the smallest
    best-match cosine, the top-k overlaps of the left and right singular subspaces, the chance level
    √(2 ln k / D) beside them and a near tie where there is one. ``directions`` is
    :attr:`specbound.Analysis.directions`.

    Example::

        >>> lora = specbound.analyze("finetune-lora")  # the lab's shipped adapter, against its base
        >>> base = specbound.analyze("finetune-base").profile
        >>> figure = intruder_heatmaps(base, lora.directions)
        >>> figure.data[0].hovertemplate.split("<br>")[1]
        "intruders in QK's top k = %{text}"
    """
    extra = np.array(
        [
            f"smallest best-match |cos| {c:.3f} (chance ≈ {chance:.2f})<br>overlap of the top-{k} subspaces: "
            f"left {left:.3f}, right {right:.3f}" + ("<br>near-tied singular values" if tie else "")
            for c, chance, k, left, right, tie in zip(
                directions.min_cosine,
                directions.chance_cosine,
                directions.top_k,
                directions.overlap_left,
                directions.overlap_right,
                directions.near_tie,
                strict=True,
            )
        ],
        dtype=object,
    )
    settings = directions.settings
    return _matrix_maps(
        base,
        directions.intruders.astype(float),
        extra,
        head_value=lambda kind: f"intruders in {kind.value}'s top k",
        mlp_value="intruders in the top k",
        extra="%{customdata}",
        colour_title="intruders",
        colour_side="right",  # beside the bar: its top tick is k, where a title on top would sit
        top=float(settings.k),
        title=f"Intruders: top {settings.k}, |cos| < {settings.eps:g}",  # as short as the map of sizes' title
        source=source,
    )


def _matrix_maps(
    base: SpectralProfile,
    value: np.ndarray,
    cells: np.ndarray,
    *,
    head_value: Callable[[Kind], str],
    mlp_value: str,
    extra: str,
    colour_title: str,
    top: float,
    title: str,
    source: str | None,
    colour_side: str = "top",
) -> go.Figure:
    """One value per proxy matrix (M,) as heatmaps: a layer x head panel for each per-head kind and a
    layer x matrix panel for the feed-forward matrices, one colour range [0, ``top``]; ``cells`` (M,)
    is each cell's customdata, which the hover line ``extra`` may show."""
    shape = base.shape
    head_kinds = [kind for kind in base.model_kinds if kind.per_head]
    titles = [kind.value for kind in head_kinds] + ["MLP"]  # short enough side by side on a phone
    layout = panel_grid(1, len(titles), titles=titles, horizontal_spacing=0.06)
    common = {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": top, "showscale": False}
    traces = []
    for col, kind in enumerate(head_kinds, start=1):
        x_axis, y_axis = panel_ref(col)
        layers = list(shape.layers_with(kind))
        z, r = base.per_head(value, kind), base.per_head(cells, kind)
        traces.append(
            on_panel(
                {
                    "type": "heatmap",
                    "z": z,
                    "x": np.arange(shape.num_heads),
                    "y": layers,
                    "text": hover_grid(z),
                    "customdata": r,
                    "hovertemplate": f"layer %{{y}}, head %{{x}}<br>{head_value(kind)} = %{{text}}"
                    f"<br>{extra}<extra></extra>",
                    **common,
                },
                col,
            )
        )
        layout[x_axis].update(cell_axis("head", shape.num_heads))
        layout[y_axis].update(
            layer_rows_axis("", layers, [shape.stack_layer(layer) for layer in layers], first=col == 1)
        )
    col = len(titles)
    x_axis, y_axis = panel_ref(col)
    labelled = change_columns(base)
    columns = [(kind, expert) for _, kind, expert in labelled]
    labels = [label for label, _, _ in labelled]
    z = np.stack([base.per_layer(value, kind, expert) for kind, expert in columns], axis=1)  # (L, columns)
    r = np.stack([base.per_layer(cells, kind, expert) for kind, expert in columns], axis=1)
    traces.append(
        on_panel(
            {
                "type": "heatmap",
                "z": z,
                "x": labels,
                "y": np.arange(shape.num_layers),
                "text": hover_grid(z),
                "customdata": r,
                "hovertemplate": f"layer %{{y}}, %{{x}}<br>{mlp_value} = %{{text}}<br>{extra}<extra></extra>",
                **{
                    **common,
                    "showscale": True,
                    "colorbar": {"thickness": 10, "title": {"text": colour_title, "side": colour_side}},
                },
            },
            col,
        )
    )
    layout[x_axis].update({"title": {"text": ""}, "tickangle": -90 if len(labels) > 1 else 0})
    every_layer = list(range(shape.num_layers))
    layout[y_axis].update(layer_rows_axis("", every_layer, [shape.stack_layer(i) for i in every_layer], first=col == 1))
    return figure(
        traces,
        title,
        source=source,
        height=360 + 12 * shape.num_layers,
        layout=layout,
    )
