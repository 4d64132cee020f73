"""``specbound lab show DIR --runs`` on a Markov run at the lab's vocabulary limit.

Run with ``python benchmarks/bench_lab_show.py [--steps 200]``. One GPT-2 run of the Markov task with
1,024 states (the vocabulary limit) is trained with a checkpoint at every step (a tiny model: 1 layer,
width 16), so that its record holds ``--steps + 1`` saved steps; then ``lab show DIR --runs`` is timed
as the CLI runs it. Every row of the table carries the chain's entropy rate, whose stationary law is a
1,025 x 1,024 least-squares solve: the baseline recomputes it for every row, as specbound did before
the chain's law was cached, on the first rows only (it costs about a second a row) and is extrapolated
to the whole table; the ratio is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

STATES = 1024
BASELINE_ROWS = 6


def build(directory: Path, steps: int) -> None:
    """The run, trained through the lab's own sweep (the CLI's ``lab train`` has no ``--states``: a
    1,024-state chain is what a record may declare, and a researcher's script may train)."""
    from specbound_lab.sweep import run_sweep
    from specbound_lab.tasks import MarkovTask
    from specbound_lab.train import Family, RunSpec, TrainSettings

    settings = TrainSettings(steps=steps, save_every=1, batch_size=8, test_samples=8)
    spec = RunSpec(1, 16, 2, 8, task=MarkovTask(states=STATES), settings=settings, family=Family.GPT2)
    run_sweep([spec], directory, use_cache=False)


def show_seconds(directory: Path) -> float:
    from specbound.cli import main
    from specbound_lab import tasks

    tasks.chain_law.cache_clear()  # as a new process starts: the chain's law is computed once, in the timing
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["lab", "show", str(directory), "--runs"]) == 0
    return time.perf_counter() - start


def uncached_row_seconds(rows: int) -> float:
    """Seconds per row of the old path: the chain drawn and its law solved for every row, twice (the
    ``optimal_loss`` and ``excess_loss`` columns each asked for the entropy rate)."""
    from specbound_lab import tasks

    draw = tasks.chain_law.__wrapped__
    start = time.perf_counter()
    for _ in range(rows):
        for _column in range(2):
            draw(STATES, tasks.MarkovTask().support, 0)
    return (time.perf_counter() - start) / rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps, each saved (default 200)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "markov-1024"
        start = time.perf_counter()
        build(directory, args.steps)
        print(f"trained and analysed one {STATES}-state Markov run, {args.steps + 1} saved steps, "
              f"in {time.perf_counter() - start:.1f} s")  # fmt: skip
        rows = args.steps + 1
        cached = show_seconds(directory)
        per_row = uncached_row_seconds(BASELINE_ROWS)
    baseline = per_row * rows
    print(f"lab show --runs: {cached:.2f} s now (the chain's law computed once)")
    print(f"before: {per_row:.2f} s a row x {rows} rows = {baseline:.0f} s (measured on {BASELINE_ROWS} rows)")
    print(f"speed-up: {baseline / cached:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
