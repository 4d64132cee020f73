"""Whether intruder dimensions and the centred proxies order forgetting and the gap (SPEC §14b in the
fine-tuning environment, under §13b's rules), recomputed independently: τ_b by scipy's ``kendalltau``
(variant b) over the runs marked ``fitted`` in the shipped fine-tuning runs.csv, ties counted by a plain
loop, the strongest baseline and Holm's family size read from those numbers.

The shipped fine-tuning runs.csv gives the real design (16 configurations × 5 seeds, 73 of 80 runs
fitted, its measures and baselines) and its real intruder counts and forgetting, from which the shipped
forgetting.csv is recomputed. Beside it, the two columns are planted with a seeded generator as controls:
one forgetting outcome that intruders order by construction, and one drawn independently of everything.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from specbound_lab.reference import FINETUNE_REFERENCE_DIR, REFERENCE_DIR
from specbound_lab.registry import MEASURES, is_baseline
from specbound_lab.tables import FORGETTING_CSV, RUNS_CSV, forgetting_frame, read_runs_csv
from specbound_lab.verdict import (
    DIRECTION_CANDIDATES,
    MIN_SEEDS,
    ForgettingVerdict,
    Outcome,
    forgetting_verdicts,
)
from specbound_lab.views import forgetting_report, forgetting_sentences

#: τ from scipy and from the lab's own routines agree to rounding.
TAU_ATOL = 1e-12


def _final_rows(directory: Path = FINETUNE_REFERENCE_DIR) -> pd.DataFrame:
    frame = read_runs_csv(directory / RUNS_CSV)
    return frame[frame["final"]].reset_index(drop=True)


def _planted(ordered: bool, seed: int = 0) -> pd.DataFrame:
    """The shipped final rows with ``intruders`` (0-5, many ties) and ``base_task_error`` planted: rising
    with the intruders plus noise (``ordered``), or drawn independently of everything."""
    frame = _final_rows()
    rng = np.random.default_rng(seed)
    intruders = rng.integers(0, 6, len(frame)).astype(float)
    noise = rng.normal(0.0, 0.02, len(frame))
    forgetting = 0.05 + (0.03 * intruders if ordered else 0.0) + noise
    return frame.assign(intruders=intruders, base_task_error=np.clip(forgetting, 0.0, 1.0))


@pytest.fixture(scope="module")
def ordered() -> tuple[pd.DataFrame, ForgettingVerdict]:
    frame = _planted(ordered=True)
    (row,) = forgetting_verdicts(frame)
    return frame, row


def _scipy_tau(frame: pd.DataFrame, measure: str, outcome: str) -> tuple[float, int, int]:
    """(τ_b, runs, pairs tied in the measure) over the fitted runs where both are finite, by scipy and a loop."""
    fitted = frame[frame["fitted"].astype(bool)]
    spec = MEASURES[measure]
    x = fitted[spec.column].to_numpy(dtype=float) * spec.orientation
    y = fitted[outcome].to_numpy(dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    tied = sum(x[i] == x[j] for i in range(x.size) for j in range(i + 1, x.size))
    return float(kendalltau(x, y, variant="b").statistic), int(x.size), int(tied)


def test_every_tau_equals_scipys_over_the_fitted_runs_for_both_outcomes(
    ordered: tuple[pd.DataFrame, ForgettingVerdict],
) -> None:
    frame, row = ordered
    assert int(frame["fitted"].sum()) == 73 and len(frame) == 80  # the shipped design
    for verdict, outcome in ((row.forgetting, "base_task_error"), (row.gap, "gap")):
        assert verdict.outcome is Outcome(outcome)
        assert verdict.fitted_runs == 73 and verdict.runs == 80 and verdict.seeds == MIN_SEEDS
        names = [m.measure for m in verdict.measures]
        assert names[: len(DIRECTION_CANDIDATES)] == list(DIRECTION_CANDIDATES)
        assert {"params", "steps", "inverse_n", "train_loss"} <= set(names)  # the rank (trained parameters), steps
        for m in verdict.measures:
            tau, runs, tied = _scipy_tau(frame, m.measure, outcome)
            assert m.kendall_tau == pytest.approx(tau, abs=TAU_ATOL), (outcome, m.measure)
            assert (m.runs, m.tied_pairs, m.pairs) == (runs, tied, runs * (runs - 1) // 2), (outcome, m.measure)


def test_the_baseline_is_the_strongest_in_its_declared_direction_and_holm_runs_over_the_candidates(
    ordered: tuple[pd.DataFrame, ForgettingVerdict],
) -> None:
    frame, row = ordered
    for verdict, outcome in ((row.forgetting, "base_task_error"), (row.gap, "gap")):
        baselines = {
            m.measure: _scipy_tau(frame, m.measure, outcome)[0] for m in verdict.measures if is_baseline(m.measure)
        }
        strongest = max(baselines, key=lambda name: baselines[name])
        tests = [verdict.test_of(name) for name in DIRECTION_CANDIDATES]
        assert all(t is not None and t.other == strongest for t in tests)
        assert {t.family for t in tests if t is not None} == {len(DIRECTION_CANDIDATES)}  # Holm over 5, not 30
        for t in tests:
            assert t is not None
            expected = _scipy_tau(frame, t.measure, outcome)[0] - baselines[strongest]
            assert t.difference == pytest.approx(expected, abs=TAU_ATOL)
            assert t.p_value <= t.p_holm <= 1.0  # Holm only raises a p-value
        assert all(verdict.test_of(name) is None for name in baselines)


def test_planted_intruders_order_forgetting_and_an_independent_outcome_is_not_ordered(
    ordered: tuple[pd.DataFrame, ForgettingVerdict],
) -> None:
    _, row = ordered
    intruders = row.forgetting.measure("intruders")
    assert intruders.kendall_tau > 0.6 and intruders.kendall_tau_ci.low > 0.4
    test = row.forgetting.test_of("intruders")
    assert test is not None and test.verdict.value == "better"
    (null,) = forgetting_verdicts(_planted(ordered=False, seed=1))
    assert abs(null.forgetting.measure("intruders").kendall_tau) < 0.15
    tests = [null.forgetting.test_of(c) for c in DIRECTION_CANDIDATES]
    assert all(t is not None and t.verdict.value != "better" for t in tests)


def test_an_unfitted_run_does_not_move_the_verdict(ordered: tuple[pd.DataFrame, ForgettingVerdict]) -> None:
    frame, row = ordered
    moved = frame.copy()
    unfitted = ~moved["fitted"].astype(bool)
    assert unfitted.sum() == 7
    moved.loc[unfitted, "base_task_error"] = 1.0  # as forgetful as can be: ignored, as unfitted
    (again,) = forgetting_verdicts(moved)
    for a, b in zip(again.forgetting.measures, row.forgetting.measures, strict=True):
        assert a.kendall_tau == b.kendall_tau


def test_under_the_minimum_seeds_it_is_shown_not_counted() -> None:
    frame = _planted(ordered=True)
    (row,) = forgetting_verdicts(frame[frame["seed"] < MIN_SEEDS - 1])
    assert not row.counted and row.forgetting.seeds == MIN_SEEDS - 1
    (sentence,) = forgetting_sentences(row)
    assert f"{MIN_SEEDS - 1} seeds per configuration, under {MIN_SEEDS}" in sentence and "no verdict" in sentence
    assert "| measure |" not in forgetting_report([row])


def test_only_fine_tuning_environments_with_forgetting_recorded_have_a_verdict() -> None:
    unrecorded = _final_rows().assign(base_task_error=math.nan, intruders=math.nan)
    assert forgetting_verdicts(unrecorded) == ()  # runs trained before forgetting was recorded: every value NaN
    scratch = _final_rows(REFERENCE_DIR)
    assert forgetting_verdicts(scratch.assign(base_task_error=0.1, intruders=1.0)) == ()  # from scratch


def test_the_words_and_the_table_are_the_numbers(ordered: tuple[pd.DataFrame, ForgettingVerdict]) -> None:
    frame, row = ordered
    sentences = " ".join(forgetting_sentences(row))
    tau_forgetting = _scipy_tau(frame, "intruders", "base_task_error")[0]
    tau_gap = _scipy_tau(frame, "intruders", "gap")[0]
    assert f"`intruders` orders forgetting with τ {tau_forgetting:+.2f}" in sentences
    assert f"`intruders` orders the gap with τ {tau_gap:+.2f}" in sentences
    assert "73 of 80 runs fitted" in sentences and "16 configurations × up to 5 seeds" in sentences
    test = row.forgetting.test_of("intruders")
    assert test is not None
    assert f"beats the strongest trivial baseline, `{test.other}`" in sentences
    assert f"Holm-adjusted over the {len(DIRECTION_CANDIDATES)} candidates, p = {test.p_holm:.2g}" in sentences
    report = forgetting_report([row])
    line = next(x for x in report.splitlines() if x.startswith("| `intruders` |"))
    assert line.split(" | ")[1] == f"{tau_forgetting:+.2f}" and f"{tau_gap:+.2f}" in line
    table = forgetting_frame([row])
    assert list(table["outcome"].unique()) == ["base_task_error", "gap"]
    both = table.set_index(["outcome", "measure"])["kendall_tau"]
    assert both["base_task_error", "intruders"] == pytest.approx(tau_forgetting, abs=TAU_ATOL)
    assert both["gap", "intruders"] == pytest.approx(tau_gap, abs=TAU_ATOL)
    assert table["vs_baseline_candidates"].dropna().eq(len(DIRECTION_CANDIDATES)).all()


def test_forgettings_noise_filter_uses_its_binomial_standard_error() -> None:
    from specbound_lab.finetune import FORGETTING_SAMPLES

    errors = Outcome.FORGETTING.standard_errors(pd.DataFrame({"base_task_error": [0.0, 0.1, math.nan]}))
    np.testing.assert_allclose(errors[:2], [0.0, math.sqrt(0.1 * 0.9 / FORGETTING_SAMPLES)], rtol=1e-15)
    assert math.isnan(errors[2])


def test_the_shipped_forgetting_table_is_scipys_over_the_shipped_runs() -> None:
    """The retrained fine-tuning reference records intruders and forgetting at every step: its
    forgetting.csv's every τ is scipy's over the fitted final rows of its runs.csv, with the runs and tied
    pairs counted by a loop, and step 0 (the base itself) has forgotten nothing."""
    frame = _final_rows()
    assert frame["base_task_error"].notna().all() and frame["intruders"].notna().all()
    whole = read_runs_csv(FINETUNE_REFERENCE_DIR / RUNS_CSV)
    assert (whole.loc[whole["step"] == 0, "base_task_error"] <= 0.01).all()  # the base on its own task
    shipped = pd.read_csv(FINETUNE_REFERENCE_DIR / FORGETTING_CSV)
    assert set(shipped["outcome"]) == {"base_task_error", "gap"}
    assert set(DIRECTION_CANDIDATES) <= set(shipped["measure"])
    for row in shipped.itertuples():
        tau, runs, tied = _scipy_tau(frame, str(row.measure), str(row.outcome))
        assert row.kendall_tau == pytest.approx(tau, abs=TAU_ATOL), (row.outcome, row.measure)
        assert (row.runs_used, row.tied_pairs) == (runs, tied), (row.outcome, row.measure)
    (computed,) = forgetting_verdicts(frame)
    again = forgetting_frame([computed])
    np.testing.assert_allclose(again["kendall_tau"], shipped["kendall_tau"], rtol=0, atol=TAU_ATOL)
    np.testing.assert_allclose(again["vs_baseline_p_holm"], shipped["vs_baseline_p_holm"], atol=1e-12)
