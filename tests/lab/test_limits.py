"""The lab's limits, declared once (``specbound_lab.limits``), are the ones every door enforces: the run
specs and tasks, the grid, the command line's argument types and the dashboard visitor's caps."""

from __future__ import annotations

import dataclasses

import pytest

from specbound_lab import cli as lab_cli
from specbound_lab.grid import SweepGrid
from specbound_lab.limits import LAB_LIMITS, VISITOR_CAPS
from specbound_lab.tasks import MarkovTask, ThresholdTask
from specbound_lab.train import LabError, RunSpec, TrainSettings


def test_a_visitor_asks_for_less_than_the_lab_allows() -> None:
    caps, lab = VISITOR_CAPS, LAB_LIMITS
    assert caps.max_layers <= lab.max_layers and max(caps.widths) <= lab.max_hidden
    assert max(caps.heads) <= lab.max_heads and caps.max_n_train <= lab.max_train
    assert caps.max_steps <= lab.max_steps and caps.max_seed <= lab.max_seed
    assert caps.test_samples <= lab.max_test_samples and caps.max_label_noise < lab.max_label_noise
    assert all(width % heads == 0 for width in caps.widths for heads in caps.heads)


@pytest.mark.parametrize(
    ("field", "limit"),
    [("layers", "max_layers"), ("hidden", "max_hidden"), ("n_train", "max_train"), ("seed", "max_seed")],
)
def test_a_run_spec_takes_its_limit_and_refuses_one_more(field: str, limit: str) -> None:
    base = RunSpec(layers=1, hidden=16, heads=1, n_train=8)
    highest = getattr(LAB_LIMITS, limit)
    assert getattr(dataclasses.replace(base, **{field: highest}), field) == highest  # checked, not allocated
    with pytest.raises((LabError, ValueError), match=field.replace("_", "[_ ]")):
        dataclasses.replace(base, **{field: highest + 1})


def test_the_command_line_and_the_settings_agree_on_every_shared_limit() -> None:
    parse = {
        "steps": lab_cli._steps,
        "layers": lab_cli._layers,
        "test_samples": lab_cli._test_samples,
        "learning_rate": lab_cli._learning_rate,
    }
    for name, value in [
        ("steps", LAB_LIMITS.max_steps),
        ("layers", LAB_LIMITS.max_layers),
        ("test_samples", LAB_LIMITS.max_test_samples),
        ("learning_rate", LAB_LIMITS.max_learning_rate),
        ("learning_rate", LAB_LIMITS.min_learning_rate),
    ]:
        assert parse[name](str(value)) == value
    for name, value in [
        ("steps", LAB_LIMITS.max_steps + 1),
        ("layers", LAB_LIMITS.max_layers + 1),
        ("learning_rate", LAB_LIMITS.min_learning_rate / 2),
    ]:
        with pytest.raises(Exception, match="the value must be"):
            parse[name](str(value))
    TrainSettings(learning_rate=LAB_LIMITS.min_learning_rate)
    with pytest.raises(LabError, match="learning rate"):
        TrainSettings(learning_rate=LAB_LIMITS.min_learning_rate / 2)  # the command line refuses it too


def test_tasks_and_the_grid_read_the_same_limits() -> None:
    assert MarkovTask(states=LAB_LIMITS.max_vocab).states == LAB_LIMITS.max_vocab
    with pytest.raises(ValueError, match=str(LAB_LIMITS.max_vocab)):
        MarkovTask(states=LAB_LIMITS.max_vocab + 1)
    with pytest.raises(ValueError, match="label noise"):
        ThresholdTask(label_noise=LAB_LIMITS.max_label_noise)
    seeds = tuple(range(LAB_LIMITS.max_grid_runs))
    assert len(SweepGrid(layers=(1,), hidden=(16,), heads=(1,), n_train=(8,), seeds=seeds).specs()) == len(seeds)
    with pytest.raises(LabError, match=f"at most {LAB_LIMITS.max_grid_runs}"):
        SweepGrid(layers=(1, 2), hidden=(16,), heads=(1,), n_train=(8,), seeds=seeds).specs()
