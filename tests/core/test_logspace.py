"""Log-space arithmetic: overflow-safe sums and conversions, exact at the float64 limits."""

from __future__ import annotations

import math

import numpy as np

from specbound.core.logspace import LOG_MAX, LOG_TINY, exp_array, exp_or_inf, logsumexp, safe_log, to_log10


def test_logsumexp_matches_the_plain_sum_and_survives_overflow() -> None:
    x = np.log([1.0, 2.0, 3.5])
    assert math.isclose(float(logsumexp(x)), math.log(6.5), rel_tol=1e-15)
    big = np.array([1000.0, 1000.0])  # e^1000 overflows float64; the sum of two is e^1000 * 2
    assert math.isclose(float(logsumexp(big)), 1000.0 + math.log(2.0), rel_tol=1e-15)
    np.testing.assert_allclose(logsumexp(np.log([[1.0, 3.0], [2.0, 2.0]]), axis=1), np.log([4.0, 4.0]))


def test_logsumexp_of_zeros_is_minus_infinity() -> None:
    assert float(logsumexp(np.array([-np.inf, -np.inf]))) == -math.inf
    assert float(logsumexp(np.array([-np.inf, 0.0]))) == 0.0


def test_limits_and_conversions() -> None:
    assert math.isclose(exp_or_inf(LOG_MAX - 1e-9), float(np.finfo(np.float64).max), rel_tol=1e-8)
    assert exp_or_inf(LOG_MAX + 1.0) == math.inf
    assert math.isclose(math.exp(LOG_TINY), np.finfo(np.float64).tiny, rel_tol=1e-12)
    np.testing.assert_array_equal(exp_array([0.0, 1e4]), [1.0, np.inf])
    np.testing.assert_allclose(to_log10(np.log([10.0, 1e300])), [1.0, 300.0], rtol=1e-14)
    assert to_log10(-np.inf) == -np.inf
    np.testing.assert_array_equal(safe_log([0.0, 1.0]), [-np.inf, 0.0])
