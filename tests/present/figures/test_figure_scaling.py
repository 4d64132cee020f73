"""Growth figures: one panel per fixed size, log y axis, the fixed-p regimes dashed."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from specbound.core.proxies import Proxy
from specbound.present.figures.scaling import growth_figure
from specbound.present.figures.style import PANEL_TITLE_ROOM, TOP_MARGIN_SUBTITLE
from specbound.studies.scaling import PREDICTED_GROWTH, Axis, ModelSummary, ScalingStudy, predicted_growth


def _study() -> ScalingStudy:
    return ScalingStudy.from_summaries(
        ModelSummary(
            f"L{l}-H{n}",
            l,
            n,
            log_ours=0.5 * math.log(l) + math.log(n),
            log_edelman=1.5 * math.log(l) + 2 * math.log(n) + 900.0,
            log_fixed={0.0: math.log(l * n), 1.0: math.log(l) + 1, 2.0: 2 * math.log(l * n)},
        )
        for l in (2, 4, 6)
        for n in (128, 256)
    )


@pytest.mark.parametrize("axis, panels", [(Axis.DEPTH, 2), (Axis.WIDTH, 3)])
def test_growth_figure_panels_and_styles(axis: Axis, panels: int) -> None:
    study = _study()
    figure = growth_figure(study.curves(axis), axis, study.exponents)
    assert isinstance(figure, go.Figure)
    assert len(figure.data) == len(Proxy) * panels  # one trace per proxy and fixed size
    assert len(figure.layout.annotations) == panels  # the panel titles
    assert figure.layout.margin.t == TOP_MARGIN_SUBTITLE + PANEL_TITLE_ROOM  # the note clears the panel titles
    assert all(figure.layout[name].type == "log" for name in figure.layout if name.startswith("yaxis"))
    for trace in figure.data:
        dashed = trace.legendgroup in {"p=0", "p=1", "p=2"}
        assert (trace.line.dash == "dash") is dashed
        assert trace.y[0] == 1.0  # normalised at the smallest size
    legend = [t.name for t in figure.data if t.showlegend]
    assert len(legend) == len(Proxy)  # each proxy named once
    ours = next(name for name in legend if name.startswith("ours"))
    # the pooled exponent is quoted with its standard error (exact power laws: 0), but not from two sizes
    depth, width = "ours (p*) ~ L<sup>0.50</sup> ± 0.00", "ours (p*) ~ N<sup>1.00</sup> (2 sizes only)"
    assert ours == (depth if axis is Axis.DEPTH else width)  # N in {128, 256}
    assert figure.layout.yaxis.title.text == f"ratio to {axis.value} = {2 if axis is Axis.DEPTH else 128}"


def _legend(study: ScalingStudy, axis: Axis) -> dict[str, str]:
    figure = growth_figure(study.curves(axis), axis, study.exponents)
    return {t.legendgroup: t.name for t in figure.data if t.showlegend}


def test_legend_quotes_the_better_law_with_its_uncertainty() -> None:
    """Edelman-like B = 10^L N is quoted as a rate per layer, ln 10 = 2.30; a noisy power law with its
    standard error; a fit on two depths only is flagged (and undecided, so quoted as a power law)."""
    noise = iter(np.random.default_rng(3).normal(0.0, 0.05, 12))
    study = ScalingStudy.from_summaries(
        ModelSummary(
            f"L{l}-H{n}",
            l,
            n,
            log_ours=0.5 * math.log(l) + math.log(n) + next(noise),
            log_edelman=l * math.log(10) + math.log(n),
        )
        for l in (2, 4, 6, 8, 10, 12)
        for n in (128, 256)
    )
    legend = _legend(study, Axis.DEPTH)
    assert legend["edelman"] == "Edelman et al. ~ e<sup>r·L</sup>, r = 2.30 ± 0.00"
    ours = study.exponent(Proxy.OURS, Axis.DEPTH)
    assert legend["ours"] == f"ours (p*) ~ L<sup>{ours.slope:.2f}</sup> ± {ours.slope_se:.2f}"
    assert (round(ours.slope, 2), round(ours.slope_se, 2)) == (0.51, 0.04)
    two = ScalingStudy.from_summaries(s for s in study.summaries if s.num_layers in (2, 4))
    assert _legend(two, Axis.DEPTH)["edelman"] == "Edelman et al. ~ L<sup>6.64</sup> (2 sizes only)"  # no ±


def test_predicted_laws_are_drawn_against_depth_from_the_common_reference() -> None:
    """√L and L^{3/2} from L = 2 (the study's reference) on L in {2, 4, 6}: (L / 2)^a in every panel,
    named once, dotted in the colour of the proxy they predict; none against N (no single law there)."""
    study = _study()
    depth = growth_figure(study.curves("L"), "L", study.exponents, predicted=PREDICTED_GROWTH)
    guides = [t for t in depth.data if t.legendgroup.startswith("predicted")]
    assert len(guides) == 2 * 2  # two predictions in each of the two panels (N = 128, 256)
    ours = [t for t in guides if t.legendgroup == "predicted-ours"]
    np.testing.assert_allclose(ours[0].y, [1.0, 2.0**0.5, 3.0**0.5], rtol=1e-12)
    edelman = next(t for t in guides if t.legendgroup == "predicted-edelman")
    np.testing.assert_allclose(edelman.y, [1.0, 2.0**1.5, 3.0**1.5], rtol=1e-12)
    assert edelman.name == "predicted for Edelman et al.: L<sup>3/2</sup>" and edelman.line.dash == "dot"
    assert [t.showlegend for t in ours] == [True, False]
    assert ours[0].line.color == next(t.line.color for t in depth.data if t.legendgroup == "ours")
    width = growth_figure(study.curves("N"), "N", study.exponents, predicted=PREDICTED_GROWTH)
    assert not [t for t in width.data if t.legendgroup.startswith("predicted")]


def test_a_prediction_is_looked_up_by_proxy_and_size() -> None:
    edelman, ours = predicted_growth(Proxy.EDELMAN, Axis.DEPTH), predicted_growth("ours", "L")
    assert edelman is not None and edelman.exponent == 1.5
    assert ours is not None and ours.exponent == 0.5
    assert predicted_growth("p=1", "L") is None and predicted_growth("edelman", "N") is None


def test_edelman_ratio_is_finite_although_its_values_overflow() -> None:
    study = _study()
    figure = growth_figure(study.curves("N"), "N")
    edelman = [t for t in figure.data if t.legendgroup == "edelman"]
    assert all(t.y == (1.0, pytest.approx(4.0)) for t in edelman)  # (256 / 128)^2
