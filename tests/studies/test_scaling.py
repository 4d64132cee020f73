"""Scaling study on synthetic families with known answers: exact power laws in L and N, exponential
growth in L, a proxy flat in L with noise, and families with a model missing."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from collections.abc import Set as AbstractSet

import numpy as np
import pytest

from specbound.core.architecture import ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.profile import SpectralProfile
from specbound.core.proxies import Proxy
from specbound.studies.scaling import (
    CONFIDENCE,
    MEASURED_COLUMNS,
    Agreement,
    Axis,
    BetterFit,
    GrowthModel,
    ModelSummary,
    ScalingStudy,
    growth_curves,
    growth_exponents,
    measured_growth,
    measured_growth_frame,
    summarize,
    t_critical,
)

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
        name=f"L{layers}-H{width}",
        num_layers=layers,
        hidden_size=width,
        log_ours=_log_proxy(Proxy.OURS, layers, width),
        log_edelman=_log_proxy(Proxy.EDELMAN, layers, width),
        log_fixed={
            fixed: _log_proxy(p, layers, width) for p, fixed in ((Proxy.P0, 0.0), (Proxy.P1, 1.0), (Proxy.P2, 2.0))
        },
        num_heads=width // 64,
    )


def _family(skip: AbstractSet[tuple[int, int]] = frozenset()) -> list[ModelSummary]:
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
    """Two widths whose depth slopes are 1 and 3 over L in {1, 2, 4}: the pooled slope is 2.

    By hand, with dx = (-ln 2, 0, ln 2) in each group: S_xx = 4 ln²2, the residuals are -dx and +dx,
    so SS_res = 4 ln²2 against SS_within = (1 + 9) · 2 ln²2: r²_within = 1 - 4/20 = 0.8; df = 6 - 2 - 1
    = 3, s² = 4 ln²2 / 3, se = √(s² / S_xx) = 1/√3. The intercepts (16 and 32) make the ordinary r²
    nearly 1.
    """
    summaries = [
        ModelSummary(f"m{l}-{n}", l, n, log_ours=k * math.log(l) + n, log_edelman=0.0)
        for n, k in ((16, 1.0), (32, 3.0))
        for l in (1, 2, 4)
    ]
    fits = {e.fixed: e for e in growth_exponents(summaries, Axis.DEPTH, [Proxy.OURS]) if e.model is GrowthModel.POWER}
    assert fits[16].slope == pytest.approx(1.0) and fits[32].slope == pytest.approx(3.0)
    pooled = fits[None]
    assert pooled.slope == pytest.approx(2.0)
    assert pooled.r_squared_within == pytest.approx(0.8, rel=1e-12)
    y = np.array([s.log_ours for s in summaries])
    ss_total = float(np.square(y - y.mean()).sum())
    assert pooled.r_squared == pytest.approx(1.0 - 4 * math.log(2) ** 2 / ss_total, rel=1e-12)
    assert pooled.r_squared > 0.99  # the group intercepts counted as explained
    assert pooled.residual_df == 3 and pooled.slope_se == pytest.approx(1 / math.sqrt(3), rel=1e-12)
    half = 3.182446305284263 / math.sqrt(3)  # t quantile at 0.975 with 3 degrees of freedom
    assert (pooled.ci_low, pooled.ci_high) == pytest.approx((2 - half, 2 + half), rel=1e-12)
    assert fits[16].residual_df == 1 and fits[16].slope_se == pytest.approx(0.0, abs=1e-12)


def test_flat_proxy_has_a_high_pooled_r2_but_no_within_group_r2() -> None:
    """The issue's example: ln B = 3 ln N + noise (sd 0.3) over the 24 miniature shapes, seed 0.

    The pooled L-slope -0.069 has r² = 0.989 only because the width intercepts are counted; within
    the widths the slope explains 3 % of the variance, and its interval contains 0.
    """
    layers, widths = (2, 4, 6, 8, 10, 12), (128, 256, 512, 768)
    shapes = [(l, n) for l in layers for n in widths]
    noise = np.random.default_rng(0).normal(0.0, 0.3, len(shapes))
    summaries = [
        ModelSummary(f"L{l}-H{n}", l, n, log_ours=3 * math.log(n) + e, log_edelman=0.0)
        for (l, n), e in zip(shapes, noise, strict=True)
    ]
    pooled = ScalingStudy.from_summaries(summaries, [Proxy.OURS]).exponent(Proxy.OURS, Axis.DEPTH)
    assert pooled.slope == pytest.approx(-0.068892, abs=1e-6)
    assert pooled.r_squared == pytest.approx(0.988921, abs=1e-6)
    assert pooled.r_squared_within == pytest.approx(0.032482, abs=1e-6)
    assert pooled.residual_df == 24 - 4 - 1 and not pooled.few_points
    # the same fit as ordinary least squares with one dummy per width: se from s² (XᵀX)⁻¹
    x = np.log([l for l, _ in shapes])
    design = np.column_stack([x] + [[float(n == w) for _, n in shapes] for w in widths])
    y = np.array([s.log_ours for s in summaries])
    coef, ss_res, *_ = np.linalg.lstsq(design, y, rcond=None)
    se = math.sqrt(ss_res[0] / 19 * np.linalg.inv(design.T @ design)[0, 0])
    assert pooled.slope == pytest.approx(coef[0], rel=1e-10)
    assert pooled.slope_se == pytest.approx(se, rel=1e-10) and pooled.slope_se == pytest.approx(0.086259, abs=1e-6)
    assert pooled.ci_low < 0.0 < pooled.ci_high
    assert pooled.ci_high - pooled.slope == pytest.approx(t_critical(CONFIDENCE, 19) * se, rel=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 5, 10, 30])
def test_t_quantile_matches_closed_forms_and_tables(df: int) -> None:
    table = {
        1: math.tan(0.475 * math.pi),  # Cauchy
        2: 0.95 / math.sqrt(2 * 0.975 * 0.025),  # t = (2p - 1) / √(2p(1 - p))
        3: 3.182446305284263,
        5: 2.570581835636314,
        10: 2.228138851986274,
        30: 2.042272456301238,
    }
    assert t_critical(0.95, df) == pytest.approx(table[df], rel=1e-12)
    assert t_critical(0.5, 1) == pytest.approx(1.0, rel=1e-12)  # the Cauchy quartile
    with pytest.raises(ValueError):
        t_critical(0.95, 0)


def test_intervals_cover_the_true_slope_at_their_level() -> None:
    """400 seeded replicates of y = 0.7 ln L + b_g + N(0, 0.2²): one group of 4 sizes (df = 2), and the
    pooled fit over it and two groups of 3 (df = 10 - 3 - 1 = 6). The t intervals cover 0.7 in 94.5 %
    and 96 % of the replicates; the normal 1.96 would cover 81.5 % with 2 degrees of freedom."""
    rng = np.random.default_rng(7)
    sizes = (2, 4, 8, 16)
    covered = {"group": 0, "pooled": 0, "normal": 0}
    for _ in range(400):
        summaries = [
            ModelSummary(f"{l}-{n}", l, n, log_ours=0.7 * math.log(l) + n / 100 + rng.normal(0, 0.2), log_edelman=0.0)
            for n in (100, 200, 300)
            for l in (sizes if n == 100 else sizes[:3])
        ]
        fits = growth_exponents(summaries, Axis.DEPTH, [Proxy.OURS])
        group = next(e for e in fits if e.fixed == 100 and e.model is GrowthModel.POWER)
        pooled = next(e for e in fits if e.fixed is None and e.model is GrowthModel.POWER)
        assert (group.residual_df, pooled.residual_df) == (2, 10 - 3 - 1)
        covered["group"] += group.ci_low <= 0.7 <= group.ci_high
        covered["pooled"] += pooled.ci_low <= 0.7 <= pooled.ci_high
        covered["normal"] += abs(group.slope - 0.7) <= 1.96 * group.slope_se
    assert 0.92 <= covered["group"] / 400 <= 0.98 and 0.92 <= covered["pooled"] / 400 <= 0.98
    assert covered["normal"] / 400 < 0.88


def test_two_point_fits_are_flagged_and_have_no_uncertainty() -> None:
    study = ScalingStudy.from_summaries(_family(skip={(l, n) for l in (6, 8) for n in WIDTHS}))
    for fit in (e for e in study.exponents if e.against is Axis.DEPTH):
        assert fit.num_sizes == 2 and fit.few_points
        assert fit.better_fit is BetterFit.UNDECIDED  # two points fit any law exactly
    group = study.exponent(Proxy.OURS, Axis.DEPTH, 128)
    assert group.r_squared == pytest.approx(1.0) and group.residual_df == 0
    assert math.isnan(group.slope_se) and math.isnan(group.ci_low) and math.isnan(group.ci_high)
    pooled = study.exponent(Proxy.OURS, Axis.DEPTH)
    assert pooled.residual_df == 6 - 3 - 1 and pooled.few_points  # three widths, still only L in {2, 4}
    width = study.exponent(Proxy.OURS, Axis.WIDTH, 2)
    assert width.num_sizes == 3 and not width.few_points and width.better_fit is None  # one law against N
    frame = study.exponents_frame()
    assert (
        frame.loc[frame["against"] == "L", "few_points"].all()
        and not frame.loc[frame["against"] == "N", "few_points"].any()
    )


def _growth_family(
    log_b: Callable[[int, int], float],
    layers: tuple[int, ...] = (2, 4, 6, 8, 10, 12),
    widths: tuple[int, ...] = (128, 256, 512, 768),
) -> list[ModelSummary]:
    return [
        ModelSummary(f"L{l}-H{n}", l, n, log_ours=log_b(l, n), log_edelman=log_b(l, n)) for l in layers for n in widths
    ]


def test_exponential_growth_in_depth_is_log_linear() -> None:
    """B = 10^L · N: ln B = L ln 10 + ln N, so the log-linear rate is ln 10 per layer and wins; the
    power-law "exponent" depends on where it is measured."""
    study = ScalingStudy.from_summaries(_growth_family(lambda l, n: l * math.log(10) + math.log(n)))
    rate = study.exponent(Proxy.EDELMAN, Axis.DEPTH, model=GrowthModel.LOG_LINEAR)
    power = study.exponent(Proxy.EDELMAN, Axis.DEPTH)
    assert rate.slope == pytest.approx(math.log(10), rel=1e-12)
    assert rate.r_squared_within == pytest.approx(1.0, rel=1e-12) and rate.slope_se == pytest.approx(0.0, abs=1e-9)
    assert power.r_squared_within < 0.97
    assert rate.better_fit is power.better_fit is BetterFit.LOG_LINEAR
    assert study.exponent(Proxy.EDELMAN, Axis.DEPTH, 256).better_fit is BetterFit.LOG_LINEAR
    for depths, exponent in (((2, 4), 6.64), ((10, 12), 25.26)):
        pair = ScalingStudy.from_summaries(_growth_family(lambda l, n: l * math.log(10) + math.log(n), depths))
        fit = pair.exponent(Proxy.EDELMAN, Axis.DEPTH)
        assert fit.slope == pytest.approx(exponent, abs=0.005) and fit.few_points
        assert fit.better_fit is BetterFit.UNDECIDED


def test_power_growth_in_depth_is_a_power_law() -> None:
    """B = L^1.5 · N: the power law fits exactly with slope 1.5 and wins over the log-linear fit."""
    study = ScalingStudy.from_summaries(_growth_family(lambda l, n: 1.5 * math.log(l) + math.log(n)))
    power = study.exponent(Proxy.OURS, Axis.DEPTH)
    rate = study.exponent(Proxy.OURS, Axis.DEPTH, model=GrowthModel.LOG_LINEAR)
    assert power.slope == pytest.approx(1.5, rel=1e-12) and power.r_squared_within == pytest.approx(1.0, rel=1e-12)
    assert rate.r_squared_within < 0.97
    assert power.better_fit is rate.better_fit is BetterFit.POWER
    against_n = [e.model for e in study.exponents if e.against is Axis.WIDTH]
    assert against_n == [GrowthModel.POWER] * 2 * (6 + 1)  # ours and Edelman: six depths and the pooled fit


def test_curves_are_normalised_at_one_common_reference() -> None:
    """Without L2-H256 the curve against L at N = 256 is left out with a note, not normalised at L = 4."""
    study = ScalingStudy.from_summaries(_family(skip={(2, 256)}))
    assert (study.reference_depth, study.reference_width) == (2, 128)
    depth = {(c.proxy, c.fixed): c for c in study.curves_depth}
    assert {fixed for _, fixed in depth} == {128, 512}
    assert study.notes == (
        "No curve against L at N = 256: the study has no model with L = 2 and N = 256, and "
        "every curve against L is normalised at L = 2 (the smallest L in the study).",
    )
    assert all(c.reference == 2 for c in study.curves_depth) and all(c.reference == 128 for c in study.curves_width)
    # against N at L = 2 the reference N = 128 is there: (128, 512) normalised at 128
    curve = next(c for c in study.curves_width if c.proxy is Proxy.OURS and c.fixed == 2)
    assert curve.x == (128, 512)
    np.testing.assert_allclose(curve.ratio, [1.0, 4**0.75], rtol=1e-12)
    # the fits use every model that is there
    assert study.exponent(Proxy.OURS, Axis.DEPTH, 256).num_points == 3
    frame = study.curves_frame()
    assert set(frame.loc[frame["against"] == "L", "reference"]) == {2}


def test_a_reference_model_without_a_fixed_p_proxy_leaves_that_curve_out() -> None:
    family = [
        dataclasses.replace(s, log_fixed={}) if (s.num_layers, s.hidden_size) == (2, 512) else s for s in _family()
    ]
    study = ScalingStudy.from_summaries(family)
    assert study.notes == (
        "p=0, p=1, p=2 against L at N = 512 left out: the model at the common reference L = 2 does not carry it.",
    )
    assert {c.proxy for c in study.curves_depth if c.fixed == 512} == {Proxy.OURS, Proxy.EDELMAN}


def test_ragged_family_fits_every_group_it_can() -> None:
    # width 128 has no L = 2 model; width 512 keeps only L = 8 (one point: no curve, no fit, no note)
    skip = {(2, 128)} | {(l, 512) for l in (2, 4, 6)}
    family = _family(skip)
    curves = {c.fixed: c for c in growth_curves(family, Axis.DEPTH, [Proxy.OURS])}
    assert set(curves) == {256}
    np.testing.assert_allclose(curves[256].ratio, [(l / 2) ** 0.5 for l in DEPTHS], rtol=1e-12)
    fixed = {e.fixed for e in growth_exponents(family, Axis.DEPTH, [Proxy.OURS])}
    assert fixed == {128, 256, None}
    assert len(ScalingStudy.from_summaries(family, [Proxy.OURS]).notes) == 1  # N = 128 only


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
    assert len(pooled) == 3 * len(Proxy)  # per proxy: power and log-linear against L, power against N
    assert len(exponents) == len(Proxy) * (2 * len(WIDTHS) + len(DEPTHS) + 3)
    assert list(exponents.columns[:8]) == [
        "proxy",
        "against",
        "fixed",
        "slope",
        "intercept",
        "r_squared",
        "num_points",
        "num_groups",
    ]
    assert set(exponents["model"]) == {"power", "log-linear"}
    assert set(exponents.loc[exponents["against"] == "L", "better_fit"]) == {"power"}  # exact power laws
    assert exponents.loc[exponents["against"] == "N", "better_fit"].isna().all()
    curves = study.curves_frame()
    assert len(curves) == len(Proxy) * 2 * len(DEPTHS) * len(WIDTHS)
    assert (curves.groupby(["proxy", "against", "fixed"])["ratio"].first() == 1.0).all()
    summary = _summary(6, 256)
    assert ModelSummary.from_dict(summary.to_dict()) == summary


def test_two_models_of_one_shape_are_refused() -> None:
    with pytest.raises(ValueError, match="share L=2 N=128"):
        growth_curves([*_family(), _summary(2, 128)], Axis.DEPTH)


def test_summary_of_a_real_analysis_matches_closed_forms() -> None:
    """L = 1, N = 4, H = 2: six matrices with prescribed spectra."""
    shape = ModelShape(num_layers=1, hidden_size=4, num_heads=2, ffn_size=4)
    sv = np.array(
        [
            [3.0, 1.0, 0, 0],
            [2.0, 0, 0, 0],
            [1.5, 0.5, 0, 0],
            [1.0, 1.0, 0, 0],
            [4.0, 2.0, 1.0, 0.5],
            [2.0, 1.0, 1.0, 1.0],
        ]
    )
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
    p2 = (np.sqrt(np.sqrt((sv**2).sum(axis=1)) * s_w) * 4**0.75).sum() + 1.0
    assert summary.log_fixed[2.0] == pytest.approx(math.log(p2), rel=1e-13)
    assert summary.log_proxy("p=1") == analysis.evaluate(1.0).log_total


# --- measured beside predicted ------------------------------------------------------------------


def _noisy_family(
    depth_power: float, depths: tuple[int, ...] = DEPTHS, widths: tuple[int, ...] = WIDTHS, seed: int = 3
) -> list[ModelSummary]:
    """ln ours = depth_power ln L + 0.75 ln N + noise (sd 0.05), ln Edelman = 1.5 ln L exactly."""
    rng = np.random.default_rng(seed)
    return [
        ModelSummary(
            f"L{l}-N{n}",
            l,
            n,
            depth_power * math.log(l) + 0.75 * math.log(n) + 0.05 * rng.standard_normal(),
            1.5 * math.log(l) + 2.0 * math.log(n),
        )
        for l in depths
        for n in widths
    ]


def test_measured_growth_sets_the_pooled_slope_and_its_t_interval_beside_the_prediction() -> None:
    family = _noisy_family(0.5)
    study = ScalingStudy.from_summaries(family)
    ours_l, edelman_l, ours_n, edelman_n = measured_growth(study)
    assert [(r.proxy, r.against) for r in (ours_l, edelman_l, ours_n, edelman_n)] == [
        (Proxy.OURS, Axis.DEPTH),
        (Proxy.EDELMAN, Axis.DEPTH),
        (Proxy.OURS, Axis.WIDTH),
        (Proxy.EDELMAN, Axis.WIDTH),
    ]
    # the pooled slope by an independent route: least squares with one dummy intercept per width
    x = np.array([math.log(s.num_layers) for s in study.summaries])
    y = np.array([s.log_ours for s in study.summaries])
    dummies = np.array([[s.hidden_size == n for n in WIDTHS] for s in study.summaries], dtype=float)
    design = np.column_stack([x, dummies])
    coef, (ss_res,), *_ = np.linalg.lstsq(design, y, rcond=None)
    df = len(y) - len(WIDTHS) - 1  # 12 models, 3 intercepts, 1 slope: 8
    se = math.sqrt(ss_res / df * np.linalg.inv(design.T @ design)[0, 0])  # s² (XᵀX)⁻¹ of the slope
    assert ours_l.fit is not None and ours_l.fit.slope == pytest.approx(coef[0], rel=1e-10)
    assert ours_l.interval is not None
    low, high = ours_l.interval
    assert (high - low) / 2 == pytest.approx(2.306004135204166 * se, rel=1e-8)  # t(0.975, 8)
    assert ours_l.predicted is not None and (ours_l.predicted.exponent, ours_l.predicted.law) == (0.5, "√L")
    assert low < 0.5 < high and ours_l.agreement is Agreement.HOLDS
    # Edelman's exact L^(3/2): a zero-width interval on the prediction holds it
    assert edelman_l.fit is not None and edelman_n.fit is not None and ours_n.fit is not None
    assert edelman_l.fit.slope == pytest.approx(1.5, abs=1e-12) and edelman_l.agreement is Agreement.HOLDS
    assert edelman_n.fit.slope == pytest.approx(2.0, abs=1e-12)
    assert ours_n.predicted is None and ours_n.agreement is Agreement.NOT_PREDICTED
    assert ours_n.interval is not None and ours_n.fit.num_sizes == 3  # three widths: an interval, no prediction


@pytest.mark.parametrize(("power", "agreement"), [(1.2, Agreement.STEEPER), (0.1, Agreement.FLATTER)])
def test_an_interval_away_from_the_prediction_says_which_side(power: float, agreement: Agreement) -> None:
    (ours_l, *_) = measured_growth(ScalingStudy.from_summaries(_noisy_family(power)))
    assert ours_l.agreement is agreement and ours_l.interval is not None
    low, high = ours_l.interval
    assert (low > 0.5) if agreement is Agreement.STEEPER else (high < 0.5)


def test_no_interval_is_given_from_two_sizes() -> None:
    """Two depths at each width: a pooled fit with residual degrees of freedom (6 - 3 - 1 = 2) and a finite
    standard error, yet no interval, since a line through two sizes fits any law."""
    study = ScalingStudy.from_summaries(_noisy_family(0.5, depths=(2, 4)))
    ours_l = measured_growth(study)[0]
    assert ours_l.fit is not None
    assert ours_l.fit.num_sizes == 2 and ours_l.fit.residual_df == 2 and math.isfinite(ours_l.fit.slope_se)
    assert ours_l.interval is None and ours_l.agreement is Agreement.NO_INTERVAL
    frame = measured_growth_frame(measured_growth(study))
    assert list(frame.columns) == list(MEASURED_COLUMNS)
    depth = frame[frame["against"] == "L"]
    assert depth["ci_low"].isna().all() and depth["ci_high"].isna().all()
    assert list(depth["agreement"]) == ["no interval", "no interval"]
    assert list(depth["predicted_law"]) == ["√L", "L^(3/2)"]
    width = frame[frame["against"] == "N"]  # three widths: intervals, no law predicted
    assert width["ci_low"].notna().all() and width["predicted_exponent"].isna().all()


def test_a_single_group_is_quoted_by_its_own_fit() -> None:
    """One width only: no pooled fit, the group's fit is the one set beside the prediction."""
    study = ScalingStudy.from_summaries(_noisy_family(0.5, widths=(128,)))
    ours_l = measured_growth(study, [Proxy.OURS])[0]
    assert ours_l.fit is not None and ours_l.fit.fixed == 128 and ours_l.fit.residual_df == 2
    assert ours_l.fit.slope == pytest.approx(
        np.polyfit(np.log(DEPTHS), [s.log_ours for s in study.summaries], 1)[0], rel=1e-10
    )
    assert measured_growth(study, [Proxy.OURS])[1].fit is None  # one width: nothing fitted against N
