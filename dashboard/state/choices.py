"""The pages' own session state, written here alone: their widgets' choices and their one-shot messages.

What a session holds has three writers. The model a session shows is :mod:`dashboard.state.session`'s;
a widget's value restored from a shared link is :mod:`dashboard.state.share`'s; everything else a page
keeps between runs (a choice made for the visitor, a choice trimmed to what this model offers, a
message shown once on the next run) is written by the functions below. A page reads
``st.session_state`` freely and never writes it (``tests/dashboard/test_dashboard_layers.py``), so every place
where a session's state changes is a call that names what it does.

Example, a run just trained becomes the Lab page's choice, and a message is shown once:

    >>> from dashboard.state import choices
    >>> # choices.choose({"lab_run": "here:lab-L1-N32-H2-n400-q0-s0-t300", "lab_view": "run"})
    >>> # message = choices.take("lab_open_error")  # None on the run after
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")


def keep(keys: Iterable[str]) -> None:
    """Keep the values of widgets that are not drawn on this run.

    Streamlit drops a widget's state on a run that does not draw it (another view of the page is open);
    writing the value back to itself makes it a plain session value, kept until the widget returns.
    """
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def choose(values: Mapping[str, Any]) -> None:
    """Set widgets' values before they are drawn (a choice made for the visitor: the run just trained)."""
    for key, value in values.items():
        st.session_state[key] = value


def take(key: str) -> Any:
    """The value under ``key``, removed: a message shown once, on the run after it was written (else None)."""
    return st.session_state.pop(key, None)


def hold(key: str, value: Any) -> None:
    """Keep ``value`` under ``key`` for the runs to come (a download sized and waiting for a click)."""
    st.session_state[key] = value


def trimmed(key: str, chosen: Iterable[T], offered: Collection[T], fallback: list[T] | None = None) -> list[T]:
    """A multiselect's value ``chosen`` (from a link, or made on another model) cut to what is ``offered``
    here, in its order, or ``fallback`` when nothing is left and one is given; set as the widget's
    value and returned.

    >>> # trimmed("spectra_layers", [0, 1, 5], offered=range(2))  -> [0, 1]
    """
    kept = [item for item in chosen if item in offered]
    value = kept if kept or fallback is None else list(fallback)
    st.session_state[key] = value
    return value


def settled(key: str, offered: Collection[T], default: T) -> T:
    """The widget's value under ``key`` if it is ``offered``, else ``default``, set as its value (a
    selectbox whose options changed with the model)."""
    if st.session_state.get(key) not in offered:
        st.session_state[key] = default
    value: T = st.session_state[key]
    return value
