"""A lab directory's run records: where they live, writing one, reading them back.

Layout of a lab directory ``DIR`` (the file names and columns are an interface)::

    runs/<run>/checkpoints/step-XXXXXX/   save_pretrained checkpoints (config.json, model.safetensors)
    runs/<run>/trajectory.json            the run's record: spec, errors and terms at every saved step;
                                          written atomically last, it marks the run as finished
    runs.csv                              one row per run and saved step (see
                                          :data:`specbound_lab.tables.RUN_COLUMNS`)
    correlations.csv                      one block per environment (task, family), one row per measure:
                                          Kendall tau and granulated tau with the gap, 95 % bootstrap intervals
    robust.csv                            one row per measure: its sign-error in each environment, the
                                          mean, the worst and where (:mod:`specbound_lab.robust`)

A record is validated when it is read: one that does not hold a complete, finite trajectory is not a
finished run. A record that predates a measure still loads (that measure is missing), but it is not
finished for :func:`finished_run`, so a sweep trains the run again and fills the measure in.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from specbound.core import LIMITS
from specbound.io import atomic_write, read_json

from .registry import recorded_measures
from .train import Family, LabError, RunSpec, family_of
from .trajectory import RunTrajectory

RUNS_DIR = "runs"
RECORD_FILE = "trajectory.json"
RECORD_FORMAT = "specbound-lab-run"
#: Bump when the record changes incompatibly: older records are then retrained, not trusted. A record
#: of the same schema that predates a measure still loads (that measure is missing) and lists the
#: measures it holds under "measures"; a sweep retrains it so the new measure is filled in.
RECORD_SCHEMA = 1
#: A label that travels with every record and reference file.
LAB_LABEL = f"small {Family.BERT.words} trained by the specbound lab (not a BERT Miniature)"


def lab_label(family: Family | str) -> str:
    """The label of a lab model of ``family`` (a Family or its name): :data:`LAB_LABEL` for bert.

    >>> lab_label(Family.GPT2) == lab_label("gpt2")
    True
    >>> lab_label("llama")
    'small Llama decoder trained by the specbound lab (not a released model)'
    """
    member = family_of(family)
    if member is Family.BERT:
        return LAB_LABEL
    return f"small {member.words} trained by the specbound lab (not a released model)"


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all."""
    with atomic_write(path) as f:
        f.write(text.encode("utf-8"))


def record_path(out: Path, name: str) -> Path:
    return out / RUNS_DIR / name / RECORD_FILE


def write_record(out: Path, trajectory: RunTrajectory, measures: Collection[str] | None = None) -> Path:
    """Write a run's record; ``measures`` names the recorded measures it holds (default: every one, as
    a run trained now has them; a record rewritten in place keeps the ones it had)."""
    path = record_path(out, trajectory.name)
    held = [m.name for m in recorded_measures() if measures is None or m.name in measures]
    record = {
        "format": RECORD_FORMAT,
        "schema": RECORD_SCHEMA,
        "label": lab_label(trajectory.spec.family),
        "task": trajectory.spec.task.describe(),
        "measures": held,  # what the record holds; RUN and DERIVED are computed
        **trajectory.to_dict(),
    }
    write_text(path, json.dumps(record, indent=1, allow_nan=False))
    return path


def read_record(path: Path) -> RunTrajectory | None:
    """A finished run's record, or None if it is missing, unreadable, foreign or of another schema."""
    try:
        data = read_json(path, path.name, LIMITS.max_record_bytes)  # a regular file of bounded size
        if data.get("format") != RECORD_FORMAT or data.get("schema") != RECORD_SCHEMA:
            return None
        trajectory = RunTrajectory.from_dict(data)
        return trajectory if trajectory.name == data["name"] and trajectory.steps else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError, LabError):
        return None


def record_measures(path: Path) -> tuple[str, ...]:
    """The measures a record says it holds (none for a record written before the list existed)."""
    try:
        names = json.loads(path.read_text(encoding="utf-8")).get("measures", [])
    except (OSError, ValueError, AttributeError):
        return ()
    return tuple(str(n) for n in names) if isinstance(names, list) else ()


def finished_run(out: Path, spec: RunSpec) -> RunTrajectory | None:
    """The record of ``spec`` in ``out`` if that exact run has finished there with every recorded
    measure (a record that predates a CHECKPOINT or MODEL measure is done again, so the measure is filled
    in; a RUN or DERIVED measure is computed from the record whenever it is read)."""
    path = record_path(out, spec.name)
    trajectory = read_record(path)
    if trajectory is None or trajectory.spec.to_dict() != spec.to_dict():
        return None
    recorded = {m.name for m in recorded_measures()}
    return trajectory if recorded <= set(record_measures(path)) else None


def _order(run: RunTrajectory) -> tuple[Any, ...]:
    """Runs in grid order: by environment (threshold/bert first), the axes (numerically), then the rest."""
    s = run.spec
    return (
        not s.default_environment,
        s.task.kind,
        s.family,
        s.layers,
        s.hidden,
        s.heads,
        s.n_train,
        s.label_noise,
        s.seed,
        json.dumps(s.to_dict(), sort_keys=True),
    )


def read_runs(out: Path | str) -> tuple[RunTrajectory, ...]:
    """Every finished run in a lab directory, in grid order (see :func:`_order`).

    A run's record lives in the folder of its name (:func:`record_path`); a run found in two folders
    (a run folder copied inside ``runs/``) is refused in one line naming the folder that is not its
    own, the copy, rather than later as two rows of runs.csv that nothing tells apart."""
    found: dict[str, list[tuple[Path, RunTrajectory]]] = {}
    for path in sorted((Path(out) / RUNS_DIR).glob(f"*/{RECORD_FILE}")):
        run = read_record(path)
        if run is not None:
            found.setdefault(run.name, []).append((path.parent, run))
    for name, places in found.items():
        if len(places) > 1:
            copies = [folder.name for folder, _ in places if folder.name != name] or [places[-1][0].name]
            raise LabError(
                f"the run {name} is recorded twice: {RUNS_DIR}/{copies[0]} holds a copy of its record "
                f"(its own folder is {RUNS_DIR}/{name}); remove the copied folder or move it to another lab directory"
            )
    return tuple(sorted((places[0][1] for places in found.values()), key=_order))
