"""specbound dashboard: pick a BERT encoder, inspect its spectra, drive the bound with p sliders.

Run with ``make run`` (or ``streamlit run app.py``). This entry point sets the page up, draws the
shared sidebar (model picker) and hands over to the page chosen in the navigation; each page lives
in ``pages/`` and adds itself to PAGES.
"""

from __future__ import annotations

import streamlit as st

from dashboard.export import figure_format_picker
from dashboard.sidebar import render_sidebar

st.set_page_config(page_title="specbound", page_icon=":material/ssid_chart:", layout="wide")

PAGES: list[st.Page] = [
    st.Page("pages/spectra.py", title="Spectra", icon=":material/bar_chart:", url_path="spectra", default=True),
    st.Page("pages/bounds.py", title="Bound explorer", icon=":material/tune:", url_path="bounds"),
]

page = st.navigation(PAGES)
render_sidebar()
with st.sidebar:
    figure_format_picker()
page.run()
