"""The Lab page's data: the shipped reference and this server's lab store, cached; training one small run
in a background thread; opening a run's checkpoint as the session's model.

Caching and jobs only: nothing here draws or words. The page's figures and tables are built by
:mod:`dashboard.views.lab` in one call from :func:`sweep_data` (or a run and its trajectory), its prose
is :mod:`dashboard.wording.lab`, and the training progress panel and the "Open as a model" button are
:mod:`dashboard.widgets.lab`.

Where runs come from. The shipped references (:data:`specbound_lab.reference.SHIPPED`: the threshold
task on BERT encoders, the Markov task on GPT-2 decoders and the grokking runs; records and every saved
step's spectral profile, no weights) and the *lab store*, a lab directory inside the profile cache
(``<cache>/lab``) that runs trained from this page go to. A visitor never names a directory: the store
is the only place the page trains into or reads checkpoints from. A run is chosen by a key
``<origin>:<run>`` (``reference:``, ``decoder:``, ``grokking:`` or ``here:``), since a run trained here
may share its name with a reference run (same spec, fewer test samples).

What a view reads. A shipped sweep's numbers are read from the tables its sweep wrote
(:mod:`specbound_lab.readback`: correlations.csv, comparisons.csv, verdict.csv, couplings.csv and a
fine-tuning sweep's forgetting.csv, the grokking runs' grokking_summary.csv and grokking_power.csv),
never recomputed from its records: a fresh server's first switch to the sweep view resamples nothing
those tables hold. The store's numbers are computed from its records,
as ``lab sweep`` computes them (a visitor's run may have joined them a moment ago).

Training. A visitor's run is held to :data:`VISITOR_CAPS` (about a minute of CPU at most). It runs in a
daemon thread (:class:`dashboard.services.jobs.TrainingJob`) calling
:func:`specbound_lab.sweep.run_sweep`, with a ``threading.Event`` as the cancel hook and progress
written under a lock; the page polls it from a fragment (:func:`dashboard.widgets.lab.progress_panel`).
A session has at most one job, the server at most ``VISITOR_CAPS.max_jobs`` at once (the
:class:`dashboard.services.jobs.JobBoard`, shared by all sessions); two jobs never train the same run.

Opening as a model. A step's profile is written as a one-model atlas into the upload store
(:func:`dashboard.state.atlas.store_upload`), so the other pages open it like any uploaded atlas and a
shared link carries its digest, never a server path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.services.jobs import JobBoard, JobState, JobStatus, LabBusy, RunRequest, TrainingJob
from dashboard.state import atlas, run_names, session
from dashboard.views.lab import SweepData, SweepSource
from dashboard.wording.vocabulary import model_label
from specbound.core.profile import SpectralProfile
from specbound.io.cache import default_cache_dir
from specbound.present.numbers import format_count
from specbound_lab import readback, views
from specbound_lab import reference as lab_reference
from specbound_lab.answer import LabAnswer, shipped_answer
from specbound_lab.correlation import MeasureCorrelation, TauDifference
from specbound_lab.grokking import GrokkingVerdict, RunGrokking, grokking_runs, grokking_verdict
from specbound_lab.limits import VISITOR_CAPS
from specbound_lab.records import read_runs
from specbound_lab.reference import ShippedReference
from specbound_lab.robust import RobustSummary, RobustVerdict, robust_verdict
from specbound_lab.study import shipped_study_answer
from specbound_lab.tables import (
    FORGETTING_CSV,
    VERDICT_CSV,
    LabResults,
    comparisons,
    correlations,
    environment_verdicts,
)
from specbound_lab.train import LabError
from specbound_lab.trajectory import RunTrajectory
from specbound_lab.verdict import EnvironmentVerdict, robust_view

#: Folder of the profile cache that holds the runs trained from the dashboard.
STORE_DIR = "lab"
#: Origins of a run, as the first part of its key: each shipped reference by its key, and this server's store.
SHIPPED = {shipped.key: shipped for shipped in lab_reference.SHIPPED}
REFERENCE, DECODER, GROKKING, FIT, FIT_DECODER, FIT_MARKOV, FIT_MARKOV_LLAMA, FINETUNE = (
    s.key for s in lab_reference.SHIPPED
)
HERE = "here"
#: The shipped references whose runs form a sweep (the grokking preset's three seeds do not).
SWEEPS: tuple[str, ...] = tuple(s.key for s in lab_reference.SWEEP_REFERENCES)
_KEY_SEP = ":"
#: Session-state keys: this session's training job, and the last finished job's message.
JOB_KEY, LAST_JOB_KEY = "lab_job", "lab_last_job"


def store_dir() -> Path:
    return default_cache_dir() / STORE_DIR


# --- runs ---------------------------------------------------------------------------------------


def run_key(origin: str, name: str) -> str:
    return f"{origin}{_KEY_SEP}{name}"


def split_key(key: str) -> tuple[str, str]:
    origin, _, name = key.partition(_KEY_SEP)
    return origin, name


@st.cache_resource(show_spinner=False)
def reference(origin: str = REFERENCE) -> LabResults:
    """One shipped reference (:data:`SHIPPED`), read once per server; empty when the package lacks it."""
    directory = SHIPPED[origin].directory
    return lab_reference.load_reference(directory) if (directory / "runs").is_dir() else LabResults((), ())


@st.cache_resource(show_spinner=False, max_entries=4)
def _store_runs(version: int) -> tuple[RunTrajectory, ...]:
    """The finished runs of the lab store (read again when a job of this server has finished)."""
    return read_runs(store_dir()) if (store_dir() / "runs").is_dir() else ()


def store_runs() -> tuple[RunTrajectory, ...]:
    return _store_runs(board().version)


def available_runs() -> dict[str, RunTrajectory]:
    """Every run the page can show, by key: the shipped references', then those trained here."""
    runs = {run_key(origin, r.name): r for origin in SHIPPED for r in reference(origin).runs}
    runs.update({run_key(HERE, r.name): r for r in store_runs()})
    return runs


@st.cache_resource(show_spinner=False)
def varied_p_star_run() -> tuple[str, int] | None:
    """(key, final step) of the shipped run whose final checkpoint takes the most distinct p* (the first
    such, in reference order): what the Why page offers when a model's p* are all equal. None when no
    shipped run has two."""
    best: tuple[int, str, int] | None = None
    for origin in SHIPPED:
        for run in reference(origin).runs:
            distinct = len(set(run.final.p_opt))
            if distinct > 1 and (best is None or distinct > best[0]):
                best = (distinct, run_key(origin, run.name), run.final.step)
    return None if best is None else (best[1], best[2])


def shipped_of(key: str) -> ShippedReference | None:
    """The shipped reference a run's key comes from; None for a run trained here."""
    return SHIPPED.get(split_key(key)[0])


def directory_of(key: str) -> Path:
    origin = split_key(key)[0]
    return SHIPPED[origin].directory if origin in SHIPPED else store_dir()


def shipped_counts() -> tuple[tuple[ShippedReference, int], ...]:
    """Each shipped reference with its number of runs (0 when the package was built without it)."""
    return tuple((shipped, len(reference(origin).runs)) for origin, shipped in SHIPPED.items())


@st.cache_resource(show_spinner=False)
def answer() -> LabAnswer:
    """The lab's answer to "does the bound predict the gap?", read from ``verdict.csv`` of every shipped
    sweep once per server (:mod:`specbound_lab.answer`): no bootstrap, no run record."""
    return shipped_answer()


@st.cache_data(show_spinner=False)
def study() -> dict[str, Any] | None:
    """The shipped pre-registered study's answer (``answer.json``), once per server; None while none is
    shipped."""
    return shipped_study_answer()


#: The run shown first: the widest, deepest reference run with the fewest examples, so the gap is visible.
DEFAULT_RUN = "lab-L2-N64-H2-n100-q0-s0-t500"


def default_run(keys: list[str]) -> str:
    """:data:`DEFAULT_RUN` from the reference, or the first run when a regenerated reference lacks it."""
    preferred = run_key(REFERENCE, DEFAULT_RUN)
    return preferred if preferred in keys else keys[0]


@st.cache_data(show_spinner=False, max_entries=64)
def trajectory(key: str, _run: RunTrajectory) -> pd.DataFrame:
    return views.trajectory_frame(_run)


@st.cache_resource(show_spinner=False, max_entries=64)
def step_profile(key: str, step: int, _run: RunTrajectory) -> SpectralProfile:
    """The run's profile at a saved step: the reference's steps atlas, or the store's checkpoint."""
    return lab_reference.step_profile(directory_of(key), _run, step)


@st.cache_data(show_spinner=False, max_entries=8)
def _sweep(
    origin: str, version: int, _runs: tuple[RunTrajectory, ...]
) -> tuple[pd.DataFrame, tuple[MeasureCorrelation, ...]]:
    if origin in SHIPPED:  # the first environment's block of the shipped correlations.csv
        environments = readback.read_correlations(SHIPPED[origin].directory)
        table = environments[0].correlations if environments else ()
    else:
        table = correlations(_runs)
    return views.sweep_frame(_runs), table


def _origin_runs(origin: str) -> tuple[tuple[RunTrajectory, ...], int]:
    """The runs of one origin and the version their caches are keyed by (0 for a shipped reference)."""
    return (reference(origin).runs, 0) if origin in SHIPPED else (store_runs(), board().version)


def sweep(origin: str) -> tuple[pd.DataFrame, tuple[MeasureCorrelation, ...]]:
    """(one row per final checkpoint, the correlation table) of a shipped sweep or of the store."""
    runs, version = _origin_runs(origin)
    return _sweep(origin, version, runs)


# The paired bootstraps and the verdicts are frozen dataclasses, never changed once computed: held as they
# are (cache_resource), not pickled and copied on every rerun as cache_data would (a warm switch to the
# sweep read the six shipped sweeps' verdicts twice, about 0.8 s of copies).
@st.cache_resource(show_spinner=False, max_entries=8)
def _comparisons(origin: str, version: int, _runs: tuple[RunTrajectory, ...]) -> tuple[TauDifference, ...]:
    if origin in SHIPPED and (shipped := readback.read_comparisons(SHIPPED[origin].directory)):
        return shipped  # comparisons.csv, written by the sweep
    return comparisons(_runs)


def against_baseline(origin: str) -> tuple[TauDifference, ...]:
    """Every other measure against ours at p*, paired-bootstrapped over the runs of one sweep."""
    runs, version = _origin_runs(origin)
    return _comparisons(origin, version, runs)


@st.cache_resource(show_spinner=False, max_entries=16)
def _verdicts(origin: str, version: int, _runs: tuple[RunTrajectory, ...]) -> tuple[EnvironmentVerdict, ...]:
    if origin in SHIPPED:  # verdict.csv, written by the sweep
        return readback.read_verdicts(SHIPPED[origin].directory) if _runs else ()
    return environment_verdicts(_runs)


@st.cache_resource(show_spinner=False, max_entries=16)
def _shipped_verdict_tables(origin: str) -> tuple[pd.DataFrame, ...]:
    """Each environment's rows of a shipped sweep's verdict.csv, in the order of its verdicts."""
    if not reference(origin).runs:
        return ()
    frame = readback.read_table(SHIPPED[origin].directory, VERDICT_CSV)
    names = dict.fromkeys(frame["environment"])
    return tuple(frame[frame["environment"] == name].drop(columns="environment") for name in names)


def verdict_tables(origin: str) -> tuple[pd.DataFrame, ...]:
    """The rows of verdict.csv of each verdict of :func:`verdicts`, in its order: the shipped tables as
    written; empty for the store (the view writes its rows from the verdicts)."""
    if origin not in SHIPPED:
        return ()
    return tuple(table for s in SWEEPS for table in _shipped_verdict_tables(s))


def verdicts(origin: str) -> tuple[tuple[str, EnvironmentVerdict], ...]:
    """SPEC §13b's verdict of each environment (:mod:`specbound_lab.verdict`) that ``origin`` reads, each
    with the origin of the sweep it comes from: for a shipped reference every shipped sweep's, each sweep
    read as its own (two sweeps of one environment are two designs, not one); else the store's."""
    if origin in SHIPPED:
        return tuple((s, v) for s in SWEEPS for v in _verdicts(s, 0, reference(s).runs))
    runs, version = _origin_runs(origin)
    return tuple((origin, v) for v in _verdicts(origin, version, runs))


#: The cache key of every shipped origin's robust view: one view over every shipped sweep.
_ALL_SHIPPED = "shipped"


def _robust_key(origin: str) -> tuple[str, int]:
    return (_ALL_SHIPPED, 0) if origin in SHIPPED else (origin, _origin_runs(origin)[1])


def robust_rows(origin: str) -> tuple[RobustSummary, ...]:
    """Dziugaite et al.'s robust view over the couplings of the environments of :func:`verdicts` that count."""
    return _robust_rows(*_robust_key(origin))


@st.cache_resource(show_spinner=False, max_entries=8)
def _robust_rows(origin: str, version: int) -> tuple[RobustSummary, ...]:
    if origin == _ALL_SHIPPED:  # the couplings.csv of every shipped sweep
        return readback.read_robust(tuple(SHIPPED[s].directory for s in SWEEPS))
    return robust_view([verdict for _, verdict in verdicts(origin)])


@st.cache_resource(show_spinner=False, max_entries=8)
def _robust_reading(origin: str, version: int) -> RobustVerdict | None:
    return robust_verdict(_robust_rows(origin, version))


def robust_reading(origin: str) -> RobustVerdict | None:
    """The robust view's reading (its paired bootstrap of the two smallest means), once per robust view."""
    return _robust_reading(*_robust_key(origin))


@st.cache_resource(show_spinner=False)
def grokking_reference() -> tuple[RunGrokking, ...]:
    """The shipped grokking runs (the ``grok`` preset's seeds) read by the rule; none when the package
    ships none."""
    return grokking_runs(reference(GROKKING).runs)


@st.cache_resource(show_spinner=False)
def grokking_checked() -> GrokkingVerdict:
    """The shipped grokking runs' verdict: each measure's leads with the 95th percentile of its
    circular-shift null, the positive control and the power check: seconds of shifts, so computed once
    per server, not on every rerun of the sweep view (a seed picked, a table unfolded)."""
    shipped = readback.read_grokking(SHIPPED[GROKKING].directory)  # the tables the grok sweep wrote
    return shipped if shipped is not None else grokking_verdict(grokking_reference())


def forgetting_file(origin: str) -> Path:
    """Where the forgetting verdict of ``origin``'s runs is written (forgetting.csv beside its tables)."""
    return (SHIPPED[origin].directory if origin in SHIPPED else store_dir()) / FORGETTING_CSV


@st.cache_data(show_spinner=False, max_entries=16)
def _forgetting(path: str, stamp: float) -> pd.DataFrame | None:
    return pd.read_csv(path) if stamp else None


def forgetting(origin: str) -> pd.DataFrame | None:
    """forgetting.csv of ``origin`` as written by the lab (:func:`specbound_lab.tables.forgetting_frame`),
    read once per version of the file; None where its runs recorded no forgetting."""
    path = forgetting_file(origin)
    return _forgetting(str(path), path.stat().st_mtime if path.is_file() else 0.0)


def source(origin: str) -> SweepSource:
    """Where the runs of ``origin`` come from (its shipped reference, None for this server's store) and
    the runs themselves: what the page names a sweep by."""
    return SweepSource(SHIPPED.get(origin), _origin_runs(origin)[0])


def sweep_data(origin: str) -> SweepData:
    """Everything the sweep view (:func:`dashboard.views.lab.lab_sweep_view`) reads about the runs of
    ``origin``, each part from its own cache."""
    frame, table = sweep(origin)
    grokking = grokking_reference()
    found = verdicts(origin)
    return SweepData(
        frame=frame,
        table=table,
        differences=against_baseline(origin),
        verdicts=found,
        sources={o: source(o) for o in dict.fromkeys(o for o, _ in found)},
        robust=robust_rows(origin),
        grokking=grokking,
        grokking_checked=grokking_checked() if grokking else None,
        verdict_tables=verdict_tables(origin),
        robust_reading=robust_reading(origin),
        forgetting=forgetting(origin),
    )


# --- training -------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def board() -> JobBoard:
    return JobBoard()


def session_job() -> TrainingJob | None:
    return st.session_state.get(JOB_KEY)


def start_training(request: RunRequest) -> TrainingJob:
    """Start this session's run (LabError outside the caps; LabBusy when a job is running or the
    store is full, so visitors cannot fill the server's disk)."""
    job = session_job()
    if job is not None and job.status().state is JobState.RUNNING:
        raise LabBusy("this session is training a run already: cancel it or wait for it to end")
    spec = request.spec()
    stored = store_runs()
    if len(stored) >= VISITOR_CAPS.max_stored_runs and spec.name not in {r.name for r in stored}:
        raise LabBusy(
            f"the lab store of this server holds {format_count(len(stored), 'run')}, as many as it keeps; "
            f"pick one of them in the run picker"
        )
    job = board().start(spec, store_dir())
    st.session_state[JOB_KEY] = job
    return job


def collect_finished() -> JobStatus | None:
    """When this session's job has ended: forget it and return its final status (else None)."""
    job = session_job()
    if job is None:
        return None
    status = job.status()
    if status.state is JobState.RUNNING:
        return None
    del st.session_state[JOB_KEY]
    st.session_state[LAST_JOB_KEY] = status
    return status


def last_job() -> JobStatus | None:
    """The final status of the last job this session started, once it has ended (else None)."""
    return st.session_state.get(LAST_JOB_KEY)


# --- opening a step as a model ---------------------------------------------------------------------


def open_step(key: str, step: int) -> str:
    """Make the run ``key`` at its saved ``step`` the session's model on every page; its model name.

    The step's profile is written as a one-model atlas into the upload store, so the other pages open it
    like any uploaded atlas and a link carries its digest (LabError when the run is gone; SpecboundError
    or OSError when the profile or the store cannot be read or written).
    """
    run = available_runs().get(key)
    if run is None:
        raise LabError("that run is no longer available here")
    profile = step_profile(key, step, run)
    run_names.remember(run.spec)  # a run trained here has no shipped record to read its words from
    path = atlas.store_upload(f"{profile.model}.npz", atlas.atlas_bytes([profile]))
    name = atlas.model_name(path, profile.model)
    session.open_model(name, label=model_label(run.spec))
    return name
