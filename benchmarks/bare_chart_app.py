"""The baseline of the first-chart benchmark: a bare Streamlit page with a title and one Plotly chart.

What any Streamlit page pays on this machine to show its first chart in a fresh tab (browser, websocket,
script run, Plotly's code, the chart drawn), measured the same way and in the same run as the dashboard's
pages (``bench_first_chart.py``). It imports nothing but Streamlit and Plotly.
"""

import plotly.graph_objects as go
import streamlit as st

st.title("A bare chart")
st.plotly_chart(go.Figure(go.Scatter(x=[0, 1, 2, 3], y=[1.0, 0.5, 0.8, 0.2])), key="bare_chart")
