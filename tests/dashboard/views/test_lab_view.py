"""The Lab page's view of one run at one saved step: its record's numbers as the page writes them, what
the run is, how its test error was measured, its p* reading, and its spectra when they can be read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dashboard.views.common import step_spectra
from dashboard.views.lab import (
    EDELMAN_LABEL,
    GAP_LABEL,
    TEST_LABEL,
    TOTAL_LABEL,
    TRAIN_LABEL,
    SweepData,
    SweepSource,
    lab_run_view,
    lab_sweep_view,
    p_star_reading,
)
from dashboard.wording.vocabulary import measure_name, model_label
from specbound.core.bounds import BoundAnalysis
from specbound.core.logspace import LN_10
from specbound.present.numbers import format_log
from specbound_lab import reference
from specbound_lab import views as lab_views
from specbound_lab.figures import measure_panel_texts
from specbound_lab.grokking import grokking_runs, grokking_verdict
from specbound_lab.registry import is_baseline
from specbound_lab.tables import comparisons, environment_verdicts
from specbound_lab.trajectory import RunTrajectory
from specbound_lab.verdict import robust_view

DEFAULT_RUN = "lab-L2-N64-H2-n100-q0-s0-t500"


@pytest.fixture(scope="module")
def encoder_run() -> RunTrajectory:
    return reference.load_reference().run(DEFAULT_RUN)


def test_the_totals_are_the_records_numbers(encoder_run: RunTrajectory) -> None:
    run = encoder_run
    step = run.steps[1].step
    record = run.steps[1]
    view = lab_run_view(run, lab_views.trajectory_frame(run), step)
    assert view.totals == [
        (TOTAL_LABEL, format_log(record.ours_log10 * LN_10), None),
        (EDELMAN_LABEL, format_log(record.edelman_log10 * LN_10), None),
        (TRAIN_LABEL, f"{record.train_error:.4f}", None),
        (TEST_LABEL, f"{record.test_error:.4f}", f"± {record.test_error_se:.4f} (one standard error over "
         f"{record.test_samples:,} fresh samples)"),
        (GAP_LABEL, f"{record.gap:+.4f}", "Test − train error."),
    ]  # fmt: skip
    assert view.caption.startswith(f"`{run.name}`: a {model_label(run.spec)} (")
    assert f"{run.params:,} parameters" in view.caption and "not a BERT Miniature" in view.caption


def test_the_p_star_reading_counts_the_matrices_that_left_two(encoder_run: RunTrajectory) -> None:
    run = encoder_run
    final = reference.step_profile(reference.REFERENCE_DIR, run, run.final.step)  # from the stored spectra
    moved = int((BoundAnalysis.from_profile(final).p_opt < 2.0).sum())
    assert p_star_reading(run).endswith(f"{moved} of {final.shape.num_matrices} matrices have p* below 2.")
    view = lab_run_view(run, lab_views.trajectory_frame(run), run.final.step)
    assert view.p_map_reading.endswith(p_star_reading(run))
    assert f"at step {run.final.step}: 0 counts the rank" in view.p_map_reading


def test_the_steps_spectra_are_drawn_when_read(encoder_run: RunTrajectory) -> None:
    run = encoder_run
    profile = reference.step_profile(reference.REFERENCE_DIR, run, run.final.step)
    assert len(step_spectra(profile)) == 4  # QK, V, M_in, M_out
    view = lab_run_view(run, lab_views.trajectory_frame(run), run.final.step)
    assert all(f.layout.title.text for f in (view.proxies, view.alpha, view.errors, view.power_law, view.p_map))


def test_a_next_token_run_counts_sequences_and_its_gap_in_nats() -> None:
    run = reference.load_reference(reference.FIT_MARKOV_REFERENCE_DIR).runs[0]
    view = lab_run_view(run, lab_views.trajectory_frame(run), run.final.step)
    assert "fresh sequences" in view.caption and "computed over sequences, the independent units" in view.caption
    assert "not a released model" in view.caption
    assert view.totals[-1][2] == "Test loss − training loss (nats): next-token prediction."


@pytest.fixture(scope="module")
def fit_sweep() -> SweepData:
    """The shipped ``fit`` sweep: its final checkpoints, correlation table, paired differences, verdicts
    and robust view, as the Lab page's service gives them."""
    shipped = reference.load_reference(reference.FIT_REFERENCE_DIR)
    verdicts = tuple((reference.FIT_REFERENCE.key, v) for v in environment_verdicts(shipped.runs))
    return SweepData(
        frame=lab_views.sweep_frame(shipped.runs),
        table=shipped.correlations,
        differences=comparisons(shipped.runs),
        verdicts=verdicts,
        sources={reference.FIT_REFERENCE.key: SweepSource(reference.FIT_REFERENCE, shipped.runs)},
        robust=robust_view([v for _, v in verdicts]),
    )


def test_a_sweep_reads_its_own_numbers(fit_sweep: SweepData) -> None:
    frame, table, differences, verdicts = fit_sweep.frame, fit_sweep.table, fit_sweep.differences, fit_sweep.verdicts
    view = lab_sweep_view(fit_sweep)
    assert view.runs == len(frame) == 120
    # the reading names the measure (the trivial baselines apart) with the highest τ, and that τ
    best = max((c for c in table if not is_baseline(c.measure) and c.kendall_tau == c.kendall_tau),
               key=lambda c: c.kendall_tau)  # fmt: skip
    assert f"**{measure_name(best.measure)}**" in view.reading and f"τ = {best.kendall_tau:.2f}" in view.reading
    titles, _ = measure_panel_texts(table)
    assert len(view.measures) == len(titles) and view.measures[0].layout.showlegend is not False
    assert all(part.layout.showlegend is False for part in view.measures[1:])  # the sizes' legend once
    assert len(view.comparisons) == len(differences) >= 1
    assert all(measure_name(d.measure) in text for d, text in zip(differences, view.comparisons, strict=True))
    words = f"{model_label(fit_sweep.sources[reference.FIT_REFERENCE.key].runs[0].spec, plural=True)} ("
    assert [shown.verdict for shown in view.verdicts] == [env for _, env in verdicts]
    assert all(shown.source.startswith(words) and shown.source.endswith("shipped)") for shown in view.verdicts)
    assert all(shown.sentence for shown in view.verdicts)
    assert all(shown.title.startswith(f"The verdict of {shown.verdict.environment}: {shown.source}")
               for shown in view.verdicts if shown.verdict.counted)  # fmt: skip
    assert view.robust_cdf is not None  # the fit sweep's environments fitted, with couplings
    assert view.grokking_sentence is None and view.grokking_runs == () and view.grokking_table is None
    # the tables as the page shows them: one row per measure of the table, the measures in words
    assert list(view.correlations.data["measure"]) == [measure_name(c.measure) for c in table]
    assert list(view.correlation_table["measure"]) == [c.measure for c in table]  # the CSV keeps the names
    measures = [m.measure for m in verdicts[0][1].measures]
    assert len(view.verdict_table(0).data) == len(measures)
    assert list(view.robust_table.data["Measure"]) == [measure_name(r.measure) for r in fit_sweep.robust]
    assert view.method.startswith(f"Over the final checkpoints of {len(frame)} runs.")


def test_the_grokking_runs_are_read_and_the_chosen_seed_drawn(fit_sweep: SweepData) -> None:
    runs = grokking_runs(reference.load_reference(reference.GROKKING_REFERENCE_DIR).runs[:2])
    checked = grokking_verdict(runs, permutations=50)
    view = lab_sweep_view(replace(fit_sweep, grokking=runs, grokking_checked=checked))
    assert view.grokking_sentence is not None and view.grokking_sentence.startswith("2 of 2 seeds grok")
    assert "a verdict needs 10" in view.grokking_sentence  # two seeds are measurements, not a verdict
    for run in runs:
        assert f"seed {run.seed}" in view.grokking_figure(run.seed).layout.title.text
    # each measure's lead as the page shows it, in whole steps
    assert view.grokking_table is not None
    shown = view.grokking_table.data
    assert list(shown["Measure"]) == [measure_name(s.measure) for s in checked.summaries]
    assert shown["Median lead (steps)"].dtype == "Int64"


def test_the_answer_says_where_the_pre_registered_study_stands() -> None:
    from dashboard.views.lab import lab_answer_view
    from specbound_lab.answer import shipped_answer
    from specbound_lab.study import study_status

    answer = shipped_answer()
    assert lab_answer_view(answer).study is None  # no corpus shipped: nothing said
    interim = {"interim": True, "runs_trained": 432, "runs_planned": 2160, "sentences": ["Interim, not ..."]}
    view = lab_answer_view(answer, interim)
    assert view.study == study_status(interim) and "432 of its 2,160 runs are trained" in view.study
    assert "Interim" not in view.study  # an interim answer is never what the page opens on
    complete = {**interim, "interim": False, "runs_trained": 2160, "sentences": ["Over 2,000 fitted runs ..."]}
    assert lab_answer_view(answer, complete).study == "The pre-registered study: Over 2,000 fitted runs ..."
    assert lab_answer_view(answer, complete).sentence == view.sentence  # the lab's own answer unchanged
