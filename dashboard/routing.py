"""Make every page run through ``app.py``, even on a fresh server's first request.

Streamlit treats a folder named ``pages/`` beside the entry script as a legacy multipage app until
``st.navigation`` has run once in the server process. If the very first request is a link straight
to a page (``/bounds?model=...``, as a shared link is), Streamlit runs that page file alone: no
shared sidebar, no model restored from the URL. Each page therefore starts with
:func:`ensure_app_entry`, which switches the legacy mode off and reruns, so that ``app.py`` runs and
routes to the same page.
"""

from __future__ import annotations

import streamlit as st


def ensure_app_entry() -> None:
    """Rerun through app.py if this page was started by Streamlit's legacy pages/ mode."""
    from streamlit.runtime.pages_manager import PagesManager  # the flag lives only here

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False  # what st.navigation itself does on its first call
        st.rerun()
