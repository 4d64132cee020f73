"""Tables on screen: each column holds its header and its widest cell, the row's name is pinned, and
the width a table needs is known before it is drawn."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dashboard.widgets.tables import (
    CELL_PAD_PX,
    CHAR_PX,
    HEADER_PAD_PX,
    MIN_COLUMN_PX,
    SELECT_COLUMN_PX,
    TABLE_WIDTH_PX,
    column_config,
    column_width,
    column_widths,
    for_display,
    table_width,
)


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "spectral_norm": [1.5e12, 3.0],
            "matrix": ["L10 QK h11", "L0 V h0"],
            "p_opt": [0.5, 1 / 6],
            "rank": [32, 7],
        }
    )


def test_a_column_holds_its_header_and_its_widest_cell_as_written() -> None:
    widths = column_widths(for_display(_frame()))
    assert widths["matrix"] == CELL_PAD_PX + CHAR_PX * len("L10 QK h11")  # the cell is wider than "matrix"
    assert widths["spectral_norm"] == CELL_PAD_PX + CHAR_PX * len("1.500 × 10¹²")  # as the screen writes it
    assert widths["rank"] == HEADER_PAD_PX + CHAR_PX * len("rank")  # the header is wider than "32"
    assert widths["p_opt"] == MIN_COLUMN_PX  # "p*" and "0.500" are narrower than a column can be


def test_a_column_width_from_a_header_and_cells_of_their_own() -> None:
    assert column_width("Measure", ["power-law exponent α of the spectra"]) == CELL_PAD_PX + CHAR_PX * 35
    assert column_width("a long header here", ["x"]) == HEADER_PAD_PX + CHAR_PX * 18
    assert column_width("p", []) == MIN_COLUMN_PX


def test_a_shorter_header_for_one_table_narrows_its_column() -> None:
    shown = for_display(_frame())
    assert column_widths(shown, {"rank": "r"})["rank"] == MIN_COLUMN_PX
    assert column_config(shown, {"rank": "r"})["rank"]["label"] == "r"
    assert column_config(shown)["rank"]["label"] == "rank"


def test_the_row_name_leads_and_the_width_adds_up() -> None:
    frame = _frame()
    shown = for_display(frame)
    config = column_config(shown)
    assert list(config) == ["matrix", "p_opt", "rank", "spectral_norm"]
    assert all(config[name]["width"] == width for name, width in column_widths(shown).items())
    total = sum(column_widths(shown).values())
    assert table_width(frame) == total and table_width(frame, selectable=True) == total + SELECT_COLUMN_PX


def _pinned(frame: pd.DataFrame, **options: Any) -> list[str]:
    return [name for name, spec in column_config(for_display(frame), **options).items() if spec["pinned"]]


def test_the_row_name_is_pinned_only_in_a_table_wider_than_a_projector() -> None:
    frame = _frame()  # 310 px: fits
    assert table_width(frame) <= TABLE_WIDTH_PX and _pinned(frame) == []
    wide = frame.assign(**{f"note_{k}": ["a long text that takes room"] * 2 for k in range(3)})
    assert table_width(wide) > TABLE_WIDTH_PX and _pinned(wide) == ["matrix"]
    # the row-selection column counts: a table that fits without it is wide with it
    candidates = (frame.assign(note=["x" * n] * 2) for n in range(80))
    edge = next(c for c in candidates if table_width(c, selectable=True) > TABLE_WIDTH_PX)
    assert table_width(edge) <= TABLE_WIDTH_PX and _pinned(edge) == []
    assert _pinned(edge, selectable=True) == ["matrix"]


def test_a_table_without_a_row_name_pins_nothing() -> None:
    frame = pd.DataFrame({"rank": [1], "spectral_norm": [2.0]}).assign(note=["x" * 100])
    assert table_width(frame) > TABLE_WIDTH_PX and _pinned(frame) == []


def test_cells_written_once_send_the_same_values() -> None:
    """show_table writes its cells once, for the widths and for the values sent: the same as writing them twice."""
    from dashboard.widgets.tables import _cell_texts, number_formats
    from dashboard.wording.numbers import styled_table

    shown = for_display(_frame().assign(share=[0.657439, 0.0004]))
    formats = number_formats(shown)
    once, twice = styled_table(shown, formats, _cell_texts(shown)), styled_table(shown, formats)
    pd.testing.assert_frame_equal(once.data, twice.data)
    assert once.data["share"].tolist() == [65.7, 0.04] and once.data["spectral_norm"].tolist() == [1.5e12, 3.0]
