"""Growth figures: one panel per fixed size, log y axis, the fixed-p regimes dashed."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest

from specbound.figures.scaling import growth_figure
from specbound.scaling import Axis, ModelSummary, Proxy, ScalingStudy


def _study() -> ScalingStudy:
    return ScalingStudy.from_summaries(
        ModelSummary(f"L{l}-H{n}", l, n, log_ours=0.5 * math.log(l) + math.log(n),
                     log_edelman=1.5 * math.log(l) + 2 * math.log(n) + 900.0,
                     log_fixed={0.0: math.log(l * n), 1.0: math.log(l) + 1, 2.0: 2 * math.log(l * n)})
        for l in (2, 4, 6) for n in (128, 256))


@pytest.mark.parametrize("axis, panels", [(Axis.DEPTH, 2), (Axis.WIDTH, 3)])
def test_growth_figure_panels_and_styles(axis: Axis, panels: int) -> None:
    study = _study()
    figure = growth_figure(study.curves(axis), axis, study.exponents)
    assert isinstance(figure, go.Figure)
    assert len(figure.data) == len(Proxy) * panels  # one trace per proxy and fixed size
    assert len(figure.layout.annotations) == panels  # the panel titles
    assert all(figure.layout[name].type == "log" for name in figure.layout if name.startswith("yaxis"))
    for trace in figure.data:
        dashed = trace.legendgroup in {"p=0", "p=1", "p=2"}
        assert (trace.line.dash == "dash") is dashed
        assert trace.y[0] == 1.0  # normalised at the smallest size
    legend = [t.name for t in figure.data if t.showlegend]
    assert len(legend) == len(Proxy)  # each proxy named once
    ours = next(name for name in legend if name.startswith("ours"))
    slope = 0.5 if axis is Axis.DEPTH else 1.0
    assert ours.endswith(f"∝ {axis.value}<sup>{slope:.2f}</sup>")  # the pooled exponent, named by its axis


def test_edelman_ratio_is_finite_although_its_values_overflow() -> None:
    study = _study()
    figure = growth_figure(study.curves("N"), "N")
    edelman = [t for t in figure.data if t.legendgroup == "edelman"]
    assert all(t.y == (1.0, pytest.approx(4.0)) for t in edelman)  # (256 / 128)^2
