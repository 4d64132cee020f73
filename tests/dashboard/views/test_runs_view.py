"""The Training runs page's view: a run through training and one saved step, for a shipped lab run (its
errors, a grokking seed's reading) and for a trajectory that logged its own losses."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.views.runs import EDELMAN_LABEL, MEAN_P_LABEL, OURS_LABEL, run_view, step_view
from dashboard.wording.vocabulary import model_label
from specbound.api.analysis import Analysis
from specbound.api.runs import step_row
from specbound.core.bounds import BoundAnalysis
from specbound.present.numbers import format_log
from specbound_lab import reference
from specbound_lab.grokking import run_grokking
from specbound_lab.trajectory import RunTrajectory

#: (the run, its last two steps' rows, their analyses by step)
GrokkingSeed = tuple[RunTrajectory, pd.DataFrame, dict[int, BoundAnalysis]]


@pytest.fixture(scope="module")
def grokking_seed() -> GrokkingSeed:
    """The first shipped grokking seed at its last two saved steps: (run, frame, analyses by step)."""
    directory = reference.GROKKING_REFERENCE.directory
    run = reference.load_reference(directory).runs[0]
    analyses = {
        s.step: BoundAnalysis.from_profile(reference.step_profile(directory, run, s.step)) for s in run.steps[-2:]
    }
    frame = pd.DataFrame([step_row(step, Analysis(a)) for step, a in analyses.items()])
    return run, frame, analyses


def test_a_grokking_seed_reads_its_record_and_the_rule(grokking_seed: GrokkingSeed) -> None:
    run, frame, analyses = grokking_seed
    step = max(analyses)
    view = run_view(run.name, run, frame, step)
    analysis = analyses[step]
    assert view.totals == [
        (OURS_LABEL, format_log(analysis.optimal.log_total)),
        (EDELMAN_LABEL, format_log(analysis.log_edelman)),
        (MEAN_P_LABEL, f"{analysis.p_opt.mean():.3g}"),
    ]  # the step's own analysis, read back through its trajectory row
    assert view.lab_caption is not None and view.lab_caption.startswith(f"`{run.name}`: a {model_label(run.spec)}")
    assert view.errors is not None and view.losses is None
    read = run_grokking(run)
    assert view.grokking_sentence is not None
    assert view.grokking_sentence.startswith(
        f"Training accuracy reaches 0.99 at step {read.event.saturation_step:,}, when test accuracy is "
    )
    assert f"test accuracy moves at step {read.event.jump_step:,}" in view.grokking_sentence
    assert view.grokking is not None and "Grokking" in view.grokking.layout.title.text
    at_step = step_view(run.name, step, analysis, None)
    assert all(f"{run.name} at step {step}" in (f.layout.title.subtitle.text or "") for f in at_step.p_map.figures)


def test_a_trajectory_of_its_own_shows_its_logged_losses(minilm: BoundAnalysis, twin: BoundAnalysis) -> None:
    """Two steps, the untrained twin then MiniLM, with the losses a Trainer logged."""
    logged = {0: {"loss": 2.5, "eval_loss": 2.7}, 100: {"loss": 0.4, "eval_loss": 0.9}}
    frame = pd.DataFrame([step_row(step, Analysis(a), logged[step]) for step, a in ((0, twin), (100, minilm))])
    view = run_view("my-run", None, frame, 100)
    assert view.lab_caption is None and view.errors is None and view.grokking is None
    assert view.losses is not None
    drawn = {y for trace in view.losses.data for y in trace.y}
    assert {2.5, 2.7, 0.4, 0.9} <= drawn
    assert len(step_view("my-run", 100, minilm, None).spectra) == 4  # QK, V, M_in, M_out: one panel each
    assert view.totals[0] == (OURS_LABEL, format_log(minilm.optimal.log_total))
    earlier = run_view("my-run", None, frame, 0)
    assert earlier.totals[1] == (EDELMAN_LABEL, format_log(twin.log_edelman))
