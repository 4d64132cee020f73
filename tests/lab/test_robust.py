"""Dziugaite et al.'s robust view (2020, §3-4): couplings seed for seed, ties ½, a noise filter, a minimum
number of pairs, and the distribution of sign-errors over couplings; checked on tables built by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from specbound_lab.robust import (
    MIN_COUPLED_PAIRS,
    NOISE_Z,
    RobustSummary,
    coupled_sign_errors,
    couplings,
    robust_summaries,
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


def test_the_robust_sentence_compares_measures_on_the_same_couplings() -> None:
    """A measure recorded in fewer environments (fewer couplings) is not crowned on its own couplings:
    the best is the best among the measures on every coupling, and the others are named apart."""
    from specbound_lab.views import robust_sentence

    def row(measure: str, errors: tuple[float, ...]) -> RobustSummary:
        return RobustSummary(measure, errors, ("n_train",) * len(errors), ("threshold/bert",) * len(errors))

    rows = [
        row("ours", (0.2, 0.4, 0.0, 0.2)),
        row("edelman", (0.5, 0.5, 0.5, 0.5)),
        row("inverse_n", (0.5, 0.5, 0.5, 0.5)),
        row("ours_init", (0.0,)),  # perfect, on one coupling only
    ]
    text = robust_sentence(rows)
    assert text.startswith("Over 4 couplings of the fitted environments, ours has the smallest mean sign-error, 0.20")
    assert "1 measure recorded in fewer environments (ours_init) stands on fewer couplings and is left out" in text
