"""Getting tables and figures out of the dashboard: CSV downloads and Plotly's image export."""

from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from specbound.profile import SpectralProfile

#: Session-state key of the sidebar's choice of image format for Plotly's download button.
FIGURE_FORMAT_KEY = "figure_format"
FIGURE_FORMATS = ("png", "svg")


def figure_format_picker() -> None:
    """Sidebar radio: which format the camera button of every chart saves."""
    st.radio("Figure download format", FIGURE_FORMATS, key=FIGURE_FORMAT_KEY, horizontal=True,
             format_func=str.upper, help="Used by the camera icon in the top-right corner of each chart.")


def show_figure(fig: go.Figure, key: str) -> None:
    """Render a figure full width; its camera button saves it as PNG or SVG (see the sidebar)."""
    image_format = st.session_state.get(FIGURE_FORMAT_KEY, FIGURE_FORMATS[0])
    st.plotly_chart(fig, key=key, config={
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": key, "scale": 2},
    })


def file_stem(profile: SpectralProfile) -> str:
    """A safe file-name stem for downloads about one model: its own name with anything odd replaced."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", profile.model).strip("._") or "model"


def csv_download(frame: pd.DataFrame, filename: str, key: str, label: str = "Download CSV") -> None:
    st.download_button(label, frame.to_csv(index=False).encode(), file_name=filename, mime="text/csv", key=key)
