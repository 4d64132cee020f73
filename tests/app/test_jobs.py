"""The Lab page's training jobs (dashboard.services.jobs): a run trained in a thread into the store it is given,
one job per run, at most the board's limit at once, and the board's version bumped when a job ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.services.jobs import JobBoard, JobState, LabBusy
from specbound_lab.records import finished_run
from specbound_lab.train import RunSpec, TrainSettings


def _spec(seed: int) -> RunSpec:
    return RunSpec(
        layers=1,
        hidden=16,
        heads=2,
        n_train=32,
        seed=seed,
        settings=TrainSettings(steps=4, save_every=2, test_samples=64),
    )


def test_a_board_trains_one_job_per_run_and_at_most_its_limit(tmp_path: Path) -> None:
    board = JobBoard(limit=1)
    job = board.start(_spec(0), tmp_path)
    try:
        with pytest.raises(LabBusy, match="being trained already"):
            board.start(_spec(0), tmp_path)
        with pytest.raises(LabBusy, match="at most 1 at once"):
            board.start(_spec(1), tmp_path)
    finally:
        job.join(timeout=120)
    status = job.status()
    assert status.state is JobState.DONE and status.fraction == 1.0 and status.run == _spec(0).name
    assert board.running() == 0 and board.version == 1
    assert finished_run(tmp_path, _spec(0)) is not None  # the record is in the store it was given
    second = board.start(_spec(1), tmp_path)  # the slot is free again
    second.cancel()  # cancelled before or during training: nothing of it is kept
    second.join(timeout=120)
    assert second.status().state in (JobState.CANCELLED, JobState.DONE)
    assert board.running() == 0 and board.version == 2
