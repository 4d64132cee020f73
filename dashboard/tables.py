"""Tables on screen: readable headers, the one number format, the key columns first and "—" for empty cells.

The package's frames (:mod:`specbound.report`, :meth:`SpectralProfile.to_frame`) keep their
snake_case columns, which the CSV downloads carry for scripts; :func:`show_table` only changes how a
frame is drawn. Every column the package writes has one entry in :data:`COLUMNS`. Numbers are written by
:mod:`dashboard.numbers` (a pandas Styler: the cells show the text, the column still sorts by value),
and every column is at least as wide as its header, so no header is cut.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from .numbers import MISSING, is_missing, styled_table, styled_writers

#: Key (and link parameter) of the Bound explorer's tables section, drawn only when opened.
EXPLORER_TABLES_KEY = "show_tables"


@dataclass(frozen=True)
class Column:
    """How one column is shown: its header, number format (a kind of :func:`dashboard.numbers.styled_table`;
    None: as is) and an explanation."""

    label: str
    format: str | None = "number"
    help: str | None = None


#: Display of every column of the package's frames; the order here is the order on screen.
COLUMNS: dict[str, Column] = {
    "matrix": Column("matrix", None),
    "p": Column("p", "p", "The Schatten index this matrix uses now."),
    "contribution": Column("c(W; p)", help="The matrix's contribution at its current p."),
    "p_opt": Column("p*", "p", "The grid index that minimises c(W; p)."),
    "contribution_at_p_opt": Column("c(W; p*)"),
    "share": Column("share of total", "percent", "c(W; p) over the total at the current p."),
    "schatten_p": Column("S_p(W)", help="Σ σᵢᵖ over the singular values above the rank threshold."),
    "log10_scale": Column("log10 s_W", "log10", "s_W = γ α⁽ℓ⁾ L."),
    "gamma": Column("γ", help="The local factor of the matrix."),
    "log10_alpha": Column("log10 α⁽ℓ⁾", "log10", "The depth factor of the matrix's layer."),
    "layer": Column("layer", None),
    "kind": Column("kind", None),
    "head": Column("head", None),
    "log10_break_even": Column("log10 s*_W", "log10", "Break-even scale: below it some p > 0 beats p = 0."),
    "decades_above": Column("decades above s*_W", "log10", "log10 s_W − log10 s*_W; p* = 0 when it is ≥ 0."),
    "first_winning_p": Column("first p > 0 that wins", None, "The smallest grid p > 0 with c(W; p) < c(W; 0)."),
    "model": Column("model", None),
    "baseline": Column("baseline", None),
    "difference": Column("model − baseline"),
    "rank": Column("rank", "integer", "Numerical rank."),
    "spectral_norm": Column("‖W‖₂ (σ₁)"),
    "frobenius_norm": Column("‖W‖_F"),
    "nuclear_norm": Column("‖W‖_* (nuclear)"),
    "stable_rank": Column("stable rank", "log10", "‖W‖_F² / σ₁²."),
    "norm_21": Column("‖W‖₂,₁"),
    "norm_11": Column("‖W‖₁,₁"),
    "sum_c": Column("Σ c(W; p)"),
    "sum_c_QK": Column("Σ c, QK"),
    "sum_c_V": Column("Σ c, V"),
    "sum_c_M_gate": Column("Σ c, M_gate"),
    "sum_c_M_in": Column("Σ c, M_in"),
    "sum_c_M_out": Column("Σ c, M_out"),
    "log10_xi": Column("log10 ξ⁽ℓ⁾", "log10", "Edelman's layer sum."),
}


#: Pixels per header character and the padding around it, for a column as wide as its header.
HEADER_CHAR_PX, HEADER_PAD_PX, MIN_COLUMN_PX = 8, 28, 64


def label_of(name: str) -> str:
    """The header a column of the package's frames is shown under (its own name when it is not known)."""
    column = COLUMNS.get(name)
    return column.label if column is not None else name


def column_config(frame: pd.DataFrame) -> dict[str, Any]:
    """Streamlit column settings for the columns of ``frame``: header, explanation, a width that fits the header."""
    config: dict[str, Any] = {}
    for name in frame.columns:
        column = COLUMNS.get(str(name))
        label = column.label if column is not None else str(name)
        width = max(MIN_COLUMN_PX, HEADER_PAD_PX + HEADER_CHAR_PX * len(label))
        config[name] = st.column_config.Column(label, help=column.help if column else None, width=width)
    return config


def number_formats(frame: pd.DataFrame) -> dict[str, str]:
    """Column -> how its numbers are written (the numeric columns of :data:`COLUMNS` with a format)."""
    formats = {}
    for name in frame.columns:
        column = COLUMNS.get(str(name))
        if column is not None and column.format is not None and pd.api.types.is_numeric_dtype(frame[name]):
            formats[str(name)] = column.format
        elif column is None and pd.api.types.is_float_dtype(frame[name]):
            formats[str(name)] = "number"
    return formats


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
        shown["head"] = shown["head"].astype("string").fillna(MISSING)  # the MLP kinds have no head
    return shown


def as_text_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the screen shows it, every cell a string in the one number format, headers as labels:
    for the HTML report, so it reads like the page it came from."""
    shown = for_display(frame)
    formats = number_formats(shown)
    text = shown.astype(object).copy()
    writers = styled_writers()
    for name in shown.columns:
        writer = writers.get(formats.get(str(name), ""), None)
        text[name] = [
            MISSING if is_missing(v) else (writer(v) if writer is not None else str(v)) for v in shown[name].tolist()
        ]
    return text.rename(columns={name: label_of(str(name)) for name in shown.columns})


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
    st.dataframe(styled_table(shown, number_formats(shown)), **options)


def selected_row(key: str) -> int | None:
    """The row (position in the frame as built) selected in the table ``key``, or None."""
    state = st.session_state.get(key)
    rows = state.selection.rows if state is not None and hasattr(state, "selection") else []
    return int(rows[0]) if rows else None
