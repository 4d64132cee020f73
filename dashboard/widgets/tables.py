"""Tables on screen: readable headers, the one number format, the key columns first and "—" for empty cells.

The package's frames (:mod:`specbound.present.report`, :meth:`SpectralProfile.to_frame`) keep their
snake_case columns, which the CSV downloads carry for scripts; :func:`show_table` only changes how a
frame is drawn. Every column the package writes has one entry in :data:`COLUMNS`. Numbers are written by
:mod:`dashboard.wording.numbers` (a pandas Styler: the cells show the text, and each value is sent as its text
shows it, so the column still sorts as numbers and the page holds no digit the screen does not show),
and every column is as wide as its header and its widest cell, so neither is cut; the row's name stays
pinned while a table wider than the page scrolls sideways.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from dashboard.wording.numbers import MISSING, is_missing, shown_value, styled_table, styled_writers
from specbound.core.architecture import Kind

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

#: Key (and link parameter) of the Bound explorer's tables section, drawn only when opened.
EXPLORER_TABLES_KEY = "show_tables"


@dataclass(frozen=True)
class Column:
    """How one column is shown: its header, number format (a kind of :func:`dashboard.wording.numbers.styled_table`;
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
    # centred at a reference (SPEC §14): headed by the package's own names, as in the CSV and to_frame()
    "delta_contribution_at_p": Column(
        "delta_contribution_at_p", help="c_ref(W; p): S_p of W − W⁰ from the reference, s_W of W, at the current p."
    ),
    "delta_p_opt": Column("delta_p_opt", "p", "The grid index that minimises c_ref(W; p)."),
    "delta_contribution": Column("delta_contribution", help="c_ref(W; p*): the centred contribution at its p*."),
    "delta_schatten_p": Column("delta_schatten_p", help="S_p(W − W⁰): Σ σᵢᵖ of the difference from the reference."),
    "delta_share": Column("delta_share", "percent", "c_ref(W; p) over the centred total at the current p."),
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
    "first_winning_p": Column("first p that wins", None, "The smallest grid p > 0 with c(W; p) < c(W; 0)."),
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
    "delta_rank": Column("delta_rank", "integer", "Numerical rank of W − W⁰ (0: the matrix is unchanged)."),
    "delta_spectral_norm": Column("delta_spectral_norm", help="‖W − W⁰‖₂"),
    "delta_frobenius_norm": Column("delta_frobenius_norm", help="‖W − W⁰‖_F"),
    "delta_nuclear_norm": Column("delta_nuclear_norm", help="‖W − W⁰‖_*"),
    "delta_norm_21": Column("delta_norm_21", help="‖W − W⁰‖₂,₁"),
    "sum_c": Column("Σ c(W; p)"),
    "sum_c_QK": Column("Σ c, QK"),
    "sum_c_V": Column("Σ c, V"),
    "sum_c_M_gate": Column("Σ c, M_gate"),
    "sum_c_M_in": Column("Σ c, M_in"),
    "sum_c_M_out": Column("Σ c, M_out"),
    "log10_xi": Column("log10 ξ⁽ℓ⁾", "log10", "Edelman's layer sum."),
    "delta_sum_c": Column("delta_sum_c", help="Σ c_ref(W; p) of the layer."),
    **{
        f"delta_sum_c_{kind.value}": Column(
            f"delta_sum_c_{kind.value}", help=f"Σ c_ref(W; p) of the layer's {kind.value} matrices."
        )
        for kind in Kind
    },
    "delta_log10_xi": Column("delta_log10_xi", "log10", "Edelman's layer sum of W − W⁰."),
}


#: Width of one character of the tables' 14 px type (Source Sans; 5.4 to 6.8 px in Chromium, so this
#: is an upper bound), the padding around a header (its sort arrow included) and around a cell's text,
#: and the narrowest column.
CHAR_PX, HEADER_PAD_PX, CELL_PAD_PX, MIN_COLUMN_PX = 7, 32, 20, 56
#: The row-selection checkbox column of a table whose rows can be clicked.
SELECT_COLUMN_PX = 34
#: The width a table gets on a projector (1024 px, sidebar open, inside an expander): a table of at
#: most this many pixels shows every column without a sideways scroll.
TABLE_WIDTH_PX = 528


def label_of(name: str) -> str:
    """The header a column of the package's frames is shown under (its own name when it is not known)."""
    column = COLUMNS.get(name)
    return column.label if column is not None else name


def column_width(header: str, cells: Iterable[str]) -> int:
    """Pixels that hold a column's header and its widest cell (as written on screen), so neither is cut."""
    widest = max((len(text) for text in cells), default=0)
    return max(MIN_COLUMN_PX, HEADER_PAD_PX + CHAR_PX * len(header), CELL_PAD_PX + CHAR_PX * widest)


def column_widths(
    frame: pd.DataFrame, labels: Mapping[str, str] | None = None, texts: pd.DataFrame | None = None
) -> dict[str, int]:
    """Column of a shown frame (:func:`for_display`) -> pixels that hold its header (``labels`` over
    :data:`COLUMNS`) and its widest cell as :func:`show_table` writes them (``texts``, when they are
    written already), so that neither is cut."""
    texts = _cell_texts(frame) if texts is None else texts
    labels = labels or {}
    widths = {}
    for name in frame.columns:
        widths[str(name)] = column_width(labels.get(str(name), label_of(str(name))), texts[name])
    return widths


def table_width(frame: pd.DataFrame, *, selectable: bool = False, labels: Mapping[str, str] | None = None) -> int:
    """Pixels :func:`show_table` needs for ``frame`` (as it comes, before :func:`for_display`)."""
    return sum(column_widths(for_display(frame), labels).values()) + (SELECT_COLUMN_PX if selectable else 0)


def column_config(
    frame: pd.DataFrame,
    labels: Mapping[str, str] | None = None,
    *,
    selectable: bool = False,
    texts: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Streamlit column settings for a shown frame: header (``labels`` over :data:`COLUMNS`), explanation,
    a width that holds the header and every cell. In a table wider than :data:`TABLE_WIDTH_PX` the row's
    name is pinned, so that the rest scrolls sideways under it (a pinned column is drawn in a lighter
    grey, so a table that fits leaves it as it is)."""
    widths = column_widths(frame, labels, texts)
    wide = sum(widths.values()) + (SELECT_COLUMN_PX if selectable else 0) > TABLE_WIDTH_PX
    lead = frame.columns[0] if wide and len(frame.columns) and frame.columns[0] in ROW_NAMES else None
    labels = labels or {}
    config: dict[str, Any] = {}
    for name, width in widths.items():
        column = COLUMNS.get(name)
        config[name] = st.column_config.Column(
            labels.get(name, label_of(name)),
            help=column.help if column else None,
            width=width,
            pinned=name == lead or None,
        )
    return config


def number_formats(frame: pd.DataFrame) -> dict[str, str]:
    """Column -> how its numbers are written: the format :data:`COLUMNS` gives a numeric column, else
    'number' for any column of floats (Compare's "model" and "baseline" hold Σ c values, where other
    tables hold the model's name)."""
    formats = {}
    for name in frame.columns:
        column = COLUMNS.get(str(name))
        if column is not None and column.format is not None and pd.api.types.is_numeric_dtype(frame[name]):
            formats[str(name)] = column.format
        elif pd.api.types.is_float_dtype(frame[name]):
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


def _cell_texts(shown: pd.DataFrame) -> pd.DataFrame:
    """Every cell of a shown frame as the string the screen writes (the one number format, "—" when empty)."""
    formats = number_formats(shown)
    text = shown.astype(object).copy()
    writers = styled_writers()
    for name in shown.columns:
        writer = writers.get(formats.get(str(name), ""), None)
        text[name] = [
            MISSING if is_missing(v) else (writer(v) if writer is not None else str(v)) for v in shown[name].tolist()
        ]
    return text


def as_text_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the screen shows it, every cell a string in the one number format, headers as labels:
    for the HTML report, so it reads like the page it came from."""
    shown = for_display(frame)
    return _cell_texts(shown).rename(columns={name: label_of(str(name)) for name in shown.columns})


def show_table(
    frame: pd.DataFrame,
    key: str,
    *,
    on_select: Callable[[], None] | None = None,
    height: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> None:
    """Draw ``frame`` readably; with ``on_select``, a click on a row selects it (one row) and calls it.

    ``labels``: shorter headers for this table (a caption saying what they stand for), over :data:`COLUMNS`.
    """
    shown = for_display(frame)
    texts = _cell_texts(shown)  # written once: for the widths and for the values sent
    options: dict[str, Any] = {
        "hide_index": True,
        "key": key,
        "column_config": column_config(shown, labels, selectable=on_select is not None, texts=texts),
    }
    if height is not None:
        options["height"] = height
    if on_select is not None:
        options.update(on_select=on_select, selection_mode="single-row")
    draw_table(styled_table(shown, number_formats(shown), texts), **options)


def _numbers_as_text(column: pd.Series) -> bool:
    """Whether a sent column holds numbers written as text: every cell a number's text or :data:`MISSING`
    (a column whose every cell is :data:`MISSING`, as the interval of fits on two sizes, too)."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return False
    cells = [cell for cell in column.tolist() if cell != MISSING]
    if not cells:
        return len(column) > 0
    if not all(isinstance(cell, str) for cell in cells):
        return False
    try:
        for cell in cells:
            shown_value(cell)
    except ValueError:
        return False
    return True


def draw_table(styled: Styler, *, column_config: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """``st.dataframe`` for a table written by :func:`~dashboard.wording.numbers.styled_table`, the one way a page
    draws one.

    A number column that :func:`~dashboard.wording.numbers.screen_values` sends as its texts (one with an empty
    cell, or a value a browser would write with an exponent) is drawn as text, right-aligned as the
    numbers around it are: a number column's setting would mark each text as an invalid number. An
    empty cell reads :data:`MISSING`, never the browser's "None".
    """
    config = dict(column_config or {})
    for name in styled.data.columns:
        if not _numbers_as_text(styled.data[name]):
            continue
        setting = dict(config.get(name) or {"label": label_of(str(name))})
        setting["type_config"] = {"type": "text"}
        setting["alignment"] = "right"
        config[name] = setting
    return st.dataframe(styled, column_config=config, placeholder=MISSING, **options)


def selected_row(key: str) -> int | None:
    """The row (position in the frame as built) selected in the table ``key``, or None."""
    state = st.session_state.get(key)
    rows = state.selection.rows if state is not None and hasattr(state, "selection") else []
    return int(rows[0]) if rows else None
