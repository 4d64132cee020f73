"""The locks of a lab directory shared by several writers (two ``lab sweep`` commands, the dashboard's jobs).

A run is claimed before it is touched (an advisory lock ``runs/.<run>.lock``, released by the process's
end whatever its cause), so a second writer never deletes a run that another is training; it waits for
that run and then reuses its record. The tables are rebuilt under a lock of their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from specbound.io import DirectoryLock, DirectoryLocked

from .records import RUNS_DIR
from .train import TrainingCancelled

#: Lock of the tables of a lab directory, and the name of a run's claim inside ``runs/``.
TABLES_LOCK = ".tables.lock"
#: How often a writer that waits for a run claimed by another looks again (seconds).
CLAIM_POLL_SECONDS = 0.5


def claim_path(out: Path, name: str) -> Path:
    """The lock file by which a writer claims the run ``name`` of a lab directory."""
    return out / RUNS_DIR / f".{name}.lock"


@contextmanager
def claim(
    out: Path, name: str, prefix: str, report: Callable[[str], None], should_stop: Callable[[], bool]
) -> Iterator[None]:
    """Hold the run's claim for the block, waiting (cancellably) while another writer holds it."""
    lock = DirectoryLock(claim_path(out, name), f"run {name}")
    waiting = False
    while True:
        try:
            lock.acquire(wait=False)
            break
        except DirectoryLocked:
            if not waiting:
                report(f"{prefix}: being trained by another writer of this directory; waiting for it")
                waiting = True
            if should_stop():
                raise TrainingCancelled(f"waiting for {name} was cancelled") from None
            time.sleep(CLAIM_POLL_SECONDS)
    try:
        yield
    finally:
        lock.release()


def tables_lock(out: Path) -> DirectoryLock:
    return DirectoryLock(out / TABLES_LOCK, f"the tables of {out.name}").acquire(wait=True)
