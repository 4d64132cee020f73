"""Runs per core-hour of the lab's ``fit`` preset: where a run's time goes, before and after.

Run with ``python benchmarks/bench_lab_throughput.py [--runs 6] [--family bert]``. A run of the ``fit``
preset trains until it fits its training set (SPEC §13b), then its flatness and sharpness are searched
with Jiang et al.'s budget and its saved checkpoints are analysed. The same runs (spread over the
preset's configurations) are trained twice, single-threaded, in this process:

* **before**: the way the first fit sweeps ran: the fit checked only at a saved step, so every 100
  steps a checkpoint is written, the test set measured and the checkpoint analysed; every noise draw
  and ascent step of the flatness searches run to the end;
* **after**: the preset as it is: the fit checked on the training set alone every 100 steps, a
  checkpoint (with its test error and analysis) every 500 steps and at the fit, and searches that
  stop a probe as soon as its answer is known.

Both end every run at the same step with the same weights, errors and measures (checked: the final
rows are compared, bit for bit). The seconds of each phase (training with its measurements, the
flatness searches, the analysis) and the runs per core-hour are printed, with the ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from unittest import mock


@dataclass(frozen=True)
class Phases:
    training: float  # training steps, fit checks, checkpoints and their error measurements
    searches: float  # the flatness and sharpness searches
    analysis: float  # the spectral analysis of every saved checkpoint

    @property
    def total(self) -> float:
        return self.training + self.searches + self.analysis


def run_once(spec, directory: Path, *, before: bool) -> tuple[Phases, tuple]:
    """Train and analyse one run; the phases' seconds and the final values that must agree."""
    from specbound_lab import registry
    from specbound_lab.flatness import FlatnessSettings, pacbayes_sigma, sharpness_alpha
    from specbound_lab.train import train_run
    from specbound_lab.trajectory import analyse_run

    with ExitStack() as stack:
        if before:
            full = FlatnessSettings(early_stop=False)
            stack.enter_context(mock.patch.object(registry, "pacbayes_sigma", partial(pacbayes_sigma, settings=full)))
            stack.enter_context(mock.patch.object(registry, "sharpness_alpha", partial(sharpness_alpha, settings=full)))
        result = train_run(spec, directory)
    trajectory = analyse_run(result, directory, use_cache=False)
    final = trajectory.final
    measures = tuple(sorted(result.model_values.items()))
    values = (final.step, final.train_loss, final.test_error, final.ours_log10, measures)
    return Phases(result.seconds, result.model_seconds, trajectory.analysis_seconds), values


def main() -> int:
    from specbound_lab.grid import preset_grid

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=6, help="runs of the preset to time (spread over it)")
    parser.add_argument("--family", default="bert", help="the preset's family (bert, gpt2, llama, neox)")
    args = parser.parse_args()

    grid = preset_grid("fit", family=args.family)
    configurations = grid.specs()[:: len(grid.seeds)]  # the first seed of each configuration
    # a stride one short of an even split, so that the runs differ in n as well as in depth and width
    chosen = configurations[:: max(1, len(configurations) // args.runs - 1)][: args.runs]
    totals = {"before": [], "after": []}
    for spec in chosen:
        old = replace(spec, settings=replace(spec.settings, save_every=100, fit_every=0))
        with tempfile.TemporaryDirectory() as tmp:
            then, then_values = run_once(old, Path(tmp) / "before", before=True)
            now, now_values = run_once(spec, Path(tmp) / "after", before=False)
        if then_values != now_values:
            print(f"{spec.name}: the two routes disagree: {then_values} != {now_values}", file=sys.stderr)
            return 1
        totals["before"].append(then)
        totals["after"].append(now)
        print(
            f"{spec.name}: fitted at step {now_values[0]}; before {then.total:.1f} s "
            f"(training {then.training:.1f}, searches {then.searches:.1f}, analysis {then.analysis:.1f}), "
            f"after {now.total:.1f} s (training {now.training:.1f}, searches {now.searches:.1f}, "
            f"analysis {now.analysis:.1f})",
            flush=True,
        )
    rates = {}
    for route, phases in totals.items():
        seconds = sum(p.total for p in phases)
        rates[route] = 3600.0 * len(phases) / seconds
        phase_names = ("training", "searches", "analysis")
        shares = {name: sum(getattr(p, name) for p in phases) / seconds for name in phase_names}
        parts = ", ".join(f"{name} {share:.0%}" for name, share in shares.items())
        print(f"{route}: {seconds:.1f} s for {len(phases)} runs = {rates[route]:.0f} runs per core-hour ({parts})")
    print(f"speed-up: {rates['after'] / rates['before']:.2f}x (identical final values in every run)")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"benchmark wall time {time.perf_counter() - started:.0f} s")
    raise SystemExit(code)
