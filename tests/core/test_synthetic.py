"""The teaching playground's spectra and curves follow the closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.core.synthetic import Decay, contribution_curve, synthetic_spectrum


def test_decay_laws() -> None:
    np.testing.assert_allclose(synthetic_spectrum(3, Decay.FLAT, 5.0, top=2.0), [2, 2, 2])
    np.testing.assert_allclose(synthetic_spectrum(3, Decay.POWER, 1.0), [1, 1 / 2, 1 / 3])
    np.testing.assert_allclose(synthetic_spectrum(3, Decay.EXPONENTIAL, math.log(2)), [1, 1 / 2, 1 / 4])
    np.testing.assert_allclose(synthetic_spectrum(8, Decay.STEP, 2.0), [1, 1] + [0.01] * 6)
    assert synthetic_spectrum(0, Decay.FLAT, 1.0).size == 0


def test_curve_closed_forms() -> None:
    sv = synthetic_spectrum(16, Decay.POWER, 1.0, top=3.0)
    n, s = 64, 50.0
    curve = contribution_curve(sv, hidden_size=n, scale=s, grid_m=4)
    assert curve.rank == 16
    assert curve.grid_contribution[0] == pytest.approx(math.sqrt(16 * n))
    assert curve.grid_contribution[4] == pytest.approx((sv.sum() * s) ** (1 / 3) * n ** (2 / 3))
    assert curve.grid_contribution[8] == pytest.approx(math.sqrt(math.sqrt((sv**2).sum()) * s) * n**0.75)
    assert curve.p_opt == curve.grid[np.argmin(curve.grid_contribution)]


def test_which_p_wins_depends_on_the_scale() -> None:
    sv = synthetic_spectrum(32, Decay.EXPONENTIAL, 0.5)
    assert contribution_curve(sv, hidden_size=128, scale=1e6, grid_m=8).p_opt == 0.0  # large s: rank wins
    assert contribution_curve(sv, hidden_size=128, scale=1e-6, grid_m=8).p_opt == 2.0  # tiny s: norm wins


def test_playground_figure_carries_the_curve() -> None:
    from specbound.present.figures.theory import playground_figure

    sv = synthetic_spectrum(8, Decay.POWER, 1.0)
    curve = contribution_curve(sv, hidden_size=32, scale=10.0, grid_m=3)
    fig = playground_figure(sv, curve)
    traces = {t.name.split(" =")[0]: t for t in fig.data}
    np.testing.assert_allclose(traces["σᵢ"].y, sv)
    np.testing.assert_allclose(traces["grid P_m"].y, curve.grid_contribution)
    assert traces["p*"].x[0] == curve.p_opt
