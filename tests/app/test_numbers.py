"""Headline number formatting: values from natural logs, digits that resolve a change, ratios in words."""

from __future__ import annotations

import math

import pytest

from dashboard.numbers import (
    comparison_sentence,
    format_against,
    format_change,
    format_resolving,
    format_value,
    log_difference,
    times_in_words,
)


def test_values_read_as_before_with_five_digits() -> None:
    assert format_value(math.log(20573.03)) == "20,573.03"
    assert format_value(math.log(1.4986e12)) == "1.4986e+12"
    assert format_value(-math.inf) == "0" and format_value(math.nan) == "n/a"
    assert format_value(2000.0) == "10^868.589"  # past float64, the decimal exponent stays


@pytest.mark.parametrize(("value", "change"), [(1.4986e12, 0.4), (1.4986e12, 3.2e4), (20573.03, 0.02), (7.5, 1e-6)])
def test_a_change_stays_visible(value: float, change: float) -> None:
    shown_value = format_against(math.log(value), math.log(value + change))
    shown_moved = format_against(math.log(value + change), math.log(value))
    assert shown_value != shown_moved, (value, change)
    assert float(shown_moved.replace(",", "")) == pytest.approx(value + change, abs=abs(change) / 5)
    assert len(shown_value) >= len(format_value(math.log(value)))  # never fewer digits than usual


def test_resolving_a_layer_sized_change() -> None:
    # a total of 1.5e12 whose smallest layer holds 1e4: five digits would hide any move of that layer
    shown = format_resolving(math.log(1.4986225567743e12), math.log(1e4))
    assert shown == "1.4986225568e+12"  # 11 digits: the 1e4 place and two more
    assert format_resolving(math.log(20573.03), math.log(3000.0)) == "20,573.03"  # never fewer than five


def test_signed_differences_exist_past_float64() -> None:
    assert format_change(math.log(1500.5), math.log(1500.0)) == "+0.50"
    assert format_change(math.log(1000.0), math.log(1500.0)) == "−500.00"
    assert format_change(1.0, 1.0) == "±0"
    sign, log_gap = log_difference(2000.0, 1990.0)  # both overflow float64
    assert sign == 1 and log_gap == pytest.approx(2000.0, abs=1e-4)


def test_ratios_in_plain_words() -> None:
    assert times_in_words(math.log(7.3)) == "7.3 times"
    assert times_in_words(math.log(3.2e6)) == "3.2 million times"
    assert times_in_words(math.log(4.5e3)) == "4.5 thousand times"
    assert times_in_words(math.log(10.0) * 24.49) == "10^24.5 times"
    assert (
        comparison_sentence("Ours at p*", math.log(20573.03), "the Edelman-style proxy", math.log(6.8537e28))
        == "Ours at p* is 10^24.5 times smaller than the Edelman-style proxy."
    )
    assert comparison_sentence("A", 2.0, "B", 1.0).endswith("times larger than B.")
