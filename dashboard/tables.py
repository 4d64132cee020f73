"""Tables on screen: readable headers, scientific numbers, the key columns first and no "None" cells.

The package's frames (:mod:`specbound.report`, :meth:`SpectralProfile.to_frame`) keep their
snake_case columns, which the CSV downloads carry for scripts; :func:`show_table` only changes how a
frame is drawn. Every column the package writes has one entry in :data:`COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

#: Key (and link parameter) of the Bound explorer's tables section, drawn only when opened.
EXPLORER_TABLES_KEY = "show_tables"


@dataclass(frozen=True)
class Column:
    """How one column is shown: its header, number format (None: as is) and an explanation."""

    label: str
    format: str | None = "scientific"
    help: str | None = None


#: Display of every column of the package's frames; the order here is the order on screen.
COLUMNS: dict[str, Column] = {
    "matrix": Column("matrix", None),
    "p": Column("p", "%.3f", "The Schatten index this matrix uses now."),
    "contribution": Column("c(W; p)", help="The matrix's contribution at its current p."),
    "p_opt": Column("p*", "%.3f", "The grid index that minimises c(W; p)."),
    "contribution_at_p_opt": Column("c(W; p*)"),
    "share": Column("share of total", "percent", "c(W; p) over the total at the current p."),
    "schatten_p": Column("S_p(W)", help="Σ σᵢ^p over the singular values above the rank threshold."),
    "log10_scale": Column("log10 s_W", "%.2f", "s_W = γ α⁽ℓ⁾ L."),
    "gamma": Column("γ", help="The local factor of the matrix."),
    "log10_alpha": Column("log10 α⁽ℓ⁾", "%.2f", "The depth factor of the matrix's layer."),
    "layer": Column("layer", None),
    "kind": Column("kind", None),
    "head": Column("head", None),
    "log10_break_even": Column("log10 s*_W", "%.2f", "Break-even scale: below it some p > 0 beats p = 0."),
    "decades_above": Column("decades above s*_W", "%.2f", "log10 s_W − log10 s*_W; p* = 0 when it is ≥ 0."),
    "first_winning_p": Column("first p > 0 that wins", None, "The smallest grid p > 0 with c(W; p) < c(W; 0)."),
    "model": Column("model", None),
    "baseline": Column("baseline", None),
    "difference": Column("model − baseline"),
    "rank": Column("rank", None, "Numerical rank."),
    "spectral_norm": Column("‖W‖₂ (σ₁)"),
    "frobenius_norm": Column("‖W‖_F"),
    "nuclear_norm": Column("‖W‖_* (nuclear)"),
    "stable_rank": Column("stable rank", "%.2f", "‖W‖_F² / σ₁²."),
    "norm_21": Column("‖W‖₂,₁"),
    "norm_11": Column("‖W‖₁,₁"),
    "sum_c": Column("Σ c(W; p)"),
    "sum_c_QK": Column("Σ c, QK"),
    "sum_c_V": Column("Σ c, V"),
    "sum_c_M_gate": Column("Σ c, M_gate"),
    "sum_c_M_in": Column("Σ c, M_in"),
    "sum_c_M_out": Column("Σ c, M_out"),
    "log10_xi": Column("log10 ξ⁽ℓ⁾", "%.2f", "Edelman's layer sum."),
}


def column_config(frame: pd.DataFrame) -> dict[str, Any]:
    """Streamlit column settings for the known columns of ``frame``."""
    config: dict[str, Any] = {}
    for name in frame.columns:
        column = COLUMNS.get(str(name))
        if column is None:
            continue
        if column.format is None or not pd.api.types.is_numeric_dtype(frame[name]):
            config[name] = st.column_config.Column(column.label, help=column.help)
        else:
            config[name] = st.column_config.NumberColumn(column.label, format=column.format, help=column.help)
    return config


#: What a row is about; the first of these a frame has leads it, then the key columns in COLUMNS' order.
ROW_NAMES: tuple[str, ...] = ("matrix", "layer", "kind")


def for_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The row's name, then the key columns (the order of :data:`COLUMNS`); per-layer matrices get an empty head."""
    known = [name for name in COLUMNS if name in frame.columns]
    lead = next((name for name in ROW_NAMES if name in frame.columns), None)
    if lead is not None:
        known = [lead] + [name for name in known if name != lead]
    shown = frame[known + [c for c in frame.columns if c not in COLUMNS]].copy()
    if "head" in shown.columns:
        shown["head"] = shown["head"].astype("string").fillna("")  # the MLP kinds have no head
    return shown


def show_table(
    frame: pd.DataFrame, key: str, *, on_select: Callable[[], None] | None = None, height: int | None = None
) -> None:
    """Draw ``frame`` readably; with ``on_select``, a click on a row selects it (one row) and calls it."""
    shown = for_display(frame)
    options: dict[str, Any] = {"hide_index": True, "key": key, "column_config": column_config(shown)}
    if height is not None:
        options["height"] = height
    if on_select is not None:
        options.update(on_select=on_select, selection_mode="single-row")
    st.dataframe(shown, **options)


def selected_row(key: str) -> int | None:
    """The row (position in the frame as built) selected in the table ``key``, or None."""
    state = st.session_state.get(key)
    rows = state.selection.rows if state is not None and hasattr(state, "selection") else []
    return int(rows[0]) if rows else None
