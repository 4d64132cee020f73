"""The dashboard's numbers: the package's one number format (:mod:`specbound.present.numbers`), plus the headline's
rules for values carried as natural logs, differences that stay visible, ratios in words, and tables.

Every page, table, figure and export writes numbers through this module or :mod:`specbound.present.numbers`
(whose rules it re-exports), so a value reads the same everywhere. :func:`format_against` chooses
its significant digits from the change it must show, and no more: a change of 0.4 in a total of
1.5 × 10¹² needs 13 digits, not the usual four, or the number seems not to move; a total twelve decades
away from its reference needs the usual four.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from specbound.present.numbers import (
    DIGITS,
    MAX_DIGITS,
    MINUS,
    MISSING,
    digits_to_resolve,
    format_count,
    format_integer,
    format_log,
    format_log10,
    format_number,
    format_p,
    format_percent,
    significant_digits,
    times_in_words,
)

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

__all__ = [
    "CHANGE_DIGITS",
    "DIGITS",
    "MAX_DIGITS",
    "MISSING",
    "digits_to_resolve",
    "format_against",
    "format_change",
    "format_count",
    "format_integer",
    "format_log",
    "format_log10",
    "format_number",
    "format_p",
    "format_percent",
    "log_difference",
    "ratio_sentence",
    "screen_values",
    "shown_value",
    "significant_digits",
    "styled_table",
    "styled_writers",
    "times_in_words",
]

#: Digits of a change itself (its leading digits past the ones the value shares with the reference).
CHANGE_DIGITS = 2


def log_difference(log_a: float, log_b: float) -> tuple[int, float]:
    """(sign, ln |a - b|) of two numbers given by their natural logs, exact where a and b overflow."""
    if log_a == log_b:
        return 0, -math.inf
    sign = 1 if log_a > log_b else -1
    high, low = max(log_a, log_b), min(log_a, log_b)
    return sign, high + math.log1p(-math.exp(low - high))


def format_against(log_value: float, log_reference: float) -> str:
    """``log_value`` with enough digits that its difference from ``log_reference`` shows."""
    _, log_change = log_difference(log_value, log_reference)
    return format_log(log_value, digits_to_resolve(max(log_value, log_reference), log_change, CHANGE_DIGITS))


def format_change(log_value: float, log_reference: float, digits: int = 3) -> str:
    """The signed difference value - reference: '+1,235', '−0.420', '±0' when they are equal."""
    sign, log_change = log_difference(log_value, log_reference)
    if sign == 0:
        return "±0"
    return f"{'+' if sign > 0 else MINUS}{format_log(log_change, digits)}"


#: Below this ratio two values are "about the same" and their difference is said in percent ("1.0 times
#: smaller" says nothing).
ABOUT_THE_SAME_BELOW: float = 1.05


def ratio_sentence(name: str, log_value: float, other: str, log_other: float) -> str:
    """'Ours at p* is 5.0 × 10²⁰ times smaller than the Edelman-style proxy.' (or larger, or equal); within
    a factor :data:`ABOUT_THE_SAME_BELOW`, 'A is about the same as B, 0.3 % smaller.'"""
    if log_value == log_other:
        return f"{name} equals {other}."
    word = "smaller" if log_value < log_other else "larger"
    if abs(log_other - log_value) < math.log(ABOUT_THE_SAME_BELOW):
        percent = 100.0 * abs(math.expm1(log_value - log_other))
        amount = f"{percent:.1f}" if percent >= 0.1 else f"{percent:.2g}"
        return f"{name} is about the same as {other}, {amount} % {word}."
    return f"{name} is {times_in_words(abs(log_other - log_value))} {word} than {other}."


def is_missing(value: object) -> bool:
    """None, NaN or pandas' NA: a cell shown as :data:`MISSING`."""
    if value is None or type(value).__name__ == "NAType":
        return True
    return isinstance(value, float) and math.isnan(value)


def styled_writers() -> dict[str, Callable[[Any], str]]:
    """How each kind of table column writes a cell: 'number', 'percent' (a fraction), 'percent_units'
    (a share in percent), 'p', 'log10', 'integer', 'signed' (a correlation, three decimals)."""

    def guard(write: Callable[[Any], str]) -> Callable[[Any], str]:
        return lambda v: MISSING if is_missing(v) else write(v)

    return {
        "number": guard(lambda v: format_number(float(v))),
        "percent": guard(lambda v: format_percent(float(v))),
        "percent_units": guard(lambda v: format_percent(float(v) / 100.0)),  # 65.7 -> "65.7 %"
        "p": guard(lambda v: format_p(float(v))),
        "log10": guard(lambda v: format_log10(float(v))),
        "integer": guard(lambda v: format_integer(int(v))),
        "signed": guard(lambda v: f"{float(v):+.3f}".replace("-", MINUS)),  # a rank correlation: "+0.312"
    }


#: Superscript digits and minus of a power of ten as the formatter writes it (× 10¹², × 10⁻⁴).
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
#: Beyond these magnitudes a browser writes a number with an exponent ("6.85e+28"): a column holding
#: one is sent as its text (see :func:`screen_values`).
JS_PLAIN_MIN, JS_PLAIN_MAX = 1e-6, 1e21


def shown_value(text: str) -> float:
    """The number a cell's text shows: "1.499 × 10¹²" -> 1.499e12, "20,573" -> 20573, "−0.96" -> -0.96,
    "65.7 %" -> 65.7 (percent units), :data:`MISSING` -> NaN."""
    if text == MISSING:
        return math.nan
    body = text.replace(",", "").replace(MINUS, "-").removesuffix("%").strip()
    mantissa, _, power = body.partition(" × 10")
    return float(f"{mantissa}e{power.translate(_SUPERSCRIPTS)}" if power else mantissa)


def _sent_value(text: str, value: Any, scale: float) -> float:
    """The number behind a cell's text; for a text that is not a plain number ("< 0.1 %"), the value
    itself to :data:`DIGITS` significant digits (in percent units for a share)."""
    try:
        return shown_value(text)
    except ValueError:
        return float(f"{float(value) * scale:.{DIGITS}g}")


def screen_values(
    frame: pd.DataFrame, formats: dict[str, str], texts: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The values a table sends to the browser: each formatted number as its text shows it.

    The browser's table keeps the values it is sent as well as the text it draws: it sorts by them,
    copies them and writes them out for screen readers. Sent whole, "25.478918345072017" would sit in
    the page beside the "25.48" on screen; sent as shown, every number on the page has the digits of
    the one format, and the columns still sort as numbers. Shares travel in percent units (65.7 for
    "65.7 %"). Two kinds of column are sent as their texts, and then sort as text: one with a value a
    browser would write with an exponent (from 10²¹, or under 10⁻⁶ but not 0), and one with an empty
    cell, which the browser would keep as "None" (sent as text, it is :data:`MISSING`, as drawn); so
    is an empty cell of a column of texts. A column of numbers without a format is sent as it is.
    Returns the values and the formats that write them (the kind 'percent_units' for shares).
    ``texts``: the cells already written (the same writers), so that a table sized from its texts does
    not write them twice. The CSV downloads keep every digit.
    """
    import pandas as pd

    writers = styled_writers()
    values = frame.copy()
    kinds = dict(formats)
    for column in values.columns:
        cells = frame[column].tolist()
        missing = any(is_missing(v) for v in cells)
        kind = formats.get(str(column))
        if kind is None:
            if missing and not pd.api.types.is_numeric_dtype(frame[column]):  # texts: empty cells as drawn
                values[column] = [MISSING if is_missing(v) else v for v in cells]
            continue
        if kind == "integer" and not missing:
            continue
        written = texts[column].tolist() if texts is not None else [writers[kind](v) for v in cells]
        scale = 100.0 if kind == "percent" else 1.0
        numbers = pd.Series(
            [_sent_value(t, v, scale) for t, v in zip(written, cells, strict=True)], index=frame.index, dtype=float
        )
        magnitudes = numbers.abs()[numbers.notna() & (numbers != 0)]
        if missing or ((magnitudes >= JS_PLAIN_MAX) | (magnitudes < JS_PLAIN_MIN)).any():
            values[column] = written
            del kinds[column]
        else:
            values[column] = numbers
            kinds[column] = "percent_units" if kind == "percent" else kind
    return values, kinds


def styled_table(frame: pd.DataFrame, formats: dict[str, str], texts: pd.DataFrame | None = None) -> Styler:
    """``frame`` with its numbers written by this module on screen and sent as they are shown
    (:func:`screen_values`: columns sort as numbers, and no digit is in the page that is not on
    screen): ``formats`` maps a column to a kind of :func:`styled_writers` ('number', 'percent',
    'p', 'log10', 'integer', 'signed'); other columns only show :data:`MISSING` for an empty cell.
    ``texts``: the cells already written, as :func:`screen_values` takes them."""
    writers = styled_writers()
    values, kinds = screen_values(frame, formats, texts)
    styler = values.style
    for column in values.columns:
        kind = kinds.get(str(column))
        if kind is not None:
            styler = styler.format(writers[kind], subset=[column], na_rep=MISSING)
        else:
            styler = styler.format(na_rep=MISSING, subset=[column])
    return styler
