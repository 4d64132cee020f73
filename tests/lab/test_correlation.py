"""Kendall tau-a, tau-b and Jiang et al.'s granulated tau against values worked out by hand; their bootstrap
intervals against exact resampling, degenerate cases and a known population tau."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound_lab.correlation import (
    Verdict,
    bootstrap_counts,
    compare_taus,
    correlate,
    granulated_tau,
    group_mean_draws,
    kendall_tau_a,
    kendall_tau_b,
    percentile_interval,
    tau_b_draws,
)


def test_tau_without_ties() -> None:
    # pairs of (1,2,3,4) against (1,3,2,4): 5 concordant, 1 discordant (the pair 2-3) of 6
    assert kendall_tau_a([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_tau_with_ties() -> None:
    # x = (1,1,2,3), y = (1,2,2,3): pair (0,1) tied in x, pair (1,2) tied in y, the other 4 concordant.
    # tau-a = 4 / 6; tau-b = 4 / sqrt(5 * 5).
    x, y = [1, 1, 2, 3], [1, 2, 2, 3]
    assert kendall_tau_a(x, y) == pytest.approx(4 / 6)
    assert kendall_tau_b(x, y) == pytest.approx(0.8)
    assert kendall_tau_b([1, 1, 2, 2], [1, 1, 2, 2]) == pytest.approx(1.0)  # tau-b corrects for ties
    assert kendall_tau_a([1, 1, 2, 2], [1, 1, 2, 2]) == pytest.approx(4 / 6)


def test_tau_of_a_constant_is_undefined_for_b_and_zero_for_a() -> None:
    assert math.isnan(kendall_tau_b([5, 5, 5], [1, 2, 3]))
    assert kendall_tau_a([5, 5, 5], [1, 2, 3]) == 0.0
    assert math.isnan(kendall_tau_a([1], [2]))


RUNS = [  # axes a and b, a measure, the gap
    ({"a": 0, "b": 0}, 1.0, 0.1),
    ({"a": 1, "b": 0}, 2.0, 0.2),
    ({"a": 0, "b": 1}, 3.0, 0.4),
    ({"a": 1, "b": 1}, 1.0, 0.3),
    ({"a": 2, "b": 2}, 9.0, 0.0),  # shares no other-axis values with anyone: in no group
]


def test_granulated_tau_by_hand() -> None:
    keys = [k for k, _, _ in RUNS]
    measure = np.array([m for _, m, _ in RUNS])
    gap = np.array([g for _, _, g in RUNS])
    total, axes, _ = granulated_tau(measure, gap, keys, ("a", "b"))
    # axis a: groups b=0 (runs 0,1: concordant, tau 1) and b=1 (runs 2,3: 3>1 with .4>.3, tau 1): psi_a = 1
    # axis b: groups a=0 (runs 0,2: tau 1) and a=1 (runs 1,3: 2>1 but .2<.3, tau -1): psi_b = 0
    assert [(a.axis, a.tau, a.groups, a.runs) for a in axes] == [("a", 1.0, 2, 4), ("b", 0.0, 2, 4)]
    assert total == pytest.approx(0.5)


def test_groups_need_the_other_axes_and_fixed_settings_to_match() -> None:
    keys = [{"a": 0, "fixed": "x"}, {"a": 1, "fixed": "y"}, {"a": 0, "fixed": "y"}, {"a": 2, "fixed": "y"}]
    total, axes, _ = granulated_tau(np.array([1.0, 2.0, 3.0, 3.0]), np.array([0.0, 1.0, 2.0, 0.5]), keys, ("a",))
    # only the three runs with fixed = "y" form a group: measure (2, 3, 3) against gap (1, 2, 0.5):
    # pairs (1,2) concordant, (1,3) discordant, (2,3) tied in the measure -> tau-a = 0 / 3
    assert (axes[0].groups, axes[0].runs) == (1, 3)
    assert total == pytest.approx(0.0)


def test_correlate_counts_runs_and_drops_non_finite_values() -> None:
    keys = [k for k, _, _ in RUNS]
    gap = [g for _, _, g in RUNS]
    measures = {"m": [m for _, m, _ in RUNS], "constant": [7.0] * 5, "broken": [1.0, 2.0, math.inf, 1.0, 9.0]}
    table = {c.measure: c for c in correlate(measures, gap, keys, ("a", "b"))}
    m = table["m"]
    # all five runs: measure (1,2,3,1,9) against gap (.1,.2,.4,.3,0)
    x, y = np.array(measures["m"]), np.array(gap)
    s = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(5) for j in range(i + 1, 5))
    assert s == -1  # pairs with run 4 (largest measure, smallest gap) are all discordant: 3 - 4
    assert m.kendall_tau_a == pytest.approx(-1 / 10)
    assert m.kendall_tau == pytest.approx(-1 / math.sqrt(9 * 10))  # one measure tie (runs 0 and 3)
    assert (m.runs, m.granulated_tau, m.groups) == pytest.approx((5, 0.5, 4))
    assert math.isnan(table["constant"].kendall_tau) and table["constant"].granulated_tau == 0.0
    assert table["broken"].runs == 4


# --- bootstrap intervals ---------------------------------------------------------------------------


def test_draws_of_tau_b_equal_tau_b_of_the_resampled_runs() -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(0, 6, 30).astype(float)  # ties in both
    y = x + rng.integers(0, 4, 30)
    counts = bootstrap_counts(30, draws=25, seed=9)
    draws = tau_b_draws(x, y, counts)
    for c, tau in zip(counts.astype(int), draws, strict=True):
        rows = np.repeat(np.arange(30), c)  # the drawn runs, each as often as it was drawn
        assert tau == pytest.approx(kendall_tau_b(x[rows], y[rows]), rel=1e-12)


def test_perfect_orders_have_degenerate_intervals() -> None:
    gap = np.arange(20.0)
    keys = [{"a": i % 2, "b": i // 2} for i in range(20)]
    up, down = correlate({"up": gap**2, "down": -gap}, gap, keys, ("a", "b"))
    assert (up.kendall_tau_ci.low, up.kendall_tau_ci.high) == (1.0, 1.0)
    assert (down.kendall_tau_ci.low, down.kendall_tau_ci.high) == (-1.0, -1.0)
    assert (up.granulated_tau, up.granulated_tau_ci.low, up.granulated_tau_ci.high) == (1.0, 1.0, 1.0)


def _normal_pairs(rng: np.random.Generator, rho: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal(n)
    return x, rho * x + math.sqrt(1 - rho**2) * rng.standard_normal(n)


def test_intervals_cover_a_known_tau() -> None:
    # for a bivariate normal with correlation rho, the population tau is (2 / pi) arcsin(rho)
    rho = 0.6
    tau = 2 / math.pi * math.asin(rho)  # 0.4097
    rng = np.random.default_rng(0)
    x, y = _normal_pairs(rng, rho, 400)
    interval = percentile_interval(tau_b_draws(x, y, bootstrap_counts(400, 1000, 1)))
    assert interval.contains(tau) and 0.08 < interval.high - interval.low < 0.2
    covered = 0
    for _ in range(200):  # 200 samples of 60 runs: the 95 % interval should hold tau about 190 times
        x, y = _normal_pairs(rng, rho, 60)
        covered += percentile_interval(
            tau_b_draws(x, y, bootstrap_counts(60, 500, int(rng.integers(1 << 30))))
        ).contains(tau)
    assert 176 <= covered <= 199  # 95 % +- 3.2 binomial standard deviations (percentile intervals run a bit short)


def test_group_bootstrap_of_two_opposite_groups() -> None:
    # psi over groups with tau +1 and -1: a draw of two groups gives +1, 0 or -1 with probability 1/4, 1/2,
    # 1/4, so the 2.5 % and 97.5 % percentiles are -1 and +1 and the mean of the draws is near 0.
    draws = group_mean_draws(np.array([1.0, -1.0]), draws=4000, seed=3)
    assert set(np.unique(draws)) == {-1.0, 0.0, 1.0}
    assert np.mean(draws == 0.0) == pytest.approx(0.5, abs=0.03)
    interval = percentile_interval(draws)
    assert (interval.low, interval.high) == (-1.0, 1.0)
    keys = [{"a": 0, "b": 0}, {"a": 1, "b": 0}, {"a": 0, "b": 1}, {"a": 1, "b": 1}]
    _, (axis_a, _), _ = granulated_tau(np.array([1.0, 2.0, 2.0, 1.0]), np.array([0.0, 1.0, 0.0, 1.0]), keys, ("a", "b"))
    assert (axis_a.tau, axis_a.groups, axis_a.ci.low, axis_a.ci.high) == (0.0, 2, -1.0, 1.0)


def test_kendall_tau_b_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats", reason="scipy is not installed; the lab itself does not need it")
    rng = np.random.default_rng(2)
    for n in (5, 17, 48):
        x = rng.integers(0, 5, n).astype(float)
        y = 0.5 * x + rng.integers(0, 3, n)
        assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, rel=1e-12)


def test_paired_differences() -> None:
    rng = np.random.default_rng(5)
    gap = rng.random(40)
    keys = [{"a": i % 4, "b": i // 4} for i in range(40)]
    noisy = gap + 0.3 * rng.standard_normal(40)
    (single,) = correlate({"noisy": noisy}, gap, keys, ("a", "b"))
    itself = compare_taus("noisy", noisy, "noisy", noisy, gap, keys, ("a", "b"))
    assert (itself.kendall_tau, itself.kendall_tau_ci.low, itself.kendall_tau_ci.high) == (0.0, 0.0, 0.0)
    assert itself.kendall_verdict is Verdict.INDISTINGUISHABLE
    # against its own negation: tau - (-tau) = 2 tau on every draw, so the interval doubles too
    mirrored = compare_taus("noisy", noisy, "negated", -noisy, gap, keys, ("a", "b"))
    assert mirrored.kendall_tau == pytest.approx(2 * single.kendall_tau)
    assert mirrored.kendall_tau_ci.low == pytest.approx(2 * single.kendall_tau_ci.low)
    assert mirrored.kendall_tau_ci.high == pytest.approx(2 * single.kendall_tau_ci.high)
    assert mirrored.granulated_tau == pytest.approx(2 * single.granulated_tau)
    assert mirrored.kendall_verdict is Verdict.BETTER and mirrored.granulated_verdict is Verdict.BETTER
    worse = compare_taus("random", rng.random(40), "gap", gap, gap, keys, ("a", "b"))
    assert worse.kendall_verdict is Verdict.WORSE and worse.kendall_tau_ci.high < 0
    # runs where either measure is missing are left out of both
    holes = noisy.copy()
    holes[:5] = np.nan
    assert compare_taus("holes", holes, "noisy", noisy, gap, keys, ("a", "b")).runs == 35


# --- paired tests and Holm's adjustment ------------------------------------------------------------------


def test_holm_multiplies_the_k_th_smallest_p_value_by_m_minus_k_plus_one_and_keeps_the_order() -> None:
    from specbound_lab.correlation import holm

    adjusted = holm([0.04, 0.001, 0.03, math.nan, 0.2])  # m = 4 (the NaN is not a test)
    # sorted 0.001, 0.03, 0.04, 0.2 -> 0.004, 0.09, max(0.08, 0.09) = 0.09, max(0.2, 0.09) = 0.2
    np.testing.assert_allclose(adjusted[[1, 2, 0, 4]], [0.004, 0.09, 0.09, 0.2], rtol=0, atol=1e-12)
    assert math.isnan(adjusted[3])
    np.testing.assert_allclose(holm([0.3, 0.2]), [0.4, 0.4], rtol=0, atol=1e-12)  # 0.2 x 2, then max(0.3, 0.4)
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0]  # capped at 1


def test_the_bootstrap_p_value_is_twice_the_smaller_tail_with_the_add_one_correction() -> None:
    from specbound_lab.correlation import bootstrap_p_value

    draws = np.array([-0.2, 0.1, 0.3, 0.4, 0.5, 0.0, 0.7, 0.9, 1.1])  # two draws ≤ 0 of nine
    assert bootstrap_p_value(draws) == pytest.approx(2 * 3 / 10, abs=1e-12)
    assert bootstrap_p_value(np.full(19, 1.0)) == pytest.approx(0.1, abs=1e-12)  # 2 (0 + 1) / 20
    assert math.isnan(bootstrap_p_value([math.nan]))


def test_a_candidate_that_clears_alone_is_not_said_to_beat_among_twenty() -> None:
    """Twenty candidates, one of them with a bootstrap p-value of 0.01: alone it beats the baseline; among
    twenty, Holm multiplies its p-value by 20 and it no longer does, and the family is stated."""
    from specbound_lab.correlation import PairedTest, Verdict, paired_tests

    rng = np.random.default_rng(1)
    lucky = np.concatenate([np.full(9, -0.01), rng.uniform(0.01, 0.2, 990)])  # 9 of 999 at or below 0
    alone = paired_tests({"lucky": (0.1, lucky)}, "inverse_n")
    assert alone[0].p_value == pytest.approx(2 * 10 / 1000, abs=1e-12) and alone[0].verdict is Verdict.BETTER
    others = {f"m{k}": (0.0, rng.normal(0.0, 0.05, 999)) for k in range(19)}
    among: tuple[PairedTest, ...] = paired_tests({"lucky": (0.1, lucky), **others}, "inverse_n")
    test = next(t for t in among if t.measure == "lucky")
    assert test.family == 20 and test.p_holm == pytest.approx(20 * test.p_value, abs=1e-12)
    assert test.verdict is Verdict.INDISTINGUISHABLE
    # a sign-error: lower is better, so the tests see the difference turned
    (lower,) = paired_tests({"a": (-0.3, np.full(99, -0.3))}, "b", higher_is_better=False)
    assert lower.difference == pytest.approx(0.3) and lower.verdict is Verdict.BETTER


def test_tau_b_differences_are_paired_over_the_same_configuration_draws() -> None:
    from specbound_lab.correlation import cluster_counts, tau_b_differences, tau_b_draws

    rng = np.random.default_rng(2)
    gap = rng.normal(size=12)
    a, b = gap + rng.normal(0, 0.3, 12), rng.normal(size=12)
    clusters = [k // 3 for k in range(12)]
    observed, sample = tau_b_differences({"a": a}, b, gap, clusters=clusters, draws=300, seed=5)["a"]
    assert observed == pytest.approx(kendall_tau_b(a, gap) - kendall_tau_b(b, gap), abs=1e-12)
    counts = cluster_counts(clusters, 12, 300, 5)
    np.testing.assert_allclose(sample, tau_b_draws(a, gap, counts) - tau_b_draws(b, gap, counts), atol=1e-12)
