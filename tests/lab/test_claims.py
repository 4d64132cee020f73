"""The locks of a lab directory (``specbound_lab.claims``): a run's claim is held by one writer at a time;
a second writer says once that it waits, and stops waiting when cancelled; the tables' lock likewise."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbound.io import DirectoryLock, DirectoryLocked
from specbound_lab import claims
from specbound_lab.claims import TABLES_LOCK, claim, claim_path, tables_lock
from specbound_lab.train import TrainingCancelled


def test_a_claim_is_a_lock_file_beside_the_runs(tmp_path: Path) -> None:
    assert claim_path(tmp_path, "lab-L1") == tmp_path / "runs" / ".lab-L1.lock"


def test_a_held_claim_makes_a_second_writer_wait_and_say_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "runs").mkdir()
    monkeypatch.setattr(claims, "CLAIM_POLL_SECONDS", 0.0)
    said: list[str] = []
    looks = iter([False, False, True])  # the other writer keeps it; the second gives up on its third look
    with (
        claim(tmp_path, "lab-L1", "[1/2] lab-L1", said.append, lambda: False),
        pytest.raises(TrainingCancelled, match="waiting for lab-L1 was cancelled"),
        claim(tmp_path, "lab-L1", "[1/2] lab-L1", said.append, lambda: next(looks)),
    ):
        pass
    assert said == ["[1/2] lab-L1: being trained by another writer of this directory; waiting for it"]
    with claim(tmp_path, "lab-L1", "[1/2] lab-L1", said.append, lambda: True):  # released: no wait
        pass
    assert len(said) == 1


def test_the_tables_lock_is_held_until_released(tmp_path: Path) -> None:
    held = tables_lock(tmp_path)
    other = DirectoryLock(tmp_path / TABLES_LOCK, "the tables")
    with pytest.raises(DirectoryLocked):
        other.acquire(wait=False)
    held.release()
    other.acquire(wait=False).release()
