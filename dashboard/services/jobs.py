"""The Lab page's training jobs: runs trained in background threads, at most a few at once per server.

A :class:`RunRequest` is what a visitor's form asks for, checked against the visitor caps before a job
starts (:meth:`RunRequest.spec`). A :class:`TrainingJob` trains and analyses one run
(:func:`specbound_lab.sweep.run_sweep`) in a daemon thread and publishes its status under a lock; a
:class:`JobBoard` is the server's list of running jobs, shared by every session, which refuses a run
already being trained and more than its limit at once (:data:`specbound_lab.limits.VISITOR_CAPS`).
Nothing here draws: the page reads a job's :class:`JobStatus` and polls it
(``dashboard.widgets.lab.progress_panel``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from dashboard import safety
from specbound.core.errors import SpecboundError
from specbound.core.progress import ProgressEvent
from specbound.core.values import check_number
from specbound.present.numbers import format_count
from specbound_lab.limits import VISITOR_CAPS, VisitorCaps
from specbound_lab.sweep import run_sweep
from specbound_lab.tasks import ThresholdTask
from specbound_lab.train import LabError, RunSpec, TrainingCancelled, TrainSettings


class JobState(StrEnum):
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(frozen=True)
class JobStatus:
    run: str  # the run's name
    state: JobState
    fraction: float
    text: str


class TrainingJob:
    """One run trained in a daemon thread; its status is read by the page under a lock.

    Training gets 90 % of the bar (steps), the analysis of the checkpoints the rest.
    """

    _TRAIN_SHARE = 0.9

    def __init__(self, spec: RunSpec, store: Path, on_end: Callable[[TrainingJob], None]) -> None:
        self.spec = spec
        self.store = store
        self.cancel_event = threading.Event()
        self._lock = threading.Lock()
        self._status = JobStatus(spec.name, JobState.RUNNING, 0.0, f"starting {spec.name}")
        self._on_end = on_end
        self._thread = threading.Thread(target=self._work, name=f"lab {spec.name}", daemon=True)

    @property
    def name(self) -> str:
        return self.spec.name

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self.cancel_event.set()

    def status(self) -> JobStatus:
        with self._lock:
            return self._status

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _set(self, state: JobState, fraction: float, text: str) -> None:
        with self._lock:
            self._status = JobStatus(self.spec.name, state, fraction, text)

    def _progress(self, event: ProgressEvent) -> None:
        done, total = event.done, event.total or 1
        if event.stage == "train":
            fraction, text = self._TRAIN_SHARE * done / total, f"training: step {done:.0f} of {total:.0f}"
        else:
            fraction = self._TRAIN_SHARE + (1 - self._TRAIN_SHARE) * done / total
            text = f"analysing the checkpoints: {done:.0f} of {total:.0f}"
        self._set(JobState.RUNNING, min(fraction, 1.0), text)

    def _work(self) -> None:
        try:
            run_sweep(
                [self.spec], self.store, progress=lambda name: self._progress, should_stop=self.cancel_event.is_set
            )
            self._set(JobState.DONE, 1.0, f"{self.name} finished")
        except TrainingCancelled:
            self._set(JobState.CANCELLED, self.status().fraction, f"{self.name} was cancelled")
        except (SpecboundError, OSError) as exc:
            self._set(JobState.FAILED, self.status().fraction, f"{self.name} failed: {safety.public_message(exc)}")
        except Exception as exc:  # a bug must not leave the slot taken: report it as a failure
            self._set(JobState.FAILED, self.status().fraction, f"{self.name} failed ({type(exc).__name__})")
        finally:
            self._on_end(self)


@dataclass(frozen=True)
class RunRequest:
    """What the form asks for; :meth:`spec` checks it against the caps."""

    layers: int = 1
    hidden: int = 32
    heads: int = 2
    n_train: int = 400
    label_noise: float = 0.0
    steps: int = 300
    seed: int = 0

    def spec(self, caps: VisitorCaps = VISITOR_CAPS) -> RunSpec:
        """The run to train (LabError when a value is outside the caps)."""
        check_number(self.layers, "layers", 1, caps.max_layers, integer=True, error=LabError)
        if self.hidden not in caps.widths:
            raise LabError(f"the width must be one of {caps.widths}")
        if self.heads not in caps.heads:
            raise LabError(f"the heads must be one of {caps.heads}")
        check_number(self.n_train, "n", 1, caps.max_n_train, integer=True, error=LabError)
        check_number(self.label_noise, "the label noise", 0.0, caps.max_label_noise, error=LabError)
        check_number(self.steps, "steps", 1, caps.max_steps, integer=True, error=LabError)
        check_number(self.seed, "the seed", 0, caps.max_seed, integer=True, error=LabError)
        settings = TrainSettings(
            steps=self.steps,
            save_every=max(1, self.steps // caps.checkpoints),
            test_samples=caps.test_samples,
            threads=1,
        )
        return RunSpec(
            layers=self.layers,
            hidden=self.hidden,
            heads=self.heads,
            n_train=self.n_train,
            seed=self.seed,
            task=ThresholdTask(label_noise=self.label_noise),
            settings=settings,
        )


DEFAULT_REQUEST = RunRequest()


class LabBusy(SpecboundError):
    """The server is already training as much as it allows, or this run is being trained."""


class JobBoard:
    """The server's running jobs (shared by every session) and a version bumped when one ends."""

    def __init__(self, limit: int = VISITOR_CAPS.max_jobs) -> None:
        self.limit = limit
        self.version = 0
        self._lock = threading.Lock()
        self._running: dict[str, TrainingJob] = {}

    def start(self, spec: RunSpec, store: Path) -> TrainingJob:
        """Train ``spec`` into the lab directory ``store`` in a thread of its own (LabBusy when that run is
        being trained or the board is full)."""
        with self._lock:
            if spec.name in self._running:
                raise LabBusy(f"{spec.name} is being trained already; it will join the runs when it ends")
            if len(self._running) >= self.limit:
                raise LabBusy(
                    f"the server is training {format_count(len(self._running), 'run')} already (at most "
                    f"{self.limit} at once); try again in a minute"
                )
            job = TrainingJob(spec, store, self._ended)
            self._running[spec.name] = job
        job.start()
        return job

    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def _ended(self, job: TrainingJob) -> None:
        with self._lock:
            self._running.pop(job.name, None)
            self.version += 1
