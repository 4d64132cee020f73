"""Growth figures of the scaling study: normalised proxy curves against depth L or width N.

One panel per value of the size held fixed; in each, ours and Edelman's proxy as solid lines and
the fixed-p regimes as dashed ones, all divided by their value at the study's common reference size
(log y axis), so a flatter curve means slower growth.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..scaling import Axis, BetterFit, GrowthCurve, GrowthExponent, GrowthModel, Proxy
from .style import apply_layout, as_text, palette_color, set_log_ticks

#: Line style per proxy: the two proxies the paper compares are solid, the fixed-p regimes dashed.
PROXY_STYLE: dict[Proxy, dict[str, str]] = {
    proxy: {"color": palette_color(n), "dash": "solid" if proxy in (Proxy.OURS, Proxy.EDELMAN) else "dash"}
    for n, proxy in enumerate((Proxy.OURS, Proxy.EDELMAN, Proxy.P0, Proxy.P1, Proxy.P2))
}
_LABEL = {
    Proxy.OURS: "ours (p*)",
    Proxy.EDELMAN: "Edelman et al.",
    Proxy.P0: "p = 0 (rank)",
    Proxy.P1: "p = 1 (nuclear)",
    Proxy.P2: "p = 2 (Frobenius)",
}
_AXIS_TITLE = {Axis.DEPTH: "depth L", Axis.WIDTH: "width N"}


def _quoted_fits(exponents: Iterable[GrowthExponent], against: Axis) -> dict[Proxy, GrowthExponent]:
    """Each proxy's pooled fit to quote: the law that fits better, the power law when undecided."""

    def quoted_model(fit: GrowthExponent) -> GrowthModel:
        decided = fit.better_fit in (BetterFit.POWER, BetterFit.LOG_LINEAR)
        return GrowthModel(fit.better_fit.value) if decided and fit.better_fit else GrowthModel.POWER

    return {e.proxy: e for e in exponents if e.against is against and e.fixed is None and e.model is quoted_model(e)}


def _legend_name(proxy: Proxy, fit: GrowthExponent | None) -> str:
    """E.g. "ours (p*) ~ L^0.52 ± 0.04" or "Edelman et al. ~ e^(r·L), r = 2.30 ± 0.01"."""
    if fit is None:
        return _LABEL[proxy]
    size = fit.against.value
    spread = f" ± {fit.slope_se:.2f}" if math.isfinite(fit.slope_se) else ""
    law = (
        f"{size}^{fit.slope:.2f}{spread}"
        if fit.model is GrowthModel.POWER
        else f"e^(r·{size}), r = {fit.slope:.2f}{spread}"
    )
    caveat = f" ({fit.num_sizes} sizes only)" if fit.few_points else ""
    return f"{_LABEL[proxy]} ~ {law}{caveat}"


def growth_figure(
    curves: Sequence[GrowthCurve],
    against: Axis | str,
    exponents: Iterable[GrowthExponent] = (),
    title: str | None = None,
    *,
    source: str | None = None,
) -> go.Figure:
    """Normalised growth curves against ``against`` ("L" or "N"), one panel per fixed other size.

    y = B(x) / B(reference) on a log axis, the reference being the study's common one; a value that
    overflows float64 is left as a gap, its log10 is in the hover text. Pooled fits given in
    ``exponents`` are quoted in the legend (the law that fits better); ``source`` (which models)
    joins the normalisation note in the subtitle.
    """
    against = Axis(against)
    curves = [c for c in curves if c.against is against]
    quoted = _quoted_fits(exponents, against)
    reference = f"{against.value} = {curves[0].reference}" if curves else "the common reference"
    fixed_values = sorted({c.fixed for c in curves})
    panels = max(len(fixed_values), 1)
    cols = panels if panels <= 4 else 3
    rows = math.ceil(panels / cols)
    other = against.other.value
    fig = make_subplots(
        rows=rows,
        cols=cols,
        shared_yaxes=True,
        shared_xaxes=False,
        subplot_titles=[f"{other} = {v}" for v in fixed_values] or None,
        horizontal_spacing=0.04,
        vertical_spacing=0.12 if rows > 1 else 0.0,
    )
    shown: set[Proxy] = set()
    for index, fixed in enumerate(fixed_values):
        row, col = divmod(index, cols)
        for curve in (c for c in curves if c.fixed == fixed):
            style = PROXY_STYLE[curve.proxy]
            ratio = [float(v) if math.isfinite(v) else None for v in curve.ratio]
            fig.add_trace(
                go.Scatter(
                    x=list(curve.x),
                    y=ratio,
                    mode="lines+markers",
                    name=_legend_name(curve.proxy, quoted.get(curve.proxy)),
                    legendgroup=curve.proxy.value,
                    showlegend=curve.proxy not in shown,
                    line={"color": style["color"], "dash": style["dash"]},
                    customdata=[[as_text(m), lr] for m, lr in zip(curve.models, curve.log10_ratio, strict=True)],
                    hovertemplate=(
                        f"{_LABEL[curve.proxy]}<br>%{{customdata[0]}}<br>{against.value} = %{{x}}"
                        f"<br>ratio = %{{y:.4g}} (log10 %{{customdata[1]:.3f}})<extra></extra>"
                    ),
                ),
                row=row + 1,
                col=col + 1,
            )
            shown.add(curve.proxy)
    set_log_ticks(fig, "y", [r for c in curves for r in c.ratio])
    fig.update_yaxes(title_text=f"proxy / proxy at {reference}", col=1)
    fig.update_xaxes(
        title_text=_AXIS_TITLE[against], tickmode="array", tickvals=sorted({x for c in curves for x in c.x})
    )
    note = f"normalised at {reference}; proxies, not generalization gaps"
    return apply_layout(
        fig,
        title or f"Growth of the proxies with {_AXIS_TITLE[against]}",
        source=f"{source} · {note}" if source else note,
        height=380 * rows + 80,
        legend_title="proxy",
    )


def growth_figure_depth(
    curves: Sequence[GrowthCurve], exponents: Iterable[GrowthExponent] = (), *, source: str | None = None
) -> go.Figure:
    """Growth against depth L, one panel per width N."""
    return growth_figure(curves, Axis.DEPTH, exponents, source=source)


def growth_figure_width(
    curves: Sequence[GrowthCurve], exponents: Iterable[GrowthExponent] = (), *, source: str | None = None
) -> go.Figure:
    """Growth against width N, one panel per depth L."""
    return growth_figure(curves, Axis.WIDTH, exponents, source=source)
