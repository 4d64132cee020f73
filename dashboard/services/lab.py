"""The Lab page's data: the shipped reference and this server's lab store, cached; training one small
run in a background thread; opening a run's checkpoint as the session's model.

Where runs come from. The shipped references (:data:`specbound_lab.reference.SHIPPED`: the threshold
task on BERT encoders, the Markov task on GPT-2 decoders and the grokking runs; records and every saved
step's spectral profile, no weights) and the *lab store*, a lab directory inside the profile cache
(``<cache>/lab``) that runs trained from this page go to. A visitor never names a directory: the
store is the only place the page trains into or reads checkpoints from. A run is chosen by a key
``<origin>:<run>`` (``reference:``, ``decoder:``, ``grokking:`` or ``here:``), since a run trained here
may share its name with a reference run (same spec, fewer test samples).

Training. A visitor's run is held to :data:`VISITOR_CAPS` (about a minute of CPU at most). It runs in
a daemon thread (:class:`dashboard.services.jobs.TrainingJob`) calling :func:`specbound_lab.sweep.run_sweep`,
with a ``threading.Event`` as the cancel hook and progress written under a lock; the page polls it from
a fragment. A session has at most one job, the server at most ``VISITOR_CAPS.max_jobs`` at once (the
:class:`dashboard.services.jobs.JobBoard`, shared by all sessions); two jobs never train the same run.

Opening as a model. A step's profile is written as a one-model atlas into the upload store
(:func:`dashboard.state.atlas.store_upload`), so the other pages open it like any uploaded atlas and a
shared link carries its digest, never a server path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from dashboard import safety
from dashboard.services.jobs import JobBoard, JobState, JobStatus, LabBusy, TrainingJob
from dashboard.state import atlas, session
from dashboard.state.share import Codec
from dashboard.widgets.tables import column_width
from dashboard.wording.numbers import styled_table
from dashboard.wording.vocabulary import measure_name, model_label, spec_words
from specbound.core.errors import SpecboundError
from specbound.core.profile import SpectralProfile
from specbound.core.values import check_number
from specbound.io.cache import default_cache_dir
from specbound.present.numbers import format_count
from specbound_lab import reference as lab_reference
from specbound_lab import views
from specbound_lab.answer import LabAnswer, shipped_answer
from specbound_lab.correlation import MeasureCorrelation, TauDifference
from specbound_lab.grokking import (
    GrokkingVerdict,
    LeadSummary,
    RunGrokking,
    grokking_runs,
    grokking_verdict,
    summary_frame,
)
from specbound_lab.limits import VISITOR_CAPS, VisitorCaps
from specbound_lab.records import read_runs
from specbound_lab.registry import correlated_measures, is_baseline
from specbound_lab.robust import RobustSummary
from specbound_lab.tables import (
    LabResults,
    comparisons,
    correlations,
    correlations_frame,
    environment_verdicts,
    robust_frame,
    verdict_frame,
)
from specbound_lab.tasks import ThresholdTask
from specbound_lab.train import LabError, RunSpec, TrainSettings
from specbound_lab.trajectory import RunTrajectory
from specbound_lab.verdict import EnvironmentVerdict, robust_view

#: The label of the runs a visitor trains here, and of the first reference: BERT encoders, threshold task.
LAB_MODEL_LABEL = model_label(RunSpec(layers=1, hidden=32, heads=2, n_train=1, seed=0))
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
#: Session-state key of an error met by "Open as a model" (shown once, on the next run).
OPEN_ERROR_KEY = "lab_open_error"
#: How often the page looks at a running job (seconds).
POLL_SECONDS: float = 1.0


@dataclass(frozen=True)
class RunRequest:
    """What the form asks for; :meth:`spec` checks it against the caps."""

    layers: int = 1
    hidden: int = 32
    heads: int = 2
    n_train: int = 400
    label_noise: float = 0.0
    steps: int = 300
    seed: int = 0

    def spec(self, caps: VisitorCaps = VISITOR_CAPS) -> RunSpec:
        """The run to train (LabError when a value is outside the caps)."""
        check_number(self.layers, "layers", 1, caps.max_layers, integer=True, error=LabError)
        if self.hidden not in caps.widths:
            raise LabError(f"the width must be one of {caps.widths}")
        if self.heads not in caps.heads:
            raise LabError(f"the heads must be one of {caps.heads}")
        check_number(self.n_train, "n", 1, caps.max_n_train, integer=True, error=LabError)
        check_number(self.label_noise, "the label noise", 0.0, caps.max_label_noise, error=LabError)
        check_number(self.steps, "steps", 1, caps.max_steps, integer=True, error=LabError)
        check_number(self.seed, "the seed", 0, caps.max_seed, integer=True, error=LabError)
        settings = TrainSettings(
            steps=self.steps,
            save_every=max(1, self.steps // caps.checkpoints),
            test_samples=caps.test_samples,
            threads=1,
        )
        return RunSpec(
            layers=self.layers,
            hidden=self.hidden,
            heads=self.heads,
            n_train=self.n_train,
            seed=self.seed,
            task=ThresholdTask(label_noise=self.label_noise),
            settings=settings,
        )


DEFAULT_REQUEST = RunRequest()


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


def directory_of(key: str) -> Path:
    origin = split_key(key)[0]
    return SHIPPED[origin].directory if origin in SHIPPED else store_dir()


def describe(key: str, run: RunTrajectory) -> str:
    """A run as the picker lists it: its model and task where they are not the first reference's, its
    hyperparameters (the learning rate too: the fit sweeps have two) and where it comes from (which
    shipped sweep: the same run name can be in two of them)."""
    source = split_key(key)[0]
    origin = f"shipped {SHIPPED[source].preset} sweep" if source in SHIPPED else "trained here"
    s = run.spec
    environment = "" if (s.family, s.task.kind) == ("bert", "threshold") else f"{model_label(s)}: "
    return f"{environment}{spec_words(s)} ({origin})"


def shipped_items() -> list[str]:
    """What the package ships, one line per reference: its run count, preset, models and task ("120 runs
    of the `fit` sweep: BERT encoders, threshold task"); empty when the package was built without them."""
    items = []
    for origin in SHIPPED:
        runs = reference(origin).runs
        if runs:
            shipped = SHIPPED[origin]
            what = "the grokking preset" if origin == GROKKING else f"the `{shipped.preset}` sweep"
            items.append(f"{format_count(len(runs), 'run')} of {what}: {shipped.models}, {shipped.task} task")
    return items


@st.cache_resource(show_spinner=False)
def answer() -> LabAnswer:
    """The lab's answer to "does the bound predict the gap?", read from ``verdict.csv`` of every shipped
    sweep once per server (:mod:`specbound_lab.answer`): no bootstrap, no run record."""
    return shipped_answer()


def sweep_choice(origin: str) -> str:
    """A sweep as the Runs radio offers it."""
    if origin in SHIPPED:
        runs, note = reference(origin).runs, SHIPPED[origin].note
        return f"{model_label(runs[0].spec, plural=True)} ({note + ', ' if note else ''}shipped)" if runs else origin
    return f"the {format_count(len(store_runs()), 'run')} trained here"


#: The run shown first: the widest, deepest reference run with the fewest examples, so the gap is visible.
DEFAULT_RUN = "lab-L2-N64-H2-n100-q0-s0-t500"


def default_run(keys: list[str]) -> str:
    """:data:`DEFAULT_RUN` from the reference, or the first run when a regenerated reference lacks it."""
    preferred = run_key(REFERENCE, DEFAULT_RUN)
    return preferred if preferred in keys else keys[0]


def run_codec(keys: list[str]) -> Codec:
    """Links carry a run by its key; a key this server does not know keeps the default."""

    def parse(text: str) -> str:
        if text not in keys:
            raise ValueError(text)
        return text

    return Codec(parse, str)


def _parse_step(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


STEP = Codec(_parse_step, str)


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
    table = reference(origin).correlations if origin in SHIPPED else correlations(_runs)
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
    return comparisons(_runs)


def against_baseline(origin: str) -> tuple[TauDifference, ...]:
    """Every other measure against ours at p*, paired-bootstrapped over the runs of one sweep."""
    runs, version = _origin_runs(origin)
    return _comparisons(origin, version, runs)


@st.cache_resource(show_spinner=False, max_entries=16)
def _verdicts(origin: str, version: int, _runs: tuple[RunTrajectory, ...]) -> tuple[EnvironmentVerdict, ...]:
    return environment_verdicts(_runs)


def verdicts(origin: str) -> tuple[tuple[str, EnvironmentVerdict], ...]:
    """SPEC §13b's verdict of each environment (:mod:`specbound_lab.verdict`) that ``origin`` reads, each
    with the sweep it comes from in words (its Runs choice): for a shipped reference every shipped sweep's,
    each sweep read as its own (two sweeps of one environment are two designs, not one); else the store's."""
    if origin in SHIPPED:
        return tuple((sweep_choice(s), v) for s in SWEEPS for v in _verdicts(s, 0, reference(s).runs))
    runs, version = _origin_runs(origin)
    return tuple((sweep_choice(origin), v) for v in _verdicts(origin, version, runs))


def robust_rows(origin: str) -> tuple[RobustSummary, ...]:
    """Dziugaite et al.'s robust view over the couplings of the environments of :func:`verdicts` that count."""
    return _robust_rows(origin, _origin_runs(origin)[1])


@st.cache_resource(show_spinner=False, max_entries=8)
def _robust_rows(origin: str, version: int) -> tuple[RobustSummary, ...]:
    return robust_view([verdict for _, verdict in verdicts(origin)])


def verdict_view_frame(env: EnvironmentVerdict) -> Styler:
    """One environment's rows of ``verdict.csv`` as the page shows them: each measure in plain words (a
    trivial baseline marked), τ with its interval over configurations, τ within strata of n and of the
    parameter count, the granulated τ and the seed noise, the pooled sign-error, tied pairs, censored
    runs and the coupled sign-errors, and the measure's paired difference in τ from the strongest trivial
    baseline with its Holm-adjusted p-value (empty on a baseline's row)."""
    frame = verdict_frame((env,))
    columns = {
        "measure": "Measure",
        "kendall_tau": "τ",
        "kendall_tau_ci_low": "τ: 95 % low",
        "kendall_tau_ci_high": "τ: 95 % high",
        "tau_within_n": "τ within n",
        "tau_within_params": "τ within parameter count",
        "granulated_tau": "Granulated τ",
        "seed_noise": "Seed noise ψ",
        "vs_baseline_tau_difference": "τ minus the strongest baseline's",
        "vs_baseline_p_holm": "Holm-adjusted p against it",
        "pooled_sign_error": "Pooled sign-error",
        "tied_pairs": "Tied pairs",
        "censored": "Censored runs",
        "coupled_couplings": "Couplings",
        "coupled_mean": "Coupled sign-error: mean",
        "coupled_p90": "90th percentile",
        "coupled_max": "Worst",
    }
    shown = frame[list(columns)].rename(columns=columns)
    shown["Measure"] = [measure_name(m) + (" (trivial baseline)" if is_baseline(m) else "") for m in frame["measure"]]
    plain = {c: "number" for c in shown.columns if pd.api.types.is_float_dtype(shown[c])}
    return styled_table(shown, plain)


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
    return grokking_verdict(grokking_reference())


def grokking_summaries() -> tuple[LeadSummary, ...]:
    """Each measure's row of :func:`grokking_checked`."""
    return grokking_checked().summaries


#: grokking_summary.csv's columns as the page heads them.
GROKKING_COLUMNS: dict[str, str] = {
    "measure": "Measure",
    "seeds": "Seeds that grokked",
    "median_lead": "Median lead (steps)",
    "lowest_lead": "Lowest lead (steps)",
    "highest_lead": "Highest lead (steps)",
    "share_before": "Seeds where it moved first",
    "null_p95": "Null: 95th percentile of the median lead (steps)",
    "rule_verdict": "The rule alone",
    "powered": "Design can answer (control and power check)",
    "verdict": "Verdict",
}


def grokking_view_frame(summaries: tuple[LeadSummary, ...]) -> Styler:
    """grokking_summary.csv as the page shows it: columns and measures in words, leads in whole steps
    (a lead is a difference of saved steps), the share of seeds as a percentage."""
    frame = summary_frame(summaries)
    frame = frame.assign(measure=[measure_name(m) for m in frame["measure"]])
    for column in ("median_lead", "lowest_lead", "highest_lead", "null_p95"):
        frame[column] = frame[column].round().astype("Int64")  # a median of two leads may end in .5: rounded
    frame["share_before"] = [
        "–" if pd.isna(share) else f"{round(100 * share)} %" for share in frame["share_before"]
    ]  # fmt: skip
    return styled_table(frame.rename(columns=GROKKING_COLUMNS), {})


def robust_columns(columns: Iterable[str]) -> dict[str, str]:
    """``robust.csv``'s columns as the page heads them: 'mean_sign_error_n_train' -> 'Mean sign-error:
    n_train couplings' and so on, in words."""
    words = {
        "measure": "Measure",
        "baseline": "Trivial baseline",
        "couplings": "Couplings",
        "min_pairs": "Seed pairs a coupling needs",
        "mean_sign_error": "Mean sign-error",
        "p90_sign_error": "90th percentile",
        "max_sign_error": "Worst",
    }
    named = {}
    for column in columns:
        if column in words:
            named[column] = words[column]
        elif column.startswith("mean_sign_error_"):
            named[column] = f"Mean sign-error, {column.removeprefix('mean_sign_error_').replace('_', ' ')} couplings"
        elif column.startswith("couplings_"):
            named[column] = f"Couplings in {column.removeprefix('couplings_').replace('_', ' ')}"
        else:
            named[column] = column.replace("_", " ")
    return named


def robust_view_frame(rows: tuple[RobustSummary, ...]) -> Styler:
    """``robust.csv`` as the page shows it: columns and measures in words, sign-errors to three decimals."""
    frame = robust_frame(rows)
    frame = frame.assign(measure=[measure_name(m) for m in frame["measure"]])
    plain = {c: "number" for c in frame.columns if pd.api.types.is_float_dtype(frame[c])}
    names = robust_columns(frame.columns)
    return styled_table(frame.rename(columns=names), {names[c]: kind for c, kind in plain.items()})


#: What repeats and what does not, measured (the manual, docs/lab/index.md: reproducibility).
REPRODUCIBILITY = (
    "A run repeats bit for bit on the same machine with the same BLAS and one thread (how the lab trains). "
    "What changes the order of floating-point sums (another CPU, another thread count) leaves step 0 as it "
    "was and takes training down another path from the first steps on: re-training 12 reference runs with "
    "two threads moved final test errors by up to 0.042 (3.9 standard errors of the difference), gaps by up "
    "to 0.074, log10 ours at p* by up to 0.030, the spectral-norm product by up to 0.38 in log10, α by 0.05, "
    "and the flatness and sharpness (searched then on 512 examples with 4 draws and 8 bisections, a smaller "
    "budget than today's) by factors of up to 3 and 14. Swapped into this table, those 12 runs "
    "move each τ by at most 0.07 and each granulated τ by at most 0.10, less than half an interval's width."
)


def correlation_table(table: tuple[MeasureCorrelation, ...]) -> pd.DataFrame:
    """The correlation table as ``correlations.csv`` holds it for one environment (headers made readable
    on screen), without the environment's ``task`` and ``family`` columns: the page's runs are all of one
    environment, the lab's BERT encoders on the threshold task."""
    return correlations_frame(table).drop(columns=["task", "family"])


def correlation_view(table: tuple[MeasureCorrelation, ...]) -> Styler:
    """:func:`correlation_table` as the page shows it: each measure in plain words, not its short name,
    and each τ and ψ signed to three decimals (:func:`dashboard.wording.numbers.styled_table`, which also sends
    them as shown); ``correlations.csv`` keeps every digit."""
    frame = correlation_table(table)
    signed = {
        c: "signed" for c in frame.columns if pd.api.types.is_float_dtype(frame[c]) and not c.startswith("groups")
    }
    return styled_table(frame.assign(measure=[measure_name(m) for m in frame["measure"]]), signed)


def correlation_columns(columns: pd.Index) -> dict[str, object]:
    """Readable headers (and help) for :func:`correlation_table`'s columns: intervals, psi and groups per
    axis too."""
    number, text = st.column_config.NumberColumn, st.column_config.TextColumn
    definitions = "; ".join(f"{m.name}: {m.definition}" for m in correlated_measures())
    config: dict[str, object] = {
        # as wide as the longest name, and in view while the τ and ψ columns scroll sideways
        "measure": text(
            "Measure",
            help=f"{definitions} (see the manual, docs/lab).",
            width=column_width("Measure", (measure_name(m.name) for m in correlated_measures())),
            pinned=True,
        ),
        "kendall_tau": number("Kendall τ", help="τ-b with the gap over all runs."),
        "granulated_tau": number(
            "Granulated τ",
            help="Jiang et al. (2020): mean over axes of the mean τ among runs differing in that axis alone.",
        ),
        "runs": number("Runs", help="Runs with a finite measure and gap."),
        "kendall_tau_ci_low": number("τ 95 % low", help="Percentile bootstrap over runs."),
        "kendall_tau_ci_high": number("τ 95 % high", help="Percentile bootstrap over runs."),
        "granulated_tau_ci_low": number(
            "granulated 95 % low", help="Percentile bootstrap over the groups of every axis."
        ),
        "granulated_tau_ci_high": number(
            "granulated 95 % high", help="Percentile bootstrap over the groups of every axis."
        ),
        "kendall_tau_a": number("τ-a", help="Ties count as neither agreement nor disagreement."),
        "groups": number("Groups", help="Groups behind the granulated τ, over all axes."),
    }
    for column in columns:
        if column.startswith("psi_") and column.endswith(("_ci_low", "_ci_high")):
            axis = column.removeprefix("psi_").removesuffix("_ci_low").removesuffix("_ci_high")
            end = "low" if column.endswith("_ci_low") else "high"
            config[column] = number(f"ψ {axis} 95 % {end}", help="Bootstrap over this axis's groups.")
        elif column.startswith("psi_"):
            config[column] = number(
                f"ψ {column.removeprefix('psi_')}",
                help="Mean τ-a among runs that differ in this axis alone (empty: no group).",
            )
        elif column.startswith("groups_"):
            config[column] = number(f"groups {column.removeprefix('groups_')}")
    return config


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


# --- opening a step as a model ---------------------------------------------------------------------


def open_as_model(key: str, step: int) -> None:
    """Button callback: the run's profile at ``step`` becomes the session's model on every page.

    Runs before the next script run, so the sidebar's picker can still be set to it.
    """
    from dashboard.widgets.sidebar import show_in_picker

    run = available_runs().get(key)
    try:
        if run is None:
            raise LabError("that run is no longer available here")
        profile = step_profile(key, step, run)
        path = atlas.store_upload(f"{profile.model}.npz", atlas.atlas_bytes([profile]))
        name = atlas.model_name(path, profile.model)
        session.open_model(name, label=model_label(run.spec))
        show_in_picker(name)
    except (SpecboundError, OSError) as exc:
        # the OS error of a store file names its path: one redaction for every message a visitor sees
        message = safety.public_message(exc)
        st.session_state[OPEN_ERROR_KEY] = f"Could not open {split_key(key)[1]} at step {step}: {message}"


# --- the progress panel -----------------------------------------------------------------------------


@st.fragment(run_every=POLL_SECONDS)
def progress_panel() -> None:
    """This session's running job: a bar and a Cancel button, polled; a full rerun when it ends."""
    job = session_job()
    if job is None:
        return
    status = job.status()
    if status.state is not JobState.RUNNING:
        st.rerun()  # the whole page: the finished run joins the picker
    cancelling = job.cancel_event.is_set()
    st.progress(status.fraction, text=f"{job.name}: {'cancelling…' if cancelling else status.text}")
    st.button(
        "Cancel",
        key="lab_cancel",
        on_click=job.cancel,
        disabled=cancelling,
        help="Stop training at the next step; nothing of this run is kept.",
    )
