"""Shareable links: the current model and every shareable widget live in the URL's query parameters.

The page is already in the URL path (each page's ``url_path``). A widget becomes part of the link
where it is created: the page calls :func:`shared` with the widget's key, a :class:`Codec` and the
default, just before drawing the widget (with ``key=`` and no ``value=``). On the session's first
run :func:`restore` keeps the link's parameters and returns the model it names, which the sidebar opens
(:func:`dashboard.widgets.sidebar.open_linked`); :func:`shared` then
seeds each widget from them the first time the widget appears. After the page has drawn,
:func:`publish` writes back the values registered in this run that differ from their defaults and
drops every other parameter, so the address bar always holds a link that reproduces the view and
nothing else (:func:`begin_run` forgets the widgets of the pages visited before).

The model parameter carries any model name of :func:`specbound.io.models.resolve`; an uploaded atlas
travels as its content digest (:func:`dashboard.state.atlas.link_form`), never as a server path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from dashboard.state import atlas, session
from specbound.core.defaults import DEFAULT_MODEL, P_MAX

MODEL_PARAM = "model"
#: Session-state keys: the parameters of the link the session was opened with (consumed as widgets
#: appear), and the registry of shareable widget keys with their codecs and defaults.
_LINK_KEY = "_share_link"
_REGISTRY_KEY = "_share_registry"
#: Session-state key of the link values a codec refused, by widget key, with the codec's reason.
_REFUSED_KEY = "_share_refused"


@dataclass(frozen=True)
class Codec:
    """How a widget value is written into a link and read back (``parse`` raises ValueError on junk)."""

    parse: Callable[[str], Any]
    format: Callable[[Any], str]


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


def choice_codec(codes: dict[str, str]) -> Codec:
    """A codec for a selectbox or radio: each option written as its short code."""
    options = {code: option for option, code in codes.items()}

    def parse(text: str) -> str:
        try:
            return options[text.lower()]
        except KeyError:
            raise ValueError(text) from None

    return Codec(parse, lambda option: codes[option])


def list_codec(item: Callable[[str], Any]) -> Codec:
    """A codec for a multiselect: its items joined by commas (the page drops items it does not offer)."""

    def parse(text: str) -> list[Any]:
        return [item(part) for part in text.split(",") if part]

    return Codec(parse, lambda values: ",".join(str(v) for v in values))


BOOL = Codec(_parse_bool, lambda v: "1" if v else "0")
INTS = list_codec(int)
TEXTS = list_codec(str)
P_VALUE = Codec(_parse_p, lambda v: f"{float(v):.6g}")
#: One text or one whole number, as written (a widget that offers only some falls back with :func:`shared_choice`).
TEXT = Codec(str, str)
INT = Codec(int, str)


#: The registered default of a widget whose first value depends on the server: never equal to a
#: value, so the link always names it.
_NO_DEFAULT = object()


def shared(key: str, codec: Codec, default: Any, *, initial: Callable[[], Any] | None = None) -> Any:
    """Declare the widget ``key`` shareable and give it its value before it is drawn.

    The first time the widget appears in a session its value comes from the link (when the link has
    a valid one) or is ``default``; afterwards the widget keeps its own state. Draw the widget with
    ``key=key`` and without ``value=``, so Streamlit takes the value from the session state.

    ``initial``, when given, replaces ``default`` as the first value of a session whose link does not
    name one (it is called only then): for a choice that depends on what this server has. The link
    then always names the widget's value, so it opens the same view on any server.
    """
    registry: dict[str, tuple[Codec, Any]] = st.session_state.setdefault(_REGISTRY_KEY, {})
    registry[key] = (codec, default if initial is None else _NO_DEFAULT)
    if key not in st.session_state:
        raw = st.session_state.get(_LINK_KEY, {}).pop(key, None)
        value = initial() if initial is not None and raw is None else default
        if raw is not None:
            try:
                value = codec.parse(raw)
            except ValueError as exc:  # a hand-edited link with a bad value keeps the default
                st.session_state.setdefault(_REFUSED_KEY, {})[key] = str(exc)
        st.session_state[key] = value
    return st.session_state[key]


def from_link(key: str) -> bool:
    """Whether the shared widget ``key`` is still to take its first value from the session's link (call
    before :func:`shared`, which consumes it): a page that opens what the link names (a matrix) can then
    bring it into view, as a click would."""
    return key not in st.session_state and key in st.session_state.get(_LINK_KEY, {})


def refusal(key: str) -> str | None:
    """Why the link's value of the shared widget ``key`` was not used (its codec's ValueError, for a
    page that says so where the value would have shown), or None when the link's value was taken or
    there was none. :func:`forget_refusal` once the widget has a value of the visitor's own."""
    reason: str | None = st.session_state.get(_REFUSED_KEY, {}).get(key)
    return reason


def forget_refusal(key: str) -> None:
    """Drop the link's refused value of ``key`` from what :func:`refusal` reports."""
    st.session_state.get(_REFUSED_KEY, {}).pop(key, None)


def shared_choice(key: str, codec: Codec, offered: Sequence[Any], default: Any) -> Any:
    """:func:`shared`, for a widget that offers only ``offered``: a value it does not offer (from a link
    made on another model, or left by a model opened before) falls back to ``default``, which must be
    offered. Returns the value the widget will show.

    Example: a link made on an encoder-decoder names the heads ``QK_x``; an encoder does not have them::

        kind = shared_choice("heatmap_kind", KIND_CODEC, ["QK", "V"], "QK")  # "QK"
        st.radio("Heads of", ["QK", "V"], key="heatmap_kind")
    """
    shared(key, codec, default)
    if st.session_state.get(key) not in offered:
        st.session_state[key] = default
    return st.session_state[key]


def begin_run() -> None:
    """Forget the widgets registered by earlier runs: a link carries only what this run's page (and the
    shared sidebar) draws, never a setting of a page visited before (``theory?scaling_family=...``).

    Called at the top of every full run; a fragment's rerun keeps the registry of the run it belongs to.
    """
    st.session_state[_REGISTRY_KEY] = {}


def restore() -> str | None:
    """On the session's first run: keep the link's parameters for the widgets that will ask for them
    (:func:`shared`) and return the model the link names as the link wrote it; None on later runs and
    for a link without a model. Opening it is the sidebar's (:func:`dashboard.widgets.sidebar.open_linked`)."""
    if _LINK_KEY in st.session_state:
        return None
    params = {key: st.query_params.get(key) for key in st.query_params}
    st.session_state[_LINK_KEY] = {k: v for k, v in params.items() if v is not None and k != MODEL_PARAM}
    return (params.get(MODEL_PARAM) or "").strip() or None


def wanted_params(with_model: bool = True) -> dict[str, str]:
    """The query parameters that describe this session's view: non-default values only."""
    wanted: dict[str, str] = {}
    model = session.current_model()
    if with_model and model != DEFAULT_MODEL:
        wanted[MODEL_PARAM] = atlas.link_form(model)
    registry: dict[str, tuple[Codec, Any]] = st.session_state.get(_REGISTRY_KEY, {})
    for key, (codec, default) in registry.items():
        if key in st.session_state and st.session_state[key] != default:
            wanted[key] = codec.format(st.session_state[key])
    return wanted


def publish(with_model: bool = True) -> None:
    """Write the view into the URL: set what differs from the defaults, drop everything else.

    ``with_model=False`` leaves the model out (after a page failed on it: a reload does not repeat that).
    """
    wanted = wanted_params(with_model)
    current = {key: st.query_params.get(key) for key in st.query_params}
    if current != wanted:  # one message to the browser, however many junk parameters the link had
        st.query_params.from_dict(wanted)
