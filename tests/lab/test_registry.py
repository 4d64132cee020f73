"""The measure registry: every table, record and label follows it, one registration adds a measure
everywhere, and records written before a measure existed still load without it."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from specbound_lab import records, reference, tables, views
from specbound_lab.grid import preset_grid
from specbound_lab.registry import MEASURES, MeasureInput, RunMeasure, correlated_measures, recorded_measures, register
from specbound_lab.sweep import run_sweep
from specbound_lab.trajectory import StepRecord


@pytest.fixture(scope="module")
def runs():
    return reference.load_reference().runs


@pytest.fixture(scope="module")
def fresh_runs(tmp_path_factory):
    """Three short runs trained now, so they have every measure (the shipped records predate the CENTRED ones)."""
    specs = [replace(s, settings=replace(s.settings, steps=20, save_every=10)) for s in preset_grid("smoke").specs()]
    return run_sweep(specs[:3], tmp_path_factory.mktemp("fresh")).results.runs


@pytest.mark.parametrize("name", list(MEASURES))
def test_every_measure_reaches_every_table(name: str, runs, fresh_runs) -> None:
    measure = MEASURES[name]
    if not math.isfinite(tables.measure_value(runs[0], measure)):  # registered after the shipped records
        assert measure.computed_from is MeasureInput.CENTRED or name.endswith("_init_per_n")
        runs = fresh_runs
        assert all(math.isfinite(tables.measure_value(r, measure)) for r in runs)
    assert measure.column in tables.RUN_COLUMNS and measure.definition and measure.label
    assert views.MEASURE_LABELS[name] == (measure.label, measure.linear_axis)
    frame = tables.runs_frame(runs[:2])
    final = frame[frame["final"]]
    expected = [tables.measure_value(r, measure) for r in runs[:2]]
    np.testing.assert_allclose(final[measure.column].to_numpy(float), expected, rtol=1e-12)
    if measure.linear_column:
        np.testing.assert_allclose(final[measure.linear_column], np.power(10.0, expected), rtol=1e-12)
    if measure.computed_from is MeasureInput.MODEL:  # computed on the final checkpoint only
        assert frame[~frame["final"]][measure.column].isna().all()
    assert (name in {c.measure for c in tables.correlations(runs[:3])}) == measure.correlated


@pytest.fixture
def scratch_registry():
    """The registry as it is; whatever a test registers is gone afterwards."""
    saved = dict(MEASURES)
    yield
    MEASURES.clear()
    MEASURES.update(saved)


def test_one_registration_adds_a_measure_everywhere(runs, scratch_registry) -> None:
    count = len(MEASURES)
    twice = register(
        RunMeasure(
            name="twice_params",
            column="twice_params",
            label="2 × parameters",
            screen_name="twice the number of parameters",
            linear_axis=False,
            definition="twice the count",
            compute=lambda r: 2.0 * r.params,
        )
    )
    assert len(MEASURES) == count + 1 and "twice_params" in tables.run_columns()
    frame = tables.runs_frame(runs)
    np.testing.assert_array_equal(frame["twice_params"], 2.0 * frame["params"])
    assert list(views.sweep_frame(runs)["twice_params"]) == [2.0 * r.params for r in runs]
    table = {c.measure: c for c in tables.correlations(runs)}
    assert table["twice_params"].kendall_tau == pytest.approx(table["params"].kendall_tau)  # a monotone map
    assert table["twice_params"].kendall_tau_ci == table["params"].kendall_tau_ci  # the same seeded draws
    assert tables.comparison(runs, "twice_params", "params").kendall_tau == 0.0
    with pytest.raises(ValueError, match="registered already"):
        register(twice)


def test_a_record_written_before_a_measure_still_loads(runs, tmp_path: Path) -> None:
    shutil.copytree(reference.REFERENCE_DIR / "runs", tmp_path / "runs")
    old = runs[0]
    path = records.record_path(tmp_path, old.name)
    data = json.loads(path.read_text())
    new_columns = {
        MEASURES[n].column for n in ("alpha", "alpha_hat", "alpha_skipped", "pacbayes_flatness", "sharpness")
    }
    for step in data["steps"]:
        for column in new_columns:
            step.pop(column, None)
    del data["measures"]
    path.write_text(json.dumps(data))

    loaded = tables.read_results(tmp_path)
    assert len(loaded.runs) == len(runs)  # the run is there ...
    again = loaded.run(old.name)
    assert math.isnan(again.final.value("alpha")) and math.isnan(again.final.value("sharpness"))  # ... the measures not
    assert again.final.ours_log10 == old.final.ours_log10
    table = {c.measure: c for c in loaded.correlations}
    assert table["alpha"].runs == table["sharpness"].runs == len(runs) - 1 and table["ours"].runs == len(runs)
    assert records.finished_run(tmp_path, old.spec) is None  # a sweep does it again, to fill the measures in


def test_a_record_with_every_measure_is_finished(fresh_runs, tmp_path: Path) -> None:
    records.write_record(tmp_path, fresh_runs[0])
    finished = records.finished_run(tmp_path, fresh_runs[0].spec)
    assert finished is not None and finished.final == fresh_runs[0].final
    assert records.finished_run(tmp_path, reference.load_reference().runs[1].spec) is None  # no such record


def test_steps_round_trip_and_leave_out_what_is_not_finite() -> None:
    values = {m.name: float(i) for i, m in enumerate(recorded_measures())}
    values["sharpness"] = math.inf
    step = StepRecord(500, 0.1, 0.0, 0.2, 100, "checkpoints/step-000500", 7, (0.5,), (1.0, 2.0), values)
    data = step.to_dict()
    assert MEASURES["sharpness"].column not in data and data["ours_log10"] == values["ours"]
    back = StepRecord.from_dict(json.loads(json.dumps(data, allow_nan=False)))
    assert math.isnan(back.value("sharpness")) and back.value("alpha") == values["alpha"]
    assert back.gap == pytest.approx(0.2) and back.p_opt == (1.0, 2.0)
    assert [m.name for m in correlated_measures()] == [n for n, m in MEASURES.items() if m.correlated]
