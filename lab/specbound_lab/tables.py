"""The tables of a lab directory: runs.csv (one row per run and saved step), correlations.csv (each
measure's tau with the gap, one block per environment: task × family), verdict.csv (SPEC §13b's
verdict of each measure in each environment, :mod:`specbound_lab.verdict`), couplings.csv (each
measure's sign-error on every coupling of Dziugaite et al.'s robust view) and robust.csv (each
measure's coupled sign-errors summarised over the environments that count, :mod:`specbound_lab.robust`),
comparisons.csv (each measure's τ minus ours at p*'s, paired-bootstrapped per environment), and reading
results back (the tables themselves read back as results: :mod:`specbound_lab.readback`).

runs.csv has ``task`` and ``family`` columns (SPEC §13); one written before them (the shipped reference)
reads back through :func:`read_runs_csv` as threshold/bert. The gap is test minus training error, or
test minus training loss for next-token prediction (task markov), where ``optimal_loss`` is the chain's
entropy rate and ``excess_loss`` the test loss above it.

The measures' columns come from :mod:`specbound_lab.registry`; the tables are rebuilt from every record
in ``runs/``, so a run trained later into the same directory joins them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .correlation import MeasureCorrelation, TauDifference, compare_taus, correlate
from .grid import AXES, FROM_SCRATCH, SEED_AXIS
from .grokking import (
    GROKKING_CSV,
    GROKKING_POWER_CSV,
    GROKKING_SUMMARY_CSV,
    grokking_runs,
    grokking_verdict,
    leads_frame,
    power_frame,
    summary_frame,
)
from .records import RUNS_DIR, read_runs, write_text
from .registry import MEASURES, Measure, correlated_measures, is_baseline, step_value
from .robust import MIN_COUPLED_PAIRS, RobustSummary, environment_name, split_environment
from .tasks import Task
from .train import Family, LabError, RunSpec, fits_training_set
from .trajectory import RunTrajectory, StepRecord
from .verdict import EnvironmentVerdict, ForgettingVerdict, MeasureVerdict, forgetting_verdicts, robust_view, verdicts

if TYPE_CHECKING:
    import pandas as pd

RUNS_CSV = "runs.csv"
CORRELATIONS_CSV = "correlations.csv"
VERDICT_CSV = "verdict.csv"
COUPLINGS_CSV = "couplings.csv"
ROBUST_CSV = "robust.csv"
#: Each measure's τ minus ours at p*'s, paired-bootstrapped per environment (:func:`comparisons_frame`).
COMPARISONS_CSV = "comparisons.csv"
#: A fine-tuning sweep's verdict on forgetting (:func:`forgetting_frame`), beside verdict.csv.
FORGETTING_CSV = "forgetting.csv"
#: The environment of a runs.csv or record written before §13.
DEFAULT_TASK, DEFAULT_FAMILY = Task.THRESHOLD, Family.BERT

#: Columns of runs.csv before the measures, and after them; the measures' columns come from the registry.
_HEAD_COLUMNS: tuple[str, ...] = (
    "run",
    "task",
    "family",
    "layers",
    "hidden",
    "heads",
    "n_train",
    "label_noise",
    "seed",
    "step",
    "steps",
    "learning_rate",
    "weight_decay",
    "batch_size",
    "until_fit",
    "fine_tuning",
    "final",
    "fitted",
    "fit_step",
    "train_loss",
    "train_error",
    "test_error",
    "test_error_se",
    "gap",
    "test_samples",
    "test_loss",
    "optimal_loss",
    "excess_loss",
    "base_task_error",  # a fine-tune's error on its base's own task: forgetting
)
_TAIL_COLUMNS: tuple[str, ...] = (
    "grid_m",
    "p_opt_mean",
    "p_opt_min",
    "p_opt_max",
    "p_opt_zero_fraction",
    "checkpoint",
)


def censored_column(measure: Measure) -> str:
    """The column of runs.csv that says whether a search measure's value is censored (``<name>_censored``)."""
    return f"{measure.name}_censored"


def run_columns() -> tuple[str, ...]:
    """Every column of runs.csv, in order: the run and its errors, each registered measure's columns in
    registration order (a search measure's followed by its censored flag, :func:`censored_column`), then
    p* and the checkpoint."""
    columns: list[str] = []
    for m in MEASURES.values():
        columns += [m.linear_column, m.column] if m.linear_column else [m.column]
        if m.censored_at:
            columns.append(censored_column(m))
    return (*_HEAD_COLUMNS, *columns, *_TAIL_COLUMNS)


#: The columns of runs.csv with the measures registered in :mod:`specbound_lab.registry`.
RUN_COLUMNS: tuple[str, ...] = run_columns()


def measure_value(run: RunTrajectory, measure: Measure) -> float:
    """A measure's value for a run: on its final checkpoint, or of the run as a whole (NaN if missing)."""
    return step_value(measure, run.final, run)


def environment(spec: RunSpec) -> str:
    """A run's environment, ``task/family`` (``threshold/bert``, ``markov/gpt2``, ...)."""
    return environment_name(spec.task.kind, spec.family, spec.fine_tuning is not None)


@dataclass(frozen=True)
class EnvironmentCorrelations:
    """The correlations of one environment's runs."""

    environment: str
    runs: int
    correlations: tuple[MeasureCorrelation, ...]

    @property
    def task(self) -> Task:
        return split_environment(self.environment)[0]

    @property
    def family(self) -> Family:
        """The model family alone (bert), a fine-tuning environment's too."""
        return split_environment(self.environment)[1]

    @property
    def fine_tuned(self) -> bool:
        """Its runs start from a pretrained base."""
        return split_environment(self.environment)[2]


@dataclass(frozen=True)
class LabResults:
    """Everything a lab directory holds, read back: finished runs (by name) and the correlations.

    ``correlations`` is the table of the directory's environment; with several environments it is the
    first one's (in order, :func:`environments`), and ``environments`` holds each one's; ``verdicts``
    the verdict of each environment (SPEC §13b, fitted runs only) and ``robust`` Dziugaite et al.'s
    robust view over the fitted ones. The tables are computed from the runs when first asked for (a
    page that shows one run never pays for the bootstraps); ``table``, when given, is the only
    environment's correlation table, taken as it is.
    """

    runs: tuple[RunTrajectory, ...]
    table: tuple[MeasureCorrelation, ...] | None = None

    @cached_property
    def environments(self) -> tuple[EnvironmentCorrelations, ...]:
        return environment_correlations(self.runs, self.table)

    @cached_property
    def correlations(self) -> tuple[MeasureCorrelation, ...]:
        if self.environments:
            return self.environments[0].correlations
        return tuple(self.table) if self.table is not None else correlations(self.runs)

    @cached_property
    def verdicts(self) -> tuple[EnvironmentVerdict, ...]:
        return environment_verdicts(self.runs)

    @cached_property
    def robust(self) -> tuple[RobustSummary, ...]:
        return robust_view(self.verdicts)

    @cached_property
    def comparisons(self) -> tuple[tuple[str, tuple[TauDifference, ...]], ...]:
        """Per environment (in :func:`split_environments` order), every other correlated measure against
        ours at p* (:func:`comparisons`), paired-bootstrapped over that environment's runs."""
        return tuple((name, comparisons(members)) for name, members in split_environments(self.runs).items())

    @cached_property
    def forgetting(self) -> tuple[ForgettingVerdict, ...]:
        """Per fine-tuning environment whose runs recorded forgetting, whether intruder dimensions and the
        centred proxies order it and the gap (:func:`~specbound_lab.verdict.forgetting_verdicts`)."""
        return forgetting_verdicts(final_rows(self.runs)) if self.runs else ()

    def run(self, name: str) -> RunTrajectory:
        for run in self.runs:
            if run.name == name:
                return run
        raise LabError(f"no finished run named {name}")


def axis_values(spec: RunSpec) -> dict[str, Any]:
    """The run's value on each axis of :data:`AXES` (layers, hidden, heads, n_train, label_noise, the
    learning rate, the batch size, the weight decay, how it started, seed)."""
    optimisation = ("learning_rate", "weight_decay", "batch_size")
    values = {axis: getattr(spec, axis) for axis in AXES if axis not in (*optimisation, "fine_tuning")}
    values.update({axis: getattr(spec.settings, axis) for axis in optimisation})
    values["fine_tuning"] = spec.fine_tuning.label if spec.fine_tuning is not None else FROM_SCRATCH
    return {axis: values[axis] for axis in AXES}


def _group_key(run: RunTrajectory) -> dict[str, Any]:
    """Axis values of a run plus everything else that must match within a granulated-tau group."""
    spec = run.spec
    task = {k: v for k, v in spec.task.to_dict().items() if k != "label_noise"}
    settings = {k: v for k, v in spec.to_dict()["settings"].items() if k not in AXES}
    fixed: dict[str, Any] = {"task": task, "settings": settings}
    if spec.family is not DEFAULT_FAMILY:
        fixed["family"] = spec.family
    return {**axis_values(spec), "fixed": json.dumps(fixed, sort_keys=True)}


def sweep_axes(runs: Sequence[RunTrajectory]) -> tuple[str, ...]:
    """The axes of :data:`AXES` a set of runs is read along: ``fine_tuning`` only where some run was
    fine-tuned, the batch size and the weight decay only where they vary (the tables of a sweep that
    did not sweep them keep the columns they had before those axes existed)."""
    tuned = any(r.spec.fine_tuning is not None for r in runs)
    optional = ("weight_decay", "batch_size")
    varied = {axis for axis in optional if len({getattr(r.spec.settings, axis) for r in runs}) > 1}
    return tuple(a for a in AXES if (a != "fine_tuning" or tuned) and (a not in optional or a in varied))


def configuration(run: RunTrajectory) -> str:
    """The run's configuration: every hyperparameter and setting but the seed (SPEC §13b: the seeds of
    one configuration are resampled together)."""
    return json.dumps({k: v for k, v in _group_key(run).items() if k != SEED_AXIS}, sort_keys=True)


def correlations(runs: Sequence[RunTrajectory]) -> tuple[MeasureCorrelation, ...]:
    """tau of every correlated measure with the gap over the final checkpoints of ``runs``, with intervals
    over configurations and the seed as a noise axis of the granulated tau (SPEC §13b); a measure none of
    the runs recorded (records older than it) is left out."""
    values = {m.name: [measure_value(r, m) for r in runs] for m in correlated_measures()}
    return correlate(
        {name: v for name, v in values.items() if any(math.isfinite(x) for x in v)},  # recorded by some run
        [r.final.gap for r in runs],
        [_group_key(r) for r in runs],
        sweep_axes(runs),
        noise_axes=(SEED_AXIS,),
        clusters=[configuration(r) for r in runs],
    )


def split_environments(runs: Sequence[RunTrajectory]) -> dict[str, tuple[RunTrajectory, ...]]:
    """The runs of each environment, environments in order (threshold/bert first, then by name)."""
    names = sorted({environment(r.spec) for r in runs}, key=lambda e: (e != f"{DEFAULT_TASK}/{DEFAULT_FAMILY}", e))
    return {name: tuple(r for r in runs if environment(r.spec) == name) for name in names}


def environment_correlations(
    runs: Sequence[RunTrajectory], table: Sequence[MeasureCorrelation] | None = None
) -> tuple[EnvironmentCorrelations, ...]:
    """The correlations of each environment's runs (``table`` is taken as the only environment's, when
    there is one, instead of computing it again)."""
    split = split_environments(runs)
    if table is not None and len(split) == 1:
        ((name, members),) = split.items()
        return (EnvironmentCorrelations(name, len(members), tuple(table)),)
    return tuple(EnvironmentCorrelations(name, len(members), correlations(members)) for name, members in split.items())


def final_rows(runs: Sequence[RunTrajectory]) -> pd.DataFrame:
    """runs.csv's rows of the final checkpoints (one per run), environments in :func:`split_environments`
    order: what every verdict is computed from."""
    ordered = [r for members in split_environments(runs).values() for r in members]
    frame = runs_frame(ordered)
    return frame[frame["final"]].reset_index(drop=True)


def environment_verdicts(runs: Sequence[RunTrajectory]) -> tuple[EnvironmentVerdict, ...]:
    """The verdict of each environment (SPEC §13b, :mod:`.verdict`), from the runs' final rows."""
    return verdicts(final_rows(runs)) if runs else ()


def robust(runs: Sequence[RunTrajectory]) -> tuple[RobustSummary, ...]:
    """Dziugaite et al.'s robust view of every correlated measure over the couplings of the environments that
    count (fitted, at least five seeds)."""
    return robust_view(environment_verdicts(runs))


def lab_results(runs: Sequence[RunTrajectory], table: Sequence[MeasureCorrelation] | None = None) -> LabResults:
    """Results of the given runs: per environment, the verdicts, the robust view, and the first
    environment's table."""
    return LabResults(tuple(runs), None if table is None else tuple(table))


#: The measure every other one is compared with.
BASELINE = "ours"


def comparison(runs: Sequence[RunTrajectory], measure: str, other: str) -> TauDifference:
    """tau(measure) - tau(other) with the gap, paired-bootstrapped (LabError for an unknown measure)."""
    for name in (measure, other):
        if name not in MEASURES or not MEASURES[name].correlated:
            known = ", ".join(m.name for m in correlated_measures())
            raise LabError(f"unknown measure {name!r} (known: {known})")
    return compare_taus(
        measure,
        [measure_value(r, MEASURES[measure]) for r in runs],
        other,
        [measure_value(r, MEASURES[other]) for r in runs],
        [r.final.gap for r in runs],
        [_group_key(r) for r in runs],
        sweep_axes(runs),
        noise_axes=(SEED_AXIS,),
        clusters=[configuration(r) for r in runs],
    )


def comparisons(runs: Sequence[RunTrajectory], baseline: str = BASELINE) -> tuple[TauDifference, ...]:
    """Every other correlated measure against ``baseline``: tau(measure) - tau(baseline)."""
    return tuple(comparison(runs, m.name, baseline) for m in correlated_measures() if m.name != baseline)


def runs_frame(runs: Sequence[RunTrajectory]) -> pd.DataFrame:
    """One row per run and saved step (columns RUN_COLUMNS); checkpoints relative to the lab directory."""
    import pandas as pd

    rows = []
    for run in runs:
        fitted, fit_step = fit_of(run)
        rows += [_step_row(run, step, fitted, fit_step) for step in run.steps]
    frame = pd.DataFrame(rows, columns=list(run_columns()))
    for m in MEASURES.values():
        if m.integer:
            frame[m.column] = frame[m.column].astype("Int64")  # a count (empty where a record lacks it)
        if m.censored_at:
            frame[censored_column(m)] = frame[censored_column(m)].astype("boolean")
    frame["fitted"] = frame["fitted"].astype("boolean")  # empty for next-token prediction (it cannot fit)
    frame["fit_step"] = frame["fit_step"].astype("Int64")  # empty where the run never fitted
    return frame


def _step_row(run: RunTrajectory, s: StepRecord, fitted: bool | None, fit_step: int | None) -> dict[str, Any]:
    """One saved step of a run as a row of :func:`runs_frame`: the run's axes and settings, the step's errors
    and losses, every measure of :data:`MEASURES` (its linear value and censoring flag where it has them),
    p*'s summary and the checkpoint's path."""
    import numpy as np

    spec = run.spec
    p = np.asarray(s.p_opt)
    row: dict[str, Any] = {
        "run": run.name,
        "task": spec.task.kind,
        "family": spec.family,
        **axis_values(spec),
        "step": s.step,
        "steps": spec.settings.steps,
        "learning_rate": spec.settings.learning_rate,
        "weight_decay": spec.settings.weight_decay,
        "batch_size": spec.settings.batch_size,
        "until_fit": spec.settings.until_fit,
        "final": s is run.final,
        "fitted": fitted,
        "fit_step": fit_step,
        "train_loss": s.train_loss,
        "train_error": s.train_error,
        "test_error": s.test_error,
        "test_error_se": s.test_error_se,
        "gap": s.gap,
        "test_samples": s.test_samples,
        "test_loss": s.test_loss,
        "optimal_loss": spec.task.optimal_loss,
        "excess_loss": s.test_loss - spec.task.optimal_loss,
        "base_task_error": s.base_task_error,
    }
    for m in MEASURES.values():
        value = step_value(m, s, run)
        row[m.column] = value
        if m.linear_column:
            row[m.linear_column] = _pow10(value)
        if m.censored_at:  # a flag where there is a value (the final step), else empty
            row[censored_column(m)] = m.is_censored(value) if math.isfinite(value) else None
    row.update(
        {
            "grid_m": s.grid_m,
            "p_opt_mean": float(p.mean()),
            "p_opt_min": float(p.min()),
            "p_opt_max": float(p.max()),
            "p_opt_zero_fraction": float((p == 0).mean()),
            "checkpoint": f"{RUNS_DIR}/{run.name}/{s.checkpoint}",
        }
    )
    return row


def fit_of(run: RunTrajectory) -> tuple[bool | None, int | None]:
    """(fitted, fit step) of a run (SPEC §13b): whether its final checkpoint fits its training set
    (:func:`~specbound_lab.train.fits_training_set`), and the first saved step that does, which for a run
    trained ``until_fit`` is the check at which it stopped (None where no saved step fits). A next-token
    run cannot fit: (None, None).

    A run trained to a fit stops at its first fitting check, so its fit step is its last step; a run of a
    fixed budget reports the first saved checkpoint that fits (a bound on the fit step, at the saving
    cadence)."""
    if run.spec.task.causal:
        return None, None
    noise = run.spec.label_noise
    fitted = fits_training_set(run.final.train_loss, run.final.train_error, noise)
    first = next((s.step for s in run.steps if fits_training_set(s.train_loss, s.train_error, noise)), None)
    return fitted, first


def _pow10(log10_value: float) -> float:
    try:
        result: float = 10.0**log10_value
        return result
    except OverflowError:
        return math.inf


#: The suffixes of an interval's columns in correlations.csv.
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"


def correlations_frame(
    table: Sequence[MeasureCorrelation], environment: str = f"{DEFAULT_TASK}/{DEFAULT_FAMILY}"
) -> pd.DataFrame:
    """``measure, kendall_tau, granulated_tau, runs`` first, then the 95 % intervals of both
    (``kendall_tau_ci_low``, ``kendall_tau_ci_high``, ``granulated_tau_ci_low``, ...; resampled over
    configurations), tau-a, groups, configurations, the seed noise (psi of the seed axis, not in the
    granulated tau), per axis psi, its interval and its groups, and last the environment's ``task`` and
    ``family``."""
    import pandas as pd

    task, family, fine_tuned = split_environment(environment)
    rows = []
    for c in table:
        row: dict[str, Any] = {
            "measure": c.measure,
            "kendall_tau": c.kendall_tau,
            "granulated_tau": c.granulated_tau,
            "runs": c.runs,
            "kendall_tau" + CI_LOW: c.kendall_tau_ci.low,
            "kendall_tau" + CI_HIGH: c.kendall_tau_ci.high,
            "granulated_tau" + CI_LOW: c.granulated_tau_ci.low,
            "granulated_tau" + CI_HIGH: c.granulated_tau_ci.high,
            "kendall_tau_a": c.kendall_tau_a,
            "groups": c.groups,
            "configurations": c.configurations,
            "seed_noise": c.seed_noise,
        }
        for a in c.axes:
            row[f"psi_{a.axis}"] = a.tau
            row[f"psi_{a.axis}{CI_LOW}"], row[f"psi_{a.axis}{CI_HIGH}"] = a.ci.low, a.ci.high
            row[f"groups_{a.axis}"] = a.groups
        row["task"], row["family"] = task, family
        if fine_tuned:  # absent from the tables of runs from scratch
            row["fine_tuned"] = True
        rows.append(row)
    return pd.DataFrame(rows)


def environments_frame(environments: Sequence[EnvironmentCorrelations]) -> pd.DataFrame:
    """correlations.csv: one block of :func:`correlations_frame` per environment, in order."""
    import pandas as pd

    frames = [correlations_frame(e.correlations, e.environment) for e in environments]
    return pd.concat(frames, ignore_index=True) if frames else correlations_frame(())


def robust_frame(rows: Sequence[RobustSummary]) -> pd.DataFrame:
    """robust.csv: ``measure, baseline, couplings, min_pairs`` (the seed pairs a coupling needs to count),
    then the worst case first (``max_sign_error, p90_sign_error, mean_sign_error``), then the mean sign-error
    per hyperparameter axis (``mean_sign_error_<axis>``) and the couplings of each (``couplings_<axis>``),
    over the couplings of the environments that count (fitted, at least five seeds)."""
    import pandas as pd

    axes = list(dict.fromkeys(axis for r in rows for axis in r.axes))
    records = []
    for r in rows:
        record: dict[str, Any] = {
            "measure": r.measure,
            "baseline": is_baseline(r.measure),
            "couplings": r.couplings,
            "min_pairs": MIN_COUPLED_PAIRS,
            "max_sign_error": r.max,
            "p90_sign_error": r.p90,
            "mean_sign_error": r.mean,
        }
        by_axis = r.by_axis()
        for axis in axes:
            record[f"mean_sign_error_{axis}"] = by_axis.get(axis, math.nan)
            record[f"couplings_{axis}"] = sum(a == axis for a in r.axes)
        records.append(record)
    columns = ["measure", "baseline", "couplings", "min_pairs", "max_sign_error", "p90_sign_error", "mean_sign_error"]
    return pd.DataFrame(records, columns=list(dict.fromkeys([*columns, *(k for rec in records for k in rec)])))


def verdict_frame(environments: Sequence[EnvironmentVerdict]) -> pd.DataFrame:
    """verdict.csv: one row per environment and measure (SPEC §13b): what the verdict stands on (status,
    whether it is counted (fitted, at least five seeds: else shown, not a verdict), runs, fitted runs,
    configurations x seeds, couplings, the minimum seed pairs of one, and their pairs), then the measure,
    read in its declared direction (the final training loss turned round), with its
    configuration-bootstrap interval, granulated τ (hyperparameter axes) with its joint interval, seed
    noise, τ within strata of n and of the parameter count, the test against the strongest trivial baseline
    (its name, the τ_b difference, Holm's p-value over the candidates and their number; empty on a
    baseline's row), the pooled sign-error with its tied pairs, censored runs, and its coupled
    sign-errors' count, mean, 90th percentile and maximum."""
    import pandas as pd

    rows = [{**_environment_fields(env), **_measure_fields(env, m)} for env in environments for m in env.measures]
    frame = pd.DataFrame(rows)
    for column in ("fitted_runs", "below_entropy_rate", "vs_baseline_candidates"):
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    return frame


def _environment_fields(env: EnvironmentVerdict) -> dict[str, Any]:
    """What an environment's verdict stands on, the first columns of each of its rows in verdict.csv."""
    return {
        "task": env.task,
        "family": env.family,
        **({"fine_tuned": True} if env.fine_tuned else {}),  # absent from the tables of runs from scratch
        "status": env.status,
        "counted": env.counted,
        "runs": env.runs,
        "fitted_runs": env.fitted_runs,
        "configurations": env.configurations,
        "seeds": env.seeds,
        "entropy_rate": env.entropy_rate,
        "below_entropy_rate": env.below_entropy if env.loss_gap else None,
        "couplings": env.couplings,
        "min_pairs": MIN_COUPLED_PAIRS,
        "coupled_pairs": env.coupled_pairs,
        "noise_pairs": env.noise_pairs,
    }


def _measure_fields(env: EnvironmentVerdict, m: MeasureVerdict) -> dict[str, Any]:
    """One measure's columns of verdict.csv: its τ and intervals, τ within strata, its test against the
    strongest trivial baseline (empty on a baseline's row), its pooled and coupled sign-errors."""
    coupled = m.coupled_summary
    test = env.test_of(m.measure)
    return {
        "measure": m.measure,
        "baseline": is_baseline(m.measure),
        "runs_used": m.runs,
        "censored": m.censored,
        "kendall_tau": m.kendall_tau,
        "kendall_tau" + CI_LOW: m.kendall_tau_ci.low,
        "kendall_tau" + CI_HIGH: m.kendall_tau_ci.high,
        "granulated_tau": m.granulated_tau,
        "granulated_tau" + CI_LOW: m.granulated_tau_ci.low,
        "granulated_tau" + CI_HIGH: m.granulated_tau_ci.high,
        "seed_noise": m.seed_noise,
        "tau_within_n": m.tau_within_n,
        "tau_within_params": m.tau_within_params,
        "tau_within_training_loss": m.tau_within_fit,
        "vs_baseline": test.other if test is not None else None,
        "vs_baseline_tau_difference": test.difference if test is not None else math.nan,
        "vs_baseline_p_holm": test.p_holm if test is not None else math.nan,
        "vs_baseline_candidates": test.family if test is not None else None,
        "vs_baseline_ci_low": test.ci.low if test is not None else math.nan,
        "vs_baseline_ci_high": test.ci.high if test is not None else math.nan,
        "vs_baseline_p_value": test.p_value if test is not None else math.nan,
        "pooled_sign_error": m.pooled_sign_error,
        "pairs": m.pairs,
        "tied_pairs": m.tied_pairs,
        "coupled_couplings": coupled.couplings,
        "coupled_mean": coupled.mean,
        "coupled_p90": coupled.p90,
        "coupled_max": coupled.max,
    }


def forgetting_frame(rows: Sequence[ForgettingVerdict]) -> pd.DataFrame:
    """forgetting.csv: verdict.csv's columns (:func:`verdict_frame`) for the measures of
    :data:`~specbound_lab.verdict.DIRECTION_CANDIDATES` and the trivial baselines, one block per
    fine-tuning environment and outcome, led by ``outcome``: ``base_task_error`` (forgetting) or ``gap``."""
    import pandas as pd

    blocks = [
        verdict_frame([verdict]).assign(outcome=verdict.outcome.column)
        for row in rows
        for verdict in (row.forgetting, row.gap)
    ]
    if not blocks:
        return pd.DataFrame(columns=["outcome"])
    frame = pd.concat(blocks, ignore_index=True)
    return frame[["outcome", *(c for c in frame.columns if c != "outcome")]]


#: comparisons.csv's columns after the environment's ``task`` and ``family``.
COMPARISON_COLUMNS: tuple[str, ...] = (
    "measure",
    "other",
    "runs",
    "kendall_tau_difference",
    "kendall_tau_difference" + CI_LOW,
    "kendall_tau_difference" + CI_HIGH,
    "granulated_tau_difference",
    "granulated_tau_difference" + CI_LOW,
    "granulated_tau_difference" + CI_HIGH,
)


def comparisons_frame(environments: Sequence[tuple[str, Sequence[TauDifference]]]) -> pd.DataFrame:
    """comparisons.csv: one row per environment and measure, τ(measure) − τ(ours at p*) over every run of
    the environment (fitted or not, as correlations.csv), τ_b's and the granulated τ's, each with its 95 %
    paired interval over configurations (:func:`comparisons`), led by the environment's ``task`` and
    ``family`` (and ``fine_tuned`` for a fine-tuning environment). What the Lab page's "Against ours at
    p*" reads, so that no page bootstraps what a sweep already wrote."""
    import pandas as pd

    rows = []
    for environment_of_rows, differences in environments:
        task, family, fine_tuned = split_environment(environment_of_rows)
        for d in differences:
            values = (
                d.measure,
                d.other,
                d.runs,
                d.kendall_tau,
                d.kendall_tau_ci.low,
                d.kendall_tau_ci.high,
                d.granulated_tau,
                d.granulated_tau_ci.low,
                d.granulated_tau_ci.high,
            )
            head = {"task": task, "family": family, **({"fine_tuned": True} if fine_tuned else {})}
            rows.append({**head, **dict(zip(COMPARISON_COLUMNS, values, strict=True))})
    tuned = ["fine_tuned"] if any("fine_tuned" in row for row in rows) else []  # absent for runs from scratch
    return pd.DataFrame(rows, columns=["task", "family", *tuned, *COMPARISON_COLUMNS])


def couplings_frame(environments: Sequence[EnvironmentVerdict]) -> pd.DataFrame:
    """couplings.csv: one row per environment, coupling and measure: the axis the two configurations
    differ in, both configurations, the seed pairs, those within noise, those kept and censored, and
    the sign-error (empty where fewer than the minimum pairs were kept)."""
    import pandas as pd

    rows = []
    for env in environments:
        for m in env.measures:
            for c in m.coupled:
                rows.append(
                    {
                        "task": env.task,
                        "family": env.family,
                        **({"fine_tuned": True} if env.fine_tuned else {}),
                        "status": env.status,
                        "axis": c.coupling.axis,
                        "low": c.coupling.low,
                        "high": c.coupling.high,
                        "pairs": len(c.coupling.pairs),
                        "min_pairs": MIN_COUPLED_PAIRS,
                        "noise_pairs": sum(c.coupling.noise),
                        "measure": m.measure,
                        "kept_pairs": c.kept,
                        "censored_pairs": c.censored,
                        "sign_error": c.sign_error,
                    }
                )
    tuned = ["fine_tuned"] if any(env.fine_tuned for env in environments) else []  # as verdict.csv has it
    columns = ["task", "family", *tuned, "status", "axis", "low", "high", "pairs", "min_pairs", "noise_pairs"]
    return pd.DataFrame(rows, columns=[*columns, "measure", "kept_pairs", "censored_pairs", "sign_error"])


def write_tables(
    out: Path, runs: Sequence[RunTrajectory], table: Sequence[MeasureCorrelation] | None = None
) -> tuple[Path, ...]:
    """runs.csv, correlations.csv (one block per environment; ``table`` is the only environment's, when
    there is one, else each is computed) and robust.csv from the given runs, each written whole or not at
    all."""
    return write_results(out, lab_results(runs, table))


def write_results(out: Path, results: LabResults) -> tuple[Path, ...]:
    """runs.csv, correlations.csv, verdict.csv, couplings.csv, robust.csv and comparisons.csv of ``results`` (see
        :func:`write_tables`), forgetting.csv when a fine-tuning environment's runs recorded forgetting, and, when
        the directory holds runs of the modular task, grokking.csv (each run's saturation, jump and every
        measure's lead), grokking_summary.csv (each measure over the seeds that grokked) and grokking_power.csv
    (the power check's synthetic curves)."""
    write_text(out / RUNS_CSV, runs_frame(results.runs).to_csv(index=False))
    write_text(out / CORRELATIONS_CSV, environments_frame(results.environments).to_csv(index=False))
    write_text(out / VERDICT_CSV, verdict_frame(results.verdicts).to_csv(index=False))
    write_text(out / COUPLINGS_CSV, couplings_frame(results.verdicts).to_csv(index=False))
    write_text(out / ROBUST_CSV, robust_frame(results.robust).to_csv(index=False))
    write_text(out / COMPARISONS_CSV, comparisons_frame(results.comparisons).to_csv(index=False))
    written = [out / RUNS_CSV, out / CORRELATIONS_CSV, out / VERDICT_CSV, out / COUPLINGS_CSV, out / ROBUST_CSV]
    written.append(out / COMPARISONS_CSV)
    if results.forgetting:
        write_text(out / FORGETTING_CSV, forgetting_frame(results.forgetting).to_csv(index=False))
        written.append(out / FORGETTING_CSV)
    if grokking := grokking_runs(results.runs):
        checked = grokking_verdict(grokking)
        seeds = [run.seed for run in grokking if run.event.grokked]
        write_text(out / GROKKING_CSV, leads_frame(grokking).to_csv(index=False))
        write_text(out / GROKKING_SUMMARY_CSV, summary_frame(checked.summaries).to_csv(index=False))
        write_text(out / GROKKING_POWER_CSV, power_frame(checked.power, seeds).to_csv(index=False))
        written += [out / GROKKING_CSV, out / GROKKING_SUMMARY_CSV, out / GROKKING_POWER_CSV]
    return tuple(written)


def read_runs_csv(path: Path | str) -> pd.DataFrame:
    """A runs.csv, with the columns it was written without filled in: ``task`` and ``family`` as
    threshold/bert (the first shipped reference), ``fine_tuning`` as trained from scratch, and the loss
    columns and any measure registered since as NaN (missing, which every table leaves out)."""
    import pandas as pd

    frame = pd.read_csv(path)
    if "task" not in frame.columns:
        frame.insert(1, "task", DEFAULT_TASK)
    if "family" not in frame.columns:
        frame.insert(2, "family", DEFAULT_FAMILY)
    if "fine_tuning" not in frame.columns:
        frame["fine_tuning"] = FROM_SCRATCH
    measure_columns = [c for m in MEASURES.values() for c in (m.column, m.linear_column) if c]
    for column in ("test_loss", "optimal_loss", "excess_loss", "base_task_error", *measure_columns):
        if column not in frame.columns:
            frame[column] = math.nan
    known = [c for c in RUN_COLUMNS if c in frame.columns]
    return frame[known + [c for c in frame.columns if c not in RUN_COLUMNS]]


def read_results(out: Path | str) -> LabResults:
    """The finished runs of a lab directory and their correlations (recomputed from the records)."""
    out = Path(out)
    if not (out / RUNS_DIR).is_dir():
        raise LabError(f"{out} is not a lab directory (it has no {RUNS_DIR}/ folder)")
    return lab_results(read_runs(out))
