"""Sweeps over depth, width, heads, training-set size, label noise and seed; resumable; result files.

Layout of a lab directory ``DIR`` (the file names and columns are an interface)::

    runs/<run>/checkpoints/step-XXXXXX/   save_pretrained checkpoints (config.json, model.safetensors)
    runs/<run>/trajectory.json            the run's record: spec, errors and terms at every saved step;
                                          written atomically last, it marks the run as finished
    runs.csv                              one row per run and saved step (see RUN_COLUMNS)
    correlations.csv                      one row per measure: Kendall tau and granulated tau with the gap,
                                          with 95 % bootstrap intervals

A re-run skips every run whose record exists with the same spec and every registered measure; a run
without a record (killed mid-way, or cancelled), or whose record predates a measure, is deleted and
trained again from scratch, so it is redone cleanly. The tables
are rebuilt from every record in ``runs/``, so a run trained later into the same directory joins them.

Several writers may share a lab directory (two ``lab sweep`` commands, the dashboard's jobs): a run is
claimed before it is touched (an advisory lock ``runs/.<run>.lock``, released by the process's end
whatever its cause), so a second writer never deletes a run that another is training; it waits for
that run and then reuses its record. The tables are rebuilt under a lock of their own.

Grid files and records are validated when they are read: a grid is a small regular JSON file whose
every value has the declared type and range (one LabError line otherwise); a record that does not
hold a complete, finite trajectory is not a finished run.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bounds import BoundSettings
from ..files import DirectoryLock, DirectoryLocked, atomic_write, describe_os_error, read_json
from ..limits import LIMITS
from ..parallel import Executor, run_tasks
from ..progress import ProgressCallback, silent
from ..text import quoted
from .correlation import MeasureCorrelation, TauDifference, compare, correlate
from .registry import MEASURES, Measure, Source, correlated_measures
from .tasks import ThresholdTask
from .train import LabError, RunSpec, TrainingCancelled, TrainSettings, train_run
from .trajectory import DEFAULT_BOUNDS, RunTrajectory, analyse_run

if TYPE_CHECKING:
    import pandas as pd

RUNS_DIR = "runs"
RECORD_FILE = "trajectory.json"
RUNS_CSV = "runs.csv"
CORRELATIONS_CSV = "correlations.csv"
RECORD_FORMAT = "specbound-lab-run"
#: Lock of the tables of a lab directory, and the name of a run's claim inside ``runs/``.
TABLES_LOCK = ".tables.lock"
#: How often a writer that waits for a run claimed by another looks again (seconds).
CLAIM_POLL_SECONDS = 0.5
#: Bump when the record changes incompatibly: older records are then retrained, not trusted. A record
#: of the same schema that predates a measure still loads (that measure is missing) and lists the
#: measures it holds under "measures"; a sweep retrains it so the new measure is filled in.
RECORD_SCHEMA = 1
#: A label that travels with every record and reference file.
LAB_LABEL = "small BERT encoder trained by the specbound lab (not a BERT Miniature)"
MAX_RUNS: int = 500

#: The hyperparameter axes of a sweep (also the axes of the granulated tau).
AXES: tuple[str, ...] = ("layers", "hidden", "heads", "n_train", "label_noise", "seed")

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
    return float(measure.compute(run)) if measure.source is Source.RUN else run.final.value(measure.name)


# --- grids --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepGrid:
    """The full product of the axis values, with one task and one set of training settings."""

    layers: tuple[int, ...]
    hidden: tuple[int, ...]
    heads: tuple[int, ...]
    n_train: tuple[int, ...]
    label_noise: tuple[float, ...] = (0.0,)
    seeds: tuple[int, ...] = (0,)
    task: ThresholdTask = field(default_factory=ThresholdTask)
    settings: TrainSettings = field(default_factory=TrainSettings)

    def specs(self) -> tuple[RunSpec, ...]:
        """Every run of the grid (LabError if one is invalid or there are too many)."""
        count = math.prod(
            len(v) for v in (self.layers, self.hidden, self.heads, self.n_train, self.label_noise, self.seeds)
        )
        if count == 0:
            raise LabError("the grid is empty: every axis needs at least one value")
        if count > MAX_RUNS:
            raise LabError(f"the grid has {count} runs; at most {MAX_RUNS} are allowed")
        try:
            return tuple(
                RunSpec(
                    layers=depth,
                    hidden=width,
                    heads=h,
                    n_train=n,
                    seed=s,
                    task=replace(self.task, label_noise=q),
                    settings=self.settings,
                )
                for depth, width, h, n, q, s in itertools.product(
                    self.layers, self.hidden, self.heads, self.n_train, self.label_noise, self.seeds
                )
            )
        except ValueError as exc:
            raise LabError(str(exc)) from None


PRESETS: dict[str, SweepGrid] = {
    # 4 runs, about a minute: what the tests use.
    "smoke": SweepGrid(
        layers=(2,),
        hidden=(32,),
        heads=(2,),
        n_train=(64, 512),
        label_noise=(0.0, 0.2),
        settings=TrainSettings(steps=200, save_every=100, test_samples=2000),
    ),
    # 48 runs, within 15 minutes on 2 cores: every axis but heads has groups for the granulated tau.
    "class": SweepGrid(
        layers=(1, 2),
        hidden=(32, 64),
        heads=(2,),
        n_train=(100, 400, 1600),
        label_noise=(0.0, 0.1),
        seeds=(0, 1),
        settings=TrainSettings(steps=500, save_every=125),
    ),
    # 288 runs for a study with narrower intervals: several hours on 2 cores (README, "Lab": the measured
    # estimate), meant for many cores.
    "study": SweepGrid(
        layers=(1, 2, 3, 4),
        hidden=(32, 64, 128),
        heads=(2,),
        n_train=(100, 400, 1600, 3200),
        label_noise=(0.0, 0.1),
        seeds=(0, 1, 2),
        settings=TrainSettings(steps=500, save_every=125),
    ),
}

_GRID_AXES = {"layers": int, "hidden": int, "heads": int, "n_train": int, "label_noise": float, "seeds": int}


def grid_from_dict(data: Mapping[str, Any], base: SweepGrid | None = None) -> SweepGrid:
    """A grid from JSON-like data: axis lists (layers, hidden, heads, n_train, label_noise, seeds),
    optional ``settings`` (fields of TrainSettings) and ``task`` (vocab_size, length, positions,
    threshold). Missing entries come from ``base`` (default: the smoke preset)."""
    base = base or PRESETS["smoke"]
    if not isinstance(data, Mapping):
        raise LabError("a grid must be a JSON object")
    unknown = set(data) - set(_GRID_AXES) - {"settings", "task"}
    if unknown:
        raise LabError(
            f"unknown grid entries: {', '.join(sorted(unknown))} "
            f"(known: {', '.join([*_GRID_AXES, 'settings', 'task'])})"
        )
    values: dict[str, Any] = {}
    try:
        for axis, convert in _GRID_AXES.items():
            if axis in data:
                raw = data[axis] if isinstance(data[axis], list) else [data[axis]]
                values[axis] = tuple(dict.fromkeys(_grid_number(f"grid entry '{axis}'", v, convert) for v in raw))
        settings, task = data.get("settings", {}), data.get("task", {})
        if not isinstance(settings, Mapping) or not isinstance(task, Mapping):
            raise LabError("grid entries 'settings' and 'task' must be JSON objects")
        known_settings = {f.name for f in fields(TrainSettings)}
        known_task = {f.name for f in fields(ThresholdTask)} - {"label_noise"}
        if set(settings) - known_settings or set(task) - known_task:
            raise LabError(
                f"unknown settings or task entries: "
                f"{quoted(', '.join(sorted((set(settings) - known_settings) | (set(task) - known_task))), 200)}"
            )
        settings = {
            name: _grid_number(f"setting '{name}'", v, float if name in _FLOAT_SETTINGS else int)
            for name, v in settings.items()
        }
        checked_task: dict[str, Any] = {}
        for name, v in task.items():
            if name == "positions":
                if not isinstance(v, list):
                    raise LabError("task entry 'positions' must be a list of integers")
                checked_task[name] = tuple(_grid_number("task entry 'positions'", i, int) for i in v)
            elif name == "threshold" and v is None:
                checked_task[name] = None
            else:
                checked_task[name] = _grid_number(f"task entry '{name}'", v, int)
        values["settings"] = replace(base.settings, **settings)
        values["task"] = replace(base.task, **{"threshold": None, **checked_task})  # rebalanced unless given
        grid = replace(base, **values)
        grid.specs()  # every run valid and within the limits, said now rather than at run 17
        return grid
    except (TypeError, ValueError) as exc:
        raise LabError(f"invalid grid: {quoted(exc, 200)}") from None


#: TrainSettings fields that are real numbers (the others are integers).
_FLOAT_SETTINGS = frozenset({"learning_rate", "weight_decay"})


def _grid_number(what: str, value: Any, convert: Callable[[Any], Any]) -> Any:
    """A number of a grid file: finite, and a genuine integer where one is due (2.0 passes, 2.5 not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LabError(f"{what} must be a number or a list of numbers, got {quoted(json.dumps(value)[:80])}")
    if not math.isfinite(value):
        raise LabError(f"{what} must be a finite number, got {quoted(value)}")
    if convert is int:
        if isinstance(value, float) and not value.is_integer():
            raise LabError(f"{what} must hold integers, got {quoted(value)}")
        value = int(value)
    return convert(value)


def read_grid(path: Path | str, base: SweepGrid | None = None) -> SweepGrid:
    """A grid from a JSON file (see :func:`grid_from_dict`)."""
    path = Path(path)
    try:
        data = read_json(path, f"the grid file {path.name}", LIMITS.max_grid_bytes)
    except OSError as exc:  # missing, a FIFO or a device, too large: said without the directory
        raise LabError(f"cannot read the grid file {path.name}: {describe_os_error(exc)}") from None
    except ValueError as exc:
        raise LabError(f"the grid file {path.name} is not valid JSON ({quoted(exc, 120)})") from None
    return grid_from_dict(data, base)


# --- records ------------------------------------------------------------------------------------


class Status(str, Enum):
    DONE = "done"  # trained in this sweep
    SKIPPED = "skipped"  # finished in an earlier sweep


@dataclass(frozen=True)
class RunOutcome:
    name: str
    status: Status
    seconds: float  # wall time spent on it in this sweep (0 when skipped)


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


@dataclass(frozen=True)
class SweepResult:
    outcomes: tuple[RunOutcome, ...]
    results: LabResults
    files: tuple[Path, ...]
    seconds: float


def _write_text(path: Path, text: str) -> None:
    with atomic_write(path) as f:
        f.write(text.encode("utf-8"))


def record_path(out: Path, name: str) -> Path:
    return out / RUNS_DIR / name / RECORD_FILE


def write_record(out: Path, trajectory: RunTrajectory) -> Path:
    path = record_path(out, trajectory.name)
    record = {
        "format": RECORD_FORMAT,
        "schema": RECORD_SCHEMA,
        "label": LAB_LABEL,
        "task": trajectory.spec.task.describe(),
        "measures": list(MEASURES),
        **trajectory.to_dict(),
    }
    _write_text(path, json.dumps(record, indent=1, allow_nan=False))
    return path


def read_record(path: Path) -> RunTrajectory | None:
    """A finished run's record, or None if it is missing, unreadable, foreign or of another schema."""
    try:
        data = read_json(path, path.name, LIMITS.max_record_bytes)  # a regular file of bounded size
        if data.get("format") != RECORD_FORMAT or data.get("schema") != RECORD_SCHEMA:
            return None
        trajectory = RunTrajectory.from_dict(data)
        return trajectory if trajectory.name == data["name"] and trajectory.steps else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError, LabError):
        return None


def record_measures(path: Path) -> tuple[str, ...]:
    """The measures a record says it holds (none for a record written before the list existed)."""
    try:
        names = json.loads(path.read_text(encoding="utf-8")).get("measures", [])
    except (OSError, ValueError, AttributeError):
        return ()
    return tuple(str(n) for n in names) if isinstance(names, list) else ()


def finished_run(out: Path, spec: RunSpec) -> RunTrajectory | None:
    """The record of ``spec`` in ``out`` if that exact run has finished there with every registered
    measure (a record that predates a measure is done again, so the measure is filled in)."""
    path = record_path(out, spec.name)
    trajectory = read_record(path)
    if trajectory is None or trajectory.spec.to_dict() != spec.to_dict():
        return None
    return trajectory if set(MEASURES) <= set(record_measures(path)) else None


def _order(run: RunTrajectory) -> tuple[Any, ...]:
    """Runs in grid order: by the axes (numerically), then the rest of the spec."""
    s = run.spec
    return (s.layers, s.hidden, s.heads, s.n_train, s.label_noise, s.seed, json.dumps(s.to_dict(), sort_keys=True))


def read_runs(out: Path | str) -> tuple[RunTrajectory, ...]:
    """Every finished run in a lab directory, in grid order (see :func:`_order`)."""
    runs = (read_record(p) for p in (Path(out) / RUNS_DIR).glob(f"*/{RECORD_FILE}"))
    return tuple(sorted((r for r in runs if r is not None), key=_order))


# --- tables -------------------------------------------------------------------------------------


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
                value = float(m.compute(run)) if m.source is Source.RUN else s.value(m.name)
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
    _write_text(out / RUNS_CSV, runs_frame(runs).to_csv(index=False))
    _write_text(out / CORRELATIONS_CSV, correlations_frame(table).to_csv(index=False))
    return out / RUNS_CSV, out / CORRELATIONS_CSV


def read_results(out: Path | str) -> LabResults:
    """The finished runs of a lab directory and their correlations (recomputed from the records)."""
    out = Path(out)
    if not (out / RUNS_DIR).is_dir():
        raise LabError(f"{out} is not a lab directory (it has no {RUNS_DIR}/ folder)")
    runs = read_runs(out)
    return LabResults(runs, correlations(runs))


# --- the sweep ----------------------------------------------------------------------------------


def run_sweep(
    specs: Iterable[RunSpec],
    out: Path | str,
    *,
    bound_settings: BoundSettings = DEFAULT_BOUNDS,
    use_cache: bool = True,
    progress: Callable[[str], ProgressCallback] = lambda name: silent,
    report: Callable[[str], None] = lambda line: None,
    should_stop: Callable[[], bool] = lambda: False,
    executor: Executor = Executor(),
) -> SweepResult:
    """Train and analyse every run not finished in ``out`` yet, then rebuild the tables.

    ``progress(name)`` gives the callback of one run (train, then analyse events); ``report`` gets one
    line per run; ``should_stop`` is the cancel hook, checked between training steps. On cancellation
    the tables are rebuilt from the finished runs and TrainingCancelled is raised. ``executor`` runs
    the runs in worker processes or on a Dask cluster (:func:`_run_in_parallel`).
    """
    out = Path(out)
    specs = tuple(dict.fromkeys(specs))
    started = time.perf_counter()
    try:
        (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LabError(f"cannot create the lab directory {out}: {exc.strerror}") from None
    outcomes: list[RunOutcome] = []
    if not executor.serial:
        outcomes = _run_in_parallel(specs, out, bound_settings, use_cache, report, executor)
        specs = ()  # every run is done or skipped: the serial loop below has nothing left
    try:
        for index, spec in enumerate(specs, start=1):
            prefix = f"[{index}/{len(specs)}] {spec.name}"
            if finished_run(out, spec) is not None:
                outcomes.append(RunOutcome(spec.name, Status.SKIPPED, 0.0))
                report(f"{prefix}: skipped, already done")
                continue
            with _claim(out, spec.name, prefix, report, should_stop):
                if finished_run(out, spec) is not None:  # the writer we waited for finished it
                    outcomes.append(RunOutcome(spec.name, Status.SKIPPED, 0.0))
                    report(f"{prefix}: skipped, finished by the other writer")
                    continue
                run_started = time.perf_counter()
                run_dir = out / RUNS_DIR / spec.name
                if run_dir.exists():
                    shutil.rmtree(run_dir)  # an unfinished or different earlier run, claimed by no one
                callback = progress(spec.name)
                result = train_run(spec, run_dir, progress=callback, should_stop=should_stop)
                trajectory = analyse_run(
                    result, run_dir, settings=bound_settings, progress=callback, use_cache=use_cache
                )
                write_record(out, trajectory)
            seconds = time.perf_counter() - run_started
            outcomes.append(RunOutcome(spec.name, Status.DONE, seconds))
            final = trajectory.final
            report(
                f"{prefix}: done in {seconds:.1f} s, train error {final.train_error:.4f}, "
                f"test error {final.test_error:.4f} (se {final.test_error_se:.4f}), "
                f"log10 ours {final.ours_log10:.4f}"
            )
    except TrainingCancelled:
        with _tables_lock(out):
            write_tables(out, read_runs(out))
        raise
    except OSError as exc:
        raise LabError(f"cannot write to the lab directory {out.name}: {describe_os_error(exc)}") from None
    with _tables_lock(out):
        runs = read_runs(out)
        table = correlations(runs)
        files = write_tables(out, runs, table)
    return SweepResult(tuple(outcomes), LabResults(runs, table), files, time.perf_counter() - started)


@dataclass(frozen=True)
class _RunTask:
    """One run to train and analyse, wherever it runs; its checkpoints go to ``run_dir``."""

    spec: RunSpec
    run_dir: Path
    bound_settings: BoundSettings
    use_cache: bool


def _train_and_analyse(task: _RunTask) -> tuple[RunTrajectory, float]:
    """Train one run into its directory and analyse it; the record is the driver's to write."""
    started = time.perf_counter()
    result = train_run(task.spec, task.run_dir)
    trajectory = analyse_run(result, task.run_dir, settings=task.bound_settings, use_cache=task.use_cache)
    return trajectory, time.perf_counter() - started


def _run_in_parallel(
    specs: Sequence[RunSpec],
    out: Path,
    bound_settings: BoundSettings,
    use_cache: bool,
    report: Callable[[str], None],
    executor: Executor,
) -> list[RunOutcome]:
    """The runs of a sweep as parallel tasks: this writer claims every run it trains, the tasks train and
    analyse (each run is one thread's work, seeded as in a serial sweep), and the records are written here
    as the tasks finish, so the directory ends as a serial sweep leaves it. The workers write the
    checkpoints into ``out``, so a Dask cluster's workers must share its file system."""
    outcomes: dict[str, RunOutcome] = {}
    with ExitStack() as claims:
        pending: list[_RunTask] = []
        for index, spec in enumerate(specs, start=1):
            prefix = f"[{index}/{len(specs)}] {spec.name}"
            if finished_run(out, spec) is None:
                claims.enter_context(_claim(out, spec.name, prefix, report, lambda: False))
            if finished_run(out, spec) is not None:
                outcomes[spec.name] = RunOutcome(spec.name, Status.SKIPPED, 0.0)
                report(f"{prefix}: skipped, already done")
                continue
            run_dir = out / RUNS_DIR / spec.name
            if run_dir.exists():
                shutil.rmtree(run_dir)  # an unfinished or different earlier run, claimed by this writer now
            pending.append(_RunTask(spec, run_dir, bound_settings, use_cache))
        report(f"{len(pending)} runs to train {executor.describe()}")
        for i, (trajectory, seconds) in run_tasks(_train_and_analyse, pending, executor):
            write_record(out, trajectory)
            outcomes[trajectory.name] = RunOutcome(trajectory.name, Status.DONE, seconds)
            final = trajectory.final
            report(
                f"{pending[i].spec.name}: done in {seconds:.1f} s, train error {final.train_error:.4f}, "
                f"test error {final.test_error:.4f}, log10 ours {final.ours_log10:.4f}"
            )
    return [outcomes[spec.name] for spec in specs]


def claim_path(out: Path, name: str) -> Path:
    """The lock file by which a writer claims the run ``name`` of a lab directory."""
    return out / RUNS_DIR / f".{name}.lock"


@contextmanager
def _claim(
    out: Path, name: str, prefix: str, report: Callable[[str], None], should_stop: Callable[[], bool]
) -> Iterator[None]:
    """Hold the run's claim for the block, waiting (cancellably) while another writer holds it."""
    lock = DirectoryLock(claim_path(out, name), f"run {name}")
    waiting = False
    while True:
        try:
            lock.acquire(wait=False)
            break
        except DirectoryLocked:
            if not waiting:
                report(f"{prefix}: being trained by another writer of this directory; waiting for it")
                waiting = True
            if should_stop():
                raise TrainingCancelled(f"waiting for {name} was cancelled") from None
            time.sleep(CLAIM_POLL_SECONDS)
    try:
        yield
    finally:
        lock.release()


def _tables_lock(out: Path) -> DirectoryLock:
    return DirectoryLock(out / TABLES_LOCK, f"the tables of {out.name}").acquire(wait=True)
