"""The tables of a lab directory read back as the lab's results, so that a page computes nothing they hold.

A sweep writes its tables once (:func:`specbound_lab.tables.write_results`, the code path of ``lab sweep``
and of ``--export-reference``); reading them back here gives the same objects the page would otherwise
recompute from the run records with thousands of bootstrap draws each:

* ``correlations.csv`` → each environment's :class:`~specbound_lab.correlation.MeasureCorrelation` rows
  (:func:`read_correlations`);
* ``comparisons.csv`` → each measure's :class:`~specbound_lab.correlation.TauDifference` from ours at p*
  (:func:`read_comparisons`);
* ``verdict.csv`` and ``couplings.csv`` (with ``runs.csv`` for the fine-tuning design's mean gaps, a
  mean over rows, and the couplings' seed pairs, a grouping of rows: no resampling) → each environment's
  :class:`~specbound_lab.verdict.EnvironmentVerdict` (:func:`read_verdicts`);
* :func:`read_robust` → Dziugaite et al.'s :class:`~specbound_lab.robust.RobustSummary` per measure over
  the couplings of the environments that count, as :func:`~specbound_lab.verdict.robust_view` builds it;
* ``grokking.csv``, ``grokking_summary.csv`` and ``grokking_power.csv`` → the grokking runs'
  :class:`~specbound_lab.grokking.GrokkingVerdict` (:func:`read_grokking`): the leads, each measure's
  circular-shift null and the design's checks, which take seconds of shifts to compute.

Written → read → written gives the table back (the tests compare every column to 1e-12): a float goes
through ``repr`` in the CSV and back exactly; only what a table does not hold is absent (an axis's run
count in a correlation, the single best-against-baseline difference of a verdict).

Example, the shipped fit sweep:

    >>> from specbound_lab.reference import FIT_REFERENCE
    >>> (env,) = read_verdicts(FIT_REFERENCE.directory)
    >>> env.environment, env.counted
    ('threshold/bert', True)
    >>> read_comparisons(FIT_REFERENCE.directory)[0].other
    'ours'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from .correlation import UNDEFINED, AxisTau, Interval, MeasureCorrelation, PairedTest, TauDifference
from .grid import SEED_AXIS
from .grokking import (
    AT_JUMP_CURVE,
    GROKKING_CSV,
    GROKKING_POWER_CSV,
    GROKKING_SUMMARY_CSV,
    LEADING_CURVE,
    POSITIVE_CONTROL,
    GrokkingVerdict,
    LeadSummary,
    PowerCheck,
)
from .records import RUNS_DIR
from .robust import (
    MIN_COUPLED_PAIRS,
    CoupledSignError,
    RobustSummary,
    couplings,
    environment_name,
    environment_of,
)
from .tables import (
    CI_HIGH,
    CI_LOW,
    COMPARISONS_CSV,
    CORRELATIONS_CSV,
    COUPLINGS_CSV,
    DEFAULT_FAMILY,
    DEFAULT_TASK,
    RUNS_CSV,
    VERDICT_CSV,
    EnvironmentCorrelations,
    read_runs_csv,
)
from .tasks import Task
from .verdict import EnvironmentVerdict, MeasureVerdict, design_gaps, verdict_rows

__all__ = ["read_comparisons", "read_correlations", "read_grokking", "read_robust", "read_table", "read_verdicts"]

#: The prefix of an axis's ψ column in correlations.csv (``psi_layers``, ``psi_seed``, ...).
_PSI = "psi_"


def read_table(directory: Path | str, name: str) -> pd.DataFrame:
    """One table of a lab directory, with its environment's ``task``, ``family`` and ``fine_tuned`` filled
    in where it was written without them (the first shipped reference: threshold/bert, from scratch)."""
    frame = pd.read_csv(Path(directory) / name)
    if "task" not in frame.columns:
        frame["task"] = str(DEFAULT_TASK)
    if "family" not in frame.columns:
        frame["family"] = str(DEFAULT_FAMILY)
    tuned = frame["fine_tuned"] if "fine_tuned" in frame.columns else pd.Series(False, index=frame.index)
    frame["fine_tuned"] = tuned.fillna(False).astype(bool)
    environment = zip(frame["task"], frame["family"], frame["fine_tuned"], strict=True)
    frame["environment"] = [environment_name(t, f, bool(ft)) for t, f, ft in environment]
    return frame


def _blocks(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The rows of each environment, environments in the order the table holds them."""
    return {name: frame[frame["environment"] == name] for name in dict.fromkeys(frame["environment"])}


def _float(value: Any) -> float:
    return math.nan if value is None or pd.isna(value) else float(value)


def _interval(row: Mapping[str, Any], column: str) -> Interval:
    low, high = _float(row.get(column + CI_LOW)), _float(row.get(column + CI_HIGH))
    return UNDEFINED if math.isnan(low) and math.isnan(high) else Interval(low, high)


# --- correlations.csv -------------------------------------------------------------------------------------


def _axes(row: Mapping[str, Any], columns: list[str]) -> tuple[AxisTau, ...]:
    """Each axis's ψ, interval and groups, in the column order (the seed a noise axis)."""
    names = [c[len(_PSI) :] for c in columns if c.startswith(_PSI) and not c.endswith((CI_LOW, CI_HIGH))]
    return tuple(
        AxisTau(
            axis,
            _float(row[_PSI + axis]),
            int(row[f"groups_{axis}"]),
            0,  # the runs inside the groups: not in the table
            _interval(row, _PSI + axis),
            axis == SEED_AXIS,
        )
        for axis in names
    )


def read_correlations(directory: Path | str) -> tuple[EnvironmentCorrelations, ...]:
    """correlations.csv of a lab directory: each environment's τ table, as
    :func:`~specbound_lab.tables.environment_correlations` computed it (one block per environment)."""
    frame = read_table(directory, CORRELATIONS_CSV)
    finals = _final_rows(directory)
    environments = [environment_of(row) for _, row in finals.iterrows()]
    out = []
    for name, block in _blocks(frame).items():
        columns = [c for c in block.columns if not block[c].isna().all() or c.startswith(_PSI)]
        rows = []
        for row in block.to_dict("records"):
            rows.append(
                MeasureCorrelation(
                    str(row["measure"]),
                    _float(row["kendall_tau"]),
                    _float(row["kendall_tau_a"]),
                    _float(row["granulated_tau"]),
                    int(row["runs"]),
                    _axes(row, columns),
                    _interval(row, "kendall_tau"),
                    _interval(row, "granulated_tau"),
                    int(row["configurations"]),
                )
            )
        out.append(EnvironmentCorrelations(name, environments.count(name), tuple(rows)))
    return tuple(out)


def _final_rows(directory: Path | str) -> pd.DataFrame:
    frame = read_runs_csv(Path(directory) / RUNS_CSV)
    return frame[frame["final"].astype(bool)].reset_index(drop=True)


# --- comparisons.csv --------------------------------------------------------------------------------------


def read_comparisons(directory: Path | str, environment: str | None = None) -> tuple[TauDifference, ...]:
    """comparisons.csv of a lab directory: every measure's τ minus ours at p*'s, paired-bootstrapped, of
    ``environment`` (the first one when None, as the page's correlation table is); none when the directory
    has no such table (written before it existed) or no such environment."""
    if not (Path(directory) / COMPARISONS_CSV).is_file():
        return ()
    blocks = _blocks(read_table(directory, COMPARISONS_CSV))
    if not blocks:
        return ()
    block = blocks.get(environment if environment is not None else next(iter(blocks)))
    if block is None:
        return ()
    return tuple(
        TauDifference(
            str(row["measure"]),
            str(row["other"]),
            int(row["runs"]),
            _float(row["kendall_tau_difference"]),
            _interval(row, "kendall_tau_difference"),
            _float(row["granulated_tau_difference"]),
            _interval(row, "granulated_tau_difference"),
        )
        for row in block.to_dict("records")
    )


# --- verdict.csv ------------------------------------------------------------------------------------------


def _measure_verdict(row: Mapping[str, Any], coupled: tuple[CoupledSignError, ...] = ()) -> MeasureVerdict:
    return MeasureVerdict(
        str(row["measure"]),
        int(row["runs_used"]),
        int(row["censored"]),
        _float(row["kendall_tau"]),
        _interval(row, "kendall_tau"),
        _float(row["granulated_tau"]),
        _interval(row, "granulated_tau"),
        _float(row["seed_noise"]),
        _float(row["tau_within_n"]),
        _float(row["tau_within_params"]),
        _float(row["pooled_sign_error"]),
        int(row["pairs"]),
        int(row["tied_pairs"]),
        coupled,
        _float(row.get("tau_within_training_loss")),
    )


def _test(row: Mapping[str, Any]) -> PairedTest | None:
    """The row's test against the strongest trivial baseline (None on a baseline's own row)."""
    other = row.get("vs_baseline")
    if other is None or pd.isna(other):
        return None
    return PairedTest(
        str(row["measure"]),
        str(other),
        _float(row["vs_baseline_tau_difference"]),
        Interval(_float(row.get("vs_baseline_ci_low")), _float(row.get("vs_baseline_ci_high"))),
        _float(row.get("vs_baseline_p_value")),
        _float(row["vs_baseline_p_holm"]),
        int(row["vs_baseline_candidates"]),
    )


def _coupled(block: pd.DataFrame, members: pd.DataFrame) -> dict[str, tuple[CoupledSignError, ...]]:
    """Each measure's sign-errors on the couplings of one environment, from its rows of couplings.csv, on
    the couplings themselves (their seed pairs' row indices, which the table does not hold) found again in
    runs.csv's rows the verdict reads (:func:`~specbound_lab.verdict.verdict_rows`): a grouping of rows,
    no resampling."""
    if members.empty or block.empty:
        return {}
    used, fitted = verdict_rows(members)
    found = {(c.axis, c.low, c.high): c for c in couplings(used, noise_filter=fitted is not None)}
    out: dict[str, list[CoupledSignError]] = {}
    for row in block.to_dict("records"):
        coupling = found[(str(row["axis"]), str(row["low"]), str(row["high"]))]
        error = CoupledSignError(
            coupling, _float(row["sign_error"]), int(row["kept_pairs"]), int(row["censored_pairs"])
        )
        out.setdefault(str(row["measure"]), []).append(error)
    return {measure: tuple(errors) for measure, errors in out.items()}


def read_verdicts(directory: Path | str) -> tuple[EnvironmentVerdict, ...]:
    """verdict.csv of a lab directory: each environment's verdict (SPEC §13b) as
    :func:`~specbound_lab.tables.environment_verdicts` computed it, its tests against the strongest trivial
    baseline included (their interval NaN in a table written before it held one), each measure's
    sign-errors on the couplings from couplings.csv, and the fine-tuning design's mean gaps from runs.csv."""
    frame = read_table(directory, VERDICT_CSV)
    coupling_rows = read_table(directory, COUPLINGS_CSV)
    finals = _final_rows(directory)
    environments = [environment_of(row) for _, row in finals.iterrows()]
    out = []
    for name, block in _blocks(frame).items():
        rows = block.to_dict("records")
        head = rows[0]
        fitted = _float(head["fitted_runs"])
        below = _float(head.get("below_entropy_rate"))
        tests = tuple(t for t in (_test(r) for r in rows) if t is not None)
        members = finals[[e == name for e in environments]]
        coupled = _coupled(coupling_rows[coupling_rows["environment"] == name], members)
        out.append(
            EnvironmentVerdict(
                name,
                int(head["runs"]),
                None if math.isnan(fitted) else int(fitted),
                int(head["configurations"]),
                int(head["seeds"]),
                Task(head["task"]).causal,
                _float(head["entropy_rate"]),
                0 if math.isnan(below) else int(below),
                int(head["couplings"]),
                int(head["coupled_pairs"]),
                int(head["noise_pairs"]),
                tuple(_measure_verdict(r, coupled.get(str(r["measure"]), ())) for r in rows),
                None,  # the single best-against-baseline difference: not in the table, shown by no page
                tests,
                design_gaps(members) if len(members) else (),
            )
        )
    return tuple(out)


# --- couplings.csv ----------------------------------------------------------------------------------------


def read_robust(directories: tuple[Path | str, ...]) -> tuple[RobustSummary, ...]:
    """Dziugaite et al.'s robust view over the couplings.csv of ``directories`` (each read as its own sweep):
    each measure's sign-errors on the couplings that count (at least the minimum of kept seed pairs) of
    the environments that count (``counted`` in verdict.csv), measures in the first counted environment's
    order, as :func:`~specbound_lab.verdict.robust_view` builds it from the verdicts."""
    errors: dict[str, list[tuple[float, str, str, str, str]]] = {}
    first = True
    for directory in directories:
        if not (Path(directory) / RUNS_DIR).is_dir():
            continue
        verdict = read_table(directory, VERDICT_CSV)
        counted = {e for e, c in zip(verdict["environment"], verdict["counted"].astype(bool), strict=True) if c}
        for name in dict.fromkeys(e for e in verdict["environment"] if e in counted):
            if first:
                errors.update({str(m): [] for m in verdict[verdict["environment"] == name]["measure"]})
                first = False
        couplings = read_table(directory, COUPLINGS_CSV)
        for env in dict.fromkeys(e for e in verdict["environment"] if e in counted):
            block = couplings[couplings["environment"] == env]
            for row in block.to_dict("records"):
                if int(row["kept_pairs"]) < MIN_COUPLED_PAIRS:
                    continue
                entry = (_float(row["sign_error"]), str(row["axis"]), env, str(row["low"]), str(row["high"]))
                errors.setdefault(str(row["measure"]), []).append(entry)
    return tuple(
        RobustSummary(
            measure,
            tuple(e[0] for e in rows),
            tuple(e[1] for e in rows),
            tuple(e[2] for e in rows),
            tuple((e[3], e[4]) for e in rows),
        )
        for measure, rows in errors.items()
    )


# --- the grokking tables ----------------------------------------------------------------------------------


def read_grokking(directory: Path | str) -> GrokkingVerdict | None:
    """The grokking verdict of a lab directory's modular runs (:func:`~specbound_lab.grokking.grokking_verdict`)
    from grokking.csv (each grokked seed's lead per measure, in run order), grokking_summary.csv (each
    measure's null and whether the design can answer) and grokking_power.csv (the power check); None when
    the directory has no grokking_power.csv (written before it, or no modular runs)."""
    directory = Path(directory)
    if not (directory / GROKKING_POWER_CSV).is_file():
        return None
    rows = pd.read_csv(directory / GROKKING_SUMMARY_CSV).to_dict("records")
    leads = pd.read_csv(directory / GROKKING_CSV)
    grokked = leads[leads["grokked"].astype(bool)]
    runs = list(dict.fromkeys(grokked["run"]))
    summaries = []
    for row in rows:
        own = grokked[grokked["measure"] == row["measure"]].set_index("run")["lead"]
        values = tuple(_float(own.get(run)) for run in runs)
        summaries.append(LeadSummary(str(row["measure"]), values, _float(row["null_p95"]), bool(row["powered"])))
    control = next((replace(s, powered=True) for s in summaries if s.measure == POSITIVE_CONTROL), None)
    power = pd.read_csv(directory / GROKKING_POWER_CSV)
    check = None
    if len(power):
        curves = {
            name: LeadSummary(name, tuple(float(v) for v in block["lead"]), _float(block["null_p95"].iloc[0]))
            for name, block in ((c, power[power["curve"] == c]) for c in (LEADING_CURVE, AT_JUMP_CURVE))
        }
        share = float(power[power["curve"] == LEADING_CURVE]["lead_share"].iloc[0])
        check = PowerCheck(share, curves[LEADING_CURVE], curves[AT_JUMP_CURVE])
    return GrokkingVerdict(tuple(summaries), control if summaries else None, check)
