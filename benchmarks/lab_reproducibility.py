"""How far a shipped lab run lands when it is re-trained with its floating-point sums in another order.

Run with ``python benchmarks/lab_reproducibility.py [--reference fit] [--threads 2] [--seed 1]``.

A lab run repeats bit for bit on one machine with one torch thread (how the lab trains). Another thread
count, like another CPU's kernels, adds the same floats in another order, and training takes another
path from the first optimiser steps on. This script re-trains one seed of every configuration of a
shipped reference (default: the ``fit`` reference's seed 1 at the larger learning rate, 12 runs) with
``--threads`` torch threads and prints, per quantity, the largest difference from the shipped final step
(:func:`specbound_lab.reference.retrain_deviations`: log-axis measures as |Δ log10|) beside the
tolerance :data:`specbound_lab.reference.RETRAIN_TOLERANCE` allows. It then swaps the re-trained runs
into the reference and prints how far each measure's τ and granulated τ move, against the width of
its 95 % interval: a difference smaller than that is not one a verdict can see.

It is a measurement, not a test: it prints numbers and exits 0. The manual's reproducibility section
(docs/lab/verdict-text.md) quotes its output.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default="fit", help="key of a shipped sweep reference (default: fit)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the re-trained runs")
    parser.add_argument("--seed", type=int, default=1, help="the seed re-trained in every configuration")
    parser.add_argument(
        "--learning-rate", type=float, default=None, help="only runs at this rate (default: the largest)"
    )
    parser.add_argument("--out", type=Path, default=None, help="keep the re-trained runs here")
    args = parser.parse_args(argv)

    from specbound_lab import reference
    from specbound_lab.sweep import run_sweep
    from specbound_lab.tables import LabResults

    shipped_ref = next((s for s in reference.SHIPPED if s.key == args.reference), None)
    if shipped_ref is None:
        parser.error(f"no shipped reference {args.reference!r} (known: {', '.join(s.key for s in reference.SHIPPED)})")
    shipped = reference.load_reference(shipped_ref.directory)
    rates = sorted({r.spec.settings.learning_rate for r in shipped.runs})
    rate = args.learning_rate if args.learning_rate is not None else rates[-1]
    chosen = [r for r in shipped.runs if r.spec.seed == args.seed and r.spec.settings.learning_rate == rate]
    if not chosen:
        parser.error(f"no run of seed {args.seed} at learning rate {rate:g} in {args.reference}")
    specs = [replace(r.spec, settings=replace(r.spec.settings, threads=args.threads)) for r in chosen]
    print(f"re-training {len(specs)} runs of {args.reference} (seed {args.seed}, rate {rate:g}), {args.threads} thr.")

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        start = time.perf_counter()
        retrained = run_sweep(specs, out, report=lambda line: print("  " + line, flush=True)).results
        seconds = time.perf_counter() - start
    print(f"{seconds:.0f} s")

    differences: dict[str, list[float]] = {}
    worst: dict[str, tuple[float, str]] = {}
    print("\nfinal step of each run, shipped -> re-trained")
    for original in chosen:
        run = retrained.run(original.name)
        print(f"  {original.name}: {original.final.step} -> {run.final.step}")
        for quantity, difference in reference.retrain_deviations(run, original).items():
            differences.setdefault(quantity, []).append(difference)
            if difference >= worst.get(quantity, (-1.0, ""))[0]:
                worst[quantity] = (difference, original.name)
    print("\nfinal-step differences per quantity (log-axis measures: |Δ log10|)")
    print(f"{'quantity':<26}{'median':>10}{'largest':>10}{'tolerance':>11}  run of the largest")
    for quantity, (difference, name) in sorted(worst.items()):
        tolerance = reference.RETRAIN_TOLERANCE.get(quantity, float("nan"))
        flag = "" if difference <= tolerance else "  OVER"
        median = statistics.median(differences[quantity])
        print(f"{quantity:<26}{median:>10.4g}{difference:>10.4g}{tolerance:>11.4g}  {name}{flag}")

    swapped = tuple(retrained.run(r.name) if r in chosen else r for r in shipped.runs)
    (before,) = LabResults(shipped.runs).verdicts
    (after,) = LabResults(swapped).verdicts
    moved = {m.measure: m for m in after.measures}
    print(f"\nthe verdict with the re-trained runs swapped in (fitted: {before.fitted_runs} -> {after.fitted_runs})")
    print(f"{'measure':<24}{'Δ τ':>8}{'τ CI width':>12}{'Δ granulated':>14}{'gran. CI width':>16}")
    for b in before.measures:
        a = moved[b.measure]
        width = b.kendall_tau_ci.high - b.kendall_tau_ci.low
        gran_width = b.granulated_tau_ci.high - b.granulated_tau_ci.low
        print(
            f"{b.measure:<24}{abs(a.kendall_tau - b.kendall_tau):>8.3f}{width:>12.3f}"
            f"{abs(a.granulated_tau - b.granulated_tau):>14.3f}{gran_width:>16.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
