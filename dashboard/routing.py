"""The one place that reaches into Streamlit's private page routing, and why.

The project keeps its pages in a top-level ``pages/`` folder (a fixed layout). Streamlit treats a
folder of that name beside the entry script as a legacy multipage app (its "pages directory" mode,
the flag ``PagesManager.uses_pages_directory``) until ``st.navigation`` has run once in the process.
If the very first request to a fresh server is a link straight to a page (``/bounds?model=...``, as
a shared link is), Streamlit runs that page file alone: no shared sidebar, no model restored from
the URL. Streamlit offers no public switch for this (st.navigation itself clears the flag on its
first call, and the pages folder cannot be renamed or relocated), so :func:`ensure_app_entry`, called
at the top of every page, clears the flag the same way and reruns through ``app.py``.

Streamlit's ``AppTest`` recomputes the flag before every run, so its fixtures install
:func:`guard_apptest_runs` (see ``tests/app/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st


def leave_pages_directory_mode() -> bool:
    """Switch Streamlit's legacy pages-directory mode off; True if it was on."""
    from streamlit.runtime.pages_manager import PagesManager  # the flag lives only here

    was_on = bool(PagesManager.uses_pages_directory)
    PagesManager.uses_pages_directory = False  # what st.navigation itself does on its first call
    return was_on


def ensure_app_entry() -> None:
    """Rerun through app.py if this page was started by Streamlit's legacy pages/ mode."""
    if leave_pages_directory_mode():
        st.rerun()


def guard_apptest_runs() -> Callable[[], None]:
    """Clear the flag after every ``PagesManager`` is built (AppTest builds one per run); returns the undo.

    The server computes the flag once per process, so only in-process tests need this.
    """
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        leave_pages_directory_mode()

    PagesManager.__init__ = init  # type: ignore[method-assign]

    def undo() -> None:
        PagesManager.__init__ = original  # type: ignore[method-assign]

    return undo


def alias_page(target: st.Page, url_path: str) -> st.Page:
    """A hidden page at ``url_path`` whose run forwards to ``target`` with the link's parameters.

    Streamlit serves its default page at "/" and ignores that page's own ``url_path`` (a link to
    "/spectra" said "Page not found" while Spectra was the default). The Overview is the default, so
    the first page after a start opens with no forwarding round trip (about half a second in the
    browser); this alias keeps links to its own name working.
    """

    def forward() -> None:
        st.switch_page(target, query_params=st.query_params.to_dict())

    return st.Page(forward, title=target.title, url_path=url_path, visibility="hidden")
