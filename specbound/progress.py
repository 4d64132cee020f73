"""Progress reporting through a callback, so the core never prints: the CLI passes a terminal bar,
the dashboard passes ``st.progress``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    """``done`` out of ``total`` units (bytes while downloading, layers while analysing)."""

    stage: str  # "download" or "analyse"
    done: float
    total: float | None
    detail: str = ""

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, max(0.0, self.done / self.total))


ProgressCallback = Callable[[ProgressEvent], None]


def silent(_: ProgressEvent) -> None:
    """The default callback: report nothing."""
