"""Trajectories of real training runs: the bound's proxies at every saved step of a run.

A run is given as a transformers ``Trainer`` output directory (its ``checkpoint-*`` folders; the step
from each folder's ``trainer_state.json``, else from its name), as a Hub repository and its revisions
(Pythia's ``step0`` ... ``step143000``: ``--revisions pythia``), or as a list of checkpoint
directories. Each step is one task (:mod:`specbound.studies.parallel`); the driver writes, in ``DIR``:

    steps/step-<N>.json    the step's record, written once the step is analysed: its step, source and
                           settings, the SHA-256 of its profile file, and its row (a re-run skips it)
    steps/step-<N>.npz     its spectral profile (a one-model atlas)
    trajectory.csv         one row per step: every proxy, log10 α per layer, p* statistics, and the
                           ``loss`` / ``eval_loss`` that trainer_state.json logged at that step
    trajectory.npz         an atlas of every step's profile, members ``NAME@STEP``

A re-run trusts no step file: a step counts as done only when its record names this step, source and
settings, the content fingerprints of the step's weights and of the reference's as they are now (the
profile cache's, :func:`specbound.io.loading.content_revision`: weights replaced by others of the same
sizes are a new step), its profile file has the digest the record gives and passes the atlas's checks
under the name ``NAME@STEP``; its row is then computed again from that profile (no SVD), so an edited
row is never taken. Anything else is analysed again. A reference is checked once, before any step:
readable, and of the run's family and dimensions (one line otherwise). When the steps together are
above what an atlas may hold, ``trajectory.npz`` is not written (a line says so) and the steps' own
files remain.

This is an edge module (it reads and writes files); the numbers come from :mod:`specbound.api.analysis`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import SpecboundError
from ..core.limits import LIMITS
from ..core.profile import SpectralProfile
from ..core.text import quoted
from ..core.values import is_genuine_int, is_real_number
from ..io.files import (
    describe_os_error,
    file_sha256,
    lock_output,
    output_dir,
    read_json,
    remove_stale_temps,
    write_text_atomic,
)
from ..io.models import PYTHIA_REVISIONS, REVISION_SEP
from ..io.options import ComputeOptions
from ..studies.parallel import Executor
from ..studies.resumable import run_resumable
from ..studies.trajectory import StepTerms
from .analysis import Analysis

#: Bump when a step's record changes: older records are then analysed again, not trusted.
#: 2: the record carries its step and the SHA-256 of its profile file.
#: 3: and the content fingerprints of the step's weights and of the reference's (``fingerprints``).
ROW_SCHEMA = 3
STEPS_DIR = "steps"
TABLE_FILE, ATLAS_FILE = "trajectory.csv", "trajectory.npz"
#: The Trainer's name for its checkpoint folders, and for the state it saves in each.
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
TRAINER_STATE = "trainer_state.json"


@dataclass(frozen=True)
class SavedStep:
    """One saved step of a run: where its weights are (a directory or ``owner/name@REVISION``)."""

    step: int
    source: str
    logged: dict[str, float] = field(default_factory=dict)  # loss, eval_loss logged at this step


@dataclass(frozen=True)
class RunSettings:
    name: str
    l_phi: float | None = None
    grid_m: int | None = None
    use_cache: bool = True
    #: load_profile's backend, layer-worker and download-cap options (:func:`specbound.io.loading.load_profile`)
    compute: ComputeOptions = field(default_factory=ComputeOptions)
    #: the weights W⁰ each step is also read against (SPEC §14): a model name or checkpoint source, or
    #: None; ``reference_kind`` says whether it is the run's first step ("init") or a base
    reference: str | None = None
    reference_kind: str = "base"


def with_reference(settings: RunSettings, reference: str | None, checkpoints: Sequence[SavedStep]) -> RunSettings:
    """``settings`` reading every step against ``reference``: ``"init"`` for the run's first saved step
    (its smallest), or a model name (a base); None: no reference."""
    if reference is None:
        return settings
    if reference == "init":
        if not checkpoints:
            raise SpecboundError("reference init needs at least one saved step")
        first = min(checkpoints, key=lambda c: c.step)
        return dataclasses.replace(settings, reference=first.source, reference_kind="init")
    return dataclasses.replace(settings, reference=reference, reference_kind="base")


# --- finding the steps -----------------------------------------------------------------------------


def trainer_checkpoints(output_dir: Path) -> list[SavedStep]:
    """The ``checkpoint-*`` folders of a Trainer output directory, by step."""
    found = []
    for child in sorted(output_dir.iterdir()):
        match = _CHECKPOINT.match(child.name)
        if match and child.is_dir():
            found.append(checkpoint_of(child, default_step=int(match[1])))
    if not found:
        raise SpecboundError(f"{output_dir.name} has no checkpoint-* folders: not a Trainer output directory")
    return sorted(found, key=lambda c: c.step)


def checkpoint_of(directory: Path, default_step: int | None = None) -> SavedStep:
    """A checkpoint directory with its step (from trainer_state.json, else the folder name) and logged losses."""
    state = _trainer_state(directory)
    step = state.get("global_step") if state else None
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        digits = re.findall(r"\d+", directory.name)
        step = default_step if default_step is not None else (int(digits[-1]) if digits else None)
    if step is None:
        raise SpecboundError(f"{directory.name}: no step in trainer_state.json or in the folder's name")
    return SavedStep(step, str(directory), _logged_at(state, step))


#: The step a revision's name gives: the number after "step" (OLMo's "stage1-step140000-tokens588B"),
#: else its last number ("1000").
_STEP_IN_NAME = re.compile(r"step[-_]?(\d+)", re.IGNORECASE)


def revision_step(revision: str) -> int | None:
    """The training step a revision's name holds (see :data:`_STEP_IN_NAME`), or None."""
    if match := _STEP_IN_NAME.search(revision):
        return int(match[1][:18])
    digits = re.findall(r"\d+", revision)
    return int(digits[-1][:18]) if digits else None


def hub_checkpoints(
    repo_id: str, revisions: Sequence[str], *, report: Callable[[str], None] = lambda line: None
) -> list[SavedStep]:
    """A Hub repository at each revision; the step is the number in the revision's name (``step1000``),
    else its position in the list. ``["pythia"]`` is Pythia's 154 saved revisions; ``["all"]`` every
    branch of the repository whose name gives a step, listed through the Hub's API (the others, such as
    ``main``, are reported and left out)."""
    if list(revisions) == ["pythia"]:
        revisions = PYTHIA_REVISIONS
    elif list(revisions) == ["all"]:
        from ..io.checkpoints import repo_branches

        branches = repo_branches(repo_id)
        revisions = [b for b in branches if revision_step(b) is not None]
        if left := [b for b in branches if revision_step(b) is None]:
            report(f"left out {len(left)} branch(es) whose name gives no step: {quoted(', '.join(left), 200)}")
        if not revisions:
            raise SpecboundError(f"no branch of '{quoted(repo_id)}' names a step (step1000, ...)")
    found = []
    for position, revision in enumerate(revisions):
        step = revision_step(revision)
        found.append(SavedStep(position if step is None else step, f"{repo_id}{REVISION_SEP}{revision}"))
    if len({c.step for c in found}) != len(found):
        raise SpecboundError("two revisions give the same step: name them with their step numbers (step1000, ...)")
    return sorted(found, key=lambda c: c.step)


def _trainer_state(directory: Path) -> dict[str, Any]:
    path = directory / TRAINER_STATE
    if not path.is_file():
        return {}
    try:
        state = read_json(path, f"{TRAINER_STATE} of {directory.name}", 16 * LIMITS.max_config_bytes)
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _logged_at(state: dict[str, Any], step: int) -> dict[str, float]:
    """``loss`` and ``eval_loss`` from the Trainer's log history at ``step``, where it logged them."""
    values: dict[str, float] = {}
    history = state.get("log_history")
    for entry in history if isinstance(history, list) else []:
        if isinstance(entry, dict) and entry.get("step") == step:
            for key in ("loss", "eval_loss"):
                value = entry.get(key)
                if is_real_number(value, finite=True):
                    values[key] = float(value)
    return values


# --- one step ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StepTask:
    checkpoint: SavedStep
    settings: RunSettings


@dataclass(frozen=True)
class _StepAnswer:
    step: int
    row: dict[str, Any] | None = None
    profile: Any = None  # SpectralProfile, named NAME@STEP
    reason: str = ""
    delta: Any = None  # the profile of W - W⁰ when the run has a reference, named NAME@STEP too
    #: the content fingerprint of the step's weights, taken before they were read (:func:`_fingerprint`)
    fingerprint: str | None = None


def _fingerprint(source: str) -> str | None:
    """The content fingerprint of a step's or a reference's files
    (:func:`specbound.io.loading.content_revision`: the profile cache's), None when it cannot be known
    without fetching (a Hub revision not in the cache) or the files cannot be read."""
    from ..io.loading import content_revision

    try:
        return content_revision(source)
    except (SpecboundError, OSError):
        return None


def _analyse_step(task: _StepTask) -> _StepAnswer:
    """Analyse one saved step (anywhere: in this process, a worker process or a Dask worker). Its
    files' fingerprint is taken before they are read: weights replaced meanwhile make the record
    disagree with them next time, and the step is analysed again."""
    from ..io.loading import difference_profile, load_profile, open_weights

    checkpoint, settings = task.checkpoint, task.settings
    name = step_name(settings.name, checkpoint.step)
    before = _fingerprint(checkpoint.source)
    try:
        loaded = load_profile(checkpoint.source, settings.compute, use_cache=settings.use_cache)
        profile = dataclasses.replace(loaded, model=name)
        delta = None
        if settings.reference is not None:
            cap = settings.compute.max_download_bytes
            tuned = open_weights(checkpoint.source, max_download_bytes=cap)
            reference = open_weights(settings.reference, max_download_bytes=cap)
            delta = difference_profile(tuned, reference, model=name, options=settings.compute)
        row = _row_of(checkpoint, profile, settings, delta)
    except SpecboundError as exc:
        return _StepAnswer(checkpoint.step, reason=str(exc))
    fingerprint = before if before is not None else _fingerprint(checkpoint.source)  # a Hub step, fetched now
    return _StepAnswer(checkpoint.step, row, profile, delta=delta, fingerprint=fingerprint)


def step_name(name: str, step: int) -> str:
    """``NAME@STEP``, how a step's profile is named in a trajectory atlas (:func:`steps_of` reads it)."""
    return f"{name}{REVISION_SEP}{step}"


def _row_of(
    checkpoint: SavedStep, profile: SpectralProfile, settings: RunSettings, delta: SpectralProfile | None = None
) -> dict[str, Any]:
    """The row of ``trajectory.csv`` for one step, from its profile (and the difference's, centred at
    the run's reference): the terms only, no SVD."""
    from ..core.bounds import BoundAnalysis, BoundSettings
    from ..io.centred import Reference, ReferenceKind

    bound_settings = BoundSettings(l_phi=settings.l_phi, grid_m=settings.grid_m)
    bounds = BoundAnalysis.from_profile(profile, bound_settings)
    result = Analysis(bounds)
    if delta is not None and settings.reference is not None:
        centred = BoundAnalysis.from_profile(profile, bound_settings, delta=delta)
        result = Analysis(bounds, None, centred, Reference(settings.reference, ReferenceKind(settings.reference_kind)))
    row = step_row(checkpoint.step, result, checkpoint.logged)
    return {"step": checkpoint.step, "model": profile.model, "source": checkpoint.source} | row


def step_row(step: int, result: Analysis, logged: Mapping[str, float] | None = None) -> dict[str, Any]:
    """One step's row of ``trajectory.csv``: its :class:`~specbound.studies.trajectory.StepTerms` (ours at
    p* and at p = 0, 1, 2, Edelman's, p* statistics, log10 α per layer; centred at a reference also both
    centred proxies, Σ_W ‖W - W⁰‖_F over the proxy matrices and the matrices that changed), then the
    losses logged there (None where not logged)."""
    terms = StepTerms.of(step, result.bounds, result.centred)
    return terms.row() | {key: (logged or {}).get(key) for key in ("loss", "eval_loss")}


#: A step as the package writes it: ASCII digits, at most 18 of them (so int() never refuses it and
#: it stays below 2^63, what a CSV column or a slider holds).
_STEP = re.compile(r"[0-9]{1,18}")


def parse_step(text: object) -> int | None:
    """A training step written as the package writes one ("1200"), else None: never "²" or "١"
    (digits to ``str.isdigit`` that ``int`` refuses), a sign, spaces or a 5,000-digit number."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int | np.integer):
        return int(text) if 0 <= text < 10**18 else None
    if isinstance(text, float | np.floating):
        return int(text) if math.isfinite(text) and text.is_integer() and 0 <= text < 10**18 else None
    return int(text) if isinstance(text, str) and _STEP.fullmatch(text) else None


def steps_of(profiles: Sequence[SpectralProfile]) -> dict[str, dict[int, SpectralProfile]]:
    """The runs in a set of profiles named ``NAME@STEP`` (a trajectory atlas): name -> step -> profile.
    A profile whose name has no step of :func:`parse_step`'s form belongs to no run."""
    runs: dict[str, dict[int, SpectralProfile]] = {}
    for profile in profiles:
        name, sep, step = profile.model.rpartition(REVISION_SEP)
        number = parse_step(step)
        if sep and name and number is not None:
            runs.setdefault(name, {})[number] = profile
    return {name: dict(sorted(steps.items())) for name, steps in runs.items()}


# --- the run ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrajectoryResult:
    rows: tuple[dict[str, Any], ...]  # by step
    missing: tuple[tuple[int, str], ...]  # (step, why)
    files: tuple[Path, ...]
    analysed: int  # steps analysed in this run (the others were done before)


def run_trajectory(
    checkpoints: Sequence[SavedStep],
    out: Path | str,
    settings: RunSettings,
    *,
    executor: Executor = Executor(),
    report: Callable[[str], None] = lambda line: None,
) -> TrajectoryResult:
    """Analyse every step not yet done in ``out`` and write the trajectory's table and atlas.

    The directory is locked while written: a second writer stops with DirectoryLocked at once.

    Example::

        >>> from specbound.api.runs import RunSettings, trainer_checkpoints
        >>> steps = trainer_checkpoints(Path("output_dir"))  # a Trainer's checkpoint-* folders  # doctest: +SKIP
        >>> result = run_trajectory(steps, "traj", RunSettings("my-run", reference="init"))  # doctest: +SKIP
        >>> [round(row["distance_frobenius"], 2) for row in result.rows]  # doctest: +SKIP
        [0.0, 1.37, 2.04]
    """

    out = Path(out)
    reference = _check_reference(settings, checkpoints)  # before anything is written
    steps_dir = output_dir(output_dir(out, "output directory") / STEPS_DIR, "steps directory")
    lock = lock_output(out)
    try:
        for directory in (out, steps_dir):
            remove_stale_temps(directory)
        return _run(checkpoints, out, steps_dir, settings, executor, report, reference)
    finally:
        lock.release()


def _check_reference(settings: RunSettings, checkpoints: Sequence[SavedStep]) -> str | None:
    """The reference's content fingerprint (None without a reference, or where it cannot be known
    without fetching), once it is found readable as weights of the run's family and dimensions: an
    unreadable or mismatched reference is one line here, before any step, not a reason repeated for
    every step after which none could be analysed. Only files already here are opened: a Hub model
    not in the cache is fetched where the steps are analysed, as before."""
    if settings.reference is None:
        return None
    from ..io.centred import check_reference
    from ..io.loading import content_revision, open_weights

    try:
        fingerprint = content_revision(settings.reference)  # a name that is no model: refused here
        if fingerprint is not None:
            reference = open_weights(settings.reference)
            first = min(checkpoints, key=lambda c: c.step) if checkpoints else None
            if first is not None and content_revision(first.source) is not None:
                check_reference(open_weights(first.source).shape, reference.shape, f"step {first.step}", "it")
    except SpecboundError as exc:
        raise SpecboundError(f"the reference {quoted(settings.reference)} cannot be used: {exc}") from None
    return fingerprint


def _run(
    checkpoints: Sequence[SavedStep],
    out: Path,
    steps_dir: Path,
    settings: RunSettings,
    executor: Executor,
    report: Callable[[str], None],
    reference: str | None,
) -> TrajectoryResult:
    """:func:`run_trajectory` with the output directory made and locked; ``reference`` the content
    fingerprint of the run's reference."""
    if len({c.step for c in checkpoints}) != len(checkpoints):
        raise SpecboundError("two checkpoints have the same step")
    done = _done_steps(checkpoints, steps_dir, settings, reference, report)
    todo = [c for c in checkpoints if c.step not in done]
    missing: list[tuple[int, str]] = []

    def keep(task: _StepTask, answer: _StepAnswer) -> tuple[dict[str, Any], SpectralProfile] | None:
        """The step's files written (None: the answer says why it is missing)."""
        if answer.row is None:
            return None
        try:
            _write_step(steps_dir, answer, settings, _fingerprints(answer.fingerprint, reference))
        except OSError as exc:
            raise SpecboundError(f"cannot write step {answer.step} to {out.name}: {describe_os_error(exc)}") from None
        return answer.row, answer.profile

    tasks = [_StepTask(c, settings) for c in todo]
    for outcome in run_resumable(tasks, _analyse_step, keep, executor=executor):
        answer = outcome.answer
        assert answer is not None
        if outcome.kept is None:
            missing.append((answer.step, answer.reason))
            report(f"step {answer.step}: missing: {answer.reason}")
            continue
        done[answer.step] = outcome.kept
        report(f"step {answer.step}: done, log10 ours {outcome.kept[0]['ours_log10']:.4f}")
    steps = [done[c.step] for c in checkpoints if c.step in done]
    if not steps:
        raise SpecboundError(f"none of the {len(checkpoints)} steps could be analysed")
    rows = [row for row, _ in steps]
    files = _write_run(out, rows, [profile for _, profile in steps], report)
    return TrajectoryResult(tuple(rows), tuple(sorted(missing)), tuple(files), len(todo) - len(missing))


#: A finished step: its row of the table and its profile.
_Done = tuple[dict[str, Any], SpectralProfile]


def _done_steps(
    checkpoints: Sequence[SavedStep],
    steps_dir: Path,
    settings: RunSettings,
    reference: str | None,
    report: Callable[[str], None],
) -> dict[int, _Done]:
    """The steps already analysed in ``steps_dir`` with these settings, the same weights and reference
    (by step), each reported as skipped."""
    done = {
        c.step: found
        for c in checkpoints
        if (found := _read_step(steps_dir, c, settings, _fingerprints(_fingerprint(c.source), reference))) is not None
    }
    for c in checkpoints:
        if c.step in done:
            report(f"step {c.step}: skipped, already done ({STEPS_DIR}/step-{c.step}.json)")
    return done


def _write_run(
    out: Path, rows: list[dict[str, Any]], profiles: list[SpectralProfile], report: Callable[[str], None]
) -> list[Path]:
    """The run's table and its atlas of every step's profile (left out, with a line, where one atlas cannot
    hold them: each step's own file remains); the files written."""
    from ..io.atlas import AtlasError, save_atlas

    try:
        files = [_write_table(out / TABLE_FILE, rows)]
        try:
            files.append(save_atlas(profiles, out / ATLAS_FILE))
        except AtlasError as exc:  # too many or too large steps for one atlas: the steps' own files remain
            (out / ATLAS_FILE).unlink(missing_ok=True)  # never an older atlas beside a newer table
            report(f"{exc}; each step's profile is in {STEPS_DIR}/step-<N>.npz")
    except OSError as exc:
        raise SpecboundError(f"cannot write to {out.name}: {describe_os_error(exc)}") from None
    return files


def _settings_key(settings: RunSettings) -> dict[str, Any]:
    key: dict[str, Any] = {"name": settings.name, "l_phi": settings.l_phi, "grid_m": settings.grid_m}
    if settings.reference is not None:  # absent without one: the records of earlier runs stay valid
        key["reference"] = {"model": settings.reference, "kind": settings.reference_kind}
    return key


def _fingerprints(source: str | None, reference: str | None) -> dict[str, str | None]:
    """A step record's ``fingerprints``: the content fingerprints of the step's weights and of the
    run's reference (None: none, or not known without fetching; a record with an unknown one is
    never trusted)."""
    return {"source": source, "reference": reference}


def _step_files(steps_dir: Path, step: int) -> tuple[Path, Path]:
    """(record, profile) of one step."""
    return steps_dir / f"step-{step}.json", steps_dir / f"step-{step}.npz"


def _delta_file(steps_dir: Path, step: int) -> Path:
    """The profile of a step's difference from the run's reference."""
    return steps_dir / f"step-{step}.delta.npz"


def _write_step(
    steps_dir: Path, answer: _StepAnswer, settings: RunSettings, fingerprints: dict[str, str | None]
) -> None:
    """The step's profile, then its record (with the profile file's SHA-256 and the content
    fingerprints of the files it was computed from): a step whose record exists is complete."""
    from ..io.atlas import save_atlas

    assert answer.row is not None
    record_path, profile_path = _step_files(steps_dir, answer.step)
    save_atlas([answer.profile], profile_path)
    record = {
        "schema": ROW_SCHEMA,
        "settings": _settings_key(settings),
        "step": answer.step,
        "source": answer.row["source"],
        "fingerprints": fingerprints,
        "profile_sha256": file_sha256(profile_path, profile_path.name, LIMITS.max_atlas_file_bytes),
        "row": answer.row,
    }
    if answer.delta is not None:
        delta_path = _delta_file(steps_dir, answer.step)
        save_atlas([answer.delta], delta_path)
        record["delta_sha256"] = file_sha256(delta_path, delta_path.name, LIMITS.max_atlas_file_bytes)
    write_text_atomic(record_path, json.dumps(record, indent=1, allow_nan=False))


def _read_step(
    steps_dir: Path, checkpoint: SavedStep, settings: RunSettings, fingerprints: dict[str, str | None]
) -> tuple[dict[str, Any], SpectralProfile] | None:
    """(row, profile) of a step finished by an earlier run with these settings, from the files whose
    content ``fingerprints`` gives (the step's and the reference's now), or None (analyse it again):
    see the module docstring for what is checked. The row is recomputed from the profile."""
    from ..io.atlas import atlas_member

    record_path, profile_path = _step_files(steps_dir, checkpoint.step)
    if not (record_path.is_file() and profile_path.is_file()):
        return None
    try:
        record = read_json(record_path, record_path.name, LIMITS.max_config_bytes)
        if not isinstance(record, dict) or not is_genuine_int(record.get("step")):
            return None
        key = (record.get("schema"), record.get("settings"), int(record["step"]), record.get("source"))
        if key != (ROW_SCHEMA, _settings_key(settings), checkpoint.step, checkpoint.source):
            return None
        wanted = fingerprints if settings.reference is not None else {**fingerprints, "reference": None}
        if fingerprints["source"] is None or record.get("fingerprints") != wanted:
            return None  # weights replaced since (by others of the same sizes), or not known without fetching
        if record.get("profile_sha256") != file_sha256(profile_path, profile_path.name, LIMITS.max_atlas_file_bytes):
            return None
        profile = atlas_member(profile_path)
        if profile.model != step_name(settings.name, checkpoint.step):
            return None  # another step's profile, or another run's
        delta = None
        if settings.reference is not None:
            delta_path = _delta_file(steps_dir, checkpoint.step)
            if record.get("delta_sha256") != file_sha256(delta_path, delta_path.name, LIMITS.max_atlas_file_bytes):
                return None
            delta = atlas_member(delta_path)
            if delta.model != profile.model or delta.shape != profile.shape:
                return None
        return _row_of(checkpoint, profile, settings, delta), profile
    except (OSError, ValueError, SpecboundError):
        return None


def _write_table(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    import pandas as pd

    frame = pd.DataFrame(list(rows)).sort_values("step", kind="stable")
    write_text_atomic(path, frame.to_csv(index=False))
    return path
