"""The baseline of the dashboard benchmark: a bare Streamlit slider in a fragment and one number.

What any Streamlit page pays for a slider move and a first page on this machine (browser, websocket,
script run, render), measured the same way and in the same run as the dashboard. It imports nothing
but Streamlit, so its first run has nothing else to load; the number carries the dashboard's label
for the total, which the benchmark looks for (it checks that this file spells it the same way).
"""

import streamlit as st

LABEL = "Ours at the chosen p"


@st.fragment
def slider_and_number() -> None:
    top = st.container()
    p = st.slider("Global p", 0.0, 2.0, 1.0, step=1 / 12, key="p_global")
    top.metric(LABEL, f"{1234.5678 * p:,.2f}")


slider_and_number()
