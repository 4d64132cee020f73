"""The p controls of the Bound explorer: widgets in, a :class:`~specbound.core.bounds.PAssignment` out.

One global p (or the optimal p* as the default), then optional overrides per kind and per layer,
shown when their toggle is on; the package applies them most specific first (layer over kind over
the default). By default every
slider snaps to the grid P_m = {0, 1/m, ..., 2}, where the theorem's post-hoc guarantee holds; free p
is a labelled option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import streamlit as st

from dashboard.state import share
from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis, PAssignment, snap_to_grid
from specbound.core.defaults import P_MAX

#: Decimals, and so step, of the sliders when p is free (not snapped to P_m).
FREE_DECIMALS = 2
FREE_STEP = 10.0**-FREE_DECIMALS
#: Where the sliders start: p = 1 (the nuclear-norm regime) lies on every grid P_m.
DEFAULT_P = 1.0
#: The explorer opens at the post-hoc optimum p* (the proxy itself); the sliders take over when it is off.
DEFAULT_OPTIMAL = True

INHERIT, OPTIMAL, OWN = "follow default", "optimal p*", "own p"
OVERRIDE_MODES = (INHERIT, OPTIMAL, OWN)
#: How an override mode is written in a shared link.
MODE_CODEC = share.choice_codec({INHERIT: "inherit", OPTIMAL: "optimal", OWN: "own"})
#: Widget keys (and link parameters) of the controls; per kind and per layer they take a suffix.
OPTIMAL_KEY, SNAP_KEY, GLOBAL_KEY = "p_optimal", "p_snap", "p_global"
KIND_KEY, LAYER_KEY = "p_kind_{}", "p_layer_{}"
#: Toggles (and link parameters) that show the override rows per kind and per layer; off, there are none.
KINDS_KEY, LAYERS_KEY = "p_kinds", "p_layers"


#: The controls' values before they are first drawn (a link's values are in the session state by then).
CONTROL_DEFAULTS: Mapping[str, Any] = {OPTIMAL_KEY: DEFAULT_OPTIMAL, SNAP_KEY: True, GLOBAL_KEY: DEFAULT_P}


@dataclass(frozen=True)
class PChoice:
    """The assignment the widgets describe, and how it was made (for captions and tests)."""

    assignment: PAssignment
    snap: bool
    grid_m: int
    summary: str


def _normalised(value: float, m: int, snap: bool) -> float:
    """p as the controls use it: on the grid P_m when snapping, else rounded to FREE_DECIMALS."""
    return float(snap_to_grid(float(value), m)) if snap else round(float(value), FREE_DECIMALS)


def slider_step(m: int, snap: bool) -> float:
    """The step of every p slider: 1/m on the grid P_m, FREE_STEP when p is free."""
    return 1.0 / m if snap else FREE_STEP


def slider_positions(m: int, snap: bool, around: float, reach: int) -> dict[int, float]:
    """Slider position -> the p the page computes there, for the positions within ``reach`` steps of
    ``around`` and both ends (where Home and End go).

    Position i is the slider's value i * step; its p is normalised as the sliders are, so a table
    over these positions holds exactly what the page would show there.
    """
    step = slider_step(m, snap)
    centre, last = round(around / step), round(P_MAX / step)
    near = range(max(0, centre - reach), min(last, centre + reach) + 1)
    return {i: _normalised(i * step, m, snap) for i in sorted({0, *near, last})}


@dataclass(frozen=True)
class MovingSlider:
    """A p slider that moves the total now: its widget key, its p, and the setting it is (None, None: the default)."""

    key: str
    p: float
    kind: Kind | None = None
    layer: int | None = None


def moving_sliders(choice: PChoice) -> list[MovingSlider]:
    """The global slider unless p* is the default, and the slider of each kind and layer set to its own p."""
    assignment = choice.assignment
    sliders = [] if assignment.default is None else [MovingSlider(GLOBAL_KEY, assignment.default)]
    sliders += [
        MovingSlider(KIND_KEY.format(Kind(kind).value), p, kind=Kind(kind))
        for kind, p in assignment.by_kind.items()
        if p is not None
    ]
    sliders += [
        MovingSlider(LAYER_KEY.format(layer), p, layer=layer)
        for layer, p in assignment.by_layer.items()
        if p is not None
    ]
    return sliders


def _p_slider(
    label: str,
    key: str,
    m: int,
    snap: bool,
    *,
    disabled: bool = False,
    label_visibility: Literal["visible", "hidden", "collapsed"] = "visible",
    shown_instead: str | None = None,
) -> None:
    """A p slider in [0, P_MAX]; steps of 1/m and snapped to P_m, or steps of FREE_STEP when free.

    The value is normalised before the slider is drawn (onto P_m when snapping), so the slider, the
    terms and a shared link all show the p that is computed, and toggling the snap keeps the value.
    A disabled slider shows ``shown_instead`` (the p in use: "p*", or the default's p) instead of its
    own value, which is not in use.
    """
    st.session_state[key] = _normalised(share.shared(key, share.P_VALUE, DEFAULT_P), m, snap)
    st.slider(
        label,
        min_value=0.0,
        max_value=P_MAX,
        step=slider_step(m, snap),
        format="%.3f" if shown_instead is None else shown_instead.replace("%", "%%"),
        key=key,
        disabled=disabled,
        label_visibility=label_visibility,
    )


def _override(label: str, key: str, m: int, snap: bool, default: str) -> None:
    """One row: a mode (follow the default, p*, own p) and its slider, which shows the p in use."""
    mode_col, slider_col = st.columns([2, 3])
    share.shared(f"{key}_mode", MODE_CODEC, INHERIT)
    mode = mode_col.selectbox(label, OVERRIDE_MODES, key=f"{key}_mode")
    shown = {INHERIT: f"{default} (the default)", OPTIMAL: "p* (its own optimum)"}.get(mode)
    with slider_col:
        _p_slider(
            f"p for {label}", key, m, snap, disabled=mode != OWN, label_visibility="collapsed", shown_instead=shown
        )


def layer_label(shape: ModelShape, layer: int) -> str:
    """'layer 3', or for an encoder-decoder 'layer 3 (decoder 1)': the layer in series and in its stack."""
    stack = shape.stack_of(layer)
    return f"layer {layer}" + (f" ({stack} {shape.stack_layer(layer)})" if stack else "")


def _describe(value: float | None) -> str:
    return "p*" if value is None else f"p = {value:.3g}"


def held_choice(analysis: BoundAnalysis, state: Mapping[Any, Any]) -> PChoice | None:
    """The assignment the controls hold in ``state`` (the session state), read without drawing them.

    When a control moves, its new value is in the session state before the page runs, so the explorer
    shows the new total before it draws the controls; :func:`p_controls` returns this same reading
    once they are drawn. None before the controls were first drawn (drawing them puts a link's values
    in place).
    """
    if OPTIMAL_KEY not in state:
        return None
    m = analysis.grid_m
    snap = bool(state.get(SNAP_KEY, True))

    def p_of(key: str) -> float:
        return _normalised(state.get(key, DEFAULT_P), m, snap)

    def overrides(keys: Mapping[Any, str]) -> dict[Any, float | None]:
        """Target -> its own p, or None for its p*; targets that follow the default are left out."""
        modes = {target: state.get(f"{key}_mode", INHERIT) for target, key in keys.items()}
        return {t: (p_of(keys[t]) if mode == OWN else None) for t, mode in modes.items() if mode != INHERIT}

    by_kind: dict[Kind, float | None] = {}
    if state.get(KINDS_KEY, False):
        by_kind = overrides({kind: KIND_KEY.format(kind.value) for kind in analysis.profile.model_kinds})
    by_layer: dict[int, float | None] = {}
    if state.get(LAYERS_KEY, False):
        by_layer = overrides({layer: LAYER_KEY.format(layer) for layer in range(analysis.profile.shape.num_layers)})
    default = None if state.get(OPTIMAL_KEY, DEFAULT_OPTIMAL) else p_of(GLOBAL_KEY)
    parts = [f"default {_describe(default)}"]
    parts += [f"{kind.value}: {_describe(v)}" for kind, v in by_kind.items()]
    parts += [f"layer {layer}: {_describe(v)}" for layer, v in by_layer.items()]
    return PChoice(PAssignment(default=default, by_kind=by_kind, by_layer=by_layer), snap, m, " · ".join(parts))


def p_controls(analysis: BoundAnalysis) -> PChoice:
    """Draw the p controls and return the assignment they set."""
    m = analysis.grid_m
    shape = analysis.profile.shape
    toggles, slider = st.columns([2, 3])
    with toggles:
        share.shared(OPTIMAL_KEY, share.BOOL, DEFAULT_OPTIMAL)
        optimal = st.toggle(
            "Optimal p* as the default",
            key=OPTIMAL_KEY,
            help="Every matrix takes the p in P_m that minimises its own c(W; p).",
        )
        share.shared(SNAP_KEY, share.BOOL, True)
        snap = st.toggle(
            "Snap p to the grid P_m",
            key=SNAP_KEY,
            help="Off: free p in steps of 0.01, outside the theorem's post-hoc guarantee.",
        )
    with slider:
        _p_slider(
            "Global p (every matrix without an override)",
            GLOBAL_KEY,
            m,
            snap,
            disabled=optimal,
            shown_instead="p* for every matrix" if optimal else None,
        )
        if snap:
            st.caption(
                f"p ∈ P_m = {{0, 1/{m}, 2/{m}, …, 2}} (m = ⌈L + ln N⌉ = {m}): "
                f"the indices the theorem's guarantee covers."
            )
        else:
            st.caption("**Free p**: values off the grid P_m lie outside the theorem's post-hoc guarantee.")

    kinds_col, layers_col = st.columns(2)
    share.shared(KINDS_KEY, share.BOOL, False)
    per_kind = kinds_col.toggle(
        "Set p per kind", key=KINDS_KEY, help="Each kind follows the default, takes its p*, or its own p."
    )
    share.shared(LAYERS_KEY, share.BOOL, False)
    per_layer = layers_col.toggle("Set p per layer (wins over kinds)", key=LAYERS_KEY)
    # the override rows are drawn only when asked for: some 40 widgets would slow every slider move
    default = "p*" if optimal else f"p = {_normalised(st.session_state[GLOBAL_KEY], m, snap):.3f}"
    if per_kind:
        with st.container(border=True):
            for kind in analysis.profile.model_kinds:
                _override(kind.value, KIND_KEY.format(kind.value), m, snap, default)
    if per_layer:
        with st.container(border=True):
            for layer in range(shape.num_layers):
                _override(layer_label(shape, layer), LAYER_KEY.format(layer), m, snap, default)
    choice = held_choice(analysis, st.session_state)
    assert choice is not None  # the controls are drawn
    return choice
