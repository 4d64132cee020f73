"""``specbound lab study design | run | analyse``: the pre-registered study from the command line.

The design and the analysis are :mod:`specbound_lab.study`'s; this module parses, runs and prints.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .study import (
    ANSWER_FILE,
    DESIGN,
    ENVIRONMENTS,
    PILOT_REFERENCES,
    STUDY_CORPUS_DIR,
    StudyAnswer,
    environment_by_key,
    pilot_rows,
    power_projection,
    read_final_rows,
    study_answer,
)
from .tables import COUPLINGS_CSV
from .train import LabError, TrainingCancelled, fits_training_set


def add_study_command(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
    workers: Callable[[str], Any],
    minutes: Callable[[str], Any],
) -> None:
    """``study design | run | pilot | corpus | analyse`` under ``specbound lab``; ``workers`` and ``minutes``
    are the argparse types of ``--workers`` and ``--minutes``."""
    study = actions.add_parser(
        "study",
        help="the pre-registered study (docs/lab/preregistration.md): its design and power, its runs, its answer",
    )
    verbs = study.add_subparsers(dest="study_command", required=True)
    design = verbs.add_parser("design", help="print the design, its size and its power projected from the pilot")
    design.set_defaults(handler=_cmd_design)
    _add_training_verbs(verbs, workers, minutes)
    _add_reading_verbs(verbs)


def _add_training_verbs(
    verbs: argparse._SubParsersAction[argparse.ArgumentParser],
    workers: Callable[[str], Any],
    minutes: Callable[[str], Any],
) -> None:
    """``study run`` (the study's runs, resumable, within ``--minutes``) and ``study pilot`` (its corners)."""
    run = verbs.add_parser("run", help="train the study's runs (resumable), one lab directory per environment")
    run.add_argument("--out", required=True, help="the study's directory (a re-run skips the finished runs)")
    run.add_argument(
        "--environment",
        nargs="+",
        choices=[e.key for e in ENVIRONMENTS],
        default=None,
        help="only these environments (default: all three, in the pre-registration's order)",
    )
    run.add_argument(
        "--minutes",
        type=minutes,
        default=None,
        help="stop starting runs after this many minutes and rebuild the tables from the finished ones "
        "(to build the study across working sessions)",
    )
    run.add_argument("--workers", type=workers, default=1, metavar="N", help="train N runs at once (default 1)")
    run.add_argument("--dask", default=None, metavar="ADDRESS", help="train on a dask.distributed scheduler")
    run.set_defaults(handler=_cmd_run)

    pilot = verbs.add_parser(
        "pilot",
        help="train the design's corner runs (seed 0: the smallest and largest model at the smallest and largest "
        "learning rate, at each n) and say which fit and what they cost, before the study is registered",
    )
    pilot.add_argument("--out", required=True, help="the pilot's directory (resumable; not the study's)")
    pilot.add_argument(
        "--environment", nargs="+", choices=[e.key for e in ENVIRONMENTS], default=None, help="only these environments"
    )
    pilot.add_argument("--workers", type=workers, default=1, metavar="N", help="train N runs at once (default 1)")
    pilot.set_defaults(handler=_cmd_pilot)


def _add_reading_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``study corpus`` (a study directory shipped as lab references) and ``study analyse`` (its endpoints)."""
    corpus = verbs.add_parser(
        "corpus",
        help="ship a study directory as a corpus: one lab reference per environment (every run's record, "
        "runs.csv and the other tables, the depth x width family's atlas; no weights) and the answer as answer.json",
    )
    corpus.add_argument("dir", help="the study's directory (the one given to study run --out)")
    corpus.add_argument(
        "dest",
        nargs="?",
        default=str(STUDY_CORPUS_DIR),
        help="the corpus' directory, its environments' folders replaced (default: the one shipped with the lab)",
    )
    corpus.set_defaults(handler=_cmd_corpus)

    analyse = verbs.add_parser("analyse", help="the pre-registered endpoints of a study directory")
    analyse.add_argument("dir", help="the study's directory")
    analyse.add_argument("--json", action="store_true", help="print the endpoints as one JSON object")
    analyse.set_defaults(handler=_cmd_analyse, prints_result="lab study analyse")


def _cmd_design(args: argparse.Namespace) -> int:
    d = DESIGN
    fraction = " (a half fraction of the optimisation settings)" if d.half_fraction else ""
    print(
        f"{len(ENVIRONMENTS)} environments x {len(d.strata)} n strata x {d.configurations} configurations{fraction} "
        f"x {len(d.seeds)} seeds = {d.runs} runs ({d.runs_per_environment} per environment)"
    )
    for environment in ENVIRONMENTS:
        print(f"  {environment.key}: {environment.words}")
    print(
        f"  n {list(d.strata)}, L {list(d.layers)}, N {list(d.hidden)}, learning rate {list(d.learning_rates)}, "
        f"batch {list(d.batch_sizes)}, weight decay {list(d.weight_decays)}, seeds {list(d.seeds)}; until fit, "
        f"the fit checked every {d.settings.fit_every} steps, at most "
        + ", ".join(f"{e.max_steps} ({e.key})" for e in ENVIRONMENTS)
    )
    pilot = study_answer(pilot_rows(d))
    print(
        f"Pilot: {', '.join(PILOT_REFERENCES.values())} at n in {list(d.strata)} "
        f"({pilot.runs} fitted runs in {len(pilot.cells)} cells)"
    )
    print(f"{'endpoint':<38} {'pilot dtau':>10} {'pilot se':>9} {'projected se':>13} {'detectable':>11}")
    for row in power_projection(pilot, d):
        name = f"({row.comparator.hypothesis}) {row.comparator.words}"
        print(
            f"{name:<38} {row.pilot_delta_tau:>+10.3f} {row.pilot_standard_error:>9.4f} "
            f"{row.projected_standard_error:>13.4f} {row.detectable:>11.3f}"
        )
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from specbound.studies import Executor, Status

    from .cli import _progress, _report
    from .sweep import run_sweep

    started = time.perf_counter()
    deadline = math.inf if args.minutes is None else started + 60.0 * args.minutes
    environments = [environment_by_key(key) for key in args.environment or [e.key for e in ENVIRONMENTS]]
    executor = Executor(workers=args.workers, dask=args.dask)
    for environment in environments:
        out = Path(args.out) / environment.key
        print(f"{environment.key}: {len(DESIGN.specs(environment))} runs of {environment.words}; results in {out}")
    # seed by seed across the environments: a study stopped part-way holds whole seeds of every one
    for seed in DESIGN.seeds:
        for environment in environments:
            specs = DESIGN.specs(environment, seeds=[seed])
            out = Path(args.out) / environment.key
            print(f"{environment.key}, seed {seed}: {len(specs)} runs", flush=True)
            try:
                result = run_sweep(
                    specs,
                    out,
                    progress=_progress,
                    report=_report,
                    should_stop=lambda: time.perf_counter() > deadline,
                    executor=executor,
                )
            except TrainingCancelled:
                print(f"stopped after {args.minutes:g} minutes; the tables hold the finished runs", flush=True)
                return 0
            done = sum(o.status is Status.DONE for o in result.outcomes)
            print(f"{environment.key}, seed {seed}: {done} trained now, {len(specs) - done} already done", flush=True)
    print(f"study runs finished in {time.perf_counter() - started:.1f} s", flush=True)
    return 0


def _cmd_pilot(args: argparse.Namespace) -> int:
    from specbound.studies import Executor

    from .cli import _progress, _report
    from .sweep import run_sweep

    print(f"{'environment':<15} {'n':>4} {'L':>2} {'N':>4} {'lr':>8} {'batch':>5} {'wd':>5}  fitted  steps  seconds")
    for key in args.environment or [e.key for e in ENVIRONMENTS]:
        environment = environment_by_key(key)
        specs = DESIGN.corners(environment)
        result = run_sweep(
            specs, Path(args.out) / key, progress=_progress, report=_report, executor=Executor(workers=args.workers)
        )
        seconds = {o.name: o.seconds for o in result.outcomes}
        for run in result.results.runs:
            spec, final = run.spec, run.final
            fitted = fits_training_set(final.train_loss, final.train_error, spec.label_noise)
            s = spec.settings
            print(
                f"{key:<15} {spec.n_train:>4} {spec.layers:>2} {spec.hidden:>4} {s.learning_rate:>8.2g} "
                f"{s.batch_size:>5} {s.weight_decay:>5.2g}  {'yes' if fitted else 'NO':>6} {run.optimisation_steps:>6} "
                f"{seconds.get(run.name, 0.0):>8.1f}",
                flush=True,
            )
    return 0


def _cmd_analyse(args: argparse.Namespace) -> int:
    answer = study_answer(read_final_rows(args.dir), planned=DESIGN.runs)
    if args.json:
        print(json.dumps(answer_dict(answer), indent=1, allow_nan=False))
        return 0
    for sentence in answer.sentences():
        print(sentence)
    print()
    print(f"{'environment':<16} {'n':>5} {'runs':>5} {'fitted':>7} {'configs':>8}  tau_b (ours first)")
    for cell in answer.cells:
        taus = " ".join(f"{name} {value:+.3f}" for name, value in cell.taus.items())
        print(
            f"{cell.environment:<16} {cell.n_train:>5} {cell.runs:>5} {cell.fitted:>7} {cell.configurations:>8}  {taus}"
        )
    return 0


def _cmd_corpus(args: argparse.Namespace) -> int:
    from specbound.io import atomic_write

    from .reference import export_reference

    source, dest = Path(args.dir), Path(args.dest)
    frames = read_final_rows(source)  # LabError when no environment has runs yet
    for key in frames:
        regenerate = f"specbound lab study run --out STUDY --environment {key}"
        files = export_reference(source / key, dest / key, regenerate=regenerate, step_profiles=False)
        # the couplings table grows as the square of a cell's runs (tens of MB at the design's size) and
        # no endpoint reads it: the corpus leaves it out; write_tables rebuilds it from the records
        (dest / key / COUPLINGS_CSV).unlink(missing_ok=True)
        print(f"{key}: {len(files) - 1} files in {dest / key}", flush=True)
    answer = study_answer(read_final_rows(dest), planned=DESIGN.runs)
    with atomic_write(dest / ANSWER_FILE) as f:
        f.write(json.dumps(answer_dict(answer), indent=1, allow_nan=False).encode("utf-8"))
    print(f"the answer, {'interim' if answer.interim else 'complete'}: {dest / ANSWER_FILE}")
    return 0


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def answer_dict(answer: StudyAnswer) -> dict[str, Any]:
    """The answer as JSON-ready data: the endpoints (NaN as null), the cells, the sentences."""
    if not answer.cells and not answer.not_fitted:
        raise LabError("the study has no finished run yet")
    return {
        "draws": answer.draws,
        "interim": answer.interim,
        "runs_trained": answer.trained,
        "runs_planned": answer.planned,
        "sentences": list(answer.sentences()),
        "not_fitted": list(answer.not_fitted),
        "endpoints": [
            {
                "hypothesis": e.comparator.hypothesis,
                "comparator": e.comparator.measure,
                "delta_tau": _number(e.delta_tau),
                "ci_low": _number(e.interval.low),
                "ci_high": _number(e.interval.high),
                "standard_error": _number(e.standard_error),
                "p_value": _number(e.p_value),
                "p_holm": _number(e.adjusted_p),
                "rejected": e.rejected,
                "detectable": _number(e.detectable),
            }
            for e in answer.endpoints
        ],
        "cells": [
            {
                "environment": c.environment,
                "n_train": c.n_train,
                "runs": c.runs,
                "fitted": c.fitted,
                "configurations": c.configurations,
                "tau_b": {name: _number(value) for name, value in c.taus.items()},
            }
            for c in answer.cells
        ],
    }
