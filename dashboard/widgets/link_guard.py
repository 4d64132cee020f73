"""Links with more query parameters than Streamlit reads: said on the page, and cleared from the address bar.

Streamlit ignores a query string of more than 1,000 parameters or 512 Ki characters *whole*
(``streamlit.runtime.state.query_params.sanitize_query_string``): the page then opens with its
defaults while the address bar keeps the link, so what the visitor sees is not what the link says.
The server cannot tell (it never receives the string), so a small script (``link_guard.js``, a
Streamlit component without a view) looks at the address bar: beyond either limit it removes the
query string there and reports the count; the page then says, on the run that report starts, that
the link's settings were not used. A link within the limits is untouched.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.runtime.state.query_params import (
    CLIENT_STATE_QUERY_STRING_MAX_FIELDS,
    CLIENT_STATE_QUERY_STRING_MAX_LENGTH,
)

#: Widget key of the guard.
GUARD_KEY = "link_guard"

_component = st.components.v2.component(
    "specbound_link_guard", js=Path(__file__).with_name("link_guard.js").read_text(encoding="utf-8")
)


def notice(fields: int, length: int) -> str:
    """What the page says about a link that was refused whole."""
    if fields > CLIENT_STATE_QUERY_STRING_MAX_FIELDS:
        size = f"{fields:,} query parameters (Streamlit reads at most {CLIENT_STATE_QUERY_STRING_MAX_FIELDS:,})"
    else:
        size = f"a query string of {length:,} characters (at most {CLIENT_STATE_QUERY_STRING_MAX_LENGTH:,} are read)"
    return (
        f"The link that opened this page had {size}, so none of its settings were used: the page opened "
        f"with its defaults and the link was cleared from the address bar."
    )


def guard() -> None:
    """Mount the guard (every run: it reads the address bar of the page it is on); on the run its
    report arrives, say what happened to the link."""
    result = _component(
        key=GUARD_KEY,
        data={"max_fields": CLIENT_STATE_QUERY_STRING_MAX_FIELDS, "max_length": CLIENT_STATE_QUERY_STRING_MAX_LENGTH},
        on_dropped_change=lambda: None,
    )
    report = result.get("dropped") if result is not None else None
    if not isinstance(report, dict):
        return
    try:  # the browser's report is input too
        fields, length = int(report.get("fields", 0)), int(report.get("length", 0))
    except (TypeError, ValueError):
        return
    st.warning(notice(fields, length))
