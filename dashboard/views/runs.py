"""The Training runs page's two views: one run through training (:func:`run_view`: the proxies, α, the
run's errors for a shipped lab run or its logged losses, a grokking run's reading) and one of its saved
steps (:func:`step_view`: its p* map and singular-value profiles). Two, because the page's expert
picker sits between them and depends on the step's model.

Example, a shipped grokking seed at its last two saved steps:

    >>> import pandas as pd
    >>> from specbound.core.bounds import BoundAnalysis
    >>> from specbound.api.analysis import Analysis
    >>> from specbound.api.runs import step_row
    >>> from specbound_lab import reference
    >>> directory = reference.GROKKING_REFERENCE.directory
    >>> run = reference.load_reference(directory).runs[0]
    >>> analyses = {s.step: BoundAnalysis.from_profile(reference.step_profile(directory, run, s.step))
    ...             for s in run.steps[-2:]}
    >>> frame = pd.DataFrame([step_row(step, Analysis(a)) for step, a in analyses.items()])
    >>> last = max(analyses)
    >>> view = run_view(run.name, run, frame, last)
    >>> [label for label, _ in view.totals], view.grokking is not None, view.losses is None
    (['Ours at p*', 'Edelman-style proxy', 'Mean p*'], True, True)
    >>> len(step_view(run.name, last, analyses[last], None).spectra)  # QK, V, M_in, M_out
    4
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from dashboard.views.common import step_spectra
from dashboard.wording.text import plain
from dashboard.wording.vocabulary import measure_name, model_label
from specbound.core.architecture import Expert
from specbound.core.bounds import BoundAnalysis
from specbound.core.logspace import LOG10_E
from specbound.present.figures import bounds as bound_figures
from specbound.present.figures import trajectory as trajectory_figures
from specbound.present.numbers import format_log
from specbound_lab import figures as lab_figures
from specbound_lab import views as lab_views
from specbound_lab.grokking import run_grokking, run_sentence
from specbound_lab.tasks import Task
from specbound_lab.trajectory import RunTrajectory

#: The headline's labels.
OURS_LABEL, EDELMAN_LABEL, MEAN_P_LABEL = "Ours at p*", "Edelman-style proxy", "Mean p*"


@dataclass(frozen=True)
class RunView:
    """One run through training, the chosen step marked."""

    #: (label, value): ours at p*, the Edelman-style proxy and the mean p* at the step
    totals: list[tuple[str, str]]
    #: the proxies (log10) at every saved step, the step marked
    proxies: go.Figure
    #: log10 α⁽ℓ⁾ per layer at every saved step
    alpha: go.Figure
    #: what a shipped lab run is (markdown, its names escaped); None for any other run
    lab_caption: str | None
    #: a lab run's training and test errors (or losses) at every saved step; None for any other run
    errors: go.Figure | None
    #: a modular-addition run's reading by the grokking rule (plain text) and its figure; None otherwise
    grokking_sentence: str | None
    grokking: go.Figure | None
    #: the losses a trajectory logged (a run that is not the lab's), None when it logged none
    losses: go.Figure | None


@dataclass(frozen=True)
class StepView:
    """One saved step of a run: its p* map and its spectra."""

    #: the step's p* map (its panels side by side)
    p_map: bound_figures.PStarPanels
    #: the step's singular-value profiles, every head drawn, one panel per kind
    spectra: tuple[go.Figure, ...]


def _totals(frame: pd.DataFrame, step: int) -> list[tuple[str, str]]:
    row = frame.loc[frame["step"] == step].iloc[0]
    return [
        (OURS_LABEL, format_log(float(row["ours_log10"]) / LOG10_E)),
        (EDELMAN_LABEL, format_log(float(row["edelman_log10"]) / LOG10_E)),
        (MEAN_P_LABEL, f"{float(row['p_opt_mean']):.3g}"),
    ]


def run_view(name: str, lab: RunTrajectory | None, frame: pd.DataFrame, step: int) -> RunView:
    """Run ``name`` (``lab``: the lab's record of a shipped run, else None) through its trajectory
    ``frame`` (:func:`specbound.api.runs.step_row` per saved step), ``step`` marked."""
    errors = grokking = sentence = caption = losses = None
    if lab is not None:  # the lab measured errors and losses at every saved step
        caption = (
            f"`{name}`: a {model_label(lab.spec)} ({plain(lab.spec.task.describe())}), not a released model; "
            "its errors and losses were measured on its training set and on fresh test samples at every saved step."
        )
        floor = getattr(lab.spec.task, "optimal_loss", None)
        errors = lab_figures.errors_figure(
            lab_views.trajectory_frame(lab), step, loss_gap=lab.final.loss_gap, floor=floor
        )
        if lab.spec.task.kind is Task.MODULAR:
            read = run_grokking(lab)
            sentence, grokking = run_sentence(read, measure_name), lab_figures.grokking_figure(read)
    else:
        losses = trajectory_figures.loss_figure(frame, step)
    return RunView(
        totals=_totals(frame, step),
        proxies=trajectory_figures.proxies_figure(frame, step),
        alpha=trajectory_figures.alpha_figure(frame, step),
        lab_caption=caption,
        errors=errors,
        grokking_sentence=sentence,
        grokking=grokking,
        losses=losses,
    )


def step_view(name: str, step: int, analysis: BoundAnalysis, expert: Expert) -> StepView:
    """Run ``name`` at ``step``, whose analysis is ``analysis``; a mixture of experts' MLPs drawn for
    ``expert`` (the page's picker, which offers the step's own experts)."""
    experts: Sequence[Expert] | None = None if expert is None else [expert]
    return StepView(
        p_map=bound_figures.p_star_heatmap_panels(analysis, source=f"{name} at step {step}", expert=expert),
        spectra=step_spectra(analysis.profile, experts),
    )
