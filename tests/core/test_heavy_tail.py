"""Power-law fits (Clauset et al. 2009) against closed forms, synthetic Pareto samples with known α, and
WeightWatcher's own fitter where it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.core.heavy_tail import (
    MIN_TAIL,
    PowerLawRule,
    fit_power_law,
    fit_strict,
    fit_weightwatcher,
    power_law_alpha,
    spectrum_alphas,
)


def _pareto(rng: np.random.Generator, alpha: float, xmin: float, n: int) -> np.ndarray:
    """Inverse-CDF draws of p(x) ∝ x^(-alpha) on [xmin, inf): x = xmin (1 - u)^(-1 / (alpha - 1))."""
    return xmin * (1.0 - rng.random(n)) ** (-1.0 / (alpha - 1.0))


def test_the_mle_at_a_given_xmin_is_the_closed_form() -> None:
    # x = 1, e, e^2 with xmin = 1: sum of ln(x / xmin) = 0 + 1 + 2 = 3, so alpha = 1 + 3 / 3 = 2
    assert power_law_alpha(np.array([1.0, math.e, math.e**2]), 1.0) == pytest.approx(2.0)
    # values below xmin do not count; a tail of equal values has no finite exponent
    assert power_law_alpha(np.array([0.5, 1.0, math.e, math.e**2]), 1.0) == pytest.approx(2.0)
    assert power_law_alpha(np.array([3.0, 3.0]), 3.0) == math.inf


@pytest.mark.parametrize("rule", list(PowerLawRule))
@pytest.mark.parametrize("alpha", [1.5, 2.5, 4.0])
def test_pareto_samples_give_their_alpha_and_xmin(alpha: float, rule: PowerLawRule) -> None:
    rng = np.random.default_rng(int(alpha * 10))
    fit = fit_power_law(_pareto(rng, alpha, 2.0, 4000), rule)
    assert fit is not None
    assert abs(fit.alpha - alpha) < 4 * fit.alpha_se  # the MLE's standard error (alpha - 1) / sqrt(n)
    assert fit.alpha_se == pytest.approx((fit.alpha - 1) / math.sqrt(fit.tail))
    assert fit.xmin >= 2.0 and fit.tail > 1000  # the whole sample is a power law: a large tail
    assert fit.ks_distance < 2.0 / math.sqrt(fit.tail)


@pytest.mark.parametrize("rule", list(PowerLawRule))
def test_xmin_is_found_above_a_body_that_is_no_power_law(rule: PowerLawRule) -> None:
    rng = np.random.default_rng(7)
    body = rng.uniform(0.05, 1.0, 3000)  # below 1: flat, no power law
    tail = _pareto(rng, 3.0, 1.0, 1500)
    fit = fit_power_law(np.concatenate([body, tail]), rule)
    assert fit is not None
    assert 0.9 < fit.xmin < 1.3
    assert abs(fit.alpha - 3.0) < 4 * fit.alpha_se
    # fitted from the lowest value instead, the exponent is far off: the KS choice is what finds it
    assert abs(power_law_alpha(np.concatenate([body, tail]), 0.05) - 3.0) > 1.0


def test_small_spectra_are_skipped_and_counted() -> None:
    strict = PowerLawRule.STRICT
    assert fit_strict(np.arange(1.0, MIN_TAIL)) is None  # nine positive values
    assert fit_strict(np.concatenate([np.zeros(20), np.arange(1.0, MIN_TAIL)])) is None  # zeros do not count
    # WeightWatcher fits down to 2 values above its floor of 1e-5
    assert fit_weightwatcher(np.array([1e-5, 1e-6, 3.0])) is None and fit_weightwatcher(np.array([1e-5, 3.0, 4.0]))
    rng = np.random.default_rng(1)
    big = np.sort(np.sqrt(_pareto(rng, 2.5, 1.0, 40)))[::-1]  # singular values whose squares are Pareto
    small = np.concatenate([np.linspace(2.0, 1.0, 6), np.zeros(34)])
    values = np.stack([big, small, big * 3.0])  # (3, 40)
    counted = values > 0
    result = spectrum_alphas(values, counted, strict)
    assert result.skipped == 1 and result.alpha.size == 2
    fit = fit_strict(big**2)
    assert fit is not None
    # scaling a matrix leaves alpha alone and adds log10(9) to log10 lambda_max
    np.testing.assert_allclose(result.alpha, [fit.alpha, fit.alpha], rtol=1e-9)
    top = float((big**2).max())
    np.testing.assert_allclose(result.weighted, [fit.alpha * math.log10(top), fit.alpha * math.log10(9 * top)])
    assert result.mean_alpha == pytest.approx(fit.alpha)
    assert math.isnan(spectrum_alphas(small[None, :], counted[1:2], strict).mean_alpha)
    # six eigenvalues: WeightWatcher fits the whole spectrum, bias-corrected (its small-sample branch)
    (six,) = spectrum_alphas(small[None, :], counted[1:2]).alpha
    eigenvalues = np.linspace(2.0, 1.0, 6) ** 2
    assert six == pytest.approx(1 + 5 / np.log(eigenvalues / eigenvalues.min()).sum(), rel=1e-14)


def test_agrees_with_the_powerlaw_package() -> None:
    powerlaw = pytest.importorskip(
        "powerlaw", reason="the powerlaw package is not installed (the lab does not need it)"
    )
    data = _pareto(np.random.default_rng(3), 2.2, 1.0, 500)
    for xmin in (1.0, 2.0):
        fitted = powerlaw.Fit(data, xmin=xmin, verbose=False).power_law.alpha  # powerlaw 2.0: not Fit.alpha
        assert power_law_alpha(data, xmin) == pytest.approx(fitted)


def test_the_rules_choose_different_tails_on_integers() -> None:
    # eigenvalues 1, 2, ..., 19 and 190 (20 values: WeightWatcher's standard branch). The outlier's step
    # counts in the two-sided distance only, so the rules part on the KS side, not on the tail floor
    values = np.concatenate([np.arange(1.0, 20.0), [190.0]])
    ww, strict = fit_weightwatcher(values), fit_strict(values)
    assert ww is not None and strict is not None
    assert (ww.xmin, ww.tail) == (8.0, 13) and (strict.xmin, strict.tail) == (6.0, 15)
    assert ww.alpha == pytest.approx(1 + 13 / np.log(values[7:] / 8.0).sum(), rel=1e-14)
    assert strict.alpha == pytest.approx(1 + 15 / np.log(values[5:] / 6.0).sum(), rel=1e-14)
    assert fit_strict(values, min_tail=2) == strict  # the floor of 10 is not what parts them
    # eigenvalues 1, ..., 20: here the floor of 10 alone parts them
    values = np.arange(1.0, 21.0)
    ww, strict = fit_weightwatcher(values), fit_strict(values)
    assert ww is not None and strict is not None
    assert (ww.xmin, ww.tail, strict.xmin, strict.tail) == (13.0, 8, 11.0, 10)
    assert ww.alpha == pytest.approx(1 + 8 / np.log(values[12:] / 13.0).sum(), rel=1e-14)
    assert fit_strict(values, min_tail=2) == ww


@pytest.mark.parametrize("ratio", [2.0, 10.0])
def test_the_rules_on_a_geometric_spectrum_in_closed_form(ratio: float) -> None:
    """λ_k = r^k, k = 0..15 (16 values: WeightWatcher's small-sample branch). A tail of n values has
    Σ ln(λ / λ_min) = ln r · n(n − 1)/2, so each rule's α and KS distance depend on n alone:

    WeightWatcher: α = 1 + (n − 1)/Σ = 1 + 2/(n ln r), P(λ_(k)) = 1 − e^(−2k/n), D = max_k |P − k/n|, n ≥ 8;
    strict: α = 1 + n/Σ = 1 + 2/((n − 1) ln r), P = 1 − e^(−2k/(n−1)), D = max_k max((k+1)/n − P, P − k/n), n ≥ 10.
    """
    values = ratio ** np.arange(16.0)

    def left_limit(n: int) -> float:
        k = np.arange(n)
        return float(np.abs(1 - np.exp(-2 * k / n) - k / n).max())

    def two_sided(n: int) -> float:
        k = np.arange(n)
        fitted = 1 - np.exp(-2 * k / (n - 1))
        return float(np.maximum((k + 1) / n - fitted, fitted - k / n).max())

    assert min(range(8, 17), key=left_limit) == 10 and min(range(10, 17), key=two_sided) == 16
    ww, strict = fit_weightwatcher(values), fit_strict(values)
    assert ww is not None and strict is not None
    assert (ww.tail, ww.xmin) == (10, ratio**6) and (strict.tail, strict.xmin) == (16, 1.0)
    assert ww.alpha == pytest.approx(1 + 2 / (10 * math.log(ratio)), rel=1e-12)
    assert strict.alpha == pytest.approx(1 + 2 / (15 * math.log(ratio)), rel=1e-12)
    assert ww.ks_distance == pytest.approx(left_limit(10), rel=1e-9)
    assert strict.ks_distance == pytest.approx(two_sided(16), rel=1e-9)


def _weightwatcher_spectra() -> list[np.ndarray]:
    """Spectra that reach every branch of WeightWatcher's fitter: Wishart (a body and its edge), Pareto,
    ties, values at its floor, a constant spectrum, and sizes from 2 to 60 (its small-sample branch below 20)."""
    rng = np.random.default_rng(11)
    out = [np.linalg.svd(rng.standard_normal((m, 2 * m)), compute_uv=False) ** 2 for m in (2, 5, 8, 12, 19, 20, 32, 60)]
    out += [_pareto(rng, a, 1.0, m) for a, m in ((1.5, 7), (2.5, 16), (3.0, 25), (2.0, 60))]
    out += [np.round(_pareto(rng, 2.0, 1.0, m), 1) for m in (12, 40)]  # ties
    out += [np.concatenate([np.full(10, 3.0), rng.uniform(1e-7, 2e-5, 10)]), np.full(25, 2.0)]
    out += [np.exp(rng.uniform(-14, 3, m)) for m in (9, 30)]  # some below the floor
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # its division by a constant tail's zero spread
def test_agrees_with_weightwatcher() -> None:
    weightwatcher = pytest.importorskip(
        "weightwatcher", reason="weightwatcher is not installed (the lab does not need it)"
    )
    import contextlib
    import io
    import logging

    logging.getLogger("weightwatcher").setLevel(logging.CRITICAL)
    watcher = weightwatcher.WeightWatcher()
    for values in _weightwatcher_spectra():
        with contextlib.redirect_stdout(io.StringIO()):  # its small-sample branch prints a line
            alpha, _, xmin, _, distance, _, tail, *_ = watcher.fit_powerlaw(values, plot=False, savefig=False)
        fit = fit_weightwatcher(values)
        assert fit is not None
        assert fit.xmin == xmin
        # its tail length counts every value >= xmin; the fit starts at one position of a repeated xmin
        assert fit.tail <= tail == np.count_nonzero(values >= xmin)
        assert fit.alpha == alpha or abs(fit.alpha - alpha) <= 1e-12 * max(1.0, abs(alpha))  # inf: a constant tail
        assert fit.ks_distance == pytest.approx(distance)


def test_the_power_law_table_keeps_each_matrix_s_fit() -> None:
    """Per matrix, the table holds fit_power_law's answer for its counted σ², NaN where the rule skips; the
    lab's α (a mean over the fitted matrices) is the mean of the table's column."""
    from specbound.core.heavy_tail import power_law_table, spectrum_alphas

    rng = np.random.default_rng(0)
    singular_values = np.zeros((3, 40))
    singular_values[0] = np.sort(rng.pareto(2.5, 40) + 1.0)[::-1]
    singular_values[1, :30] = np.sort(rng.pareto(1.5, 30) + 1.0)[::-1]
    singular_values[2, :1] = 2.0  # one eigenvalue: WeightWatcher's fit fails, the matrix is skipped
    counted = singular_values > 0
    table = power_law_table(singular_values, counted)
    for i in (0, 1):
        fit = fit_power_law(np.square(singular_values[i, counted[i]]))
        assert fit is not None
        assert (table.alpha[i], table.xmin[i], table.tail[i], table.distance[i]) == (
            fit.alpha,
            fit.xmin,
            fit.tail,
            fit.ks_distance,
        )
        assert table.alpha_weighted[i] == pytest.approx(fit.alpha * np.log10(singular_values[i, 0] ** 2), rel=1e-15)
    assert table.skipped.tolist() == [False, False, True] and table.tail[2] == 0
    lab = spectrum_alphas(singular_values, counted)
    assert lab.skipped == 1 and np.nanmean(table.alpha) == pytest.approx(lab.alpha.mean(), rel=1e-15)
