"""The baseline of the dashboard benchmark's page click: two bare Streamlit pages, the second a slider and
one number, chosen in the navigation as the dashboard's Bound explorer is.

It imports nothing but Streamlit; its number carries the dashboard's label for the total, which the
benchmark looks for.
"""

import streamlit as st

LABEL = "Ours at the chosen p"


def overview() -> None:
    st.title("Overview")


def explorer() -> None:
    st.title("Bound explorer")
    p = st.slider("Global p", 0.0, 2.0, 1.0, step=1 / 12, key="p_global")
    st.metric(LABEL, f"{1234.5678 * p:,.2f}")


st.navigation(
    [st.Page(overview, title="Overview", default=True), st.Page(explorer, title="Bound explorer", url_path="bounds")]
).run()
