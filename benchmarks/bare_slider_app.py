"""The baseline of the dashboard benchmark: a bare Streamlit slider in a fragment and one number.

What any Streamlit page pays for a slider move on this machine (browser, websocket, script run,
render), measured the same way and in the same run as the Bound explorer.
"""

import streamlit as st

from dashboard.text import TOTAL_LABEL


@st.fragment
def slider_and_number() -> None:
    top = st.container()
    p = st.slider("Global p", 0.0, 2.0, 1.0, step=1 / 12, key="p_global")
    top.metric(TOTAL_LABEL, f"{1234.5678 * p:,.2f}")


slider_and_number()
