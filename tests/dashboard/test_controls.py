"""The explorer's p controls read from the session state before they are drawn (held_choice)."""

from __future__ import annotations

import pytest

from dashboard.controls import (
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
    held_choice,
)
from specbound.matrices import Kind


def test_nothing_is_held_before_the_controls_are_first_drawn(minilm) -> None:
    assert held_choice(minilm, {}) is None
    assert held_choice(minilm, {GLOBAL_KEY: 0.5}) is None  # a link's value waits for the controls


def test_the_default_is_p_star_or_the_global_p_on_the_grid(minilm) -> None:
    assert minilm.grid_m == 12
    at_p_star = held_choice(minilm, {OPTIMAL_KEY: True, GLOBAL_KEY: 0.5})
    assert at_p_star is not None and at_p_star.assignment.default is None and at_p_star.summary == "default p*"
    snapped = held_choice(minilm, {OPTIMAL_KEY: False, GLOBAL_KEY: 0.3})
    assert snapped is not None and snapped.snap
    assert snapped.assignment.default == pytest.approx(4 / 12)  # 0.3 lies nearest to 4/12 on P_12
    free = held_choice(minilm, {OPTIMAL_KEY: False, SNAP_KEY: False, GLOBAL_KEY: 0.337})
    assert free is not None and free.assignment.default == 0.34 and free.summary == "default p = 0.34"


def test_overrides_count_only_behind_their_toggle_and_layers_after_kinds(minilm) -> None:
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
