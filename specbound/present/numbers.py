"""How every number is written: on the dashboard's pages, in its tables and figures, in reports and exports.

One rule, decided here once (the dashboard's :mod:`dashboard.wording.numbers` and the figures of
:mod:`specbound.present.figures` write with these functions; the package itself never imports the dashboard):

* :data:`DIGITS` (4) significant digits; more only where a change must show (the headline's total,
  :func:`digits_to_resolve`), at most :data:`MAX_DIGITS`;
* plain decimals with thousands separators in [:data:`PLAIN_RANGE`), written to the unit from 1,000
  on ("20,573", never "20,573.03" beside "2304");
* outside it, a mantissa times a power of ten with a superscript exponent: "6.854 × 10²⁸",
  "2.5 × 10⁻⁴". Never "e+28", never "E0", never a caret, also past float64 ("2.213 × 10⁸¹²", from the
  natural log that specbound carries for such totals);
* shares as percentages with one decimal and a thin space: "65.7 %";
* a missing value as :data:`MISSING` ("—"), never "None", "nan" or "<NA>";
* factors by the same rule: plain or in thousands below the top of :data:`PLAIN_RANGE` ("7.3 times",
  "12.5 thousand times"), else as a power of ten ("3.4 × 10¹⁴ times", never "343.5 trillion times"
  beside a total written "6.854 × 10²⁸").
"""

from __future__ import annotations

import math
import re

from ..core.logspace import LOG10_E, LOG_MAX

#: Significant digits of every number unless a change must show.
DIGITS = 4
#: Most significant digits a number is ever written with (a one-layer change in a total of 10¹²).
MAX_DIGITS = 16
#: Plain decimals in this range, else mantissa × 10ⁿ.
PLAIN_RANGE = (1e-3, 1e5)
#: A missing value (an empty fit, a matrix without a head).
MISSING = "—"
#: The minus sign (U+2212), as typeset.
MINUS = "−"
#: Ratios written in words ("12.5 thousand times"); from RATIO_POWER_FROM on, as a power of ten, where
#: every other number on the page turns to one too (the top of PLAIN_RANGE).
RATIO_WORDS: tuple[tuple[float, str], ...] = ((1e3, " thousand"),)
RATIO_POWER_FROM: float = PLAIN_RANGE[1]

_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def superscript(exponent: int) -> str:
    """An integer as superscript digits: 28 -> '²⁸', -4 -> '⁻⁴'."""
    return str(exponent).translate(_SUPERSCRIPTS)


_EXPONENT_CHARACTERS = str.maketrans("0123456789-./", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻·ᐟ")
_WRITTEN_POWER = re.compile(r"\^(\(-?[0-9./]+\)|-?[0-9]+(?:\.[0-9]+)?)")


def raised_powers(text: str) -> str:
    """``text`` with every numeric power written with a caret raised in superscript, as a page shows it
    (a caret is plain text's notation, not the page's): "L^0.52" -> "L⁰·⁵²", "L^(3/2)" -> "L³ᐟ²". A power
    that is not a number ("e^(r·L)") stays as written.

    >>> raised_powers("measured L^1.15; predicted L^(3/2) (L^1.5), e^(r·L) per layer")
    'measured L¹·¹⁵; predicted L³ᐟ² (L¹·⁵), e^(r·L) per layer'
    """
    return _WRITTEN_POWER.sub(lambda m: m.group(1).strip("()").translate(_EXPONENT_CHARACTERS), text)


def power_of_ten(mantissa: str, exponent: int) -> str:
    """ "6.854 × 10²⁸" (or "10²⁸" for a mantissa of 1)."""
    return f"10{superscript(exponent)}" if mantissa == "1" else f"{mantissa} × 10{superscript(exponent)}"


def _plain(value: float, digits: int) -> str:
    """|value| in PLAIN_RANGE with ``digits`` significant digits (to the unit from 1,000 on)."""
    integer_digits = math.floor(math.log10(value)) + 1
    decimals = max(0, digits - integer_digits)
    text = f"{value:,.{decimals}f}"
    return text


def _scientific(value: float, digits: int) -> str:
    mantissa, _, exponent = f"{value:.{max(digits, 1) - 1}e}".partition("e")
    return power_of_ten(mantissa, int(exponent))


def format_number(value: float | None, digits: int = DIGITS) -> str:
    """A number with ``digits`` significant digits: '4.917', '20,573', '6.854 × 10²⁸', '−0.42', '—'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    value = float(value)
    if math.isnan(value):
        return MISSING
    if value < 0:
        return MINUS + format_number(-value, digits)
    if value == 0:
        return "0"
    if math.isinf(value):
        return "∞"
    rounded = float(f"{value:.{max(digits, 1) - 1}e}")  # the plain range decided after rounding
    if PLAIN_RANGE[0] <= rounded < PLAIN_RANGE[1]:
        return _plain(rounded if rounded < 10**digits else value, digits)
    return _scientific(value, digits)


def format_log(log_value: float, digits: int = DIGITS) -> str:
    """A positive number given by its natural log (as specbound carries totals that may overflow float64)."""
    if math.isnan(log_value):
        return MISSING
    if log_value == -math.inf:
        return "0"
    if log_value <= LOG_MAX:
        return format_number(math.exp(log_value), digits)
    log10 = log_value * LOG10_E
    exponent = math.floor(log10)
    mantissa = f"{10.0 ** (log10 - exponent):.{digits - 1}f}"
    if float(mantissa) >= 10:  # rounding carried into the next decade
        exponent += 1
        mantissa = f"{10.0 ** (log10 - exponent):.{digits - 1}f}"
    return power_of_ten(mantissa, exponent)


def format_integer(value: int) -> str:
    """A count: '2,304', '156'."""
    return f"{int(value):,}"


def format_count(value: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the right number: '1 model', '24 models', '2,304 matrices'
    (``plural`` for nouns that do not just take an s: ``format_count(n, "matrix", "matrices")``)."""
    word = noun if int(value) == 1 else (plural or f"{noun}s")
    return f"{format_integer(value)} {word}"


def format_percent(fraction: float | None) -> str:
    """A share as a percentage, one decimal: '65.7 %', '< 0.1 %' for a tiny share, '—' when missing."""
    if fraction is None or math.isnan(fraction):
        return MISSING
    if 0 < fraction < 0.0005:
        return "< 0.1 %"
    return f"{100 * fraction:.1f} %"


def format_p(p: float | None) -> str:
    """A Schatten index p as the sliders show it: '0.333', '1.000'; 'p*' for the optimum (None)."""
    return "p*" if p is None else f"{p:.3f}"


def format_log10(log10: float) -> str:
    """A decimal logarithm, two decimals: '4.31', '−2.05'."""
    return MISSING if math.isnan(log10) else f"{log10:.2f}".replace("-", MINUS)


def times_in_words(log_ratio: float) -> str:
    """A factor exp(log_ratio) >= 1 in plain words: '7.3 times', '12.5 thousand times', '3.4 × 10¹⁴ times'."""
    ratio_log10 = log_ratio * LOG10_E
    if ratio_log10 >= math.log10(RATIO_POWER_FROM):
        return f"{format_log(log_ratio, 2)} times"
    ratio = math.exp(log_ratio)
    scale, word = 1.0, ""
    for threshold, name in RATIO_WORDS:
        if ratio >= threshold:
            scale, word = threshold, name
    return f"{ratio / scale:,.1f}{word} times"


def digits_to_resolve(log_value: float, log_change: float, extra: int = 2) -> int:
    """Significant digits that make a change of exp(log_change) visible in exp(log_value), with ``extra``
    digits of the change itself; never fewer than :data:`DIGITS`, never more than :data:`MAX_DIGITS`."""
    if not math.isfinite(log_change):
        return DIGITS
    decades_apart = (log_value - log_change) * LOG10_E  # log10(value / |change|)
    return max(DIGITS, min(MAX_DIGITS, math.floor(decades_apart) + 1 + extra))


def significant_digits(text: str) -> int:
    """How many significant digits a number written by this module shows ('6.854 × 10²⁸' -> 4, '20,573' -> 5)."""
    mantissa = text.split("×")[0].replace(",", "").replace(MINUS, "").replace("-", "").strip()
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits) if "." in mantissa else len(digits.rstrip("0") or "0")


def format_power(log10: float, digits: int = 2) -> str:
    """A number given by its decimal log, as a power of ten: 22.3 -> '2.0 × 10²²' ('10²²' when exact)."""
    return format_log(log10 / LOG10_E, digits)
