"""The grid of a sweep (specbound_lab.grid): its optimisation axes, in code and in a grid file."""

from __future__ import annotations

import pytest

from specbound_lab.grid import SweepGrid, grid_from_dict
from specbound_lab.tables import sweep_axes
from specbound_lab.train import LabError, RunSpec


def test_batch_size_and_weight_decay_are_axes_of_a_grid_and_of_a_grid_file() -> None:
    grid = SweepGrid(
        layers=(1,), hidden=(32,), heads=(2,), n_train=(64,), batch_sizes=(16, 32), weight_decays=(0.0, 0.1)
    )
    specs = grid.specs()
    assert sorted((s.settings.batch_size, s.settings.weight_decay) for s in specs) == [
        (16, 0.0),
        (16, 0.1),
        (32, 0.0),
        (32, 0.1),
    ]
    assert len({s.name for s in specs}) == 4  # each optimisation setting its own run
    from_file = grid_from_dict({"batch_sizes": [8, 8, 16], "weight_decays": 0.05})
    assert from_file.batch_sizes == (8, 16) and from_file.weight_decays == (0.05,)
    with pytest.raises(LabError, match="batch_size"):
        grid_from_dict({"batch_sizes": [0]})


def test_a_grid_that_does_not_vary_the_batch_or_the_decay_keeps_its_axes() -> None:
    class _Run:
        def __init__(self, spec: RunSpec) -> None:
            self.spec = spec

    plain = SweepGrid(layers=(1, 2), hidden=(32,), heads=(2,), n_train=(64,)).specs()
    assert "batch_size" not in sweep_axes([_Run(s) for s in plain])  # type: ignore[misc]  # a stand-in with the one field read
    varied = SweepGrid(layers=(1,), hidden=(32,), heads=(2,), n_train=(64,), weight_decays=(0.0, 0.1)).specs()
    axes = sweep_axes([_Run(s) for s in varied])  # type: ignore[misc]  # a stand-in with the one field read
    assert "weight_decay" in axes and "batch_size" not in axes
