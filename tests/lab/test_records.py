"""A lab directory's run records (``specbound_lab.records``): a record reads back as the run it was
written from, a record of another format or schema or a foreign file is not a finished run, a run is
finished only with the same spec and every recorded measure, and runs are listed in grid order."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specbound_lab import reference
from specbound_lab.records import (
    LAB_LABEL,
    finished_run,
    lab_label,
    read_record,
    read_runs,
    record_measures,
    record_path,
    write_record,
)
from specbound_lab.registry import recorded_measures
from specbound_lab.trajectory import RunTrajectory


@pytest.fixture(scope="module")
def shipped_runs() -> tuple[RunTrajectory, ...]:
    """Three shipped reference runs, in the reference's order."""
    return reference.load_reference().runs[:3]


def test_a_record_reads_back_as_the_run_it_was_written_from(
    tmp_path: Path, shipped_runs: tuple[RunTrajectory, ...]
) -> None:
    run = shipped_runs[0]
    path = write_record(tmp_path, run)
    assert path == record_path(tmp_path, run.name) == tmp_path / "runs" / run.name / "trajectory.json"
    again = read_record(path)
    assert again is not None and again.to_dict() == run.to_dict()
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["label"] == LAB_LABEL and written["task"] == run.spec.task.describe()
    assert record_measures(path) == tuple(m.name for m in recorded_measures())


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r.update(schema=r["schema"] + 1),  # written by another version of the lab
        lambda r: r.update(format="something else"),  # not a lab record
        lambda r: r.update(steps=[]),  # a run with no saved step
        lambda r: r.update(name="another-run"),  # its name disagrees with its spec's
    ],
)
def test_a_record_that_is_not_this_labs_is_not_a_run(
    tmp_path: Path, shipped_runs: tuple[RunTrajectory, ...], edit: Callable[[dict[str, Any]], object]
) -> None:
    path = write_record(tmp_path, shipped_runs[0])
    record = json.loads(path.read_text(encoding="utf-8"))
    edit(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    assert read_record(path) is None


def test_a_run_is_finished_with_its_own_spec_and_every_recorded_measure(
    tmp_path: Path, shipped_runs: tuple[RunTrajectory, ...]
) -> None:
    run, other = shipped_runs[0], shipped_runs[1]
    write_record(tmp_path, run)
    assert finished_run(tmp_path, run.spec) is not None
    assert finished_run(tmp_path, other.spec) is None  # never trained here
    write_record(tmp_path, run, measures=[])  # a record that predates the recorded measures
    assert finished_run(tmp_path, run.spec) is None  # done again, so its measures are filled in


def test_runs_are_listed_in_grid_order_whatever_the_order_they_were_written(
    tmp_path: Path, shipped_runs: tuple[RunTrajectory, ...]
) -> None:
    for run in reversed(shipped_runs):
        write_record(tmp_path, run)
    (tmp_path / "runs" / "not-a-run").mkdir()  # a folder without a record is skipped
    assert [r.name for r in read_runs(tmp_path)] == [r.name for r in shipped_runs]


def test_each_family_is_labelled_as_the_labs_not_a_released_model() -> None:
    assert lab_label("bert") == LAB_LABEL and "not a BERT Miniature" in LAB_LABEL
    assert lab_label("gpt2") == "small GPT-2 decoder trained by the specbound lab (not a released model)"


def test_a_run_folder_copied_inside_runs_is_blamed_by_name_not_runs_csv(
    tmp_path: Path, shipped_runs: tuple[RunTrajectory, ...]
) -> None:
    """A copy of a run's folder holds a record of the same run: refused in one line naming the copy
    (the folder that is not the run's own), not as two rows of runs.csv that nothing tells apart."""
    import shutil

    from specbound_lab.train import LabError

    for run in shipped_runs:
        write_record(tmp_path, run)
    name = shipped_runs[1].name
    shutil.copytree(tmp_path / "runs" / name, tmp_path / "runs" / f"{name} (copy)")
    with pytest.raises(LabError) as caught:
        read_runs(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and "runs.csv" not in message
    assert message.startswith(f"the run {name} is recorded twice: runs/{name} (copy) holds a copy of its record")
    assert f"its own folder is runs/{name}" in message
