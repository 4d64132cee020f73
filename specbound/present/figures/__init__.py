"""Plotly figure builders: data in, ``plotly.graph_objects.Figure`` out.

Used by the dashboard pages and by the CLI's HTML reports. Nothing here imports streamlit, changes
global plotting state on import, or reads files; plotly is imported only when this package is.
"""
