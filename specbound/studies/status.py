"""What became of one item of a resumable batch: a model of ``specbound grid``, a run of ``lab sweep``.

Both drivers skip what an earlier invocation finished (its record is reused) and do the rest; the grid
also reports the models it could not analyse. One enum, so "done" and "skipped" mean the same in both.
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    DONE = "done"  # done in this invocation (analysed, or trained and analysed)
    SKIPPED = "skipped"  # finished by an earlier invocation: its record was reused
    MISSING = "missing"  # could not be done (a grid model that cannot be loaded)
