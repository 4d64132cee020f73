"""Text made safe to show (``specbound.core.text``): what a terminal could act on is escaped, a long
value is shortened with "...", lines are joined, and a value's type shows in a message."""

from __future__ import annotations

import pytest

from specbound.core.limits import LIMITS
from specbound.core.text import described, echoed, printable, quoted, shortened


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),  # a terminal colour sequence
        ("bell\x07", "bell\\x07"),
        ("\u202eevil.exe", "\\u202eevil.exe"),  # a right-to-left override that reorders what is shown
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("csi\x9b", "csi\\x9b"),  # a C1 control
        ("plain text, ünïcode · ok", "plain text, ünïcode · ok"),
    ],
)
def test_what_a_terminal_could_act_on_is_escaped(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_a_long_value_is_cut_with_a_mark() -> None:
    assert shortened("abcdefghij", 10) == "abcdefghij"
    assert shortened("abcdefghijk", 10) == "abcdefg..."
    assert len(shortened("x" * 5000, 10)) == 10


def test_quoted_joins_lines_escapes_and_shortens() -> None:
    assert quoted("two\nlines\t here") == "two lines here"
    assert quoted("x" * 5000) == "x" * (LIMITS.max_quoted_chars - 3) + "..."
    assert quoted(12.5) == "12.5"


def test_echoed_shortens_each_long_run_and_the_whole_line() -> None:
    limit = 10
    line = echoed("--model " + "y" * 50 + " --p 1", limit)
    assert line == "--model yyyyyyy... --p 1"  # only the run longer than the limit is cut
    assert len(echoed(" ".join(["z" * 10] * 100), limit)) == 4 * limit


@pytest.mark.parametrize(
    ("value", "words"),
    [("0.25", "the string '0.25'"), (True, "true"), (False, "false"), (None, "null"), (0.25, "0.25"), ([1], "[1]")],
)
def test_a_value_is_described_so_that_its_type_shows(value: object, words: str) -> None:
    assert described(value) == words
