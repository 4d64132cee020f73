"""specbound dashboard: pick a trained Transformer, inspect its spectra, drive the bound with p sliders.

Run with ``make run`` (or ``streamlit run app.py``). This entry point sets the page up, draws the
shared sidebar (model picker) and hands over to the page chosen in the navigation; each page lives
in ``pages/`` and adds itself to PAGES.

The page runs inside the dashboard's boundary (:func:`dashboard.safety.guarded`): whatever it raises
becomes one error box, the sidebar stays, and the link drops the model the page failed on.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import safety
from dashboard.routing import alias_page
from dashboard.state import atlas, session, share
from dashboard.widgets import link_guard
from dashboard.widgets.export import figure_format_picker
from dashboard.widgets.presentation import inject_style, page_script, presentation_toggle
from dashboard.widgets.sidebar import open_linked, opening_error, render_sidebar

FAVICON = Path(__file__).with_name("dashboard") / "favicon.svg"

# The favicon is a local SVG, sent inline: a material-icon favicon is fetched from Google by every
# visitor, and an emoji costs the first page about 70 ms (Streamlit compiles its whole emoji table
# to check it).
st.set_page_config(page_title="specbound", page_icon=FAVICON, layout="wide")

# The default page is served at "/" (and reserves its own path, here "home"); "/overview" forwards to it.
OVERVIEW = st.Page("pages/overview.py", title="Overview", icon=":material/home:", url_path="home", default=True)
OVERVIEW_ALIAS = alias_page(OVERVIEW, "overview")
PAGES: list[st.Page] = [
    OVERVIEW,
    OVERVIEW_ALIAS,
    st.Page("pages/bounds.py", title="Bound explorer", icon=":material/tune:", url_path="bounds"),
    st.Page("pages/why.py", title="Why p* wins", icon=":material/lightbulb:", url_path="why"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
    st.Page("pages/spectra.py", title="Spectra", icon=":material/bar_chart:", url_path="spectra"),
    st.Page("pages/scaling.py", title="Scaling", icon=":material/trending_up:", url_path="scaling"),
    st.Page("pages/theory.py", title="Theory", icon=":material/school:", url_path="theory"),
    st.Page("pages/lab.py", title="Lab", icon=":material/science:", url_path="lab"),
    st.Page("pages/runs.py", title="Training runs", icon=":material/timeline:", url_path="runs"),
]

page = st.navigation(PAGES)
if page is OVERVIEW_ALIAS:
    page.run()  # switches to the Overview with the link's parameters: nothing below runs
share.begin_run()  # the link names this page's settings only, not those of pages visited before
link_guard.guard()  # a link Streamlit refused whole (over 1,000 parameters): cleared, and said so
# a shared link, on the session's first run: keep its settings for the widgets, open the model it names
open_linked(share.restore())
render_sidebar()
with st.sidebar:
    presentation_toggle()
    figure_format_picker()
inject_style()
page_script()
opening_error()  # in the main area, above the page, which still shows the model that is open
drawn = safety.run_page(page, atlas.display_name(session.current_model()))
share.publish(with_model=drawn)  # keep the address bar a link to this view (without a model that failed)
