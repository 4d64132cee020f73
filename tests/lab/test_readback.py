"""The tables of a lab directory read back (:mod:`specbound_lab.readback`): every shipped sweep's
correlations.csv, verdict.csv, couplings.csv, robust.csv and comparisons.csv give, written again by
the lab's own writers, the table they were read from; comparisons.csv is what the code computes from the
shipped records; and a verdict read back says, word for word, what the verdict computed from the records
says.

Tolerance: 1e-12 absolute on every number (a CSV keeps a float's repr, so a round trip is exact; the
margin only covers a table written on another machine's BLAS).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound_lab import readback, reference
from specbound_lab.grokking import GrokkingVerdict
from specbound_lab.records import read_runs
from specbound_lab.tables import (
    COMPARISONS_CSV,
    CORRELATIONS_CSV,
    COUPLINGS_CSV,
    ROBUST_CSV,
    VERDICT_CSV,
    comparisons_frame,
    couplings_frame,
    environment_verdicts,
    environments_frame,
    lab_results,
    robust_frame,
    verdict_frame,
)
from specbound_lab.verdict import robust_view
from specbound_lab.views import verdict_sentences

ATOL = 1e-12
SWEEPS = [pytest.param(s.directory, id=s.key) for s in reference.SWEEP_REFERENCES]


def assert_same_table(written: pd.DataFrame, shipped: pd.DataFrame, drop: tuple[str, ...] = ()) -> None:
    """Column for column: the same names in the same order, numbers to ATOL, the rest as text."""
    written = pd.read_csv(io.StringIO(written.to_csv(index=False))).drop(columns=list(drop), errors="ignore")
    shipped = shipped.drop(columns=list(drop), errors="ignore")
    assert list(written.columns) == list(shipped.columns)
    assert len(written) == len(shipped)
    for column in shipped.columns:
        a, b = written[column], shipped[column]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=0, atol=ATOL, err_msg=column)
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), column


@pytest.mark.parametrize("directory", SWEEPS)
def test_each_shipped_table_read_back_writes_itself(directory: Path) -> None:
    correlations = readback.read_correlations(directory)
    assert_same_table(environments_frame(correlations), pd.read_csv(directory / CORRELATIONS_CSV))
    verdicts = readback.read_verdicts(directory)
    assert_same_table(verdict_frame(verdicts), pd.read_csv(directory / VERDICT_CSV))
    assert_same_table(couplings_frame(verdicts), pd.read_csv(directory / COUPLINGS_CSV))
    robust = readback.read_robust((directory,))
    assert_same_table(robust_frame(robust), pd.read_csv(directory / ROBUST_CSV))
    assert bool(robust) == any(v.counted for v in verdicts)  # a sweep shown, not counted, has no robust view
    assert robust_frame(robust_view(verdicts)).equals(robust_frame(robust))  # the same view either way
    shipped = pd.read_csv(directory / COMPARISONS_CSV)
    read = [(env.environment, readback.read_comparisons(directory, env.environment)) for env in verdicts]
    assert_same_table(comparisons_frame(read), shipped)
    assert all(d.other == "ours" for _, block in read for d in block)


@pytest.mark.parametrize("shipped", [reference.THRESHOLD_REFERENCE, reference.FINETUNE_REFERENCE], ids=lambda s: s.key)
def test_the_shipped_comparisons_are_what_the_code_computes_from_the_shipped_records(
    shipped: reference.ShippedReference,
) -> None:
    computed = comparisons_frame(lab_results(read_runs(shipped.directory)).comparisons)
    assert_same_table(computed, pd.read_csv(shipped.directory / COMPARISONS_CSV))
    assert len(computed) == len(readback.read_comparisons(shipped.directory)) >= 20  # every measure but ours


def test_a_verdict_read_back_says_what_the_computed_verdict_says() -> None:
    """The fine-tuning sweep (its design sentence reads runs.csv, its tests the baseline's interval)."""
    directory = reference.FINETUNE_REFERENCE.directory
    (computed,) = environment_verdicts(read_runs(directory))
    (read,) = readback.read_verdicts(directory)
    assert verdict_sentences(read) == verdict_sentences(computed)
    assert read.design == computed.design and len(read.design) == 8  # n 100 / 300 x full and three LoRA ranks
    assert [t.ci for t in read.baseline_tests] == pytest.approx([t.ci for t in computed.baseline_tests], abs=ATOL)
    assert (read.counted, read.status, read.seeds, read.configurations) == (True, "fitted", 5, 16)


def test_the_robust_view_over_several_sweeps_joins_their_couplings_in_order() -> None:
    directories = tuple(s.directory for s in reference.SWEEP_REFERENCES)
    joined = {r.measure: r for r in readback.read_robust(directories)}
    each = [{r.measure: r for r in readback.read_robust((d,))} for d in directories]
    ours = joined["ours"]
    assert ours.errors == tuple(e for rows in each if "ours" in rows for e in rows["ours"].errors)
    assert ours.couplings == sum(rows["ours"].couplings for rows in each if "ours" in rows) > 0
    class_sweep = readback.read_verdicts(reference.THRESHOLD_REFERENCE.directory)[0]
    assert not class_sweep.counted and "threshold/bert" in ours.environments  # from the fit sweep, not the class one
    assert ours.couplings == sum(rows["ours"].couplings for rows in each[1:] if "ours" in rows)


def _grokking_frames(verdict: GrokkingVerdict, seeds: list[int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    from specbound_lab.grokking import power_frame, summary_frame

    return summary_frame(verdict.summaries), power_frame(verdict.power, seeds)


def test_the_grokking_tables_read_back_write_themselves() -> None:
    from specbound_lab.grokking import GROKKING_POWER_CSV, GROKKING_SUMMARY_CSV, POSITIVE_CONTROL, POWER_LEAD_SHARE

    directory = reference.GROKKING_REFERENCE.directory
    read = readback.read_grokking(directory)
    assert read is not None and read.power is not None and read.control is not None
    power = pd.read_csv(directory / GROKKING_POWER_CSV)
    seeds = list(power[power["curve"] == "synthetic_leading"]["seed"])
    summary, powered = _grokking_frames(read, seeds)
    assert_same_table(summary, pd.read_csv(directory / GROKKING_SUMMARY_CSV))
    assert_same_table(powered, power)
    assert read.control.measure == POSITIVE_CONTROL and read.power.lead_share == POWER_LEAD_SHARE
    assert len(seeds) == len(read.control.leads) == 10  # the ten seeds grokked
    assert all(len(s.leads) == len(seeds) for s in read.summaries)
    assert readback.read_grokking(reference.FIT_REFERENCE.directory) is None  # no modular runs


@pytest.mark.slow
def test_the_grokking_verdict_read_back_is_the_one_computed_from_the_records() -> None:
    """The leads, each measure's circular-shift null (its seeded permutations), the positive control and the
    power check, computed again from the shipped records, say word for word what the tables read back say."""
    from specbound_lab.grokking import grokking_runs, grokking_sentence, grokking_verdict

    directory = reference.GROKKING_REFERENCE.directory
    runs = grokking_runs(read_runs(directory))
    computed = grokking_verdict(runs)
    read = readback.read_grokking(directory)
    assert read is not None
    seeds = [run.seed for run in runs if run.event.grokked]
    for mine, theirs in zip(_grokking_frames(read, seeds), _grokking_frames(computed, seeds), strict=True):
        assert_same_table(mine, theirs)
    assert read.powered == computed.powered
    assert grokking_sentence(runs, verdict=read) == grokking_sentence(runs, verdict=computed)
