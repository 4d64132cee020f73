"""The Lab page: its answer first (:func:`lab_answer_view`: the sentence and the forest plot, read from
the shipped tables), then its two views. One run through training at one of its saved steps
(:func:`lab_run_view`): what the run is, the step's totals and errors, the proxies, α, errors, p* and
the power-law α through training, the p* map at the step, how this run's p* moved, and the step's
singular-value profiles. A sweep (:func:`lab_sweep_view`): how to read its correlation table, each
measure against the gap, each against ours at p*, each environment's verdict, the robust view, the
grokking runs' reading and, for a sweep of fine-tunes, its forgetting verdict.

Example, the reference's default run at its last saved step:

    >>> from specbound_lab import reference
    >>> from specbound_lab import views as lab_views
    >>> from dashboard.views.common import step_spectra
    >>> run = reference.load_reference().run("lab-L2-N64-H2-n100-q0-s0-t500")
    >>> step = run.final.step
    >>> view = lab_run_view(run, lab_views.trajectory_frame(run), step)
    >>> [label for label, _, _ in view.totals]
    ['Total (ours at p*)', 'Edelman-style proxy', 'Train error', 'Test error', 'Gap']
    >>> len(step_spectra(reference.step_profile(reference.REFERENCE_DIR, run, step)))  # QK, V, M_in, M_out
    4
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from pandas.io.formats.style import Styler

from dashboard.views import lab_tables
from dashboard.wording import lab as words
from dashboard.wording.text import plain
from dashboard.wording.vocabulary import measure_name, model_label
from specbound.core.logspace import LN_10
from specbound.present.figures import trajectory as trajectory_figures
from specbound.present.figures.style import split_panels
from specbound.present.numbers import format_count, format_log
from specbound_lab import figures
from specbound_lab import views as lab_views
from specbound_lab.answer import LabAnswer
from specbound_lab.correlation import MeasureCorrelation, TauDifference, Verdict
from specbound_lab.grid import FROM_SCRATCH
from specbound_lab.grokking import GrokkingVerdict, RunGrokking, grokking_sentence
from specbound_lab.reference import ShippedReference
from specbound_lab.registry import MEASURES, is_baseline
from specbound_lab.robust import RobustSummary, RobustVerdict
from specbound_lab.study import study_status
from specbound_lab.tables import verdict_frame
from specbound_lab.train import Family
from specbound_lab.trajectory import RunTrajectory
from specbound_lab.verdict import EnvironmentVerdict

#: The step's totals, in the order the page shows them.
TOTAL_LABEL, EDELMAN_LABEL, TRAIN_LABEL, TEST_LABEL, GAP_LABEL = (
    "Total (ours at p*)",
    "Edelman-style proxy",
    "Train error",
    "Test error",
    "Gap",
)


def test_unit(run: RunTrajectory) -> str:
    """What one test sample of the run's task is: a sequence for next-token prediction, else an example."""
    return "fresh sequence" if run.final.loss_gap else "fresh sample"


def standard_error_note(run: RunTrajectory) -> str:
    """Why the standard error of a next-token task counts sequences, not tokens, where it applies."""
    if not run.final.loss_gap:
        return ""
    return (
        " (computed over sequences, the independent units: the predictions within one sequence are "
        "correlated, so this is an upper bound on the error's standard error)"
    )


def p_star_reading(run: RunTrajectory) -> str:
    """Where this run's p* start and end, from its own records."""
    first, last = run.steps[0], run.final
    start = (
        f"At step {first.step} every p* of this run is 2"
        if all(p == 2.0 for p in first.p_opt)
        else f"At step {first.step} the mean p* is {sum(first.p_opt) / len(first.p_opt):.3g}"
    )
    moved = sum(p != 2.0 for p in last.p_opt)
    return f"{start}; at step {last.step}, {moved} of {len(last.p_opt)} matrices have p* below 2."


def flatness_sentence(run: RunTrajectory) -> str:
    """The final checkpoint's flatness and sharpness, or that the run's record predates them."""
    final = run.final
    flatness = ", ".join(
        f"{lab_views.MEASURE_LABELS[name][0]} {final.value(name):.4g}"
        for name in ("pacbayes_flatness", "sharpness")
        if math.isfinite(final.value(name))
    )
    if not flatness:
        return "This run's record predates the flatness and sharpness measures."
    return f"On the final checkpoint (step {final.step}), from the trained model and its training set: {flatness}."


@dataclass(frozen=True)
class LabRunView:
    """One lab run through training, at one saved step."""

    #: what the run is, its size and how its test error was measured (markdown, its names escaped)
    caption: str
    #: (label, value, help or None): ours at p*, Edelman's, train and test error, the gap
    totals: list[tuple[str, str, str | None]]
    flatness: str
    proxies: go.Figure
    alpha: go.Figure
    errors: go.Figure
    p_distribution: go.Figure
    power_law: go.Figure
    #: the p* of every matrix at the step
    p_map: go.Figure
    #: what the p* map shows, and where this run's p* start and end
    p_map_reading: str
    #: what "Open as a model" opens, and under which label
    open_caption: str


def lab_run_view(run: RunTrajectory, frame: pd.DataFrame, step: int) -> LabRunView:
    """``run`` through its trajectory ``frame`` (:func:`specbound_lab.views.trajectory_frame`), at the saved
    ``step``: everything its records hold (the step's spectra, read from its checkpoint or atlas
    afterwards: :func:`dashboard.views.common.step_spectra`)."""
    record = next(s for s in run.steps if s.step == step)
    not_a = "not a BERT Miniature" if run.spec.family is Family.BERT else "not a released model"
    samples = format_count(record.test_samples, test_unit(run))
    caption = (
        f"`{run.name}`: a {model_label(run.spec)} ({plain(run.spec.task.describe())}), {not_a}; {run.params:,} "
        f"parameters, {len(run.matrices)} proxy matrices; test error at step {step} measured on {samples}, "
        f"standard error {record.test_error_se:.4f}{standard_error_note(run)}."
    )
    test_help = f"± {record.test_error_se:.4f} (one standard error over {samples})"
    gap_help = "Test loss − training loss (nats): next-token prediction." if record.loss_gap else "Test − train error."
    floor = getattr(run.spec.task, "optimal_loss", None)
    return LabRunView(
        caption=caption,
        totals=[
            (TOTAL_LABEL, format_log(record.ours_log10 * LN_10), None),
            (EDELMAN_LABEL, format_log(record.edelman_log10 * LN_10), None),
            (TRAIN_LABEL, f"{record.train_error:.4f}", None),
            (TEST_LABEL, f"{record.test_error:.4f}", test_help),
            (GAP_LABEL, f"{record.gap:+.4f}", gap_help),
        ],
        flatness=flatness_sentence(run),
        proxies=trajectory_figures.proxies_figure(frame, step),
        alpha=trajectory_figures.alpha_figure(frame, step),
        errors=figures.errors_figure(frame, step, loss_gap=record.loss_gap, floor=floor),
        p_distribution=figures.p_star_distribution_figure(run, step),
        power_law=figures.power_law_figure(frame, step),
        p_map=figures.p_star_map_figure(lab_views.p_star_map(run, step)),
        p_map_reading=(
            f"Each cell is the p* that minimises that matrix's term at step {step}: 0 counts the rank, "
            f"1 the nuclear norm, 2 the Frobenius norm. {p_star_reading(run)}"
        ),
        open_caption=f"Opens `{run.name}` at step {step} on every page, labelled as a {model_label(run.spec)}.",
    )


# --- the answer -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabAnswerView:
    """What the page opens on: the answer in one sentence and the τ it stands on."""

    #: the question and its answer, computed from the shipped verdict tables (plain text)
    sentence: str
    #: τ with its interval per measure and shipped sweep: the bound, Edelman's, the trivial baselines
    forest: go.Figure
    #: how to read the forest and where its numbers come from
    caption: str
    #: where the pre-registered study stands (:func:`specbound_lab.study.study_status`), when one is shipped
    study: str | None = None


def lab_answer_view(answer: LabAnswer, study: Mapping[str, Any] | None = None) -> LabAnswerView:
    """The lab's answer (:func:`specbound_lab.answer.shipped_answer`, read from the tables) as the page
    opens on it, and where the pre-registered study stands (``study``: its ``answer.json``, read as
    shipped): nothing here bootstraps or reads a run."""
    counted = sum(1 for e in answer.environments())
    return LabAnswerView(
        study=None if study is None else study_status(study),
        sentence=answer.sentence(measure_name),
        forest=figures.verdict_forest(answer, measure_name),
        caption=(
            "Kendall τ between each measure and the measured gap over the fitted runs of each shipped sweep, "
            "with its 95 % interval over configurations (verdict.csv, the table `specbound lab report` "
            f"prints). A point right of 0 orders the runs as their gaps do; {counted} "
            f"environment{'s' if counted != 1 else ''} count, a hollow one was not fitted and is shown only. "
            "The trivial baselines (diamonds) are what a measure should beat; the bound's proxy is the top "
            "row. Each environment's full verdict is in the Sweep view below."
        ),
    )


def lab_inventory(shipped: Sequence[tuple[ShippedReference, int]]) -> str:
    """What the lab trained and how it measures a gap, then each ``shipped`` reference with its number of
    runs (one with none is left out), in markdown: the fold under the answer. Apart from the answer,
    since counting the runs reads every shipped reference's records, which the answer never waits for."""
    return words.trained([words.shipped_item(reference, runs) for reference, runs in shipped if runs])


# --- a sweep ----------------------------------------------------------------------------------------

#: The measure the lab's sweep reads the others against: the spectrum-adaptive proxy at p*.
BASELINE_MEASURE = "ours"


def sweep_reading(table: tuple[MeasureCorrelation, ...], differences: tuple[TauDifference, ...]) -> str:
    """How to read the sweep's correlation table (over all its runs, fitted or not), from its own numbers:
    what τ is, which measure (the trivial baselines apart) orders the runs most like their gaps, where
    ours at p* stands, whether the paired bootstrap tells the two apart, and the strongest baseline's τ."""
    defined = [c for c in table if math.isfinite(c.kendall_tau)]
    ranked = sorted((c for c in defined if not is_baseline(c.measure)), key=lambda c: -c.kendall_tau)
    baselines = [c for c in defined if is_baseline(c.measure)]
    meaning = (
        "Kendall τ is the share of pairs of runs that a measure orders as their measured gaps, minus the "
        "share it orders the other way: +1 always alike, 0 as by chance. This table reads every run, fitted "
        "or not; the verdict below reads the fitted ones."
    )
    ours = next((c for c in ranked if c.measure == BASELINE_MEASURE), None)
    if not ranked or ours is None:
        return meaning
    best = ranked[0]
    place = ranked.index(ours) + 1
    paired = None
    if best is ours:
        runner = ranked[1] if len(ranked) > 1 else None
        after = f", ahead of **{measure_name(runner.measure)}** (τ = {runner.kendall_tau:.2f})" if runner else ""
        sentence = (
            f"{meaning} In this sweep **{measure_name(BASELINE_MEASURE)}** orders the runs most like their gaps "
            f"(τ = {ours.kendall_tau:.2f}){after}."
        )
    else:
        sentence = (
            f"{meaning} In this sweep **{measure_name(best.measure)}** tracks the measured gap best "
            f"(τ = {best.kendall_tau:.2f}); **{measure_name(BASELINE_MEASURE)}** comes {_ordinal(place)} of "
            f"{len(ranked)} (τ = {ours.kendall_tau:.2f}), so here it orders the runs less like their gaps."
        )
        paired = next((d for d in differences if d.measure == best.measure and d.other == BASELINE_MEASURE), None)
    if paired is not None and paired.runs >= 2:
        low, high = paired.kendall_tau_ci.low, paired.kendall_tau_ci.high
        told = paired.kendall_verdict is not Verdict.INDISTINGUISHABLE
        sentence += (
            f" The paired bootstrap {'does' if told else 'does not'} tell the two apart: the difference in τ "
            f"lies between {low:+.2f} and {high:+.2f} (95\u00a0%)."
        )
    if baselines:  # each baseline read in the one direction the registry declares for it, never turned
        strongest = max(baselines, key=lambda c: c.kendall_tau * MEASURES[c.measure].orientation)
        declared = strongest.kendall_tau * MEASURES[strongest.measure].orientation
        turned = (
            " (a lower value read as a larger gap, as declared)" if MEASURES[strongest.measure].orientation < 0 else ""
        )
        beaten = best.kendall_tau > declared
        sentence += (
            f" Of the trivial baselines, **{measure_name(strongest.measure)}**{turned} has τ = {declared:.2f}: "
            f"{'below' if beaten else 'at least'} the best measure's (the verdict below tests the difference)."
        )
    return sentence + " A proxy of a bound can hold for every run and still rank them poorly: τ asks a harder question."


def _ordinal(place: int) -> str:
    return {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(place, f"{place}th")


@dataclass(frozen=True)
class SweepSource:
    """Where a sweep's runs come from: a shipped reference, or this server's store (``shipped`` None)."""

    shipped: ShippedReference | None
    runs: tuple[RunTrajectory, ...]

    @property
    def words(self) -> str:
        """The sweep as the page names it (its Runs choice)."""
        return words.sweep_choice(self.shipped, self.runs)


@dataclass(frozen=True, eq=False)
class SweepData:
    """What the sweep view reads about one choice of runs (the Lab page's service caches each part)."""

    #: one row per final checkpoint (:func:`specbound_lab.views.sweep_frame`)
    frame: pd.DataFrame
    #: each measure's τ with the gap over every run, fitted or not
    table: tuple[MeasureCorrelation, ...]
    #: each measure against ours at p*, paired-bootstrapped
    differences: tuple[TauDifference, ...]
    #: (the origin of the sweep it comes from, one environment's verdict)
    verdicts: tuple[tuple[str, EnvironmentVerdict], ...]
    #: each origin of :attr:`verdicts`
    sources: Mapping[str, SweepSource]
    #: Dziugaite et al.'s robust view over the environments that count
    robust: tuple[RobustSummary, ...]
    #: the shipped grokking runs (none when the package ships none) and their verdict
    grokking: tuple[RunGrokking, ...] = ()
    grokking_checked: GrokkingVerdict | None = None
    #: each verdict's rows of verdict.csv, in the order of :attr:`verdicts` (as shipped; empty: built here
    #: from the verdicts by :func:`~specbound_lab.tables.verdict_frame`)
    verdict_tables: tuple[pd.DataFrame, ...] = ()
    #: the robust view's reading (:func:`~specbound_lab.robust.robust_verdict` of :attr:`robust`, a paired
    #: bootstrap) when the service holds it; None: read here
    robust_reading: RobustVerdict | None = None
    #: forgetting.csv of a fine-tuning sweep whose runs recorded forgetting (None: not recorded)
    forgetting: pd.DataFrame | None = None


@dataclass(frozen=True, eq=False)
class VerdictShown:
    """One environment's verdict as the page shows it."""

    #: the sweep it comes from, in words
    source: str
    verdict: EnvironmentVerdict
    #: the verdict in sentences
    sentence: str
    #: the title of its table's fold: a verdict, or a table shown and not counted
    title: str
    #: its rows of verdict.csv
    table: pd.DataFrame


@dataclass(frozen=True, eq=False)
class LabSweepView:
    """A sweep's measures against the gap, its verdicts, the robust view and the grokking runs: every
    sentence, figure and table of the page's Sweep view."""

    #: the final checkpoints the table reads
    runs: int
    #: how the correlation table is computed (the caption under the Runs choice)
    method: str
    #: how to read the correlation table, from its own numbers (markdown, names in bold)
    reading: str
    #: the bold line above the measures' panels
    measures_heading: str
    #: each measure against the gap, one panel each (the legend of training-set sizes on the first only)
    measures: tuple[go.Figure, ...]
    #: the correlation table as ``correlations.csv`` holds it (the download), and as the page shows it
    correlation_table: pd.DataFrame
    correlations: Styler
    #: each measure's τ minus ours at p*, paired-bootstrapped
    differences: go.Figure
    #: each of those differences in words
    comparisons: tuple[str, ...]
    #: each environment's verdict, in words, with its table's title (:meth:`verdict_table` builds the table)
    verdicts: tuple[VerdictShown, ...]
    #: the robust view in words, its distribution of sign-errors (None without a coupling) and its table
    robust_sentence: str
    robust_cdf: go.Figure | None
    robust_table: Styler
    #: the grokking runs' reading in words; None without grokking runs
    grokking_sentence: str | None
    #: the grokking runs, one per seed (:meth:`grokking_figure` draws one)
    grokking_runs: tuple[RunGrokking, ...]
    #: each measure's lead (None without the grokking verdict)
    grokking_table: Styler | None
    #: a fine-tuning sweep's forgetting verdict in one sentence (or why there is none yet) and its table
    #: (None: not a fine-tuning sweep; the table None while its runs recorded no forgetting)
    forgetting_sentence: str | None = None
    forgetting_table: Styler | None = None

    def grokking_figure(self, seed: int) -> go.Figure:
        """The curves of the grokking run of ``seed`` against its steps (one seed is picked at a time)."""
        return figures.grokking_figure(next(run for run in self.grokking_runs if run.seed == seed))

    def verdict_table(self, number: int) -> Styler:
        """The table of the verdict ``number`` (built when its fold opens: six styled tables were a third
        of a switch to this view)."""
        return lab_tables.verdict_view_frame(self.verdicts[number].table)


def verdict_title(source: str, env: EnvironmentVerdict) -> str:
    """The fold of one environment's table: its verdict, or a table shown and not counted, and why."""
    if env.counted:
        return f"The verdict of {env.environment}: {source} (table)"
    return f"The table of {env.environment}: {source} (shown, not counted: {env.not_counted_because})"


def lab_sweep_view(data: SweepData) -> LabSweepView:
    """The sweep ``data``: its final checkpoints with their correlation table and paired differences
    against ours, the verdicts of its environments (each with the sweep it comes from), the robust view
    over them, and the shipped grokking runs with their verdict (the leads, the null, the positive
    control and the power check)."""
    frame, table, differences = data.frame, data.table, data.differences
    titles, subtitles = figures.measure_panel_texts(table)
    measures = split_panels(figures.measures_figure(frame, table), titles=titles, subtitles=subtitles)
    for part in measures[1:]:
        part.update_layout(showlegend=False)  # the training-set sizes' legend once, with the first
    shown = []
    tables = data.verdict_tables or tuple(verdict_frame((env,)) for _, env in data.verdicts)
    for (origin, env), rows in zip(data.verdicts, tables, strict=True):
        source = data.sources[origin].words
        sentence = " ".join(lab_views.verdict_sentences(env, measure_name))
        shown.append(VerdictShown(source, env, sentence, verdict_title(source, env), rows))
    robust = data.robust
    grokking, checked = data.grokking, data.grokking_checked
    return LabSweepView(
        runs=len(frame),
        method=words.sweep_method(len(frame)),
        reading=sweep_reading(tuple(table), tuple(differences)),
        measures_heading=words.measures_heading(len(frame)),
        measures=tuple(measures),
        correlation_table=lab_tables.correlation_table(table),
        correlations=lab_tables.correlation_view(table),
        differences=figures.difference_forest(differences, measure_name),
        comparisons=tuple(lab_views.comparison_sentence(d, measure_name) for d in differences),
        verdicts=tuple(shown),
        robust_sentence=lab_views.robust_sentence(robust, measure_name, reading=data.robust_reading),
        robust_cdf=figures.robust_cdf_figure(robust) if any(r.couplings for r in robust) else None,
        robust_table=lab_tables.robust_view_frame(robust),
        grokking_sentence=grokking_sentence(grokking, measure_name, verdict=checked) if grokking else None,
        grokking_runs=tuple(grokking),
        grokking_table=lab_tables.grokking_view_frame(checked.summaries) if grokking and checked else None,
        **_forgetting_shown(frame, data.forgetting),
    )


def _forgetting_shown(frame: pd.DataFrame, table: pd.DataFrame | None) -> dict[str, Any]:
    """The forgetting section's sentence and table: for a sweep of fine-tunes only, from its forgetting.csv
    (the sentence saying there is none yet while its runs predate it)."""
    tuned = "fine_tuning" in frame.columns and bool((frame["fine_tuning"] != FROM_SCRATCH).any())
    if not tuned:
        return {}
    if table is None or table.empty:
        return {"forgetting_sentence": words.FORGETTING_NOT_RECORDED}
    return {
        "forgetting_sentence": words.forgetting_sentence(table, measure_name),
        "forgetting_table": lab_tables.forgetting_view_frame(table),
    }
