"""A lab model's atlas member (``RUN@STEP``, or a run of the shipped scaling grid) named by its run's words."""

from __future__ import annotations

import pytest

from dashboard.state.run_names import RUN_ID, remember, short_name
from dashboard.wording.vocabulary import run_name
from specbound_lab import reference as lab_reference
from specbound_lab.trajectory import RunTrajectory


@pytest.fixture(scope="module")
def shipped_run() -> RunTrajectory:
    """A run of the decoder sweep the lab ships (a GPT-2 run on a task other than the default)."""
    return lab_reference.load_reference(lab_reference.DECODER_REFERENCE.directory).runs[0]


def test_a_shipped_runs_step_is_named_by_its_spec(shipped_run: RunTrajectory) -> None:
    step = shipped_run.final.step
    member = lab_reference.step_member(shipped_run.name, step)
    assert RUN_ID.fullmatch(shipped_run.name)
    shown = short_name(member)
    assert shown == run_name(shipped_run.spec, step) and shipped_run.name not in shown
    assert short_name(shipped_run.name) == run_name(shipped_run.spec)  # a run of a grid, no step


def test_a_run_of_the_scaling_grid_is_named_too() -> None:
    grid = lab_reference.load_reference(lab_reference.SCALING_REFERENCE.directory).runs[0]
    assert short_name(grid.name) == run_name(grid.spec)


@pytest.mark.parametrize(
    "member",
    [
        "lab-L1-N32-H2-n400-q0-s0-t999999",  # a lab run id the shipped references do not hold
        "my-model@500",  # not a lab run
        "lab-../../../etc/passwd",  # a link's member never becomes a path outside the references
        "lab-L1/../../x@500",
        "",
    ],
)
def test_any_other_member_keeps_its_name(member: str) -> None:
    assert short_name(member) is None


def test_a_run_trained_on_this_server_is_named_once_a_page_opened_it(shipped_run: RunTrajectory) -> None:
    """Its record is in the server's store, not shipped: opening it remembers its spec (a new seed here,
    so that no shipped record holds it)."""
    from dataclasses import replace

    spec = replace(shipped_run.spec, seed=shipped_run.spec.seed + 977)
    member = lab_reference.step_member(spec.name, 500)
    assert short_name(member) is None
    remember(spec)
    shown = short_name(member)
    assert shown == run_name(spec, 500) and "seed" in shown and spec.name not in shown
