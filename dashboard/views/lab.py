"""The Lab page's view of one run through training and one of its saved steps: what the run is, the
step's totals and errors, the proxies, α, errors, p* and the power-law α through training, the p* map
at the step, how this run's p* moved, and the step's singular-value profiles.

Example, the reference's default run at its last saved step:

    >>> from specbound_lab import reference
    >>> from specbound_lab import views as lab_views
    >>> run = reference.load_reference().run("lab-L2-N64-H2-n100-q0-s0-t500")
    >>> step = run.final.step
    >>> profile = reference.step_profile(reference.REFERENCE_DIR, run, step)
    >>> view = lab_run_view(run, lab_views.trajectory_frame(run), step, profile)
    >>> [label for label, _, _ in view.totals]
    ['Total (ours at p*)', 'Edelman-style proxy', 'Train error', 'Test error', 'Gap']
    >>> len(view.spectra)  # QK, V, M_in, M_out
    4
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from dashboard.wording.text import plain
from dashboard.wording.vocabulary import model_label
from specbound.core.logspace import LN_10
from specbound.core.profile import SpectralProfile
from specbound.present.figures import trajectory as trajectory_figures
from specbound.present.figures.spectra import singular_value_profiles
from specbound.present.figures.style import split_panels
from specbound.present.numbers import format_count, format_log
from specbound_lab import figures
from specbound_lab import views as lab_views
from specbound_lab.trajectory import RunTrajectory

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
    #: the step's singular-value profiles, every head drawn; empty when its spectra cannot be read
    spectra: tuple[go.Figure, ...]


def lab_run_view(run: RunTrajectory, frame: pd.DataFrame, step: int, profile: SpectralProfile | None) -> LabRunView:
    """``run`` through its trajectory ``frame`` (:func:`specbound_lab.views.trajectory_frame`), at the saved
    ``step``, whose spectral profile is ``profile`` (None: it could not be read, so no profiles)."""
    record = next(s for s in run.steps if s.step == step)
    not_a = "not a BERT Miniature" if run.spec.family == "bert" else "not a released model"
    samples = format_count(record.test_samples, test_unit(run))
    caption = (
        f"`{run.name}`: a {model_label(run.spec)} ({plain(run.spec.task.describe())}), {not_a}; {run.params:,} "
        f"parameters, {len(run.matrices)} proxy matrices; test error at step {step} measured on {samples}, "
        f"standard error {record.test_error_se:.4f}{standard_error_note(run)}."
    )
    test_help = f"± {record.test_error_se:.4f} (one standard error over {samples})"
    gap_help = "Test loss − training loss (nats): next-token prediction." if record.loss_gap else "Test − train error."
    floor = getattr(run.spec.task, "optimal_loss", None)
    spectra = (
        () if profile is None else split_panels(singular_value_profiles(profile, heads=range(profile.shape.num_heads)))
    )
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
        spectra=tuple(spectra),
    )
