"""Whether the session is in presentation mode: a leaf module, so that any module (the figures'
subtitles in :mod:`dashboard.widgets.export` among them) can ask without importing the page machinery of
:mod:`dashboard.widgets.presentation`, which draws the toggle."""

from __future__ import annotations

import streamlit as st

#: Widget key (and link parameter) of the presentation toggle.
PRESENT_KEY = "present"


def presenting() -> bool:
    """Whether presentation mode is on in this session."""
    return bool(st.session_state.get(PRESENT_KEY, False))
