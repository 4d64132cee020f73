"""Batch analysis of a set of models for the scaling study, resumable and tolerant of missing models.

This is an edge module (it writes files); the maths is in :mod:`specbound.core.bounds` and
:mod:`specbound.studies.scaling`. Layout of the output directory::

    models/<slug>.json           per-model record (summary, settings, revision), written on completion
    models/<slug>.matrices.csv   per-matrix terms of that model at p*
    models.csv                   one row per model: name, L, N, H, log10 and plain proxies
    matrices.csv                 every per-matrix table, with a model column
    curves.csv, exponents.csv    normalised growth curves (with their common reference size) and fitted
                                 growth laws (slope, standard error, interval, within-group r², flags)
    predicted.csv                ours and Edelman's measured exponent in L and in N beside the one their
                                 bound predicts (√L, L^{3/2}), with its t-interval from three sizes up
    growth_L.html, growth_N.html self-contained Plotly figures (work offline)
    notes.txt                    what had to be left out (e.g. curves without a model at the reference)
    missing.csv                  models that could not be analysed, why, and how to get them

A model whose record exists (with the same settings) is skipped on a re-run, so an interrupted run
resumes where it stopped; a model that fails is recorded and the run goes on with the others. The
analyses can run in worker processes or on a Dask cluster: each returns its record and the driver writes
every file (:func:`specbound.studies.resumable.run_resumable`), so the files are those of a serial run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.bounds import BoundAnalysis, BoundSettings
from ..core.errors import CheckpointError, ModelNotFoundError, OfflineError, SpecboundError
from ..core.limits import LIMITS
from ..core.logspace import LOG10_E
from ..core.profile import SpectralProfile
from ..core.progress import ProgressCallback, silent
from ..io.files import (
    describe_os_error,
    lock_output,
    open_regular,
    output_dir,
    read_json,
    remove_stale_temps,
    require_parent,
    write_text_atomic,
)
from ..io.models import MINIATURE_LAYERS, MINIATURE_WIDTHS, ModelRef, miniature_alias, resolve
from ..io.options import ComputeOptions
from ..studies.parallel import Executor
from ..studies.resumable import run_resumable
from ..studies.scaling import (
    PREDICTED_GROWTH,
    ModelSummary,
    ScalingStudy,
    measured_growth,
    measured_growth_frame,
    summarize,
)
from ..studies.status import Status

#: Bump when the per-model record changes: older records are then recomputed, not trusted.
RECORD_SCHEMA = 1
RECORDS_DIR = "models"
#: The files a grid run writes at the top of its output directory.
OUTPUT_FILES = frozenset(
    {
        "models.csv",
        "matrices.csv",
        "curves.csv",
        "exponents.csv",
        "predicted.csv",
        "growth_L.html",
        "growth_N.html",
        "notes.txt",
        "missing.csv",
    }
)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


@dataclass(frozen=True)
class ModelOutcome:
    """What happened to one requested model."""

    requested: str
    status: Status
    summary: ModelSummary | None = None
    reason: str = ""
    how_to_get: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not Status.MISSING


@dataclass(frozen=True)
class GridResult:
    outcomes: tuple[ModelOutcome, ...]
    study: ScalingStudy | None
    files: tuple[Path, ...]
    notes: tuple[str, ...]  # things that were left out of the outputs, one line each

    @property
    def succeeded(self) -> tuple[ModelOutcome, ...]:
        return tuple(o for o in self.outcomes if o.ok)

    @property
    def missing(self) -> tuple[ModelOutcome, ...]:
        return tuple(o for o in self.outcomes if not o.ok)


def miniature_names(layers: Iterable[int] | None = None, widths: Iterable[int] | None = None) -> list[str]:
    """Aliases of the BERT Miniatures with the given depths and widths (default: all 24), depth-major."""
    layers = sorted(set(layers)) if layers else list(MINIATURE_LAYERS)
    widths = sorted(set(widths)) if widths else list(MINIATURE_WIDTHS)
    return [miniature_alias(l, w) for l in layers for w in widths]


def record_slug(name: str) -> str:
    """A file-name-safe key for a model name; names that are not safe as they are get a hash suffix."""
    if _SAFE_NAME.match(name):
        return name
    tail = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name or name).strip("._-")[:60] or "model"
    return f"{tail}-{hashlib.sha256(name.encode()).hexdigest()[:10]}"


def how_to_get(error: SpecboundError, ref: ModelRef | None) -> str:
    """A one-line hint for a model that could not be analysed."""
    if isinstance(error, OfflineError) and ref is not None and ref.repo_id:
        return (
            f"re-run with network access to download {ref.repo_id} into the Hugging Face cache "
            f"(later runs then work offline), or copy that cache from a machine that has it"
        )
    if isinstance(error, ModelNotFoundError):
        return (
            "give a local checkpoint directory, a Hub repository id (owner/name), a miniature alias "
            "such as L4-H256, or minilm-l6"
        )
    if isinstance(error, CheckpointError):
        return "the checkpoint files are unusable: re-download them or use another checkpoint"
    return "see the reason"


# --- files --------------------------------------------------------------------------------------


def _settings_dict(settings: BoundSettings) -> dict[str, Any]:
    return {"l_phi": settings.l_phi, "grid_m": settings.grid_m}


def _record_paths(out: Path, name: str) -> tuple[Path, Path]:
    slug = record_slug(name)
    return out / RECORDS_DIR / f"{slug}.json", out / RECORDS_DIR / f"{slug}.matrices.csv"


def _read_record(out: Path, name: str, settings: BoundSettings) -> ModelSummary | None:
    """The summary of a finished model, or None if there is no usable record for these settings."""
    record_path, matrices_path = _record_paths(out, name)
    if not (record_path.is_file() and matrices_path.is_file()):
        return None
    try:
        record = read_json(record_path, record_path.name, LIMITS.max_config_bytes)
        if (record["schema"], record["model"], record["settings"]) != (RECORD_SCHEMA, name, _settings_dict(settings)):
            return None
        return ModelSummary.from_dict(record["summary"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # unreadable or foreign: analyse again


@dataclass(frozen=True)
class _GridTask:
    """One model to analyse, wherever the analysis runs."""

    requested: str
    ref: ModelRef
    settings: BoundSettings
    use_cache: bool
    keep_profile: bool  # return the profile too (for the atlas)
    compute: ComputeOptions = field(default_factory=ComputeOptions)  # backend, layer workers, download cap


@dataclass(frozen=True)
class _GridAnswer:
    """What a task sends back: the record and per-matrix table of a finished model, or why it is missing."""

    requested: str
    summary_values: dict[str, Any] | None = None  # ModelSummary.to_dict(): plain values travel to the driver
    record: str = ""  # the JSON record
    matrices: str = ""  # the per-matrix CSV
    profile: SpectralProfile | None = None
    reason: str = ""
    how_to_get: str = ""

    @property
    def summary(self) -> ModelSummary | None:
        return None if self.summary_values is None else ModelSummary.from_dict(self.summary_values)


def _analyse_one(task: _GridTask, progress: ProgressCallback = silent) -> _GridAnswer:
    """Analyse one model and build its files' contents (nothing is written here)."""
    from ..io.loading import load_profile
    from ..present.report import terms_frame

    try:
        profile = load_profile(task.ref, task.compute, progress=progress, use_cache=task.use_cache)
        analysis = BoundAnalysis.from_profile(profile, task.settings)
        summary = summarize(analysis)
    except SpecboundError as exc:
        return _GridAnswer(task.requested, reason=str(exc), how_to_get=how_to_get(exc, task.ref))
    frame = terms_frame(analysis, analysis.evaluate())
    frame.insert(0, "model", summary.name)
    record = {
        "schema": RECORD_SCHEMA,
        "model": summary.name,
        "requested": task.requested,
        "revision": analysis.profile.revision,
        "settings": _settings_dict(analysis.settings),
        "summary": summary.to_dict(),
    }
    return _GridAnswer(
        task.requested,
        summary.to_dict(),
        json.dumps(record, indent=1, allow_nan=False),
        frame.to_csv(index=False),
        profile if task.keep_profile else None,
    )


def _write_record(out: Path, answer: _GridAnswer) -> None:
    """The per-matrix table first, then the JSON record that marks the model as done."""
    assert answer.summary is not None
    record_path, matrices_path = _record_paths(out, answer.summary.name)
    write_text_atomic(matrices_path, answer.matrices)
    write_text_atomic(record_path, answer.record)


# --- the run ------------------------------------------------------------------------------------


def run_grid(
    names: Sequence[str],
    out: Path | str,
    *,
    settings: BoundSettings = BoundSettings(),
    atlas: Path | str | None = None,
    use_cache: bool = True,
    progress: Callable[[str], ProgressCallback] = lambda name: silent,
    report: Callable[[str], None] = lambda line: None,
    executor: Executor = Executor(),
    compute: ComputeOptions | None = None,
) -> GridResult:
    """Analyse each model (skipping those already recorded in ``out``) and write the study's files.

    ``progress(name)`` gives the download/analysis callback for one model (in a serial run); ``report``
    receives one line per model and per note; ``executor`` says where the analyses run; ``compute``
    holds load_profile's backend, layer-worker and download-cap options. Raises
    SpecboundError only if no model could be analysed, and DirectoryLocked (at once, before any work)
    while another grid run writes the same directory.
    """
    out = Path(out)
    if atlas is not None:
        require_parent(Path(atlas), "atlas")
    output_dir(output_dir(out, "output directory") / RECORDS_DIR, "records directory")
    lock = lock_output(out)
    try:
        options = executor.compute_options(compute)
        run = _GridRun(
            names=names,
            out=out,
            settings=settings,
            atlas=atlas,
            use_cache=use_cache,
            progress=progress,
            report=report,
            executor=executor,
            compute=options,
        )
        return _run_grid(run)
    finally:
        lock.release()


@dataclass(frozen=True)
class _GridRun:
    """One call of :func:`run_grid` once its output directory is made and locked: the models as given, where
    their files go, the bound's settings, the atlas to export (None: none), the profile cache, the progress
    bar of each model, the report's lines, where the analyses run and how they compute."""

    names: Sequence[str]
    out: Path
    settings: BoundSettings
    atlas: Path | str | None
    use_cache: bool
    progress: Callable[[str], ProgressCallback]
    report: Callable[[str], None]
    executor: Executor
    compute: ComputeOptions

    def prefix(self, requested: str) -> str:
        """The report's words for a model: its place among those given, and its name as given."""
        return f"[{self.names.index(requested) + 1}/{len(self.names)}] {requested}"


#: A model's outcome in the order given, or None while it is still to be analysed.
_Slots = list[ModelOutcome | None]


def _run_grid(run: _GridRun) -> GridResult:
    """:func:`run_grid` with the output directory made and locked: the models planned, the missing ones
    analysed, then the study's files written (SpecboundError when no model could be analysed)."""
    out = run.out
    # temporary files of a run that was killed (never another program's: see remove_stale_temps)
    remove_stale_temps(out, earlier=lambda target: target in OUTPUT_FILES)
    remove_stale_temps(out / RECORDS_DIR, earlier=lambda target: target.endswith((".json", ".matrices.csv")))
    slots, tasks = _plan_grid(run)
    profiles = _analyse_grid(run, slots, tasks)
    outcomes = [outcome for outcome in slots if outcome is not None]
    if not any(o.ok for o in outcomes):
        _write_missing(out, outcomes)
        total = len(run.names)
        problem = "the model could not be analysed" if total == 1 else f"none of the {total} models could be analysed"
        raise SpecboundError(f"{problem}; see {out / 'missing.csv'}")
    try:
        return _write_outputs(out, outcomes, profiles, run.atlas, run.use_cache, run.report)
    except OSError as exc:
        raise SpecboundError(f"cannot write to {out.name}: {describe_os_error(exc)}") from None


def _plan_grid(run: _GridRun) -> tuple[_Slots, list[tuple[int, _GridTask]]]:
    """Each model given, in order: missing when its name does not resolve, dropped when given twice, skipped
    when its record is in ``out`` already, else a task to run (with the index of its slot)."""
    slots: _Slots = []
    tasks: list[tuple[int, _GridTask]] = []
    seen: set[str] = set()
    for index, requested in enumerate(run.names, start=1):
        prefix = f"[{index}/{len(run.names)}] {requested}"
        ref = None
        try:
            ref = resolve(requested)
        except SpecboundError as exc:
            slots.append(ModelOutcome(requested, Status.MISSING, reason=str(exc), how_to_get=how_to_get(exc, ref)))
            run.report(f"{prefix}: missing: {exc}")
            continue
        if ref.name in seen:
            run.report(f"{prefix}: given twice, analysed once")
            continue
        seen.add(ref.name)
        if (summary := _read_record(run.out, ref.name, run.settings)) is not None:
            slots.append(ModelOutcome(requested, Status.SKIPPED, summary))
            run.report(f"{prefix}: skipped, already done ({RECORDS_DIR}/{_record_paths(run.out, ref.name)[0].name})")
            continue
        task = _GridTask(requested, ref, run.settings, run.use_cache, run.atlas is not None, run.compute)
        tasks.append((len(slots), task))
        slots.append(None)
    return slots, tasks


def _analyse_grid(run: _GridRun, slots: _Slots, tasks: list[tuple[int, _GridTask]]) -> dict[str, SpectralProfile]:
    """Run the tasks (resumably, where ``run.executor`` says), each answer's record written as it comes and
    its outcome put in its slot; the profiles kept for the atlas, by model."""

    def keep(task: _GridTask, answer: _GridAnswer) -> ModelSummary | None:
        """The model's record written (None: the answer says why it is missing)."""
        if answer.summary is None:
            return None
        try:
            _write_record(run.out, answer)
        except OSError as exc:
            raise SpecboundError(
                f"cannot write the results of {answer.requested} to {run.out.name}: {describe_os_error(exc)}"
            ) from None
        return answer.summary

    profiles: dict[str, SpectralProfile] = {}
    for outcome in run_resumable(
        [task for _, task in tasks],
        _analyse_one,
        keep,
        executor=run.executor,
        in_process=lambda task: _analyse_one(task, run.progress(task.requested)),  # with each model's progress bar
    ):
        answer = outcome.answer
        assert answer is not None
        slot, prefix = tasks[outcome.index][0], run.prefix(answer.requested)
        if outcome.kept is None:
            slots[slot] = ModelOutcome(
                answer.requested, Status.MISSING, reason=answer.reason, how_to_get=answer.how_to_get
            )
            run.report(f"{prefix}: missing: {answer.reason}")
            continue
        summary = outcome.kept
        if answer.profile is not None:
            profiles[summary.name] = answer.profile
        slots[slot] = ModelOutcome(answer.requested, Status.DONE, summary)
        run.report(
            f"{prefix}: done, L={summary.num_layers} N={summary.hidden_size}, "
            f"log10 ours {summary.log_ours * LOG10_E:.4f}, "
            f"log10 Edelman {summary.log_edelman * LOG10_E:.4f}"
        )
    return profiles


def _write_missing(out: Path, outcomes: Sequence[ModelOutcome]) -> Path | None:
    import pandas as pd

    path = out / "missing.csv"
    missing = [o for o in outcomes if not o.ok]
    if not missing:
        path.unlink(missing_ok=True)  # a stale list from an earlier run would mislead
        return None
    write_text_atomic(
        path,
        pd.DataFrame(
            [{"name": o.requested, "reason": o.reason, "how_to_get": o.how_to_get} for o in missing],
            columns=["name", "reason", "how_to_get"],
        ).to_csv(index=False),
    )
    return path


def _write_notes(out: Path, notes: Sequence[str]) -> Path | None:
    """notes.txt, one note a line; removed when there is nothing to say (a stale one would mislead)."""
    path = out / "notes.txt"
    if not notes:
        path.unlink(missing_ok=True)
        return None
    write_text_atomic(path, "".join(f"{note}\n" for note in notes))
    return path


def _write_tables(out: Path, summaries: Sequence[ModelSummary]) -> list[Path]:
    """models.csv (one row per model) and matrices.csv (every per-matrix record, with a model column)."""
    import pandas as pd

    from ..studies.scaling import summaries_frame

    write_text_atomic(out / "models.csv", summaries_frame(summaries).to_csv(index=False))
    tables = []
    for s in summaries:
        path = _record_paths(out, s.name)[1]
        with open_regular(path, path.name, LIMITS.max_record_bytes) as f:  # never a FIFO or a device
            tables.append(pd.read_csv(f, dtype={"head": "Int64", "model": str}))
    write_text_atomic(out / "matrices.csv", pd.concat(tables, ignore_index=True).to_csv(index=False))
    return [out / "models.csv", out / "matrices.csv"]


def _write_study(out: Path, study: ScalingStudy, notes: list[str]) -> list[Path]:
    """curves.csv, exponents.csv, predicted.csv and the self-contained growth figures growth_L.html,
    growth_N.html (the predicted laws drawn dotted).

    The study's own notes (curves left out for want of a model at the common reference) join ``notes``.
    """
    from ..present.figures.scaling import growth_figure

    write_text_atomic(out / "curves.csv", study.curves_frame().to_csv(index=False))
    write_text_atomic(out / "exponents.csv", study.exponents_frame().to_csv(index=False))
    write_text_atomic(out / "predicted.csv", measured_growth_frame(measured_growth(study)).to_csv(index=False))
    files = [out / "curves.csv", out / "exponents.csv", out / "predicted.csv"]
    notes.extend(study.notes)
    if not study.curves_depth and not study.curves_width and not study.notes:
        notes.append("no growth curves: no two models share a depth or a width")
    for axis in ("L", "N"):
        figure = growth_figure(study.curves(axis), axis, study.exponents, predicted=PREDICTED_GROWTH)
        write_text_atomic(out / f"growth_{axis}.html", figure.to_html(include_plotlyjs=True))
        files.append(out / f"growth_{axis}.html")
    return files


def _write_atlas(
    outcomes: Sequence[ModelOutcome],
    profiles: dict[str, SpectralProfile],
    atlas: Path | str,
    use_cache: bool,
    notes: list[str],
) -> list[Path]:
    """The profiles of every available model in one atlas file (those skipped this run from the cache)."""
    from ..io.atlas import save_atlas
    from ..io.loading import load_profile

    chosen = []
    for o in outcomes:
        if not o.ok or o.summary is None:
            continue
        profile = profiles.get(o.summary.name)
        if profile is None:  # skipped this run: its profile comes from the profile cache
            try:
                profile = load_profile(o.summary.name, use_cache=use_cache)
            except SpecboundError as exc:
                notes.append(f"{o.requested} is not in the atlas: {exc}")
                continue
        chosen.append(profile)
    if not chosen:
        notes.append("no atlas written: no profile available")
        return []
    return [save_atlas(chosen, atlas)]


def _write_outputs(
    out: Path,
    outcomes: Sequence[ModelOutcome],
    profiles: dict[str, SpectralProfile],
    atlas: Path | str | None,
    use_cache: bool,
    report: Callable[[str], None],
) -> GridResult:
    """Every file of the study from the finished models; notes say what had to be left out."""
    summaries = [o.summary for o in outcomes if o.ok and o.summary is not None]
    notes: list[str] = []
    files = _write_tables(out, summaries)
    study = None
    try:
        study = ScalingStudy.from_summaries(summaries)
    except ValueError as exc:
        notes.append(f"no growth curves or exponents: {exc}")
    if study is not None:
        files += _write_study(out, study, notes)
    if atlas is not None:
        files += _write_atlas(outcomes, profiles, atlas, use_cache, notes)
    if (missing := _write_missing(out, outcomes)) is not None:
        files.append(missing)
    if (written := _write_notes(out, notes)) is not None:
        files.append(written)
    for note in notes:
        report(f"note: {note}")
    return GridResult(tuple(outcomes), study, tuple(files), tuple(notes))
