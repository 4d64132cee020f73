"""Dziugaite et al.'s robust view (2020, §3-4): couplings seed for seed, ties ½, a noise filter, a minimum
number of pairs, and the distribution of sign-errors over couplings; checked on tables built by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from specbound_lab.correlation import Verdict
from specbound_lab.robust import (
    MIN_COUPLED_PAIRS,
    NOISE_Z,
    RobustSummary,
    coupled_sign_errors,
    couplings,
    mean_difference_draws,
    robust_summaries,
    robust_verdict,
)


def _frame(rows: list[tuple[int, int, int, float, float]]) -> pd.DataFrame:
    """Final runs.csv rows of one environment: (layers, n_train, seed, gap, test_error_se)."""
    return pd.DataFrame(
        [
            {"task": "threshold", "family": "bert", "layers": layers, "hidden": 32, "heads": 2, "n_train": n,
             "label_noise": 0.0, "seed": seed, "gap": gap, "test_error_se": se}
            for layers, n, seed, gap, se in rows
        ]
    )  # fmt: skip


#: 2 depths x 2 sizes x 2 seeds; the gap grows with depth and shrinks with n, well outside noise
GRID = [
    (1, 100, 0, 0.20, 0.001), (1, 100, 1, 0.22, 0.001),
    (2, 100, 0, 0.30, 0.001), (2, 100, 1, 0.33, 0.001),
    (1, 400, 0, 0.10, 0.001), (1, 400, 1, 0.11, 0.001),
    (2, 400, 0, 0.15, 0.001), (2, 400, 1, 0.16, 0.001),
]  # fmt: skip


def test_a_coupling_is_two_configurations_that_differ_in_one_hyperparameter_seed_for_seed() -> None:
    found = couplings(_frame(GRID))
    # (1,100)-(2,100) and (1,400)-(2,400) along layers; (1,100)-(1,400) and (2,100)-(2,400) along n;
    # the diagonal (1,100)-(2,400) differs in two and is no coupling
    assert sorted(c.axis for c in found) == ["layers", "layers", "n_train", "n_train"]
    for c in found:
        assert len(c.pairs) == 2 and c.noise == (False, False)
        low, high = json.loads(c.low), json.loads(c.high)
        assert [k for k in low if low[k] != high[k]] == [c.axis] and low[c.axis] < high[c.axis]
        for i, j in c.pairs:  # seed for seed, the lower value of the axis first
            assert GRID[i][2] == GRID[j][2]
    assert {c.environment for c in found} == {"threshold/bert"}


def test_sign_errors_count_a_tie_as_half_and_need_enough_pairs() -> None:
    frame = _frame(GRID)
    gap = frame["gap"].to_numpy()
    found = couplings(frame)
    layers_100 = next(c for c in found if c.axis == "layers" and json.loads(c.low)["n_train"] == 100)
    (i0, j0), (i1, j1) = layers_100.pairs
    measure = np.arange(8, dtype=float)  # grows along the table: layers 1 -> 2 is up, as the gap
    (agrees,) = coupled_sign_errors(measure, gap, [layers_100])
    assert (agrees.sign_error, agrees.kept, agrees.counted) == (0.0, 2, True)
    measure[j1] = measure[i1]  # seed 1's pair tied in the measure: 1/2
    (tied,) = coupled_sign_errors(measure, gap, [layers_100])
    assert tied.sign_error == pytest.approx((0.0 + 0.5) / 2)
    measure[j0] = measure[i0] - 1.0  # seed 0's pair ordered against the gap: 1
    (against,) = coupled_sign_errors(measure, gap, [layers_100])
    assert against.sign_error == pytest.approx((1.0 + 0.5) / 2)
    measure[i1] = math.nan  # a missing (or censored) value: that pair is not kept, and the coupling too few
    (short,) = coupled_sign_errors(measure, gap, [layers_100])
    assert (short.kept, short.censored, short.counted) == (1, 1, False) and math.isnan(short.sign_error)
    assert MIN_COUPLED_PAIRS == 2


def test_pairs_within_noise_are_left_out_and_counted() -> None:
    rows = [list(r) for r in GRID]
    rows[2][3] = rows[0][3] + 0.5 * NOISE_Z * math.hypot(0.01, 0.01)  # layers 1 -> 2 at n 100, seed 0: noise
    rows[0][4] = rows[2][4] = 0.01
    frame = _frame([tuple(r) for r in rows])  # type: ignore[misc]
    found = couplings(frame)
    layers_100 = next(c for c in found if c.axis == "layers" and json.loads(c.low)["n_train"] == 100)
    assert layers_100.noise == (True, False)
    (error,) = coupled_sign_errors(np.arange(8, dtype=float), frame["gap"].to_numpy(), [layers_100])
    assert (error.kept, error.counted) == (1, False)  # one pair left: under the minimum
    assert not any(any(c.noise) for c in couplings(frame, noise_filter=False))


def test_the_summary_is_the_distribution_over_couplings() -> None:
    frame = _frame(GRID)
    gap = frame["gap"].to_numpy()
    found = couplings(frame)
    errors = coupled_sign_errors(-gap, gap, found) + coupled_sign_errors(gap, gap, found)  # 1 four times, 0 four
    (summary,) = robust_summaries({"m": errors})
    assert summary.couplings == 8 and summary.mean == 0.5 and summary.max == 1.0
    assert summary.p90 == pytest.approx(np.percentile([0, 0, 0, 0, 1, 1, 1, 1], 90)) == 1.0
    assert summary.by_axis() == {"layers": 0.5, "n_train": 0.5}
    by_hand = RobustSummary("m", (0.0, 0.5, 1.0, 0.25), ("a", "a", "b", "b"), ("e",) * 4)
    assert by_hand.by_axis() == {"a": 0.25, "b": 0.625} and by_hand.p90 == pytest.approx(0.85)
    assert math.isnan(RobustSummary("m", (), (), ()).mean)


def test_two_runs_of_one_configuration_and_seed_are_refused_by_name() -> None:
    from specbound_lab.train import LabError

    frame = _frame([*GRID, GRID[0]])
    frame["run"] = [f"run-{k}" for k in range(len(frame))]
    with pytest.raises(LabError, match="runs run-0 and run-8 share every hyperparameter and the seed"):
        couplings(frame)


def test_an_exact_tie_of_the_gaps_is_never_a_kept_pair() -> None:
    rows = [list(r) for r in GRID]
    rows[2][3] = rows[0][3]  # two equal gaps: no order to compare with, even without a noise filter
    found = couplings(_frame([tuple(r) for r in rows]), noise_filter=False)  # type: ignore[misc]
    layers_100 = next(c for c in found if c.axis == "layers" and json.loads(c.low)["n_train"] == 100)
    assert layers_100.noise == (True, False)


def _row(measure: str, errors: tuple[float, ...], axis: str = "n_train") -> RobustSummary:
    """A measure's sign-errors on couplings of distinct configurations (coupling k: c{2k} against c{2k+1})."""
    sides = tuple((f"c{2 * k}", f"c{2 * k + 1}") for k in range(len(errors)))
    return RobustSummary(measure, errors, (axis,) * len(errors), ("threshold/bert",) * len(errors), sides)


def test_the_robust_sentence_compares_measures_on_the_same_couplings() -> None:
    """A measure recorded in fewer environments (fewer couplings) is not crowned on its own couplings:
    the leader is the leader among the measures on every coupling, and the others are named apart."""
    from specbound_lab.views import robust_sentence

    rows = [
        _row("ours", (0.2, 0.4, 0.0, 0.2)),
        _row("edelman", (0.5, 0.5, 0.5, 0.5)),
        _row("inverse_n", (0.5, 0.5, 0.5, 0.5)),
        _row("ours_init", (0.0,)),  # perfect, on one coupling only
    ]
    text = robust_sentence(rows)
    assert text.startswith("Over 4 couplings of the environments that count")
    assert "the smallest worst case, SPEC §13's criterion, is 0.40 (ours)" in text
    assert "The smallest mean of a measure is ours's, 0.20; the runner-up, edelman, has 0.50" in text
    assert "1 measure recorded in fewer environments (ours_init) stands on fewer couplings and is left out" in text


def test_the_robust_view_leads_with_the_worst_case_and_names_baselines_there() -> None:
    """1/n never errs worse than chance (0.5 on every coupling, a tie in a coupling along another axis) while
    a measure that is right on average errs fully on one coupling: the worst case names 1/n, the mean ours."""
    reading = robust_verdict([_row("ours", (0.0,) * 9 + (1.0,)), _row("inverse_n", (0.5,) * 10)])
    assert reading is not None
    assert [r.measure for r in reading.worst] == ["inverse_n"] and reading.worst[0].max == 0.5
    assert reading.leader.measure == "ours" and reading.leader.mean == pytest.approx(0.1, abs=1e-12)
    assert reading.baseline is not None and reading.baseline.measure == "inverse_n"


def test_a_best_is_named_only_where_its_paired_interval_excludes_the_runner_up() -> None:
    clear = robust_verdict([_row("ours", (0.0,) * 12), _row("edelman", (0.5,) * 12)])
    assert clear is not None and clear.best is not None and clear.best.measure == "ours"
    test = clear.against_runner_up
    assert test is not None and test.difference == pytest.approx(0.5, abs=1e-12)  # runner-up − leader
    assert test.ci.low == pytest.approx(0.5, abs=1e-12) and test.verdict is Verdict.BETTER
    # a leader by 0.05 on average whose coupling-to-coupling differences swing by ±0.5: not told apart
    close = robust_verdict([_row("ours", (0.0, 1.0) * 6), _row("edelman", (0.55, 0.55) * 6)])
    assert close is not None and close.leader.measure == "ours" and close.best is None
    assert close.against_runner_up is not None and close.against_runner_up.ci.low < 0 < close.against_runner_up.ci.high


def test_the_paired_interval_resamples_configurations_so_couplings_sharing_one_move_together() -> None:
    """Two couplings share configuration "b" (a–b and b–c): a draw weighs a coupling by the product of its
    two configurations' multiplicities, so a draw's mean is Σ w e / Σ w with those weights, exactly."""
    sides = (("a", "b"), ("b", "c"))
    one = RobustSummary("x", (1.0, 0.0), ("n_train",) * 2, ("e",) * 2, sides)
    two = RobustSummary("y", (0.0, 0.0), ("n_train",) * 2, ("e",) * 2, sides)
    observed, sample = mean_difference_draws(one, two, draws=200, seed=3)
    assert observed == pytest.approx(0.5, abs=1e-12)
    counts = np.random.default_rng(3).multinomial(3, np.full(3, 1 / 3), size=200).astype(float)  # a, b, c
    w_ab, w_bc = counts[:, 0] * counts[:, 1], counts[:, 1] * counts[:, 2]
    total = w_ab + w_bc
    expected = np.divide(w_ab * 1.0, total, out=np.full(200, np.nan), where=total > 0)
    np.testing.assert_allclose(sample, expected, rtol=0, atol=1e-12)


def test_the_leader_against_the_best_baseline_is_holm_adjusted_over_every_measure_compared() -> None:
    """The leader is picked among the measures, so its test against the baseline is one of a family: with
    twenty measures its p-value is multiplied by up to twenty, and the family is stated."""
    rows = [_row("inverse_n", (0.5,) * 12), _row("ours", (0.0,) * 12)]
    rows += [_row(f"m{k}", (0.5,) * 12) for k in range(19)]  # nineteen more measures at chance
    reading = robust_verdict(rows)
    assert reading is not None and reading.baseline is not None and reading.baseline.measure == "inverse_n"
    test = reading.against_baseline
    assert test is not None and test.measure == "ours" and test.family == 20
    assert test.p_holm == pytest.approx(min(1.0, 20 * test.p_value), abs=1e-12) and test.verdict is Verdict.BETTER
