"""Growth figures of the scaling study: normalised proxy curves against depth L or width N.

One panel per value of the size held fixed; in each, ours and Edelman's proxy as solid lines and
the fixed-p regimes as dashed ones, all divided by their value at the study's common reference size
(log y axis), so a flatter curve means slower growth.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import plotly.graph_objects as go

from ...core.proxies import Proxy
from ...studies.scaling import (
    CONFIDENCE,
    MIN_SIZES,
    PREDICTED_GROWTH,
    Agreement,
    Axis,
    BetterFit,
    GrowthCurve,
    GrowthExponent,
    GrowthModel,
    MeasuredGrowth,
    PredictedGrowth,
)
from .style import (
    as_text,
    axis_title,
    figure,
    hover_numbers,
    log_axis,
    on_panel,
    p_color,
    panel_grid,
    panel_ref,
    quantity_color,
)

#: Line style per proxy: the two proxies the paper compares solid in their colours, the fixed-p regimes
#: dashed in the colour of their p (the p* map's scale).
PROXY_STYLE: dict[Proxy, dict[str, str]] = {
    Proxy.OURS: {"color": quantity_color(Proxy.OURS), "dash": "solid"},
    Proxy.EDELMAN: {"color": quantity_color(Proxy.EDELMAN), "dash": "solid"},
    Proxy.P0: {"color": p_color(0.0), "dash": "dash"},
    Proxy.P1: {"color": p_color(1.0), "dash": "dash"},
    Proxy.P2: {"color": p_color(2.0), "dash": "dash"},
}
#: How each proxy is named in legends and tables.
PROXY_LABELS: dict[Proxy, str] = {proxy: proxy.study_label for proxy in Proxy}
_AXIS_TITLE = {Axis.DEPTH: "depth L", Axis.WIDTH: "width N"}


def _quoted_fits(exponents: Iterable[GrowthExponent], against: Axis) -> dict[Proxy, GrowthExponent]:
    """Each proxy's pooled fit to quote: the law that fits better, the power law when undecided."""

    def quoted_model(fit: GrowthExponent) -> GrowthModel:
        decided = fit.better_fit in (BetterFit.POWER, BetterFit.LOG_LINEAR)
        return GrowthModel(fit.better_fit.value) if decided and fit.better_fit else GrowthModel.POWER

    return {e.proxy: e for e in exponents if e.against is against and e.fixed is None and e.model is quoted_model(e)}


def _legend_name(proxy: Proxy, fit: GrowthExponent | None) -> str:
    """E.g. "ours (p*) ~ L^0.52 ± 0.04" or "Edelman et al. ~ e^(r·L), r = 2.30 ± 0.01"; a fit on fewer
    than three sizes gets no "±" (two sizes fix a line through them: its standard error measures how the
    groups disagree, not how well a law is known) and says how many sizes it rests on."""
    if fit is None:
        return PROXY_LABELS[proxy]
    size = fit.against.value
    spread = f" ± {fit.slope_se:.2f}" if math.isfinite(fit.slope_se) and not fit.few_points else ""
    law = (
        f"{size}<sup>{fit.slope:.2f}</sup>{spread}"
        if fit.model is GrowthModel.POWER
        else f"e<sup>r·{size}</sup>, r = {fit.slope:.2f}{spread}"
    )
    caveat = f" ({fit.num_sizes} sizes only)" if fit.few_points else ""
    return f"{PROXY_LABELS[proxy]} ~ {law}{caveat}"


def predicted_label(guide: PredictedGrowth) -> str:
    """A predicted law as a legend writes it: "√L", "L<sup>3/2</sup>" (from "L^(3/2)")."""
    base, power, exponent = guide.law.partition("^")
    return f"{base}<sup>{exponent.strip('()')}</sup>" if power else base


def predicted_note(predicted: Iterable[PredictedGrowth] = PREDICTED_GROWTH) -> str:
    """What the dotted lines of a growth figure are, each prediction with its assumption, in one caption.

    Example:
        >>> predicted_note().startswith("Dotted: the growth in depth L the theory predicts")
        True
    """
    laws = "; ".join(f"{g.law}, {g.assumption}" for g in predicted)
    return (
        f"Dotted: the growth in depth L the theory predicts, from the same start: {laws}. Measured curves "
        "steeper than their line leave those assumptions (a depth factor α that grows with L, norms that "
        "grow with the model); no single law is predicted against width N."
    )


#: The words for where a measured exponent's interval lies against its prediction (ours is predicted
#: "√L or better", so an interval below its line still agrees with the theory).
_AGREEMENT_WORDS: dict[Agreement, str] = {
    Agreement.HOLDS: "the interval holds the predicted exponent",
    Agreement.STEEPER: "steeper than predicted: the whole interval lies above it",
    Agreement.FLATTER: "flatter than predicted: the whole interval lies below it",
    Agreement.NO_INTERVAL: f"no interval: a slope through fewer than {MIN_SIZES} sizes fits any law",
    Agreement.NOT_PREDICTED: "no single exponent is predicted along this size",
}
_SIZE_NOUNS = {Axis.DEPTH: ("depth", "depths"), Axis.WIDTH: ("width", "widths")}


def measured_sentence(row: MeasuredGrowth) -> str:
    """One proxy's measured exponent along one size beside its prediction, in one plain-text sentence.

    Example:
        >>> import math
        >>> from specbound.studies.scaling import ModelSummary, ScalingStudy, measured_growth
        >>> family = [ModelSummary(f"L{l}N{n}", l, n, 0.5 * math.log(l) + 0.01 * (l % 3), 1.5 * math.log(l))
        ...           for l in (1, 2, 4, 8) for n in (32, 64, 128)]
        >>> print(measured_sentence(measured_growth(ScalingStudy.from_summaries(family))[0]))
        ours (p*) in depth L: measured L^0.50, 95 % t-interval [0.50, 0.51] on 4 depths (12 models); predicted √L \
(L^0.5): the interval holds the predicted exponent.
    """
    noun, nouns = _SIZE_NOUNS[row.against]
    size = row.against.value
    head = f"{PROXY_LABELS[row.proxy]} in {noun} {size}"
    fit = row.fit
    if fit is None:
        return f"{head}: not fitted (no fixed {row.against.other.value} with two {nouns})."
    interval = row.interval
    spread = "" if interval is None else f", {CONFIDENCE * 100:.0f} % t-interval [{interval[0]:.2f}, {interval[1]:.2f}]"
    measured = f"measured {size}^{fit.slope:.2f}{spread} on {fit.num_sizes} {nouns} ({fit.num_points} models)"
    predicted = "" if row.predicted is None else f"; predicted {row.predicted.law} ({size}^{row.predicted.exponent:g})"
    return f"{head}: {measured}{predicted}: {_AGREEMENT_WORDS[row.agreement]}."


def growth_panel_columns(panels: int) -> int:
    """Panels of a growth figure to a row: all of them up to four, else three."""
    return panels if panels <= 4 else 3


def _log_range(values: Iterable[float]) -> list[float]:
    """The log10 range of a log axis holding every positive finite value, padded by 5 % each side."""
    logs = [math.log10(v) for v in values if math.isfinite(v) and v > 0]
    if not logs:
        return [-1.0, 1.0]
    low, high = min(logs), max(logs)
    pad = 0.05 * (high - low) if high > low else 0.1
    return [low - pad, high + pad]


def growth_figure(
    curves: Sequence[GrowthCurve],
    against: Axis | str,
    exponents: Iterable[GrowthExponent] = (),
    title: str | None = None,
    *,
    source: str | None = None,
    predicted: Iterable[PredictedGrowth] = (),
) -> go.Figure:
    """Normalised growth curves against ``against`` ("L" or "N"), one panel per fixed other size.

    y = B(x) / B(reference) on a log axis, the reference being the study's common one; a value that
    overflows float64 is left as a gap, its log10 is in the hover text. Pooled fits given in
    ``exponents`` are quoted in the legend (the law that fits better); ``source`` (which models)
    joins the normalisation note in the subtitle. Each of ``predicted`` against this size
    (:data:`specbound.studies.scaling.PREDICTED_GROWTH`) is drawn as a dotted line (x / reference)^a in
    its proxy's colour, so a measured curve steeper than its prediction rises above it.
    """
    against = Axis(against)
    curves = [c for c in curves if c.against is against]
    quoted = _quoted_fits(exponents, against)
    reference = f"{against.value} = {curves[0].reference}" if curves else "the common reference"
    fixed_values = sorted({c.fixed for c in curves})
    panels = max(len(fixed_values), 1)
    cols = growth_panel_columns(panels)
    rows = math.ceil(panels / cols)
    other = against.other.value
    layout = panel_grid(
        rows,
        cols,
        shared_yaxes=True,
        titles=[f"{other} = {v}" for v in fixed_values],
        horizontal_spacing=0.04,
        vertical_spacing=0.12 if rows > 1 else 0.0,
    )
    traces = []
    shown: set[Proxy] = set()
    for panel, fixed in enumerate(fixed_values, start=1):
        for curve in (c for c in curves if c.fixed == fixed):
            style = PROXY_STYLE[curve.proxy]
            ratio = [float(v) if math.isfinite(v) else None for v in curve.ratio]
            line = {
                "type": "scatter",
                "x": list(curve.x),
                "y": ratio,
                "mode": "lines+markers",
                "name": _legend_name(curve.proxy, quoted.get(curve.proxy)),
                "legendgroup": curve.proxy.value,
                "showlegend": curve.proxy not in shown,
                "line": {"color": style["color"], "dash": style["dash"]},
                "customdata": [
                    [as_text(m), lr, shown]
                    for m, lr, shown in zip(curve.models, curve.log10_ratio, hover_numbers(ratio), strict=True)
                ],
                "hovertemplate": (
                    f"{PROXY_LABELS[curve.proxy]}<br>%{{customdata[0]}}<br>{against.value} = %{{x}}"
                    f"<br>ratio = %{{customdata[2]}} (log10 %{{customdata[1]:.3f}})<extra></extra>"
                ),
            }
            traces.append(on_panel(line, panel))
            shown.add(curve.proxy)
    guides = [g for g in predicted if g.against is against and any(c.proxy is g.proxy for c in curves)]
    sizes = sorted({x for c in curves for x in c.x})
    for panel, _ in enumerate(fixed_values, start=1):
        for guide in guides:
            trace = {
                "type": "scatter",
                "x": sizes,
                "y": guide.ratio(sizes, curves[0].reference),
                "mode": "lines",
                "name": f"predicted for {PROXY_LABELS[guide.proxy]}: {predicted_label(guide)}",
                "legendgroup": f"predicted-{guide.proxy.value}",
                "showlegend": panel == 1,
                "line": {"color": PROXY_STYLE[guide.proxy]["color"], "dash": "dot", "width": 1.5},
                "hovertemplate": f"predicted {predicted_label(guide)}<br>{against.value} = %{{x}}"
                "<br>ratio = %{y:.3g}<extra></extra>",
            }
            traces.append(on_panel(trace, panel))
    predicted_ratios = [r for guide in guides for r in guide.ratio(sizes, curves[0].reference)]
    ratios = [r for c in curves for r in c.ratio] + predicted_ratios
    y_axis = {**log_axis(ratios), "range": _log_range(ratios)}  # one scale: panels drawn apart still compare
    x_axis = axis_title(_AXIS_TITLE[against], tickmode="array", tickvals=sorted({x for c in curves for x in c.x}))
    for panel in range(1, rows * cols + 1):
        x_key, y_key = panel_ref(panel)
        layout[x_key].update(x_axis)
        layout[y_key].update(y_axis)
        if (panel - 1) % cols == 0:
            layout[y_key].update(axis_title(f"ratio to {reference}"))
    note = f"normalised at {reference}; proxies, not generalization gaps"
    return figure(
        traces,
        title or f"Growth of the proxies with {_AXIS_TITLE[against]}",
        source=f"{source} · {note}" if source else note,
        height=380 * rows + 80,
        legend_title="proxy",
        layout=layout,
    )


def growth_figure_depth(
    curves: Sequence[GrowthCurve],
    exponents: Iterable[GrowthExponent] = (),
    *,
    source: str | None = None,
    predicted: Iterable[PredictedGrowth] = (),
) -> go.Figure:
    """Growth against depth L, one panel per width N."""
    return growth_figure(curves, Axis.DEPTH, exponents, source=source, predicted=predicted)


def growth_figure_width(
    curves: Sequence[GrowthCurve],
    exponents: Iterable[GrowthExponent] = (),
    *,
    source: str | None = None,
    predicted: Iterable[PredictedGrowth] = (),
) -> go.Figure:
    """Growth against width N, one panel per depth L."""
    return growth_figure(curves, Axis.WIDTH, exponents, source=source, predicted=predicted)
