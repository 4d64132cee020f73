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
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from specbound.core import BoundSettings, ProgressCallback, silent
from specbound.io import describe_os_error
from specbound.studies import Executor, Status, run_resumable

from .claims import claim, tables_lock
from .compiled import GraphKey
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
    compile: bool = True,
) -> SweepResult:
    """Train and analyse every run not finished in ``out`` yet, then rebuild the tables.

    ``progress(name)`` gives the callback of one run (train, then analyse events); ``report`` gets one
    line per run; ``should_stop`` is the cancel hook, checked between training steps. On cancellation
    the tables are rebuilt from the finished runs and TrainingCancelled is raised. ``executor`` runs
    the runs in worker processes or on a Dask cluster, each process keeping its compiled evaluation
    graphs (:mod:`~specbound_lab.compiled`; ``compile=False``: none) across the runs it is given. The
    batch is :func:`specbound.studies.run_resumable`'s: a run is claimed
    (:func:`~specbound_lab.claims.claim`) before it is touched, and its record written here as it
    finishes.
    """
    out = Path(out)
    specs = tuple(dict.fromkeys(specs))
    started = time.perf_counter()
    try:
        (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LabError(f"cannot create the lab directory {out}: {exc.strerror}") from None
    sharing = Counter(GraphKey.of(spec) for spec in specs)  # the runs that may reuse one compiled graph
    tasks = [
        _RunTask(spec, out / RUNS_DIR / spec.name, bound_settings, use_cache, compile, sharing[GraphKey.of(spec)])
        for spec in specs
    ]
    prefixes = {task.spec: f"[{index}/{len(specs)}] {task.spec.name}" for index, task in enumerate(tasks, start=1)}

    def in_process(task: _RunTask) -> tuple[RunTrajectory, float]:
        """A run trained here: with its progress callback, cancellable between training steps."""
        run_started, callback = time.perf_counter(), progress(task.spec.name)
        result = train_run(
            task.spec,
            task.run_dir,
            progress=callback,
            should_stop=should_stop,
            compile=task.compile,
            graph_runs=task.graph_runs,
            notice=report,
        )
        trajectory = analyse_run(result, task.run_dir, settings=bound_settings, progress=callback, use_cache=use_cache)
        return trajectory, time.perf_counter() - run_started

    def keep(task: _RunTask, answer: tuple[RunTrajectory, float]) -> tuple[RunTrajectory, float]:
        write_record(out, answer[0])
        return answer

    def prepare(task: _RunTask) -> None:
        if task.run_dir.exists():
            shutil.rmtree(task.run_dir)  # an unfinished or different earlier run, claimed by no one else

    outcomes: list[tuple[int, RunOutcome]] = []
    try:
        for outcome in run_resumable(
            tasks,
            _train_and_analyse,
            keep,
            executor=executor,
            in_process=in_process,
            finished=lambda task: finished_run(out, task.spec) is not None,
            hold=lambda task: claim(out, task.spec.name, prefixes[task.spec], report, should_stop),
            prepare=prepare,
            on_dispatch=lambda todo: report(f"{len(todo)} runs to train {executor.describe()}"),
            should_stop=should_stop,
        ):
            prefix = prefixes[outcome.item.spec]
            if outcome.status is Status.SKIPPED:
                outcomes.append((outcome.index, RunOutcome(outcome.item.spec.name, Status.SKIPPED, 0.0)))
                report(f"{prefix}: skipped, {outcome.why_skipped}")
                continue
            assert outcome.kept is not None  # keep keeps every trained run
            trajectory, seconds = outcome.kept
            outcomes.append((outcome.index, RunOutcome(trajectory.name, Status.DONE, seconds)))
            final = trajectory.final
            report(
                f"{prefix}: done in {seconds:.1f} s, train error {final.train_error:.4f}, "
                f"test error {final.test_error:.4f} (se {final.test_error_se:.4f}), "
                f"log10 ours {final.ours_log10:.4f}"
            )
        if len(outcomes) < len(tasks):  # worker processes stopped starting runs when should_stop said so
            raise TrainingCancelled(f"the sweep stopped after {len(outcomes)} of its {len(tasks)} runs")
    except TrainingCancelled:
        with tables_lock(out):
            write_tables(out, read_runs(out))
        raise
    except OSError as exc:
        raise LabError(f"cannot write to the lab directory {out.name}: {describe_os_error(exc)}") from None
    with tables_lock(out):
        results = lab_results(read_runs(out))
        files = write_results(out, results)
    in_order = tuple(run for _, run in sorted(outcomes, key=lambda pair: pair[0]))
    return SweepResult(in_order, results, files, time.perf_counter() - started)


@dataclass(frozen=True)
class _RunTask:
    """One run to train and analyse, wherever it runs; its checkpoints go to ``run_dir``."""

    spec: RunSpec
    run_dir: Path
    bound_settings: BoundSettings
    use_cache: bool
    compile: bool = True  # evaluate through the process's compiled graphs where that pays
    graph_runs: int = 1  # runs of the sweep that share this run's graph (compiling pays over them)


def _train_and_analyse(task: _RunTask) -> tuple[RunTrajectory, float]:
    """Train one run into its directory and analyse it (in a worker process or on a Dask worker, one
    thread each, seeded as in a serial sweep); the record is the driver's to write. The worker process
    keeps its compiled evaluation graphs (a module-level cache) for the next run it is given. The
    workers write the checkpoints into the sweep's directory, so a Dask cluster's workers must share
    its file system."""
    started = time.perf_counter()
    result = train_run(task.spec, task.run_dir, compile=task.compile, graph_runs=task.graph_runs)
    trajectory = analyse_run(result, task.run_dir, settings=task.bound_settings, use_cache=task.use_cache)
    return trajectory, time.perf_counter() - started
