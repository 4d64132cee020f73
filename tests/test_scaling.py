"""Scaling study on synthetic families whose proxies are exact power laws in L and N."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.bounds import BoundAnalysis
from specbound.matrices import EncoderShape
from specbound.profile import SpectralProfile
from specbound.scaling import (Axis, ModelSummary, Proxy, ScalingStudy, growth_curves, growth_exponents,
                               summarize)

DEPTHS = (2, 4, 6, 8)
WIDTHS = (128, 256, 512)
#: ln B = a ln L + b ln N + c for each proxy; Edelman's constant makes its plain value overflow.
POWERS = {
    Proxy.OURS: (0.5, 0.75, 1.0),
    Proxy.EDELMAN: (1.5, 2.0, 800.0),
    Proxy.P0: (0.5, 0.5, 0.0),
    Proxy.P1: (1.0, 2.0 / 3.0, -3.0),
    Proxy.P2: (1.25, 0.25, 2.0),
}


def _log_proxy(proxy: Proxy, layers: int, width: int) -> float:
    a, b, c = POWERS[proxy]
    return a * math.log(layers) + b * math.log(width) + c


def _summary(layers: int, width: int) -> ModelSummary:
    return ModelSummary(
        name=f"L{layers}-H{width}", num_layers=layers, hidden_size=width,
        log_ours=_log_proxy(Proxy.OURS, layers, width), log_edelman=_log_proxy(Proxy.EDELMAN, layers, width),
        log_fixed={p.fixed_p: _log_proxy(p, layers, width) for p in (Proxy.P0, Proxy.P1, Proxy.P2)},
        num_heads=width // 64,
    )


def _family(skip: set[tuple[int, int]] = frozenset()) -> list[ModelSummary]:
    return [_summary(l, n) for l in DEPTHS for n in WIDTHS if (l, n) not in skip]


@pytest.mark.parametrize("proxy", list(Proxy))
def test_normalised_curves_start_at_one_and_follow_the_power_law(proxy: Proxy) -> None:
    a, b, _ = POWERS[proxy]
    family = _family()
    against_l = [c for c in growth_curves(family, Axis.DEPTH, [proxy])]
    against_n = [c for c in growth_curves(family, "N", [proxy])]
    assert [c.fixed for c in against_l] == list(WIDTHS)
    assert [c.fixed for c in against_n] == list(DEPTHS)
    for curve in against_l:
        assert curve.x == DEPTHS and curve.log_ratio[0] == 0.0 and curve.ratio[0] == 1.0
        # B(L, N) / B(2, N) = (L / 2)^a
        np.testing.assert_allclose(curve.log_ratio, [a * math.log(l / 2) for l in DEPTHS], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(curve.ratio, [(l / 2) ** a for l in DEPTHS], rtol=1e-12)
    for curve in against_n:
        assert curve.x == WIDTHS and curve.ratio[0] == 1.0
        np.testing.assert_allclose(curve.ratio, [(n / 128) ** b for n in WIDTHS], rtol=1e-12)
        assert curve.models == tuple(f"L{curve.fixed}-H{n}" for n in WIDTHS)


@pytest.mark.parametrize("proxy", list(Proxy))
def test_fitted_exponents_recover_the_powers(proxy: Proxy) -> None:
    a, b, c = POWERS[proxy]
    study = ScalingStudy.from_summaries(_family())
    for width in WIDTHS:
        fit = study.exponent(proxy, Axis.DEPTH, width)
        assert fit.slope == pytest.approx(a, rel=1e-12, abs=1e-12)
        assert fit.intercept == pytest.approx(b * math.log(width) + c, rel=1e-12)
        assert fit.r_squared == pytest.approx(1.0) and fit.num_points == len(DEPTHS)
    for layers in DEPTHS:
        fit = study.exponent(proxy, "N", layers)
        assert fit.slope == pytest.approx(b, rel=1e-12)
        assert fit.intercept == pytest.approx(a * math.log(layers) + c, rel=1e-12, abs=1e-12)
    pooled_l, pooled_n = study.exponent(proxy, "L"), study.exponent(proxy, "N")
    assert pooled_l.slope == pytest.approx(a, rel=1e-12, abs=1e-12) and pooled_l.intercept is None
    assert (pooled_l.num_groups, pooled_l.num_points) == (len(WIDTHS), len(DEPTHS) * len(WIDTHS))
    assert pooled_n.slope == pytest.approx(b, rel=1e-12)


def test_pooled_slope_is_the_within_group_slope_when_groups_differ() -> None:
    """Two widths whose depth slopes are 1 and 3 over the same depths: the pooled slope is 2."""
    summaries = [ModelSummary(f"m{l}-{n}", l, n, log_ours=k * math.log(l) + n, log_edelman=0.0)
                 for n, k in ((16, 1.0), (32, 3.0)) for l in (1, 2, 4)]
    fits = {e.fixed: e for e in growth_exponents(summaries, Axis.DEPTH, [Proxy.OURS])}
    assert fits[16].slope == pytest.approx(1.0) and fits[32].slope == pytest.approx(3.0)
    assert fits[None].slope == pytest.approx(2.0)
    assert 0.0 < fits[None].r_squared < 1.0


def test_ragged_family_normalises_at_the_smallest_size_available() -> None:
    # width 128 has no L = 2 model; width 512 keeps only L = 8 (one point: no curve, no fit)
    skip = {(2, 128)} | {(l, 512) for l in (2, 4, 6)}
    family = _family(skip)
    curves = {c.fixed: c for c in growth_curves(family, Axis.DEPTH, [Proxy.OURS])}
    assert set(curves) == {128, 256}
    assert curves[128].x == (4, 6, 8)
    np.testing.assert_allclose(curves[128].ratio, [(l / 4) ** 0.5 for l in (4, 6, 8)], rtol=1e-12)
    fixed = {e.fixed for e in growth_exponents(family, Axis.DEPTH, [Proxy.OURS])}
    assert fixed == {128, 256, None}


def test_overflowing_proxy_stays_exact_in_logs() -> None:
    study = ScalingStudy.from_summaries(_family())
    frame = study.models_frame()
    assert list(frame.columns[:4]) == ["name", "L", "N", "H"]
    row = {column: frame.set_index("name")[column]["L8-H512"] for column in frame.columns[1:]}
    assert frame["edelman"].dtype == np.float64
    assert row["edelman_log10"] == pytest.approx(_log_proxy(Proxy.EDELMAN, 8, 512) / math.log(10), rel=1e-14)
    assert math.isnan(row["edelman"])  # e^(800 + ...) overflows float64: left empty, its log10 stands
    assert row["ours"] == pytest.approx(math.exp(_log_proxy(Proxy.OURS, 8, 512)), rel=1e-14)
    curve = next(c for c in study.curves_width if c.proxy is Proxy.EDELMAN and c.fixed == 8)
    np.testing.assert_allclose(curve.ratio, [(n / 128) ** 2 for n in WIDTHS], rtol=1e-12)


def test_frames_and_record_round_trip() -> None:
    study = ScalingStudy.from_summaries(_family())
    exponents = study.exponents_frame()
    pooled = exponents[exponents["fixed"].isna()]
    assert len(pooled) == 2 * len(Proxy)  # one pooled fit per proxy and axis
    assert len(exponents) == len(Proxy) * (len(WIDTHS) + len(DEPTHS) + 2)
    curves = study.curves_frame()
    assert len(curves) == len(Proxy) * 2 * len(DEPTHS) * len(WIDTHS)
    assert (curves.groupby(["proxy", "against", "fixed"])["ratio"].first() == 1.0).all()
    summary = _summary(6, 256)
    assert ModelSummary.from_dict(summary.to_dict()) == summary


def test_two_models_of_one_shape_are_refused() -> None:
    with pytest.raises(ValueError, match="share L=2 N=128"):
        growth_curves(_family() + [_summary(2, 128)], Axis.DEPTH)


def test_summary_of_a_real_analysis_matches_closed_forms() -> None:
    """L = 1, N = 4, H = 2: six matrices with prescribed spectra."""
    shape = EncoderShape(num_layers=1, hidden_size=4, num_heads=2, ffn_size=4)
    sv = np.array([[3.0, 1.0, 0, 0], [2.0, 0, 0, 0], [1.5, 0.5, 0, 0], [1.0, 1.0, 0, 0],
                   [4.0, 2.0, 1.0, 0.5], [2.0, 1.0, 1.0, 1.0]])
    profile = SpectralProfile("toy", "r0", shape, sv, np.full(6, 4), np.arange(1.0, 7.0), np.arange(2.0, 8.0))
    analysis = BoundAnalysis.from_profile(profile)
    summary = summarize(analysis)
    assert (summary.name, summary.num_layers, summary.hidden_size, summary.num_heads) == ("toy", 1, 4, 2)
    assert summary.log_ours == analysis.evaluate().log_total
    assert summary.log_edelman == analysis.log_edelman
    ranks = np.array([2, 1, 2, 2, 4, 4])
    # p = 0: c(W; 0) = sqrt(rank N), plus sqrt(L) = 1
    assert summary.log_fixed[0.0] == pytest.approx(math.log(np.sqrt(ranks * 4).sum() + 1.0), rel=1e-14)
    # p = 2: c(W; 2) = sqrt(||W||_F s_W) N^(3/4)
    s_w = np.exp(analysis.log_scale)
    p2 = (np.sqrt(np.sqrt((sv ** 2).sum(axis=1)) * s_w) * 4 ** 0.75).sum() + 1.0
    assert summary.log_fixed[2.0] == pytest.approx(math.log(p2), rel=1e-13)
    assert summary.log_proxy("p=1") == analysis.evaluate(1.0).log_total
