"""The explorer's p controls: read from the session state before they are drawn (held_choice), the
positions a slider can take, and which sliders move the total."""

from __future__ import annotations

import pytest

from dashboard.widgets.controls import (
    GLOBAL_KEY,
    INHERIT,
    KIND_KEY,
    KINDS_KEY,
    LAYER_KEY,
    LAYERS_KEY,
    OPTIMAL,
    OPTIMAL_KEY,
    OWN,
    SNAP_KEY,
    MovingSlider,
    held_choice,
    moving_sliders,
    slider_positions,
    slider_step,
)
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis


def test_nothing_is_held_before_the_controls_are_first_drawn(minilm: BoundAnalysis) -> None:
    assert held_choice(minilm, {}) is None
    assert held_choice(minilm, {GLOBAL_KEY: 0.5}) is None  # a link's value waits for the controls


def test_the_default_is_p_star_or_the_global_p_on_the_grid(minilm: BoundAnalysis) -> None:
    assert minilm.grid_m == 12
    at_p_star = held_choice(minilm, {OPTIMAL_KEY: True, GLOBAL_KEY: 0.5})
    assert at_p_star is not None and at_p_star.assignment.default is None and at_p_star.summary == "default p*"
    snapped = held_choice(minilm, {OPTIMAL_KEY: False, GLOBAL_KEY: 0.3})
    assert snapped is not None and snapped.snap
    assert snapped.assignment.default == pytest.approx(4 / 12)  # 0.3 lies nearest to 4/12 on P_12
    free = held_choice(minilm, {OPTIMAL_KEY: False, SNAP_KEY: False, GLOBAL_KEY: 0.337})
    assert free is not None and free.assignment.default == 0.34 and free.summary == "default p = 0.34"


def test_overrides_count_only_behind_their_toggle_and_layers_after_kinds(minilm: BoundAnalysis) -> None:
    state = {
        OPTIMAL_KEY: False,
        GLOBAL_KEY: 1.0,
        KIND_KEY.format("QK") + "_mode": OWN,
        KIND_KEY.format("QK"): 0.5,
        KIND_KEY.format("V") + "_mode": OPTIMAL,
        KIND_KEY.format("M_in") + "_mode": INHERIT,
        LAYER_KEY.format(2) + "_mode": OWN,
        LAYER_KEY.format(2): 2.0,
    }
    hidden = held_choice(minilm, state)
    assert hidden is not None and hidden.assignment.by_kind == {} and hidden.assignment.by_layer == {}
    shown = held_choice(minilm, {**state, KINDS_KEY: True, LAYERS_KEY: True})
    assert shown is not None
    assert shown.assignment.by_kind == {Kind.QK: 0.5, Kind.V: None}
    assert shown.assignment.by_layer == {2: 2.0}
    assert shown.summary == "default p = 1 · QK: p = 0.5 · V: p* · layer 2: p = 2"
    p = minilm.evaluate(shown.assignment).p  # layer over kind over the default
    layer_2_qk = minilm.profile.rows_of(layers=[2], kinds=[Kind.QK])
    other_qk = minilm.profile.rows_of(layers=[0], kinds=[Kind.QK])
    assert set(p[layer_2_qk]) == {2.0} and set(p[other_qk]) == {0.5}


def test_slider_positions_near_the_value_and_at_both_ends_with_the_p_the_page_computes() -> None:
    assert slider_step(12, True) == 1 / 12 and slider_step(12, False) == 0.01
    snapped = slider_positions(12, True, around=0.5, reach=2)
    assert list(snapped) == [0, 4, 5, 6, 7, 8, 24]  # 0.5 is position 6 of P_12
    assert snapped == {i: i / 12 for i in snapped}
    free = slider_positions(12, False, around=0.35, reach=3)
    assert list(free) == [0, 32, 33, 34, 35, 36, 37, 38, 200]
    # position 35 is the value 35 * 0.01 = 0.35000000000000003, which the page computes as 0.35
    assert free[35] == 0.35 and 35 * 0.01 != 0.35 and free[200] == 2.0
    whole = slider_positions(12, True, around=2.0, reach=30)
    assert list(whole) == list(range(25))  # the reach clipped to [0, 2]


def test_the_sliders_that_move_the_total(minilm: BoundAnalysis) -> None:
    state: dict[str, object] = {OPTIMAL_KEY: False, GLOBAL_KEY: 1.0, KINDS_KEY: True, LAYERS_KEY: True}
    state |= {KIND_KEY.format("QK") + "_mode": OWN, KIND_KEY.format("QK"): 0.5}
    state |= {KIND_KEY.format("V") + "_mode": OPTIMAL, LAYER_KEY.format(2) + "_mode": OWN, LAYER_KEY.format(2): 2.0}
    choice = held_choice(minilm, state)
    assert choice is not None
    assert moving_sliders(choice) == [
        MovingSlider(GLOBAL_KEY, 1.0),
        MovingSlider(KIND_KEY.format("QK"), 0.5, kind=Kind.QK),
        MovingSlider(LAYER_KEY.format(2), 2.0, layer=2),
    ]  # V at its p* has no slider of its own
    at_p_star = held_choice(minilm, {**state, OPTIMAL_KEY: True})
    assert at_p_star is not None and [s.key for s in moving_sliders(at_p_star)] == ["p_kind_QK", "p_layer_2"]
