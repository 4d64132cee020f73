"""Where the commands write: a progress bar on stderr when it is a terminal, and a command's output in
one write to stdout (so an error while building it leaves stdout empty).

Example:
    >>> say("wrote 3 files")
    wrote 3 files
"""

from __future__ import annotations

import sys

from ..core.limits import LIMITS, MEGABYTE, format_megabytes
from ..core.progress import ProgressCallback, ProgressEvent, format_eta, silent
from ..core.text import echoed


class _TerminalProgress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal: bytes of each file
    while downloading, layers with the estimated time left while analysing."""

    def __call__(self, event: ProgressEvent) -> None:
        fraction = event.fraction
        bar = "" if fraction is None else "#" * int(30 * fraction) + "-" * (30 - int(30 * fraction))
        amount = (
            f"{event.done / MEGABYTE:.1f}/{format_megabytes(event.total or 0)}"
            if event.stage == "download"
            else f"{event.done:.0f}/{event.total or 0:.0f} {format_eta(event.eta_s)}"
        )
        sys.stderr.write(f"\r{event.stage:<9} [{bar}] {amount} {event.detail[:40]:<40}")
        if fraction is not None and fraction >= 1.0:
            sys.stderr.write("\n")
        sys.stderr.flush()


def progress() -> ProgressCallback:
    return _TerminalProgress() if sys.stderr.isatty() else silent


def write_stdout(text: str) -> None:
    """All of a command's output in one write, so an error while building it leaves stdout empty."""
    sys.stdout.write(text)
    sys.stdout.flush()


def say(line: str) -> None:
    """A report line that may echo input (a model name, an error about it): escaped, then printed."""
    write_stdout(echoed(line, 4 * LIMITS.max_echoed_chars) + "\n")
