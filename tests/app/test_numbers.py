"""The one number format: significant digits, powers of ten with superscripts, shares, ratios in words,
and the headline's digits that resolve a change."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dashboard.widgets.tables import as_text_frame
from dashboard.wording.numbers import (
    DIGITS,
    MAX_DIGITS,
    MISSING,
    format_against,
    format_change,
    format_number,
    format_percent,
    log_difference,
    ratio_sentence,
    screen_values,
    shown_value,
    significant_digits,
    styled_table,
    times_in_words,
)
from specbound.present.numbers import format_log


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (20573.03, "20,573"),
        (4.91712, "4.917"),
        (69.3, "69.30"),
        (0.657439, "0.6574"),
        (2304.0, "2,304"),
        (6.8537e28, "6.854 × 10²⁸"),
        (1.4986e12, "1.499 × 10¹²"),
        (2.5e-4, "2.500 × 10⁻⁴"),
        (99999.7, "1.000 × 10⁵"),
        (0.0, "0"),
        (-0.42, "−0.4200"),
        (math.nan, "—"),
        (None, "—"),
    ],
)
def test_one_format_for_every_number(value: float | None, text: str) -> None:
    assert format_number(value) == text
    assert "e" not in text.lower().replace("—", "") and "^" not in text


def test_values_from_logs_never_overflow_into_carets() -> None:
    assert format_log(math.log(20573.03)) == "20,573"
    assert format_log(2000.0) == "3.881 × 10⁸⁶⁸"  # past float64: the decimal exponent and a mantissa
    assert format_log(-math.inf) == "0" and format_log(math.nan) == "—"


def test_shares_are_percentages_one_way() -> None:
    assert format_percent(0.657439) == "65.7 %"
    assert format_percent(0.045) == "4.5 %"
    assert format_percent(1e-5) == "< 0.1 %"


@pytest.mark.parametrize(("value", "change"), [(1.4986e12, 0.4), (1.4986e12, 3.2e4), (20573.03, 0.02), (7.5, 1e-6)])
def test_a_change_stays_visible(value: float, change: float) -> None:
    shown_value = format_against(math.log(value), math.log(value + change))
    shown_moved = format_against(math.log(value + change), math.log(value))
    assert shown_value != shown_moved, (value, change)
    assert significant_digits(shown_value) <= MAX_DIGITS


def test_a_change_takes_the_digits_it_needs_and_no_more() -> None:
    # a top layer's move of 3.2e4 in a total of 1.5e12: four digits would hide it; ten show it, two digits deep
    assert format_against(math.log(1.4986225567743e12), math.log(1.4986225567743e12 - 3.2e4)) == "1.498622557 × 10¹²"
    # a total twelve decades above its reference: the usual four digits already show the change
    assert format_against(math.log(4.41505935e12), math.log(20573.03)) == "4.415 × 10¹²"
    assert format_against(math.log(20573.03), math.log(20573.03)) == "20,573"
    assert significant_digits("20,573") == 5 and significant_digits("6.854 × 10²⁸") == DIGITS


def test_signed_differences_exist_past_float64() -> None:
    assert format_change(math.log(1500.5), math.log(1500.0)) == "+0.500"
    assert format_change(math.log(1000.0), math.log(1500.0)) == "−500"
    assert format_change(1.0, 1.0) == "±0"
    sign, log_gap = log_difference(2000.0, 1990.0)  # both overflow float64
    assert sign == 1 and log_gap == pytest.approx(2000.0, abs=1e-4)


def test_ratios_in_plain_words() -> None:
    assert times_in_words(math.log(7.3)) == "7.3 times"
    assert times_in_words(math.log(12_500.0)) == "12.5 thousand times"
    # from 10⁵ on, where every number of the page is a power of ten, a factor is one too
    assert times_in_words(math.log(3.435e14)) == "3.4 × 10¹⁴ times"  # never "343.5 trillion times"
    assert times_in_words(math.log(3.2e6)) == "3.2 × 10⁶ times"
    assert times_in_words(math.log(10.0) * 24.49) == "3.1 × 10²⁴ times"
    assert (
        ratio_sentence("Ours at p*", math.log(20573.03), "the Edelman-style proxy", math.log(6.8537e28))
        == "Ours at p* is 3.3 × 10²⁴ times smaller than the Edelman-style proxy."
    )
    assert ratio_sentence("A", 2.0, "B", 1.0).endswith("times larger than B.")
    # within 5 %: the difference in percent, not "1.0 times smaller"
    assert ratio_sentence("A", math.log(0.997), "B", 0.0) == "A is about the same as B, 0.3 % smaller."
    assert ratio_sentence("A", math.log(1.0004), "B", 0.0) == "A is about the same as B, 0.04 % larger."
    assert ratio_sentence("A", math.log(1.06), "B", 0.0) == "A is 1.1 times larger than B."


def test_tables_in_reports_read_like_the_page() -> None:
    frame = pd.DataFrame(
        {
            "matrix": ["L0 QK h0", "L0 M_in"],
            "head": pd.array([0, None], dtype="Int64"),
            "spectral_norm": [4.917, 6.93e1],
            "share": [0.657439, 0.045],
            "first_winning_p": [math.nan, 0.25],
        }
    )
    shown = as_text_frame(frame)
    assert list(shown.columns) == ["matrix", "share of total", "head", "first p that wins", "‖W‖₂ (σ₁)"]
    cells = shown.to_numpy().ravel().tolist()
    assert "65.7 %" in cells and "4.917" in cells and "69.30" in cells and "—" in cells
    assert not any("E" in str(c) or "<NA>" in str(c) or str(c) == "None" for c in cells)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.499 × 10¹²", 1.499e12),
        ("1.230 × 10⁻⁴", 1.23e-4),
        ("20,573", 20573.0),
        ("−0.96", -0.96),
        ("65.7 %", 65.7),
        ("0.333", 0.333),
        ("—", math.nan),
    ],
)
def test_a_cell_text_reads_back_as_the_number_it_shows(text: str, value: float) -> None:
    got = shown_value(text)
    assert got == value or (math.isnan(value) and math.isnan(got))


def test_tables_send_the_numbers_they_show_and_still_sort_as_numbers() -> None:
    frame = pd.DataFrame(
        {
            "log10": [25.478918345072017, -0.9575363714034427, 1.0],
            "share": [0.657439, 0.0004, 1.0],
            "big": [6.8537e28, 1.0, 2.0],
            "value": [20573.0291, 1.4986225884e12, 1.2304e-4],
            "rank": [32, 7, 1],
        }
    )
    formats = {"log10": "log10", "share": "percent", "big": "number", "value": "number", "rank": "integer"}
    values, kinds = screen_values(frame, formats)
    assert values["log10"].tolist() == [25.48, -0.96, 1.0]
    assert values["share"].tolist() == [65.7, 0.04, 100.0] and kinds["share"] == "percent_units"  # "< 0.1 %"
    assert values["value"].tolist() == [20573.0, 1.499e12, 1.23e-4]
    assert values["rank"].tolist() == [32, 7, 1] and kinds["rank"] == "integer"
    # a browser writes 6.8537e28 with an exponent: that column goes as its text
    assert values["big"].tolist() == ["6.854 × 10²⁸", "1.000", "2.000"] and "big" not in kinds
    assert frame["log10"].iloc[0] == 25.478918345072017  # the frame itself (and its CSV) keeps every digit
    shown = styled_table(frame, formats)._translate(False, False)["body"]
    cells = [[str(cell["display_value"]) for cell in row if cell.get("type") == "td"] for row in shown]
    assert cells[0] == ["25.48", "65.7 %", "6.854 × 10²⁸", "20,573", "32"]
    assert cells[1] == ["−0.96", "< 0.1 %", "1.000", "1.499 × 10¹²", "7"]
    assert cells[2] == ["1.00", "100.0 %", "2.000", "1.230 × 10⁻⁴", "1"]
    taus = styled_table(pd.DataFrame({"tau": [0.31249, -0.0152]}), {"tau": "signed"})
    assert taus.data["tau"].tolist() == [0.312, -0.015]  # a rank correlation: signed, three decimals
    assert [row[1]["display_value"] for row in taus._translate(False, False)["body"]] == ["+0.312", "−0.015"]


def test_an_empty_cell_is_sent_as_drawn_never_as_none() -> None:
    """The browser keeps a sent null as "None" in its table for screen readers: a column with an empty
    cell (a number, a count or a text) goes as its texts, the empty cell as "—"."""
    frame = pd.DataFrame(
        {
            "slope": [1.29904, math.nan],
            "fixed": pd.array([32, pd.NA], dtype="Int64"),
            "law": ["undecided", math.nan],
            "whole": [0.5, 0.25],
        }
    )
    formats = {"slope": "number", "fixed": "integer", "whole": "number"}
    values, kinds = screen_values(frame, formats)
    assert values["slope"].tolist() == ["1.299", MISSING] and "slope" not in kinds
    assert values["fixed"].tolist() == ["32", MISSING] and "fixed" not in kinds
    assert values["law"].tolist() == ["undecided", MISSING]
    assert values["whole"].tolist() == [0.5, 0.25] and kinds["whole"] == "number"  # no empty cell: still numbers
    assert frame["slope"].isna().iloc[1]  # the frame (and its CSV) keeps the empty cell empty
