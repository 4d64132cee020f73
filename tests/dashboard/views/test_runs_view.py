"""The Training runs page's view: a run through training and one saved step, for a shipped lab run (its
errors, a grokking seed's reading) and for a trajectory that logged its own losses."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.views.runs import EDELMAN_LABEL, MEAN_P_LABEL, OURS_LABEL, run_step_view
from dashboard.wording.vocabulary import measure_name, model_label
from specbound.api.analysis import Analysis
from specbound.api.runs import step_row
from specbound.core.bounds import BoundAnalysis
from specbound.core.logspace import LOG10_E
from specbound.present.numbers import format_log
from specbound_lab import reference
from specbound_lab.grokking import run_grokking, run_sentence


@pytest.fixture(scope="module")
def grokking_seed():
    """The first shipped grokking seed at its last two saved steps: (run, frame, analyses by step)."""
    directory = reference.GROKKING_REFERENCE.directory
    run = reference.load_reference(directory).runs[0]
    analyses = {
        s.step: BoundAnalysis.from_profile(reference.step_profile(directory, run, s.step)) for s in run.steps[-2:]
    }
    frame = pd.DataFrame([step_row(step, Analysis(a)) for step, a in analyses.items()])
    return run, frame, analyses


def test_a_grokking_seed_reads_its_record_and_the_rule(grokking_seed) -> None:
    run, frame, analyses = grokking_seed
    step = max(analyses)
    view = run_step_view(run.name, run, frame, step, analyses[step], None)
    row = frame.loc[frame["step"] == step].iloc[0]
    assert view.totals == [
        (OURS_LABEL, format_log(row["ours_log10"] / LOG10_E)),
        (EDELMAN_LABEL, format_log(row["edelman_log10"] / LOG10_E)),
        (MEAN_P_LABEL, f"{row['p_opt_mean']:.3g}"),
    ]
    assert view.lab_caption is not None and view.lab_caption.startswith(f"`{run.name}`: a {model_label(run.spec)}")
    assert view.errors is not None and view.losses is None
    assert view.grokking_sentence == run_sentence(run_grokking(run), measure_name)
    assert view.grokking is not None and "Grokking" in view.grokking.layout.title.text
    assert all(f"{run.name} at step {step}" in (f.layout.title.subtitle.text or "") for f in view.p_map.figures)


def test_a_trajectory_of_its_own_shows_its_logged_losses(minilm, twin) -> None:
    """Two steps, the untrained twin then MiniLM, with the losses a Trainer logged."""
    logged = {0: {"loss": 2.5, "eval_loss": 2.7}, 100: {"loss": 0.4, "eval_loss": 0.9}}
    frame = pd.DataFrame([step_row(step, Analysis(a), logged[step]) for step, a in ((0, twin), (100, minilm))])
    view = run_step_view("my-run", None, frame, 100, minilm, None)
    assert view.lab_caption is None and view.errors is None and view.grokking is None
    assert view.losses is not None
    drawn = {y for trace in view.losses.data for y in trace.y}
    assert {2.5, 2.7, 0.4, 0.9} <= drawn
    assert len(view.spectra) == 4  # QK, V, M_in, M_out: one panel each
    assert view.totals[0] == (OURS_LABEL, format_log(minilm.optimal.log_total))
    earlier = run_step_view("my-run", None, frame, 0, twin, None)
    assert earlier.totals[1] == (EDELMAN_LABEL, format_log(twin.log_edelman))
