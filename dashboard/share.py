"""Shareable links: the current model and the p settings live in the URL's query parameters.

The page is already in the URL path (each page's ``url_path``). On a session's first run,
:func:`restore` reads ``st.query_params`` and seeds ``st.session_state`` before any widget is drawn
(and opens the model, and the atlas file when the link names one on the server); after the page has
drawn, :func:`publish` writes back the values that differ from their defaults, so the address bar
always holds a link that reproduces the view. Only the keys listed here are read or written.

Query parameters: ``model`` (any model name; ``atlas:<name>`` with ``atlas`` = the atlas file's path
on the server), and the widget keys of the Bound explorer (``p_optimal``, ``p_snap``, ``p_global``,
``p_kind_<kind>[_mode]``, ``p_layer_<i>[_mode]``), of the Theory page (``theory_p``) and of the
Scaling page (``scaling_fixed_p``). Booleans are 1/0, override modes inherit/optimal/own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from specbound.atlas import AtlasError
from specbound.defaults import DEFAULT_MODEL, P_MAX
from specbound.errors import SpecboundError
from specbound.matrices import Kind

from . import atlas, data
from .controls import DEFAULT_P, INHERIT, OPTIMAL, OWN
from .sidebar import show_in_picker

MODEL_PARAM, ATLAS_PARAM = "model", "atlas"
#: Session flag: the query parameters of this session have been read.
_RESTORED_KEY = "_share_restored"
_MODE_CODES = {INHERIT: "inherit", OPTIMAL: "optimal", OWN: "own"}
_KINDS = "|".join(re.escape(kind.value) for kind in Kind)


@dataclass(frozen=True)
class SharedSetting:
    """A family of session-state keys shared in the URL: how to read, write and compare its values."""

    pattern: re.Pattern[str]
    parse: Callable[[str], Any]  # raises ValueError on a bad value
    format: Callable[[Any], str]
    default: Any


def _parse_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def _parse_p(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and 0.0 <= value <= P_MAX):
        raise ValueError(text)
    return value


def _parse_mode(text: str) -> str:
    return {code: mode for mode, code in _MODE_CODES.items()}[text.lower()]


_BOOL = {"parse": _parse_bool, "format": lambda v: "1" if v else "0"}
_P = {"parse": _parse_p, "format": lambda v: f"{float(v):.6g}", "default": DEFAULT_P}
_MODE = {"parse": _parse_mode, "format": lambda v: _MODE_CODES[v], "default": INHERIT}

SETTINGS: tuple[SharedSetting, ...] = (
    SharedSetting(re.compile(r"p_optimal"), default=False, **_BOOL),
    SharedSetting(re.compile(r"p_snap"), default=True, **_BOOL),
    SharedSetting(re.compile(r"p_global"), **_P),
    SharedSetting(re.compile(rf"p_kind_(?:{_KINDS})"), **_P),
    SharedSetting(re.compile(r"p_layer_\d{1,3}"), **_P),
    SharedSetting(re.compile(rf"p_kind_(?:{_KINDS})_mode"), **_MODE),
    SharedSetting(re.compile(r"p_layer_\d{1,3}_mode"), **_MODE),
    SharedSetting(re.compile(r"theory_p"), **_P),
    SharedSetting(re.compile(r"scaling_fixed_p"), default=False, **_BOOL),
)


def setting_for(key: str) -> SharedSetting | None:
    return next((s for s in SETTINGS if s.pattern.fullmatch(key)), None)


def _first(value: str | list[str]) -> str:
    return value[-1] if isinstance(value, list) else value


def restore() -> None:
    """On the session's first run: seed widget values and open the model named in the URL."""
    if st.session_state.get(_RESTORED_KEY):
        return
    st.session_state[_RESTORED_KEY] = True
    params = {key: st.query_params.get(key) for key in st.query_params}
    for key, raw in params.items():
        setting = setting_for(key)
        if setting is None or raw is None:
            continue
        try:
            st.session_state[key] = setting.parse(_first(raw))
        except (ValueError, KeyError):
            pass  # a hand-edited link with a bad value: that widget keeps its default
    if path := params.get(ATLAS_PARAM):
        try:
            atlas.load_path(_first(path))
        except AtlasError as exc:
            st.session_state[data.ERROR_KEY] = f"The link's atlas file cannot be read: {exc}"
    model = _first(params.get(MODEL_PARAM) or "").strip()
    if model and model != data.current_model():
        try:
            with st.spinner(f"Opening {model} from the link"):
                data.open_model(model)
            show_in_picker(model)
        except (SpecboundError, OSError) as exc:
            st.session_state[data.ERROR_KEY] = (f"The link names {model}, which cannot be opened here: {exc}. "
                                                f"Showing {data.current_model()}.")


def wanted_params() -> dict[str, str]:
    """The query parameters that describe this session's view: non-default values only."""
    wanted: dict[str, str] = {}
    model = data.current_model()
    if model != DEFAULT_MODEL:
        wanted[MODEL_PARAM] = model
    if path := st.session_state.get(atlas.PATH_KEY):  # an uploaded atlas cannot travel in a link
        wanted[ATLAS_PARAM] = path
    for key in list(st.session_state):
        setting = setting_for(str(key))
        if setting is not None and st.session_state[key] != setting.default:
            wanted[str(key)] = setting.format(st.session_state[key])
    return wanted


def publish() -> None:
    """Write the view into the URL: set what differs from the defaults, drop what no longer does."""
    wanted = wanted_params()
    for key in list(st.query_params):
        if (key in (MODEL_PARAM, ATLAS_PARAM) or setting_for(key) is not None) and key not in wanted:
            del st.query_params[key]
    for key, value in wanted.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value
