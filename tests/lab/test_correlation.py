"""Kendall tau-a, tau-b and Jiang et al.'s granulated tau against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.lab.correlation import correlate, granulated_tau, kendall_tau_a, kendall_tau_b


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
    total, axes = granulated_tau(measure, gap, keys, ("a", "b"))
    # axis a: groups b=0 (runs 0,1: concordant, tau 1) and b=1 (runs 2,3: 3>1 with .4>.3, tau 1): psi_a = 1
    # axis b: groups a=0 (runs 0,2: tau 1) and a=1 (runs 1,3: 2>1 but .2<.3, tau -1): psi_b = 0
    assert [(a.axis, a.tau, a.groups, a.runs) for a in axes] == [("a", 1.0, 2, 4), ("b", 0.0, 2, 4)]
    assert total == pytest.approx(0.5)


def test_groups_need_the_other_axes_and_fixed_settings_to_match() -> None:
    keys = [{"a": 0, "fixed": "x"}, {"a": 1, "fixed": "y"}, {"a": 0, "fixed": "y"}, {"a": 2, "fixed": "y"}]
    total, axes = granulated_tau(np.array([1.0, 2.0, 3.0, 3.0]), np.array([0.0, 1.0, 2.0, 0.5]), keys, ("a",))
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
    assert (m.runs, m.granulated_tau, m.groups) == (5, pytest.approx(0.5), 4)
    assert math.isnan(table["constant"].kendall_tau) and table["constant"].granulated_tau == 0.0
    assert table["broken"].runs == 4
