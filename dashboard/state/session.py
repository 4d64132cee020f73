"""The session's model: the one owner of which model the pages show.

A session's model state is four things. This module alone writes three of them: the model's name
(:func:`current_model`), the last error met while opening one (:func:`fail`, shown in the sidebar until
the next success) and a Hub download sized and waiting for the visitor's click
(:func:`pending_download`). The fourth, the label the atlas of a model of stored spectra is shown under,
is given to :func:`open_model` and kept by :func:`dashboard.state.atlas.use`, its one writer. The
sidebar's picker, a shared link and the Lab page's "open this step" all call these functions; none of
them writes the session state itself (``tests/dashboard/test_session.py``).

The caches behind an opened model (profiles, analyses, explanations shared by all sessions) are
:mod:`dashboard.state.data`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from dashboard import safety
from dashboard.state import atlas, data
from dashboard.wording.text import plain
from specbound.core.bounds import BoundAnalysis
from specbound.core.defaults import DEFAULT_MODEL
from specbound.core.errors import SpecboundError
from specbound.core.progress import ProgressCallback, silent

#: Session-state key holding the name of the model the pages show.
MODEL_KEY = "model"
#: Session-state key holding the last error met while opening a model (shown until the next success).
ERROR_KEY = "model_error"
#: Session-state key of a Hub download shown to the visitor and waiting for a click.
PENDING_KEY = "download_pending"


@dataclass(frozen=True)
class PendingDownload:
    """A Hub model not on this server yet, sized before any weight is fetched."""

    name: str
    size_bytes: int
    cap_bytes: int


def current_model() -> str:
    """The name of the model the pages show (the bundled one until another is opened)."""
    return str(st.session_state.get(MODEL_KEY, DEFAULT_MODEL))


def open_model(name: str, progress: ProgressCallback = silent, *, label: str | None = None) -> BoundAnalysis:
    """Open a model for this session: on success it becomes the current model, and the last error and
    any pending download are forgotten. ``label`` names the atlas a model of stored spectra is shown
    under (:func:`dashboard.state.atlas.use`), in place of its file's name.

    Raises :class:`SpecboundError` (with a message for people) and leaves the current model as it was.
    Opening is an explicit request, so the in-memory caches for this name are dropped first
    (:func:`dashboard.state.data.reopen`).
    """
    name = name.strip()
    result = data.reopen(name, progress)
    if label is not None and (ref := atlas.atlas_ref(name)) is not None and ref.path is not None:
        atlas.use(ref.path, label)
    st.session_state[MODEL_KEY] = name
    st.session_state.pop(ERROR_KEY, None)
    st.session_state.pop(PENDING_KEY, None)
    return result


def fail(message: str) -> None:
    """Keep ``message`` (markdown-safe) as the reason the last model asked for could not be opened."""
    st.session_state[ERROR_KEY] = message


def error() -> str | None:
    """The reason the last model asked for could not be opened, until another one opens."""
    return st.session_state.get(ERROR_KEY)


def forget_error() -> None:
    """The visitor moved on (another source in the picker): the last error is no longer about it."""
    st.session_state.pop(ERROR_KEY, None)


def ask_before_download(name: str) -> bool:
    """True if opening ``name`` needs a download, which is then left for the visitor to confirm
    (:func:`pending_download`).

    Raises what :func:`dashboard.state.data.hub_download_plan` raises (a download above the cap, no network, not
    an encoder).
    """
    plan = data.hub_download_plan(name)
    if plan is None:
        return False
    st.session_state[PENDING_KEY] = PendingDownload(name.strip(), plan.total_bytes, plan.cap_bytes)
    return True


def pending_download() -> PendingDownload | None:
    """The Hub download waiting for the visitor's click, if any."""
    return st.session_state.get(PENDING_KEY)


def forget_pending_download() -> None:
    """The visitor asked for something else (or clicked): no download waits any more."""
    st.session_state.pop(PENDING_KEY, None)


def current_analysis(on_error: Callable[[str], object] | None = None) -> BoundAnalysis:
    """The analysis of the session's model (a cache hit after the first time).

    If it cannot be opened any more (a deleted directory after the cache was evicted), the session falls
    back to the bundled default and says why through ``on_error`` (markdown-safe text).
    """
    try:
        return data.analysis_for(current_model())
    except Exception as exc:  # whatever happened, the session goes on with the default
        if current_model() == DEFAULT_MODEL:
            raise
        if not isinstance(exc, SpecboundError):
            safety.log.exception("reopening %r", current_model())
        if on_error is not None:
            on_error(
                f"{plain(atlas.display_name(current_model()))} cannot be opened any more "
                f"({plain(safety.public_message(exc))}); showing {DEFAULT_MODEL}."
            )
        st.session_state[MODEL_KEY] = DEFAULT_MODEL
        return data.analysis_for(DEFAULT_MODEL)
