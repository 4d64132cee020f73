"""Sweeps over depth, width, heads, training-set size, label noise and seed: resumable, shared safely.

A re-run skips every run whose record exists with the same spec and every registered measure; a run
without a record (killed mid-way, or cancelled), or whose record predates a measure, is deleted and
trained again from scratch, so it is redone cleanly. Then the tables are rebuilt from every record.

The pieces: :mod:`~specbound_lab.grid` (which runs), :mod:`~specbound_lab.records` (the directory's
layout and records), :mod:`~specbound_lab.tables` (runs.csv, correlations.csv), and
:mod:`~specbound_lab.claims` (several writers on one directory: a run is claimed before it is touched,
and a writer waits for a run another is training, then reuses its record).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from specbound.core import BoundSettings, ProgressCallback, silent
from specbound.io import describe_os_error
from specbound.studies import Executor, Status, run_tasks

from .claims import claim, tables_lock
from .records import RUNS_DIR, finished_run, read_runs, write_record
from .tables import LabResults, lab_results, write_results, write_tables
from .train import LabError, RunSpec, TrainingCancelled, train_run
from .trajectory import DEFAULT_BOUNDS, RunTrajectory, analyse_run


@dataclass(frozen=True)
class RunOutcome:
    name: str
    status: Status
    seconds: float  # wall time spent on it in this sweep (0 when skipped)


@dataclass(frozen=True)
class SweepResult:
    outcomes: tuple[RunOutcome, ...]
    results: LabResults
    files: tuple[Path, ...]
    seconds: float


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
            with claim(out, spec.name, prefix, report, should_stop):
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
        with tables_lock(out):
            write_tables(out, read_runs(out))
        raise
    except OSError as exc:
        raise LabError(f"cannot write to the lab directory {out.name}: {describe_os_error(exc)}") from None
    with tables_lock(out):
        results = lab_results(read_runs(out))
        files = write_results(out, results)
    return SweepResult(tuple(outcomes), results, files, time.perf_counter() - started)


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
                claims.enter_context(claim(out, spec.name, prefix, report, lambda: False))
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
