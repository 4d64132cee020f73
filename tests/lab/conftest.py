"""Lab fixtures: the smoke sweep, run once per test run through the command line."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest
from run_once import copied_once

from specbound.cli import main

#: What the sweep printed, kept beside its folder for the workers that did not train it.
PRINTED = "printed.txt"


@dataclass(frozen=True)
class SmokeSweep:
    out: Path
    stdout: str


def _train_smoke_sweep(folder: Path) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["lab", "sweep", "--preset", "smoke", "--out", str(folder / "smoke")])
    assert status == 0
    (folder / PRINTED).write_text(printed.getvalue(), encoding="utf-8")


@pytest.fixture(scope="session")
def smoke_sweep(tmp_path_factory: pytest.TempPathFactory) -> SmokeSweep:
    """``specbound lab sweep --preset smoke`` into a fresh directory (about 15 s on 2 cores), trained once
    per test run (:mod:`run_once`: on two xdist workers, not once per worker); each session gets its own
    copy, since tests sweep into it again."""
    own = copied_once(tmp_path_factory, "lab-smoke", _train_smoke_sweep)
    return SmokeSweep(own / "smoke", (own / PRINTED).read_text(encoding="utf-8"))
