"""Progress reporting through a callback, so the core never prints: the CLI passes a terminal bar,
the dashboard passes ``st.progress``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    """``done`` out of ``total`` units (bytes while downloading, layers while analysing).

    ``eta_s``: the seconds the analysis expects to need for the layers left (the mean time of the
    layers computed so far times the number left; None before the first).
    """

    stage: str  # "download" or "analyse"
    done: float
    total: float | None
    detail: str = ""
    eta_s: float | None = None

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, max(0.0, self.done / self.total))


ProgressCallback = Callable[[ProgressEvent], None]


def silent(_: ProgressEvent) -> None:
    """The default callback: report nothing."""


def format_eta(seconds: float | None) -> str:
    """'ETA 1 h 05 min', 'ETA 3 min 20 s', 'ETA 12 s', or '' when unknown: for a progress bar's text."""
    if seconds is None or not seconds >= 0 or seconds > 1e7:
        return ""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"ETA {hours} h {minutes:02d} min"
    if minutes:
        return f"ETA {minutes} min {secs:02d} s"
    return f"ETA {secs} s"
