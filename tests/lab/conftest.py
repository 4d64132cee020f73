"""Lab fixtures: the smoke sweep, run once per session through the command line."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from specbound.cli import main


@dataclass(frozen=True)
class SmokeSweep:
    out: Path
    stdout: str


@pytest.fixture(scope="session")
def smoke_sweep(tmp_path_factory: pytest.TempPathFactory) -> SmokeSweep:
    """``specbound lab sweep --preset smoke`` into a fresh directory (about 15 s on 2 cores)."""
    out = tmp_path_factory.mktemp("lab") / "smoke"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["lab", "sweep", "--preset", "smoke", "--out", str(out)])
    assert status == 0
    return SmokeSweep(out, printed.getvalue())
