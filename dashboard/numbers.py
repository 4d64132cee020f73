"""Headline numbers as text: values given by their natural log, differences that stay visible, ratios in words.

Every total of specbound is carried as a natural log (it may overflow float64), so each formatter takes
logs. :func:`format_against` and :func:`format_resolving` choose their significant digits from the
change they must show: a one-layer change of 0.4 in a total of 1.5e12 needs 15 digits, not the usual
five, or the number seems not to move.
"""

from __future__ import annotations

import math

from specbound.logspace import LOG10_E, LOG_MAX

#: Fewest and most significant digits a headline value is written with.
MIN_DIGITS, MAX_DIGITS = 5, 16
#: Digits of the change itself (its leading digits past the ones the value shares with the reference).
CHANGE_DIGITS = 2
#: Plain decimals are written with thousands separators in this range, else in scientific notation.
PLAIN_RANGE = (0.01, 1e6)
#: Ratios written in words ("3.2 million times"); past the last one, as a power of ten.
RATIO_WORDS: tuple[tuple[float, str], ...] = (
    (1e3, " thousand"),
    (1e6, " million"),
    (1e9, " billion"),
    (1e12, " trillion"),
)
#: From this factor on a ratio is written as a power of ten.
RATIO_POWER_FROM: float = 1e15


def _digits_to_show(log_value: float, log_change: float) -> int:
    """Significant digits that make a change of exp(log_change) visible in a value of exp(log_value)."""
    if not math.isfinite(log_change):
        return MIN_DIGITS
    decades_apart = (log_value - log_change) * LOG10_E  # log10(value / |change|)
    return max(MIN_DIGITS, min(MAX_DIGITS, math.floor(decades_apart) + 1 + CHANGE_DIGITS))


def format_value(log_value: float, digits: int = MIN_DIGITS) -> str:
    """A positive number given by its natural log, with ``digits`` significant digits.

    "20,573.03" and "1.4986e+12" style; "10^812.345" once exp would overflow float64; "0" for ln 0.
    """
    if math.isnan(log_value):
        return "n/a"
    if log_value == -math.inf:
        return "0"
    if log_value > LOG_MAX:
        return f"10^{log_value * LOG10_E:.{max(3, digits - 3)}f}"
    value = math.exp(log_value)
    if PLAIN_RANGE[0] <= value < PLAIN_RANGE[1]:
        integer_digits = max(1, math.floor(math.log10(value)) + 1)
        return f"{value:,.{max(2, digits - integer_digits)}f}"
    return f"{value:.{digits - 1}e}"


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
    return format_value(log_value, _digits_to_show(max(log_value, log_reference), log_change))


def format_resolving(log_value: float, log_resolution: float) -> str:
    """``log_value`` with enough digits that a change of exp(``log_resolution``) shows in it."""
    return format_value(log_value, _digits_to_show(log_value, log_resolution))


def format_change(log_value: float, log_reference: float) -> str:
    """The signed difference value - reference: "+1.2346e+03", "−0.42", "±0" when they are equal."""
    sign, log_change = log_difference(log_value, log_reference)
    if sign == 0:
        return "±0"
    return f"{'+' if sign > 0 else '−'}{format_value(log_change, 3)}"


def times_in_words(log_ratio: float) -> str:
    """A factor exp(log_ratio) >= 1 in plain words: "7.3 times", "3.2 million times", "10^20.7 times"."""
    ratio_log10 = log_ratio * LOG10_E
    if ratio_log10 >= math.log10(RATIO_POWER_FROM):
        return f"10^{ratio_log10:.1f} times"
    ratio = math.exp(log_ratio)
    scale, word = 1.0, ""
    for threshold, name in RATIO_WORDS:
        if ratio >= threshold:
            scale, word = threshold, name
    if not word:
        return f"{ratio:,.1f} times"
    return f"{ratio / scale:,.1f}{word} times"


def comparison_sentence(name: str, log_value: float, other: str, log_other: float) -> str:
    """ "Ours at p* is 3.2 million times smaller than the Edelman-style proxy." (or larger, or equal)."""
    if log_value == log_other:
        return f"{name} equals {other}."
    word = "smaller" if log_value < log_other else "larger"
    return f"{name} is {times_in_words(abs(log_other - log_value))} {word} than {other}."
