"""Sweeps: grids, resuming after an interruption without retraining finished runs, the result files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from specbound.studies.status import Status
from specbound_lab import records, sweep, tables
from specbound_lab.grid import PRESETS, SweepGrid, grid_from_dict, preset_grid, read_grid
from specbound_lab.registry import correlated_measures
from specbound_lab.tables import CORRELATIONS_CSV, RUN_COLUMNS, RUNS_CSV
from specbound_lab.tasks import ThresholdTask
from specbound_lab.train import LabError, TrainingCancelled, TrainSettings

TINY = SweepGrid(
    layers=(1,),
    hidden=(8,),
    heads=(2,),
    n_train=(16, 32, 48),
    settings=TrainSettings(steps=12, save_every=6, test_samples=200),
)


def _mtimes(directory: Path) -> dict[str, int]:
    return {str(p.relative_to(directory)): p.stat().st_mtime_ns for p in sorted(directory.rglob("*")) if p.is_file()}


def test_resume_after_an_interruption_skips_finished_runs(tmp_path: Path) -> None:
    specs = TINY.specs()
    straight = sweep.run_sweep(specs, tmp_path / "straight")
    assert [o.status for o in straight.outcomes] == [Status.DONE] * 3

    out = tmp_path / "interrupted"
    calls = []

    def stop_in_the_second_run() -> bool:
        calls.append(1)
        return len(calls) > 12 + 4  # all of run 1, then 4 steps of run 2

    with pytest.raises(TrainingCancelled):
        sweep.run_sweep(specs, out, should_stop=stop_in_the_second_run)
    first, second = (out / "runs" / s.name for s in specs[:2])
    assert records.record_path(out, specs[0].name).is_file() and not records.record_path(out, specs[1].name).exists()
    assert (second / "checkpoints" / "step-000000").is_dir()  # the half-done run left files behind
    assert len(pd.read_csv(out / RUNS_CSV)["run"].unique()) == 1  # tables hold the finished run only
    finished = _mtimes(first)

    lines: list[str] = []
    resumed = sweep.run_sweep(specs, out, report=lines.append)
    assert [o.status for o in resumed.outcomes] == [Status.SKIPPED, Status.DONE, Status.DONE]
    assert "skipped, already done" in lines[0]
    assert _mtimes(first) == finished  # not retrained, not rewritten
    for name in (RUNS_CSV, CORRELATIONS_CSV):
        assert (out / name).read_bytes() == (tmp_path / "straight" / name).read_bytes()

    again = sweep.run_sweep(specs, out)
    assert [o.status for o in again.outcomes] == [Status.SKIPPED] * 3


def test_a_changed_spec_or_a_damaged_record_is_retrained(tmp_path: Path) -> None:
    spec = TINY.specs()[0]
    sweep.run_sweep([spec], tmp_path)
    record = records.record_path(tmp_path, spec.name)
    record.write_text("{not json")
    assert sweep.run_sweep([spec], tmp_path).outcomes[0].status is Status.DONE
    data = json.loads(record.read_text())
    data["spec"]["settings"]["learning_rate"] = 0.5
    record.write_text(json.dumps(data))
    assert sweep.run_sweep([spec], tmp_path).outcomes[0].status is Status.DONE


def test_files_have_the_interface_columns(tmp_path: Path) -> None:
    sweep.run_sweep(TINY.specs(), tmp_path)
    runs = pd.read_csv(tmp_path / RUNS_CSV)
    assert tuple(runs.columns) == RUN_COLUMNS and len(runs) == 3 * 3  # three saved steps per run
    assert (runs["gap"] == runs["test_error"] - runs["train_error"]).all()
    assert runs.groupby("run")["final"].sum().eq(1).all()
    for checkpoint in runs["checkpoint"]:
        assert (tmp_path / checkpoint / "model.safetensors").is_file()
    table = pd.read_csv(tmp_path / CORRELATIONS_CSV)
    assert list(table.columns[:4]) == ["measure", "kendall_tau", "granulated_tau", "runs"]
    assert list(table["measure"]) == [m.name for m in correlated_measures()]
    # width 8 with 2 heads: 4 to 8 eigenvalues a matrix, which WeightWatcher's fit takes whole, except
    # where fewer than 2 of them are above its floor of 1e-5 (a few of these small QK products)
    assert set(table["runs"]) == {3}
    assert (runs["alpha_skipped"] < 6).all() and runs["alpha"].notna().all()
    assert (table["groups_n_train"][table["runs"] == 3] == 1).all()
    for statistic in ("kendall_tau", "granulated_tau"):  # each interval holds its statistic
        defined = table[table[statistic].notna()]
        assert (defined[statistic + "_ci_low"] <= defined[statistic] + 1e-12).all()
        assert (defined[statistic] <= defined[statistic + "_ci_high"] + 1e-12).all()
    results = tables.read_results(tmp_path)
    assert len(results.runs) == 3 and results.run(TINY.specs()[1].name).spec == TINY.specs()[1]


def test_presets_and_custom_grids(tmp_path: Path) -> None:
    assert len(PRESETS["smoke"].specs()) == 4
    assert len(PRESETS["class"].specs()) == 48
    study = PRESETS["study"].specs()  # depth 1-4, width 32-128, n 100-2700, two learning rates, five seeds
    assert len(study) == 480 and {s.layers for s in study} == {1, 2, 3, 4}
    assert {s.hidden for s in study} == {32, 64, 128} and {s.n_train for s in study} == {100, 300, 900, 2700}
    assert {s.label_noise for s in study} == {0.0} and {s.seed for s in study} == set(range(5))
    assert {s.settings.learning_rate for s in study} == {5e-4, 1e-3}  # an optimisation axis (SPEC §13b)
    assert all(s.settings.until_fit for s in study)  # every run trained until it fits
    for task, fits in (("modular", True), ("markov", False)):  # next-token prediction: a fixed budget
        specs = preset_grid("study", task, "gpt2").specs()
        assert {s.seed for s in specs} == set(range(5)) and all(s.settings.until_fit is fits for s in specs), task
    path = tmp_path / "grid.json"
    path.write_text(
        json.dumps(
            {
                "layers": [1, 2],
                "hidden": 32,
                "n_train": [50],
                "label_noise": [0, 0.1],
                "settings": {"steps": 40},
                "task": {"vocab_size": 6, "positions": [1, 2]},
            }
        )
    )
    grid = read_grid(path)
    specs = grid.specs()
    assert len(specs) == 4 and {s.settings.steps for s in specs} == {40}
    assert isinstance(specs[0].task, ThresholdTask)
    assert {s.task.vocab_size for s in specs} == {6} and specs[0].task.positions == (1, 2)
    assert {s.label_noise for s in specs} == {0.0, 0.1} and specs[0].heads == PRESETS["smoke"].heads[0]
    for bad in (
        {"depth": [1]},
        {"layers": ["two"]},
        {"layers": [1.5]},
        {"settings": {"steps": 0}},
        {"hidden": [30], "heads": [4]},
        {"task": {"colour": 1}},
    ):
        with pytest.raises(LabError):
            grid_from_dict(bad).specs()
