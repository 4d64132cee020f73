"""The value checks every reader and setting shares (``specbound.core.values``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from specbound.core.values import check_number, is_genuine_int, is_real_number


def test_a_file_s_number_is_never_a_bool_or_a_string() -> None:
    assert is_genuine_int(np.int64(3)) and not is_genuine_int(True) and not is_genuine_int(3.0)
    assert is_real_number(np.float32(1.5)) and not is_real_number("1.5") and not is_real_number(None)
    assert is_real_number(math.inf) and not is_real_number(math.inf, finite=True)


@pytest.mark.parametrize(
    ("value", "options", "message"),
    [
        (13, {"low": 1, "high": 12, "integer": True}, "x must be an integer in [1, 12], got 13"),
        (0, {"low": 1, "high": 12, "integer": True}, "x must be an integer in [1, 12], got 0"),
        (2.0, {"low": 1, "high": 12, "integer": True}, "x must be an integer in [1, 12], got 2.0"),
        (True, {"low": 0, "integer": True}, "x must be an integer >= 0, got True"),
        (0.5, {"low": 0, "high": 0.5, "open_high": True}, "x must be a number in [0, 0.5), got 0.5"),
        (0.0, {"low": 0, "high": 1, "open_low": True}, "x must be a number in (0, 1], got 0.0"),
        (math.nan, {"low": 0, "high": 2}, "x must be a number in [0, 2], got nan"),
        (math.inf, {}, "x must be a finite number, got inf"),
        ("3", {"high": 5}, "x must be a number <= 5, got '3'"),
        (2**31, {"low": 0, "high": 2**31 - 1, "integer": True}, "x must be an integer in [0, 2147483647], got"),
        (2e-10, {"low": 1e-9, "high": 1.0}, "x must be a number in [1e-09, 1], got 2e-10"),
    ],
)
def test_a_number_outside_its_interval_is_refused_in_one_line(
    value: object, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as refused:
        check_number(value, "x", **options)
    assert str(refused.value).startswith(message)


def test_the_ends_belong_to_a_closed_interval_and_numpy_numbers_are_numbers() -> None:
    check_number(1, "x", 1, 12, integer=True)
    check_number(np.int32(12), "x", 1, 12, integer=True)
    check_number(np.float64(0.5), "x", 0, 0.5)
    check_number(-7.25, "x")


def test_the_caller_chooses_the_error() -> None:
    class Refused(Exception):
        pass

    with pytest.raises(Refused, match="steps"):
        check_number(-1, "steps", 1, integer=True, error=Refused)


def test_an_int_is_a_real_number_when_it_converts_to_a_float() -> None:
    """JSON's integers have no size: one beyond 2^63 (numpy has no dtype for it) is a number when it
    fits a float, and one beyond float64's range is not, each answered without an exception."""
    assert is_real_number(10**20, finite=True) and is_real_number(2**64) and is_real_number(-(10**300), finite=True)
    assert not is_real_number(10**400) and not is_real_number(-(10**400), finite=True)
    with pytest.raises(ValueError, match=r"^x must be a number in \[0, 1\], got 1000"):
        check_number(10**400, "x", 0, 1)
    with pytest.raises(ValueError, match=r"^x must be an integer in \[1, 12\], got 1000"):
        check_number(10**400, "x", 1, 12, integer=True)
    check_number(10**20, "x", 0)
