"""Text from a user or a file, made safe to show: escaped, on one line, and shortened.

Every message that quotes a model name, a config value or an option echoes it through
:func:`quoted` or :func:`echoed`, so a terminal sequence, a bidirectional override or a
5,000-character value never reaches a terminal or a page as it was given. How much is shown is a
limit of :data:`specbound.core.limits.LIMITS` (``max_quoted_chars``, ``max_echoed_chars``).
"""

from __future__ import annotations

import re

from .limits import LIMITS


def printable(text: str) -> str:
    """``text`` with every character a terminal could act on shown escaped, as Python writes it.

    Control characters (ESC and BEL, which start terminal sequences; C1 controls such as CSI U+009B;
    line breaks), Unicode format characters (bidirectional overrides that reorder what is shown,
    zero-width characters) and separators other than the space become ``\\x1b``, ``\\u202e``, ...
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shortened(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with "..." marking the cut."""
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def echoed(text: str, limit: int | None = None) -> str:
    """A line that echoes user input (a usage error, a report line): escaped (:func:`printable`), with
    every run of more than ``limit`` non-space characters shortened and the whole line at most four
    times that, so a 5,000-character option value or a raw terminal sequence never reaches the
    terminal as it was typed."""
    limit = limit or LIMITS.max_echoed_chars
    escaped = printable(" ".join(text.split()))
    short = re.sub(rf"\S{{{limit + 1},}}", lambda match: shortened(match.group(0), limit), escaped)
    return shortened(short, 4 * limit)


def quoted(value: object, limit: int | None = None) -> str:
    """Text from a user or a file, on one line, escaped (:func:`printable`) and shortened, for a message."""
    limit = limit or LIMITS.max_quoted_chars
    return shortened(printable(" ".join(str(value).split())), limit)


def described(value: object) -> str:
    """A value from a file or a call, for a message, written so that its type shows: a string as
    ``the string '0.25'`` (in JSON ``"0.25"`` is text, not the number it spells), JSON's literals as
    JSON writes them (``true``, ``false``, ``null``), anything else as :func:`quoted`."""
    if isinstance(value, str):
        return f"the string '{quoted(value)}'"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return quoted(value)
