"""The tables of a lab directory: runs.csv (one row per run and saved step) and correlations.csv (each
measure's tau with the gap), the comparisons against the baseline measure, and reading results back.

The measures' columns come from :mod:`specbound.lab.registry`; the tables are rebuilt from every record
in ``runs/``, so a run trained later into the same directory joins them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .correlation import MeasureCorrelation, TauDifference, compare, correlate
from .grid import AXES
from .records import RUNS_DIR, read_runs, write_text
from .registry import MEASURES, Measure, RunMeasure, correlated_measures
from .train import LabError, RunSpec
from .trajectory import RunTrajectory

if TYPE_CHECKING:
    import pandas as pd

RUNS_CSV = "runs.csv"
CORRELATIONS_CSV = "correlations.csv"

#: Columns of runs.csv before the measures, and after them; the measures' columns come from the registry.
_HEAD_COLUMNS: tuple[str, ...] = (
    "run",
    "layers",
    "hidden",
    "heads",
    "n_train",
    "label_noise",
    "seed",
    "step",
    "steps",
    "final",
    "train_loss",
    "train_error",
    "test_error",
    "test_error_se",
    "gap",
    "test_samples",
)
_TAIL_COLUMNS: tuple[str, ...] = (
    "grid_m",
    "p_opt_mean",
    "p_opt_min",
    "p_opt_max",
    "p_opt_zero_fraction",
    "checkpoint",
)


def run_columns() -> tuple[str, ...]:
    """Every column of runs.csv, in order: the run and its errors, each registered measure's columns in
    registration order, then p* and the checkpoint."""
    columns: list[str] = []
    for m in MEASURES.values():
        columns += [m.linear_column, m.column] if m.linear_column else [m.column]
    return (*_HEAD_COLUMNS, *columns, *_TAIL_COLUMNS)


#: The columns of runs.csv with the measures registered in :mod:`specbound.lab.registry`.
RUN_COLUMNS: tuple[str, ...] = run_columns()


def measure_value(run: RunTrajectory, measure: Measure) -> float:
    """A measure's value for a run: on its final checkpoint, or of the run as a whole (NaN if missing)."""
    return float(measure.compute(run)) if isinstance(measure, RunMeasure) else run.final.value(measure.name)


@dataclass(frozen=True)
class LabResults:
    """Everything a lab directory holds, read back: finished runs (by name) and the correlations."""

    runs: tuple[RunTrajectory, ...]
    correlations: tuple[MeasureCorrelation, ...]

    def run(self, name: str) -> RunTrajectory:
        for run in self.runs:
            if run.name == name:
                return run
        raise LabError(f"no finished run named {name}")


def _axis_values(spec: RunSpec) -> dict[str, Any]:
    """The run's value on each axis of :data:`AXES` (layers, hidden, heads, n_train, label_noise, seed)."""
    return {axis: getattr(spec, axis) for axis in AXES}


def _group_key(run: RunTrajectory) -> dict[str, Any]:
    """Axis values of a run plus everything else that must match within a granulated-tau group."""
    spec = run.spec
    task = {k: v for k, v in spec.task.to_dict().items() if k != "label_noise"}
    return {
        **_axis_values(spec),
        "fixed": json.dumps({"task": task, "settings": spec.to_dict()["settings"]}, sort_keys=True),
    }


def correlations(runs: Sequence[RunTrajectory]) -> tuple[MeasureCorrelation, ...]:
    """tau of every correlated measure with the gap over the final checkpoints of ``runs``, with intervals."""
    return correlate(
        {m.name: [measure_value(r, m) for r in runs] for m in correlated_measures()},
        [r.final.gap for r in runs],
        [_group_key(r) for r in runs],
        AXES,
    )


#: The measure every other one is compared with.
BASELINE = "ours"


def comparison(runs: Sequence[RunTrajectory], measure: str, other: str) -> TauDifference:
    """tau(measure) - tau(other) with the gap, paired-bootstrapped (LabError for an unknown measure)."""
    for name in (measure, other):
        if name not in MEASURES or not MEASURES[name].correlated:
            known = ", ".join(m.name for m in correlated_measures())
            raise LabError(f"unknown measure {name!r} (known: {known})")
    return compare(
        measure,
        [measure_value(r, MEASURES[measure]) for r in runs],
        other,
        [measure_value(r, MEASURES[other]) for r in runs],
        [r.final.gap for r in runs],
        [_group_key(r) for r in runs],
        AXES,
    )


def comparisons(runs: Sequence[RunTrajectory], baseline: str = BASELINE) -> tuple[TauDifference, ...]:
    """Every other correlated measure against ``baseline``: tau(measure) - tau(baseline)."""
    return tuple(comparison(runs, m.name, baseline) for m in correlated_measures() if m.name != baseline)


def runs_frame(runs: Sequence[RunTrajectory]) -> pd.DataFrame:
    """One row per run and saved step (columns RUN_COLUMNS); checkpoints relative to the lab directory."""
    import numpy as np
    import pandas as pd

    rows = []
    for run in runs:
        spec = run.spec
        for s in run.steps:
            p = np.asarray(s.p_opt)
            row: dict[str, Any] = {
                "run": run.name,
                **_axis_values(spec),
                "step": s.step,
                "steps": spec.settings.steps,
                "final": s is run.final,
                "train_loss": s.train_loss,
                "train_error": s.train_error,
                "test_error": s.test_error,
                "test_error_se": s.test_error_se,
                "gap": s.gap,
                "test_samples": s.test_samples,
            }
            for m in MEASURES.values():
                value = float(m.compute(run)) if isinstance(m, RunMeasure) else s.value(m.name)
                row[m.column] = value
                if m.linear_column:
                    row[m.linear_column] = _pow10(value)
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
            rows.append(row)
    frame = pd.DataFrame(rows, columns=list(run_columns()))
    for m in MEASURES.values():
        if m.integer:
            frame[m.column] = frame[m.column].astype("Int64")  # a count (empty where a record lacks it)
    return frame


def _pow10(log10_value: float) -> float:
    try:
        return 10.0**log10_value
    except OverflowError:
        return math.inf


#: The suffixes of an interval's columns in correlations.csv.
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"


def correlations_frame(table: Sequence[MeasureCorrelation]) -> pd.DataFrame:
    """``measure, kendall_tau, granulated_tau, runs`` first, then the 95 % intervals of both
    (``kendall_tau_ci_low``, ``kendall_tau_ci_high``, ``granulated_tau_ci_low``, ...), tau-a, groups, and
    per axis psi, its interval and its groups."""
    import pandas as pd

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
        }
        for a in c.axes:
            row[f"psi_{a.axis}"] = a.tau
            row[f"psi_{a.axis}{CI_LOW}"], row[f"psi_{a.axis}{CI_HIGH}"] = a.ci.low, a.ci.high
            row[f"groups_{a.axis}"] = a.groups
        rows.append(row)
    return pd.DataFrame(rows)


def write_tables(
    out: Path, runs: Sequence[RunTrajectory], table: Sequence[MeasureCorrelation] | None = None
) -> tuple[Path, ...]:
    """runs.csv and correlations.csv (of ``table``, else computed) from the given runs, each written whole
    or not at all."""
    table = correlations(runs) if table is None else table
    write_text(out / RUNS_CSV, runs_frame(runs).to_csv(index=False))
    write_text(out / CORRELATIONS_CSV, correlations_frame(table).to_csv(index=False))
    return out / RUNS_CSV, out / CORRELATIONS_CSV


def read_results(out: Path | str) -> LabResults:
    """The finished runs of a lab directory and their correlations (recomputed from the records)."""
    out = Path(out)
    if not (out / RUNS_DIR).is_dir():
        raise LabError(f"{out} is not a lab directory (it has no {RUNS_DIR}/ folder)")
    runs = read_runs(out)
    return LabResults(runs, correlations(runs))
