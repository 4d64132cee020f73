"""Power-law fits (Clauset et al. 2009) against closed forms and synthetic Pareto samples with known α."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.lab.heavy_tail import MIN_TAIL, fit_power_law, power_law_alpha, spectrum_alphas


def _pareto(rng: np.random.Generator, alpha: float, xmin: float, n: int) -> np.ndarray:
    """Inverse-CDF draws of p(x) ∝ x^(-alpha) on [xmin, inf): x = xmin (1 - u)^(-1 / (alpha - 1))."""
    return xmin * (1.0 - rng.random(n)) ** (-1.0 / (alpha - 1.0))


def test_the_mle_at_a_given_xmin_is_the_closed_form() -> None:
    # x = 1, e, e^2 with xmin = 1: sum of ln(x / xmin) = 0 + 1 + 2 = 3, so alpha = 1 + 3 / 3 = 2
    assert power_law_alpha(np.array([1.0, math.e, math.e**2]), 1.0) == pytest.approx(2.0)
    # values below xmin do not count; a tail of equal values has no finite exponent
    assert power_law_alpha(np.array([0.5, 1.0, math.e, math.e**2]), 1.0) == pytest.approx(2.0)
    assert power_law_alpha(np.array([3.0, 3.0]), 3.0) == math.inf


@pytest.mark.parametrize("alpha", [1.5, 2.5, 4.0])
def test_pareto_samples_give_their_alpha_and_xmin(alpha: float) -> None:
    rng = np.random.default_rng(int(alpha * 10))
    fit = fit_power_law(_pareto(rng, alpha, 2.0, 4000))
    assert fit is not None
    assert abs(fit.alpha - alpha) < 4 * fit.alpha_se  # the MLE's standard error (alpha - 1) / sqrt(n)
    assert fit.alpha_se == pytest.approx((fit.alpha - 1) / math.sqrt(fit.tail))
    assert fit.xmin >= 2.0 and fit.tail > 1000  # the whole sample is a power law: a large tail
    assert fit.ks_distance < 2.0 / math.sqrt(fit.tail)


def test_xmin_is_found_above_a_body_that_is_no_power_law() -> None:
    rng = np.random.default_rng(7)
    body = rng.uniform(0.05, 1.0, 3000)  # below 1: flat, no power law
    tail = _pareto(rng, 3.0, 1.0, 1500)
    fit = fit_power_law(np.concatenate([body, tail]))
    assert fit is not None
    assert 0.9 < fit.xmin < 1.3
    assert abs(fit.alpha - 3.0) < 4 * fit.alpha_se
    # fitted from the lowest value instead, the exponent is far off: the KS choice is what finds it
    assert abs(power_law_alpha(np.concatenate([body, tail]), 0.05) - 3.0) > 1.0


def test_small_spectra_are_skipped_and_counted() -> None:
    assert fit_power_law(np.arange(1.0, MIN_TAIL)) is None  # nine positive values
    assert fit_power_law(np.concatenate([np.zeros(20), np.arange(1.0, MIN_TAIL)])) is None  # zeros do not count
    rng = np.random.default_rng(1)
    big = np.sort(np.sqrt(_pareto(rng, 2.5, 1.0, 40)))[::-1]  # singular values whose squares are Pareto
    small = np.concatenate([np.linspace(2.0, 1.0, 6), np.zeros(34)])
    values = np.stack([big, small, big * 3.0])  # (3, 40)
    counted = values > 0
    result = spectrum_alphas(values, counted)
    assert result.skipped == 1 and result.alpha.size == 2
    fit = fit_power_law(big**2)
    assert fit is not None
    # scaling a matrix leaves alpha alone and adds log10(9) to log10 lambda_max
    np.testing.assert_allclose(result.alpha, [fit.alpha, fit.alpha], rtol=1e-9)
    top = float((big**2).max())
    np.testing.assert_allclose(result.weighted, [fit.alpha * math.log10(top), fit.alpha * math.log10(9 * top)])
    assert result.mean_alpha == pytest.approx(fit.alpha)
    assert math.isnan(spectrum_alphas(small[None, :], counted[1:2]).mean_alpha)


def test_agrees_with_the_powerlaw_package() -> None:
    powerlaw = pytest.importorskip(
        "powerlaw", reason="the powerlaw package is not installed (the lab does not need it)"
    )
    data = _pareto(np.random.default_rng(3), 2.2, 1.0, 500)
    for xmin in (1.0, 2.0):
        assert power_law_alpha(data, xmin) == pytest.approx(powerlaw.Fit(data, xmin=xmin, verbose=False).alpha)
