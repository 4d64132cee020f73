"""Plotly figure builders: data in, ``plotly.graph_objects.Figure`` out.

Used by the dashboard pages and by the CLI's HTML reports. Nothing here imports streamlit, changes
global plotting state on import, or reads files; plotly is imported only when this package is.

The names in ``__all__`` are this layer's public surface: what a package built on specbound (the
lab beside it, ``specbound_lab``) imports, and all it may import (``tests/lab/test_public_api.py``).
"""

from __future__ import annotations

from .style import (
    GREYED,
    NEUTRAL,
    OKABE_ITO,
    PANEL_TITLE_ROOM,
    SEQUENTIAL,
    TOP_MARGIN,
    Quantity,
    axis_title,
    figure,
    hover_numbers,
    log_axis,
    on_panel,
    palette_color,
    panel_grid,
    panel_ref,
    quantity_color,
    sequential_colors,
)
from .trajectory import STEP_AXIS, step_layout

__all__ = [
    "GREYED",
    "NEUTRAL",
    "OKABE_ITO",
    "PANEL_TITLE_ROOM",
    "SEQUENTIAL",
    "STEP_AXIS",
    "TOP_MARGIN",
    "Quantity",
    "axis_title",
    "figure",
    "hover_numbers",
    "log_axis",
    "on_panel",
    "palette_color",
    "panel_grid",
    "panel_ref",
    "quantity_color",
    "sequential_colors",
    "step_layout",
]
