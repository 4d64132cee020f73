"""The Lab page: its numbers are the shipped reference's (runs.csv, trajectories, correlations.csv), the
step slider moves the p* map and the spectra, a tiny run trains from the form (and can be cancelled),
a step opens as the model of the other pages, and the Scaling page draws the lab's family."""

from __future__ import annotations

import io
import math
import time

import numpy as np
import pandas as pd
import pytest
from app_harness import APP, TIMEOUT_S, run_clean, table_columns
from streamlit.testing.v1 import AppTest

from dashboard.services import lab as service
from dashboard.state.atlas import shown_member
from dashboard.views.lab import sweep_reading
from dashboard.widgets.tables import CELL_PAD_PX, CHAR_PX
from dashboard.wording import lab as words
from dashboard.wording.numbers import shown_value
from dashboard.wording.text import OPTIMAL_LABEL, plain
from dashboard.wording.vocabulary import measure_name
from specbound.core.bounds import BoundAnalysis
from specbound.io.atlas import load_atlas
from specbound.present.numbers import format_log
from specbound.studies.scaling import Axis, Proxy, ScalingStudy, summarize
from specbound_lab import reference, views
from specbound_lab.tables import (
    CORRELATIONS_CSV,
    RUNS_CSV,
    VERDICT_CSV,
    comparisons,
    read_results,
    verdict_frame,
)

RUN = "lab-L2-N64-H2-n100-q0-s0-t500"
RUN_KEY = service.run_key(service.REFERENCE, RUN)
#: How long a test waits for a training thread (a tiny run takes a few seconds).
TRAINING_WAIT_S = 120


@pytest.fixture(scope="module")
def runs_csv() -> pd.DataFrame:
    return pd.read_csv(reference.REFERENCE_DIR / RUNS_CSV)


def _row(runs_csv: pd.DataFrame, run: str, step: int) -> pd.Series:
    (index,) = runs_csv.index[(runs_csv["run"] == run) & (runs_csv["step"] == step)]
    return runs_csv.loc[index]


def _metric(at: AppTest, label: str) -> str:
    (metric,) = [m for m in at.metric if m.label == label]
    return metric.value


@pytest.fixture
def lab_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/lab.py")
    return run_clean(at)


def _dataframe(at: AppTest, column: str) -> pd.DataFrame:
    (frame,) = [d.value for d in at.dataframe if column in d.value.columns]
    return frame


def _trace(figure: dict, name: str) -> dict:
    (trace,) = [t for t in figure["data"] if t.get("name") == name]
    return trace


def test_a_reference_run_shows_the_reference_numbers(lab_app, runs_csv, figure_titled) -> None:
    at = lab_app
    assert [t.value for t in at.title] == ["Lab"]
    assert not at.error
    assert at.selectbox(key="lab_run").value == RUN_KEY
    assert at.select_slider(key="lab_step").value == 500
    assert any(words.LAB_MODEL_LABEL in c.value and "not a BERT Miniature" in c.value for c in at.caption)
    final = _row(runs_csv, RUN, 500)
    assert _metric(at, "Total (ours at p*)") == format_log(math.log(final["ours"]))
    assert _metric(at, "Edelman-style proxy") == format_log(math.log(final["edelman"]))
    assert _metric(at, "Gap") == f"{final['gap']:+.4f}"

    rows = runs_csv[runs_csv["run"] == RUN].sort_values("step")
    proxies = figure_titled(at, "Proxies through training")
    np.testing.assert_array_equal(_trace(proxies, "ours at p*")["x"], rows["step"])
    np.testing.assert_allclose(_trace(proxies, "ours at p*")["y"], rows["ours_log10"], rtol=1e-12)
    np.testing.assert_allclose(_trace(proxies, "Edelman-style")["y"], rows["edelman_log10"], rtol=1e-12)
    np.testing.assert_allclose(_trace(proxies, "ours at p = 0")["y"], rows["ours_p0_log10"], rtol=1e-12)
    errors = figure_titled(at, "Errors and gap")
    np.testing.assert_allclose(_trace(errors, "train error")["y"], rows["train_error"], rtol=1e-12)
    np.testing.assert_allclose(_trace(errors, "test error (± 1 s.e.)")["y"], rows["test_error"], rtol=1e-12)
    np.testing.assert_allclose(_trace(errors, "gap = test − train")["y"], rows["gap"], rtol=1e-12)
    run = reference.load_reference().run(RUN)
    alpha = figure_titled(at, "log10 α per layer")
    np.testing.assert_allclose(_trace(alpha, "layer 1")["y"], [s.log10_alpha[1] for s in run.steps], rtol=1e-12)
    boxes = figure_titled(at, "p* of the 12 matrices")["data"]
    assert [list(b["y"]) for b in boxes] == [list(s.p_opt) for s in run.steps]
    power_law = figure_titled(at, "Power-law α through training")
    np.testing.assert_allclose(_trace(power_law, "α")["y"], rows["alpha"], rtol=1e-12)
    np.testing.assert_allclose(_trace(power_law, "α̂ = α log10 λ_max")["y"], rows["alpha_hat"], rtol=1e-12)
    flatness = next(c.value for c in at.caption if c.value.startswith("On the final checkpoint"))
    assert f"PAC-Bayes flatness 1/σ′² {final['pacbayes_flatness']:.4g}" in flatness
    assert f"sharpness 1/α′² {final['sharpness']:.4g}" in flatness


DECODER_RUN = "lab-gpt2-markov-L2-N64-H2-n16-q0-s0-t500"


def test_a_shipped_decoder_run_shows_its_losses_and_a_gap_on_the_loss(lab_app, figure_titled) -> None:
    """SPEC §13: offline, the Lab page shows a trained decoder, its gap on the loss beside the task's
    entropy rate, and p* that training moved."""
    at = lab_app
    key = service.run_key(service.DECODER, DECODER_RUN)
    run = reference.load_reference(reference.DECODER_REFERENCE_DIR).run(DECODER_RUN)
    at.selectbox(key="lab_run").set_value(key)
    run_clean(at)
    assert not at.error
    final = run.final
    assert (
        at.selectbox(key="lab_run")
        .options[at.selectbox(key="lab_run").index]
        .startswith("small GPT-2 decoder trained by the lab on the Markov next-token task: L = 2, N = 64")
    )
    assert _metric(at, "Gap") == f"{final.test_loss - final.train_loss:+.4f}"
    assert _metric(at, "Total (ours at p*)") == format_log(final.ours_log10 * math.log(10))
    caption = next(c.value for c in at.caption if c.value.startswith(f"`{DECODER_RUN}`"))
    assert "small GPT-2 decoder trained by the lab on the Markov next-token task" in caption
    assert f"{final.test_samples:,} fresh sequences" in caption and "upper bound" in caption
    losses = figure_titled(at, "Losses and gap")
    np.testing.assert_allclose(_trace(losses, "train loss")["y"], [s.train_loss for s in run.steps], rtol=1e-12)
    np.testing.assert_allclose(_trace(losses, "test loss")["y"], [s.test_loss for s in run.steps], rtol=1e-12)
    np.testing.assert_allclose(_trace(losses, "gap = test − train loss")["y"], [s.gap for s in run.steps], rtol=1e-12)
    entropy = run.spec.task.optimal_loss
    (floor,) = [t for t in losses["data"] if t["name"].startswith("entropy rate")]
    assert floor["y"] == [entropy, entropy] and 0 < entropy < min(s.test_loss for s in run.steps)
    moved = sum(p < 2.0 for p in final.p_opt)
    reading = " ".join(m.value for m in at.markdown)
    assert f"At step 0 every p* of this run is 2; at step 500, {moved} of 12 matrices have p* below 2." in reading
    assert moved > 0


def test_the_sweep_view_reads_the_shipped_decoder_sweep(lab_app) -> None:
    at = lab_app
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    radio = at.radio(key="lab_sweep")
    assert list(radio.options) == [
        "small encoders trained by the lab on the sparse threshold task (shipped)",
        "small encoders trained by the lab on the sparse threshold task (trained until they fit, 5 seeds, 2 learning "
        "rates, shipped)",
        "small GPT-2 decoders trained by the lab on the sparse threshold task (trained until they fit, 5 seeds, 2 "
        "learning rates, shipped)",
        "small GPT-2 decoders trained by the lab on the Markov next-token task (a fixed budget, 5 seeds, 2 "
        "learning rates, shipped)",
        "small Llama decoders trained by the lab on the Markov next-token task (a fixed budget, 5 seeds, 2 "
        "learning rates, shipped)",
        "small encoders trained by the lab on the sparse threshold task (fine-tuned from the shipped base: full and "
        "LoRA ranks 1, 4, 16, shipped)",
    ]
    radio.set_value(service.FIT_MARKOV)
    run_clean(at)
    assert not at.error
    expected = pd.read_csv(reference.FIT_MARKOV_REFERENCE_DIR / CORRELATIONS_CSV)
    shown = _dataframe(at, "granulated_tau").reset_index(drop=True)
    assert list(shown["measure"]) == [measure_name(m) for m in expected["measure"]]
    shown_tau = shown["kendall_tau"].map(shown_value)  # "—": an undefined τ
    np.testing.assert_allclose(shown_tau, expected["kendall_tau"].round(3), atol=1e-12)
    assert (shown["runs"] == 120).all()
    table = reference.load_reference(reference.FIT_MARKOV_REFERENCE_DIR).correlations
    reading = " ".join(m.value for m in at.markdown)
    assert (
        sweep_reading(table, comparisons(reference.load_reference(reference.FIT_MARKOV_REFERENCE_DIR).runs)) in reading
    )


def test_the_step_slider_shows_that_steps_p_map_and_spectra(lab_app, runs_csv, figure_titled) -> None:
    at = lab_app
    at.select_slider(key="lab_step").set_value(125)
    run_clean(at)
    run = reference.load_reference().run(RUN)
    record = next(s for s in run.steps if s.step == 125)
    assert _metric(at, "Total (ours at p*)") == format_log(math.log(_row(runs_csv, RUN, 125)["ours"]))
    p_map = figure_titled(at, "p* map at step 125")["data"][0]
    np.testing.assert_array_equal(np.asarray(p_map["z"]), np.reshape(record.p_opt, (2, 6)))
    assert list(p_map["x"]) == ["QK h0", "QK h1", "V h0", "V h1", "M_in", "M_out"]
    assert not np.array_equal(np.asarray(p_map["z"]), np.reshape(run.final.p_opt, (2, 6)))  # it moved
    for title in ("Proxies through training", "Errors and gap", "log10 α per layer"):  # the dotted step line
        (line,) = figure_titled(at, title)["layout"]["shapes"]
        assert (line["x0"], line["x1"]) == (125, 125)

    profile = reference.step_profile(reference.REFERENCE_DIR, run, 125)
    spectra = figure_titled(at, "QK · ")  # the profiles: one chart per kind (stacked on a phone), QK first
    first = spectra["data"][0]  # layer 0, QK head 0: its nonzero singular values
    rank = int(profile.rank[0])
    np.testing.assert_allclose(first["y"], profile.singular_values[0, :rank], rtol=1e-12)
    assert at.query_params["lab_step"] == "125"


def test_a_link_reproduces_the_run_and_step(runs_csv) -> None:
    other = "lab-L1-N32-H2-n400-q0.1-s1-t500"
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"lab_view": "run", "lab_run": service.run_key(service.REFERENCE, other), "lab_step": "250"})
    run_clean(at)
    at.switch_page("pages/lab.py")
    run_clean(at)
    assert at.selectbox(key="lab_run").value == service.run_key(service.REFERENCE, other)
    assert at.select_slider(key="lab_step").value == 250
    assert _metric(at, "Total (ours at p*)") == format_log(math.log(_row(runs_csv, other, 250)["ours"]))
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    at.radio(key="lab_view").set_value("One run through training")
    run_clean(at)  # back from the sweep: the same run and step
    assert at.selectbox(key="lab_run").value == service.run_key(service.REFERENCE, other)
    assert at.select_slider(key="lab_step").value == 250


def test_the_sweep_view_is_the_reference_correlation_table(lab_app, plotly_specs) -> None:
    at = lab_app
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    expected = pd.read_csv(reference.REFERENCE_DIR / CORRELATIONS_CSV)
    shown = _dataframe(at, "granulated_tau").reset_index(drop=True)
    # the numbers of correlations.csv, each measure named in plain words (the CSV keeps the short names)
    assert list(shown["measure"]) == [measure_name(m) for m in expected["measure"]]
    assert "spectral_product" not in set(shown["measure"]) and "product of spectral norms" in set(shown["measure"])
    # to the three decimals shown (the browser's table keeps what it is sent), every digit in the CSV
    taus = [c for c in expected.columns if pd.api.types.is_float_dtype(expected[c]) and not c.startswith("groups")]
    sent = shown.drop(columns="measure")
    for column in sent.columns:  # a column with an empty cell is sent as its texts, the empty cell as "—"
        if not pd.api.types.is_numeric_dtype(sent[column]) and not pd.api.types.is_bool_dtype(sent[column]):
            sent[column] = sent[column].map(shown_value)
    pd.testing.assert_frame_equal(
        sent,
        expected.drop(columns=["measure", "task", "family"]).round(dict.fromkeys(taus, 3)),  # one environment
        check_dtype=False,
        rtol=1e-12,
    )
    assert not expected[taus].equals(expected[taus].round(3))  # the CSV has more digits than the screen
    assert (shown["runs"] == 48).all()
    # the longest measure name whole ("power-law exponent α of the spectra" was cut), in view while scrolling
    (element,) = [d for d in at.dataframe if "granulated_tau" in d.value.columns]
    measure = table_columns(element)["measure"]
    longest = max(shown["measure"], key=len)
    assert measure["width"] >= CELL_PAD_PX + CHAR_PX * len(longest) and measure["pinned"], (measure, longest)

    # one chart per measure (three to a row, stacked on a phone), its τ and intervals in the subtitle
    assert (
        "**Each measure against the gap over the final checkpoints of 48 runs, fitted or not** (descriptive: the "
        "verdict below reads the fitted runs alone)" in [m.value for m in at.markdown]
    )
    parts = [f for f in plotly_specs(at) if f["layout"]["title"].get("subtitle", {}).get("text", "").startswith("τ")]
    assert len(parts) == len(expected)

    def signed(value: float) -> str:  # an undefined τ (the optimisation steps: one value) reads n/a
        return "n/a" if math.isnan(value) else f"{value:+.2f}"

    for part, row in zip(parts, expected.itertuples(), strict=True):
        tau = f"τ = {signed(row.kendall_tau)} [{signed(row.kendall_tau_ci_low)}, {signed(row.kendall_tau_ci_high)}]"
        granulated = (
            f"granulated τ = {signed(row.granulated_tau)} "
            f"[{signed(row.granulated_tau_ci_low)}, {signed(row.granulated_tau_ci_high)}]"
        )
        subtitle = part["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")
        assert f"{tau} · {granulated}" in subtitle
    finals = pd.read_csv(reference.REFERENCE_DIR / RUNS_CSV).query("final")
    ours_x = np.concatenate([np.asarray(t["x"], float) for t in parts[0]["data"] if t["x"][0] is not None])
    gap_y = np.concatenate([np.asarray(t["y"], float) for t in parts[0]["data"] if t["x"][0] is not None])
    np.testing.assert_allclose(
        np.array(sorted(zip(ours_x, gap_y, strict=True))),
        np.array(sorted(zip(finals["ours_log10"], finals["gap"], strict=True))),
        rtol=1e-12,
    )
    assert parts[5]["layout"]["xaxis"]["type"] == "log"  # parameters: a plain count, drawn on a log axis
    assert parts[0]["layout"].get("showlegend", True) and all(p["layout"]["showlegend"] is False for p in parts[1:])

    # one sentence per other measure, saying whether its paired difference from ours excludes 0
    runs = reference.load_reference().runs
    shown_text = " ".join(m.value for m in at.markdown)
    for difference in comparisons(runs):
        sentence = views.comparison_sentence(difference, measure_name)
        assert sentence in shown_text and f"({difference.measure})" not in shown_text
        if difference.measure == "spectral_product":
            low, high = difference.kendall_tau_ci.low, difference.kendall_tau_ci.high
            verdict = "not distinguishable" if low <= 0 <= high else "distinguishably"
            assert (
                f"τ differs by {difference.kendall_tau:+.2f} (95 % interval {low:+.2f} to {high:+.2f}), {verdict}"
                in sentence
            )
    assert any("Reproducibility." in c.value and "bit for bit" in c.value for c in at.caption)
    # and the same differences as a forest plot: a point and a 95 % bar per measure, a line at 0
    from specbound_lab.registry import is_baseline

    (forest,) = [f for f in plotly_specs(at) if f["layout"]["title"]["text"].startswith("Against ours at p*")]
    (points,) = forest["data"]
    by_label = dict(zip(points["y"], points["x"], strict=True))
    for difference in comparisons(runs):
        if not math.isfinite(difference.kendall_tau):  # a constant measure (every run's 500 steps) has no τ
            assert measure_name(difference.measure) + " (baseline)" not in by_label
            continue
        label = measure_name(difference.measure) + (" (baseline)" if is_baseline(difference.measure) else "")
        assert by_label[label] == pytest.approx(difference.kendall_tau, abs=1e-12)

    # the reading of the sweep, from its own numbers: τ explained, the best measure (the trivial baselines
    # apart) and where ours stands, and the strongest baseline beside them
    from specbound_lab.registry import MEASURES

    table = reference.load_reference().correlations
    measures = [c for c in table if math.isfinite(c.kendall_tau) and not MEASURES[c.measure].baseline]
    best = max(measures, key=lambda c: c.kendall_tau)
    ours = next(c for c in table if c.measure == "ours")
    (reading,) = [m.value for m in at.markdown if m.value.startswith("Kendall τ is the share")]
    assert f"**{measure_name(best.measure)}** tracks the measured gap best (τ = {best.kendall_tau:.2f})" in reading
    assert f"(τ = {ours.kendall_tau:.2f}), so here it orders the runs less like their gaps" in reading
    assert "This table reads every run, fitted or not" in reading
    # each baseline in its declared direction (the final training loss turned round), never |τ|
    baselines = [c for c in table if MEASURES[c.measure].baseline]
    strongest = max(baselines, key=lambda c: c.kendall_tau * MEASURES[c.measure].orientation)
    declared = strongest.kendall_tau * MEASURES[strongest.measure].orientation
    assert f"Of the trivial baselines, **{measure_name(strongest.measure)}**" in reading
    assert f"has τ = {declared:.2f}" in reading


def test_the_sweep_view_shows_the_verdicts_and_the_robust_view_over_the_shipped_sweeps(lab_app, figure_titled) -> None:
    """Offline, the verdict of each shipped sweep, each read as its own (what it stands on, in sentences
    from its numbers, and its table), and the robust view over the couplings of the fitted ones, with its CDF."""
    from specbound_lab.verdict import robust_view

    at = lab_app
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    # the verdicts the page drew (the service's, computed by the switch above): each sweep's are its shipped
    # verdict.csv, read here rather than bootstrapped a second time
    drawn = service.verdicts(service.REFERENCE)
    for shipped in reference.SWEEP_REFERENCES:
        own = [v for sweep, v in drawn if sweep == shipped.key]
        written = pd.read_csv(io.StringIO(verdict_frame(own).to_csv(index=False)))
        pd.testing.assert_frame_equal(
            written, pd.read_csv(shipped.directory / VERDICT_CSV), check_exact=False, rtol=0, atol=1e-12
        )
    judged = [v for _, v in drawn]
    assert [v.environment for v in judged] == [
        "threshold/bert",
        "threshold/bert",
        "threshold/gpt2",
        "markov/gpt2",
        "markov/llama",
        "threshold/bert fine-tuned",
    ]
    rows = robust_view(judged)
    shown_text = " ".join(m.value for m in at.markdown)
    for env in judged:
        assert plain(" ".join(views.verdict_sentences(env, measure_name))) in shown_text
    assert plain(views.robust_sentence(rows, measure_name)) in shown_text
    class_sweep, fit_sweep, fit_decoders, *markov, fine_tuned = judged
    assert class_sweep.status == "not fitted" and not class_sweep.counted
    assert "shown, not counted (under 80% of its runs fitted" in views.verdict_sentences(class_sweep)[0]
    for fitted in (fit_sweep, fit_decoders):
        assert fitted.status == "fitted" and fitted.seeds == 5 and fitted.configurations == 24
    assert fine_tuned.seeds == 5 and fine_tuned.configurations == 16  # full and three LoRA ranks x n x rate
    for fixed in markov:  # next-token prediction: a fixed budget, the same design
        assert fixed.status == "fixed budget" and fixed.seeds == 5 and fixed.configurations == 24
    assert {e for r in rows for e in r.environments} <= {
        "threshold/bert",
        "threshold/gpt2",
        "markov/gpt2",
        "markov/llama",
        "threshold/bert fine-tuned",
    }
    assert sum(r.couplings for r in rows if r.measure == "ours") == sum(
        v.measure("ours").coupled_summary.couplings for v in judged if v.counted
    )  # the class sweep's couplings are kept out
    shown = _dataframe(at, "Mean sign-error").reset_index(drop=True)
    assert list(shown["Measure"]) == [measure_name(r.measure) for r in rows]
    assert not any("_" in column for column in shown.columns)  # headers in words
    ours = next(r for r in rows if r.measure == "ours")
    value = shown.loc[[r.measure for r in rows].index("ours"), "Mean sign-error"]
    assert float(value if isinstance(value, float) else shown_value(value)) == pytest.approx(ours.mean, abs=5e-4)
    total = max(r.couplings for r in rows)
    cdf = figure_titled(at, f"Sign-errors over {total} couplings")
    curve = next(t for t in cdf["data"] if t["name"].startswith(f"{measure_name('ours')} (mean"))
    steps = [y for x, y in zip(curve["x"], curve["y"], strict=True) if x == max(ours.errors)]
    assert max(steps) == pytest.approx(1.0) and curve["line"]["width"] == 3
    for number in range(len(judged)):  # each verdict's table is drawn when its fold opens
        at.session_state[f"lab_verdict_fold_{number}"] = True
    run_clean(at)
    tables = [d.value for d in at.dataframe if "Coupled sign-error: mean" in d.value.columns]  # one per verdict
    assert len(tables) == len(judged) == 6
    for table, env in zip(tables, judged, strict=True):
        baselines = [m for m in table["Measure"] if m.endswith("(trivial baseline)")]
        assert len(baselines) == 5 and len(table) == len(env.measures)  # √(params / n) is one too
    # the measures centred at the first step: four proxies and their /√n forms, and the intruder count
    assert len(fine_tuned.measures) == len(class_sweep.measures) + 9


def test_the_sweep_view_shows_the_shipped_grokking_runs(lab_app, plotly_specs) -> None:
    from specbound_lab.grokking import grokking_runs, grokking_sentence, grokking_verdict
    from specbound_lab.records import read_runs

    runs = grokking_runs(read_runs(reference.GROKKING_REFERENCE_DIR))
    assert [run.seed for run in runs] == list(range(10)) and all(run.event.grokked for run in runs)
    at = lab_app
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    from dashboard.wording.text import plain

    shown_text = " ".join(m.value for m in at.markdown)
    checked = grokking_verdict(runs)  # the null's shifts, computed here apart from the page's
    summaries = checked.summaries
    sentence = grokking_sentence(runs, measure_name, verdict=checked)
    assert plain(sentence) in shown_text  # shown as text, never as markdown
    assert sentence.startswith("10 of 10 seeds grok")
    titles = [f["layout"]["title"]["text"] for f in plotly_specs(at)]
    assert any("Grokking: seed 0 groks" in t for t in titles)
    at.radio(key="lab_grok_seed").set_value(2)
    run_clean(at)
    assert any("Grokking: seed 2 groks" in f["layout"]["title"]["text"] for f in plotly_specs(at))
    from dashboard.views.lab_tables import GROKKING_COLUMNS

    shown = _dataframe(at, GROKKING_COLUMNS["median_lead"]).reset_index(drop=True)
    assert list(shown[GROKKING_COLUMNS["measure"]]) == [measure_name(s.measure) for s in summaries]
    assert list(shown[GROKKING_COLUMNS["verdict"]]) == [s.verdict for s in summaries]
    # columns in words, leads in whole steps, shares as percentages (not "median_lead -200.0", "0.3333")
    assert not any("_" in column for column in shown.columns)
    leads = shown[GROKKING_COLUMNS["median_lead"]]
    assert all(pd.isna(v) or v == round(s.median) for v, s in zip(leads, summaries, strict=True))
    expected = {"–" if math.isnan(s.share_before) else f"{100 * s.share_before:.0f} %" for s in summaries}
    assert set(shown[GROKKING_COLUMNS["share_before"]]) == expected  # of ten seeds: tenths, as percentages


def _open_train_form(at: AppTest, **values: float) -> None:
    at.radio(key="lab_view").set_value("Train a run now")
    run_clean(at)
    for key, value in values.items():
        widget = at.selectbox(key=key) if key in ("lab_form_hidden", "lab_form_heads") else at.number_input(key=key)
        widget.set_value(value)
    at.button(key="lab_train").click()
    run_clean(at)


def _wait(at: AppTest, done) -> None:
    deadline = time.monotonic() + TRAINING_WAIT_S
    while not done():
        assert time.monotonic() < deadline, "the training thread did not end in time"
        time.sleep(0.5)
        run_clean(at)


def test_a_tiny_run_trains_from_the_form_and_joins_the_picker(lab_app) -> None:
    at = lab_app
    _open_train_form(
        at, lab_form_layers=1, lab_form_hidden=16, lab_form_heads=2, lab_form_n=64, lab_form_steps=20, lab_form_seed=3
    )
    name = "lab-L1-N16-H2-n64-q0-s3-t20"
    key = service.run_key(service.HERE, name)
    _wait(at, lambda: service.JOB_KEY not in at.session_state)
    assert at.radio(key="lab_view").value == "One run through training"
    picker = at.selectbox(key="lab_run")
    trained = read_results(service.store_dir()).run(name)
    assert picker.value == key and picker.options[-1] == words.run_choice(None, trained)
    assert picker.options[-1].endswith("20 steps (trained here)")
    shipped = sum(len(reference.load_reference(r.directory).runs) for r in reference.SHIPPED)
    assert len(picker.options) == shipped + 1 == 48 + 36 + 10 + 4 * 120 + 80 + 1  # the shipped references stay
    assert [s.step for s in trained.steps] == [0, 5, 10, 15, 20]
    assert trained.final.test_samples == service.VISITOR_CAPS.test_samples
    assert _metric(at, "Total (ours at p*)") == format_log(trained.final.ours_log10 * math.log(10))
    assert any(f"{name} finished" in s.value for s in at.success)


def test_cancel_stops_a_run(lab_app) -> None:
    at = lab_app
    caps = service.VISITOR_CAPS
    _open_train_form(
        at,
        lab_form_layers=caps.max_layers,
        lab_form_hidden=max(caps.widths),
        lab_form_n=1500,
        lab_form_steps=caps.max_steps,
        lab_form_seed=7,
    )
    name = f"lab-L{caps.max_layers}-N{max(caps.widths)}-H2-n1500-q0-s7-t{caps.max_steps}"
    assert at.session_state[service.JOB_KEY].name == name
    assert at.button(key="lab_cancel").label == "Cancel"
    at.button(key="lab_cancel").click()
    run_clean(at)
    _wait(at, lambda: service.JOB_KEY not in at.session_state)
    assert any(f"{name} was cancelled" in w.value for w in at.warning)
    assert any(f"{name} was cancelled" in c.value for c in at.caption)  # the train view keeps saying so
    at.radio(key="lab_view").set_value("One run through training")
    run_clean(at)
    assert not any(f"{caps.max_steps} steps (trained here)" in o for o in at.selectbox(key="lab_run").options)
    assert not (service.store_dir() / "runs" / name / "trajectory.json").exists()
    assert service.board().running() == 0


def test_open_as_a_model_makes_that_step_the_current_model(lab_app, runs_csv) -> None:
    at = lab_app
    at.select_slider(key="lab_step").set_value(250)
    run_clean(at)
    at.button(key="lab_open").click()
    run_clean(at)
    assert f"{RUN}@250" in at.session_state["model"]
    at.switch_page("pages/bounds.py")
    run_clean(at)
    expected = format_log(math.log(_row(runs_csv, RUN, 250)["ours"]))
    assert _metric(at, OPTIMAL_LABEL) == expected
    profile = reference.step_profile(reference.REFERENCE_DIR, reference.load_reference().run(RUN), 250)
    assert expected == format_log(BoundAnalysis.from_profile(profile).evaluate().log_total)
    shown = " ".join(m.value for m in at.sidebar.markdown)
    from dashboard.wording.vocabulary import run_name

    assert run_name(reference.load_reference().run(RUN).spec, 250) in shown and RUN not in shown  # words, not its id
    assert "/" not in at.query_params["model"].split("#")[0].removeprefix("atlas:")  # a digest, no path


@pytest.mark.parametrize(
    ("family", "shipped", "models_key", "link"),
    [
        ("Lab encoders (trained by the specbound lab on the sparse threshold task)", reference.THRESHOLD_REFERENCE,
         "scaling_lab_models", "lab"),
        ("Lab decoders (GPT-2, trained by the specbound lab on the Markov task)", reference.DECODER_REFERENCE,
         "scaling_lab_decoder_models", "lab-decoders"),
    ],
    ids=["encoders", "decoders"],
)  # fmt: skip
def test_the_scaling_page_draws_each_lab_family(plotly_specs, family, shipped, models_key, link) -> None:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/scaling.py")
    run_clean(at)
    at.radio(key="scaling_family").set_value(family)
    run_clean(at)
    assert not at.error
    profiles = load_atlas(shipped.directory / reference.ATLAS_FILE)
    assert len(at.multiselect(key=models_key).value) == len(profiles) == 4
    assert {p.shape.family for p in profiles} == {"bert" if shipped.family == "bert" else "gpt2"}
    shown = {p.model: shown_member(p.model) for p in profiles}  # each run by its words, as the page names it
    assert not any(name.startswith("lab-") for name in shown.values())
    study = ScalingStudy.from_summaries(summarize(BoundAnalysis.from_profile(p), name=shown[p.model]) for p in profiles)
    for axis, title in ((Axis.WIDTH, "with width N"), (Axis.DEPTH, "with depth L")):
        panels = [f for f in plotly_specs(at) if title in f["layout"]["title"]["text"].replace("<br>", " ")]
        assert panels  # one figure per panel, stacked on a phone
        traces = {
            (t["legendgroup"], tuple(str(c[0]) for c in t["customdata"])): np.asarray(t["y"], float)
            for panel in panels
            for t in panel["data"]
            if t["x"]
            and t["x"][0] is not None  # not a legend entry's stand-in
            and "customdata" in t  # a measured curve, not the law the theory predicts (drawn dotted)
        }
        expected = [c for c in study.curves(axis) if c.proxy in (Proxy.OURS, Proxy.EDELMAN)]
        assert expected and len(traces) == len(expected)
        for curve in expected:
            np.testing.assert_allclose(traces[(curve.proxy.value, curve.models)], curve.ratio, rtol=1e-12)
    models = _dataframe(at, "p=2_log10")
    assert sorted(models["name"]) == sorted(shown.values())
    assert at.query_params["scaling_family"] == link


@pytest.mark.parametrize("damage", ["checkpoint gone", "weights corrupt"])
def test_a_stored_run_whose_checkpoint_is_damaged_says_so_and_the_page_stays(tmp_path, monkeypatch, damage) -> None:
    """A run trained into the store whose final checkpoint was deleted or overwritten: its step shows the
    page's own error line (whatever the loader's reason), every other part of the page is drawn, and
    "Open as a model" is off."""
    from specbound_lab.sweep import run_sweep
    from specbound_lab.train import RunSpec, TrainSettings

    monkeypatch.setenv("SPECBOUND_CACHE", str(tmp_path / "cache"))
    spec = RunSpec(1, 16, 2, 32, seed=5, settings=TrainSettings(steps=4, save_every=2, test_samples=64))
    run_sweep([spec], service.store_dir(), use_cache=False)
    (run,) = read_results(service.store_dir()).runs
    final = service.store_dir() / "runs" / run.name / run.final.checkpoint
    if damage == "checkpoint gone":
        import shutil

        shutil.rmtree(final)
    else:
        (final / "model.safetensors").write_bytes(b"\x00" * 64)
    service._store_runs.clear()  # the store's runs are cached per server: this test's store is its own
    try:
        at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
        run_clean(at)
        at.switch_page("pages/lab.py")
        run_clean(at)
        at.selectbox(key="lab_run").set_value(service.run_key(service.HERE, run.name))
        run_clean(at)
        at.select_slider(key="lab_step").set_value(run.final.step)
        at.run()
        assert not at.exception
        (error,) = [e.value for e in at.error]
        assert error.startswith("The spectra of this step cannot be read: ")
        assert plain(f"{run.name} at step {run.final.step}: ") in error and str(tmp_path) not in error
        assert at.button(key="lab_open").disabled
        assert _metric(at, "Total (ours at p*)")  # the record's numbers are still shown
    finally:
        service._store_runs.clear()


def test_on_a_projector_the_lab_s_tables_are_folded(lab_app) -> None:
    """Presentation mode folds every table of the sweep view into a closed expander (the figures and the
    sentences stay in view)."""
    at = lab_app
    at.toggle(key="present").set_value(True)
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    labels = {e.label for e in at.expander}
    for label in ("Rank correlation with the gap (table)", "The robust view (table)", "Each measure's lead (table)"):
        assert label in labels, label
    assert any(label.startswith("The verdict of") for label in labels)


def _clear_sweep_caches() -> None:
    """A fresh server's caches of the sweep view (what its first switch fills)."""
    for cached in (
        service._sweep,
        service._comparisons,
        service._verdicts,
        service._shipped_verdict_tables,
        service._robust_rows,
        service._robust_reading,
        service._forgetting,
    ):
        cached.clear()


def test_switching_to_each_shipped_sweep_computes_nothing_the_tables_hold(monkeypatch) -> None:
    """With every computation of what the shipped tables hold made to raise (the correlations, the paired
    comparisons, the verdicts, the grokking runs' nulls and power check), a fresh server's switch to the
    sweep view and to each shipped sweep draws them all: correlations.csv, comparisons.csv, verdict.csv,
    couplings.csv and the grokking tables, read back."""
    import sys

    import specbound_lab.correlation as correlation
    import specbound_lab.grokking as grokking
    import specbound_lab.tables as tables
    import specbound_lab.verdict as verdict

    def forbidden(*_, **__):
        raise AssertionError("the sweep view recomputed what the shipped tables hold")

    originals = [
        correlation.correlate,
        correlation.compare_taus,
        tables.correlations,
        tables.environment_verdicts,
        tables.comparisons,
        verdict.environment_verdict,
        grokking.grokking_verdict,
        grokking.null_median_leads,
    ]
    for holder in [m for key, m in list(sys.modules.items()) if key.split(".")[0] in ("specbound_lab", "dashboard")]:
        for alias, value in list(vars(holder).items()):
            if any(value is original for original in originals):  # under every name it is imported as
                monkeypatch.setattr(holder, alias, forbidden)
    _clear_sweep_caches()
    service.grokking_checked.clear()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/lab.py")
    run_clean(at)
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    for origin in service.SWEEPS:
        at.radio(key="lab_sweep").set_value(origin)
        run_clean(at)
        expected = pd.read_csv(
            reference.SHIPPED[[s.key for s in reference.SHIPPED].index(origin)].directory / CORRELATIONS_CSV
        )
        shown = _dataframe(at, "granulated_tau")
        assert list(shown["measure"]) == [measure_name(m) for m in expected["measure"]][: len(shown)]
        text = " ".join(m.value for m in at.markdown)
        assert all(plain(v.sentence) in text for v in lab_views_verdicts(origin))
    _clear_sweep_caches()  # the next test's server computes as it likes


def lab_views_verdicts(origin: str):
    """The verdicts the sweep view of ``origin`` shows, in words (read back from the shipped tables)."""
    from dashboard.views.lab import lab_sweep_view

    return lab_sweep_view(service.sweep_data(origin)).verdicts


def _planted_forgetting(directory) -> pd.DataFrame:
    """forgetting.csv as the lab writes it (:func:`specbound_lab.tables.forgetting_frame`) over the shipped
    fine-tuning runs' final rows, with the intruder count and the forgetting outcome planted by a seeded
    generator (a planted pair that the candidates must order, beside the shipped real one): forgetting rises with the
    intruders, plus noise, as in tests/lab/test_forgetting_verdict.py."""
    from specbound_lab.tables import FORGETTING_CSV, forgetting_frame, read_runs_csv
    from specbound_lab.verdict import forgetting_verdicts

    frame = read_runs_csv(reference.FINETUNE_REFERENCE.directory / RUNS_CSV)
    frame = frame[frame["final"]].reset_index(drop=True)
    rng = np.random.default_rng(0)
    intruders = rng.integers(0, 6, len(frame)).astype(float)
    forgetting = np.clip(0.05 + 0.03 * intruders + rng.normal(0.0, 0.02, len(frame)), 0.0, 1.0)
    table = forgetting_frame(forgetting_verdicts(frame.assign(intruders=intruders, base_task_error=forgetting)))
    (directory / FORGETTING_CSV).write_text(table.to_csv(index=False))
    return pd.read_csv(directory / FORGETTING_CSV)


def test_the_fine_tuning_sweep_shows_its_forgetting_verdict_from_forgetting_csv(monkeypatch, tmp_path) -> None:
    """The fine-tuning sweep's view reads its forgetting.csv: the sentence is computed from the file's rows,
    and the table shows each of its rows, the measure in words and τ to the three decimals shown."""
    written = _planted_forgetting(tmp_path)
    monkeypatch.setattr(service, "forgetting_file", lambda origin: tmp_path / "forgetting.csv")
    _clear_sweep_caches()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/lab.py")
    run_clean(at)
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    at.radio(key="lab_sweep").set_value(service.FINETUNE)
    run_clean(at)
    text = " ".join(m.value for m in at.markdown)
    sentence = words.forgetting_sentence(written, measure_name)
    assert plain(sentence) in text
    best = written[(written["outcome"] == "base_task_error") & ~written["baseline"]].sort_values("kendall_tau").iloc[-1]
    assert best["measure"] == "intruders" and f"τ {best['kendall_tau']:+.2f}" in sentence  # planted to order it
    assert "beats the strongest trivial baseline" in sentence
    shown = _dataframe(at, "Ordered").reset_index(drop=True)
    assert len(shown) == len(written)
    assert list(shown["Ordered"]) == [
        {"base_task_error": "forgetting", "gap": "the gap"}[o] for o in written["outcome"]
    ]
    pairs = zip(written["measure"], written["baseline"], strict=True)
    named = [measure_name(m) + (" (trivial baseline)" if b else "") for m, b in pairs]
    assert list(shown["Measure"]) == named
    taus = shown["τ"].map(lambda v: shown_value(v) if isinstance(v, str) else v)
    np.testing.assert_allclose(taus, written["kendall_tau"].round(3), atol=1e-12)  # every cell, to what is shown
    (row,) = written.index[(written["outcome"] == "base_task_error") & (written["measure"] == "intruders")]
    assert shown.at[row, "Measure"] == measure_name("intruders") and shown.at[row, "Ordered"] == "forgetting"
    assert taus[row] == pytest.approx(round(float(written.at[row, "kendall_tau"]), 3), abs=1e-12)
    _clear_sweep_caches()


FORGETTING_TITLE = "Forgetting: what orders a fine-tune's loss of its base's task"


def test_the_shipped_fine_tuning_sweep_shows_its_forgetting_and_one_from_scratch_has_no_such_section(lab_app) -> None:
    """The shipped fine-tuning reference records forgetting: its view gives the sentence computed from its
    forgetting.csv and every row of it; a sweep trained from scratch has no such section."""
    at = lab_app
    _clear_sweep_caches()
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    assert FORGETTING_TITLE not in [h.value for h in at.subheader]
    at.radio(key="lab_sweep").set_value(service.FINETUNE)
    run_clean(at)
    assert FORGETTING_TITLE in [h.value for h in at.subheader]
    shipped = pd.read_csv(reference.FINETUNE_REFERENCE.directory / "forgetting.csv")
    text = " ".join(m.value for m in at.markdown)
    assert plain(words.forgetting_sentence(shipped, measure_name)) in text
    assert plain(words.FORGETTING_NOT_RECORDED) not in text
    shown = _dataframe(at, "Ordered").reset_index(drop=True)
    assert len(shown) == len(shipped) == 20  # 5 candidates and 5 baselines, for forgetting and for the gap
    taus = shown["τ"].map(lambda v: shown_value(v) if isinstance(v, str) else v)
    np.testing.assert_allclose(taus, shipped["kendall_tau"].round(3), atol=1e-12)


def test_a_fine_tuning_sweep_without_forgetting_says_so(lab_app, monkeypatch, tmp_path) -> None:
    """Runs that predate the forgetting outcome write no forgetting.csv: the section says so, with no table."""
    at = lab_app
    monkeypatch.setattr(service, "forgetting_file", lambda origin: tmp_path / "forgetting.csv")  # none written
    _clear_sweep_caches()
    at.radio(key="lab_view").set_value("Sweep: measures against the gap")
    run_clean(at)
    at.radio(key="lab_sweep").set_value(service.FINETUNE)
    run_clean(at)
    assert FORGETTING_TITLE in [h.value for h in at.subheader]
    assert plain(words.FORGETTING_NOT_RECORDED) in " ".join(m.value for m in at.markdown)
    assert not [d for d in at.dataframe if "Ordered" in d.value.columns]
    _clear_sweep_caches()
