"""Lab: small encoders and decoders trained by the lab on synthetic tasks, with their measured gaps.

It opens on its answer: does the bound predict the gap? One sentence and a forest plot of τ against
the trivial baselines, read from the shipped verdict tables. Below it, what was trained (folded), then
three views: one run through training (every bound term and the errors per saved step, a step slider
for the spectra and the p* map there, and opening that step as the model of the other pages); the
sweep (each measure against the gap over the final checkpoints, with its τ); and training one small
run now. Data, caches and the training thread live in :mod:`dashboard.services.lab`.
"""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.safety import public_message
from dashboard.services import lab as service
from dashboard.state import share
from dashboard.views.common import step_spectra
from dashboard.views.lab import lab_answer_view, lab_run_view, lab_sweep_view
from dashboard.widgets.export import csv_download, show_figure, show_panels
from dashboard.widgets.presentation import bound_note, folded, on_demand
from dashboard.widgets.tables import draw_table
from dashboard.wording.numbers import format_count
from dashboard.wording.text import plain
from dashboard.wording.vocabulary import model_label
from specbound.present.figures.spectra import PANEL_COLUMNS
from specbound_lab.grid import AXES
from specbound_lab.train import LabError

ensure_app_entry()

RUN_VIEW, SWEEP_VIEW, TRAIN_VIEW = "One run through training", "Sweep: measures against the gap", "Train a run now"
VIEW_KEY, RUN_KEY, STEP_KEY, SWEEP_KEY = "lab_view", "lab_run", "lab_step", "lab_sweep"
GROK_SEED_KEY = "lab_grok_seed"
caps = service.VISITOR_CAPS

st.title("Lab")
answer = lab_answer_view(service.answer())
with st.container(key="lab_answer"):
    st.markdown(f"**{plain(answer.sentence)}**")
show_figure(answer.forest, "lab_answer_forest")
st.caption(answer.caption)
with st.expander("What the lab trained, and how it measures a gap"):
    shipped = service.shipped_items()
    st.markdown(
        "Every model here is small and trained by the specbound lab from transformers' own classes, not a "
        "BERT Miniature or a released model. Each task's population is known, so the generalization gap is "
        "measured, not guessed: test error on fresh samples minus training error, or for next-token "
        "prediction test loss minus training loss. Shipped:\n\n"
        + ("\n".join(f"- {item}" for item in shipped) if shipped else "no reference (built without its lab data)")
    )
st.subheader("Behind the answer")

for kept in (RUN_KEY, STEP_KEY):  # Streamlit drops a widget's state while it is not drawn: keep the choice
    if kept in st.session_state:
        st.session_state[kept] = st.session_state[kept]

finished = service.collect_finished()
runs = service.available_runs()
keys = list(runs)
if finished is not None:
    (st.success if finished.state is service.JobState.DONE else st.warning)(finished.text)
    done_key = service.run_key(service.HERE, finished.run)
    if finished.state is service.JobState.DONE and done_key in runs:  # show the run just trained
        st.session_state[RUN_KEY], st.session_state[STEP_KEY] = done_key, runs[done_key].final.step
        st.session_state[VIEW_KEY] = RUN_VIEW

share.shared(VIEW_KEY, share.choice_codec({RUN_VIEW: "run", SWEEP_VIEW: "sweep", TRAIN_VIEW: "train"}), RUN_VIEW)
view = st.radio("View", [RUN_VIEW, SWEEP_VIEW, TRAIN_VIEW], key=VIEW_KEY, horizontal=True, label_visibility="collapsed")

if view == RUN_VIEW:
    share.shared_choice(RUN_KEY, service.run_codec(keys), keys, service.default_run(keys))
    key = st.selectbox("Run", keys, key=RUN_KEY, format_func=lambda k: service.describe(k, runs[k]))
    run = runs[key]
    steps = [s.step for s in run.steps]
    share.shared_choice(STEP_KEY, service.STEP, steps, steps[-1])
    step = st.select_slider(
        "Training step",
        steps,
        key=STEP_KEY,
        help="The spectra and the p* map below are those of the checkpoint saved at this step.",
    )
    frame = service.trajectory(key, run)
    shown = lab_run_view(run, frame, step)
    st.caption(shown.caption)
    with st.container(key="lab_step_metrics"):
        for column, (label, value, help_text) in zip(st.columns(5), shown.totals, strict=True):
            column.metric(label, value, help=help_text)
    st.caption(shown.flatness)
    left, right = st.columns(2)
    with left:
        show_figure(shown.proxies, "lab_proxies", half=True)
        show_figure(shown.alpha, "lab_alpha", half=True)
    with right:
        show_figure(shown.errors, "lab_errors", half=True)
        show_figure(shown.p_distribution, "lab_p_distribution", half=True)
    show_figure(shown.power_law, "lab_power_law")

    st.subheader(f"At step {step}")
    try:
        profile = service.step_profile(key, step, run)
    except LabError as exc:
        profile = None
        st.error(f"The spectra of this step cannot be read: {plain(public_message(exc))}")
    left, right = st.columns(2)
    with left:
        show_figure(shown.p_map, "lab_p_map", half=True)
    with right:
        st.markdown(shown.p_map_reading)
        if message := st.session_state.pop(service.OPEN_ERROR_KEY, None):
            st.error(plain(message))
        st.button(
            "Open as a model",
            key="lab_open",
            type="primary",
            disabled=profile is None,
            on_click=service.open_as_model,
            args=(key, step),
            help="Make this run at this step the model of the other pages (Spectra, Bound explorer, …), "
            "opened from its stored spectra; a link to it works on this server.",
        )
        st.caption(f"Opens `{run.name}` at step {step} on every page, labelled as a {model_label(run.spec)}.")
    if profile is not None:
        show_panels(step_spectra(profile), "lab_spectra", per_row=PANEL_COLUMNS)
    bound_note()
    csv_download(frame, f"{run.name}-trajectory.csv", "lab_download_trajectory", "Download the trajectory (CSV)")

elif view == SWEEP_VIEW:
    here = service.store_runs()
    shipped = [o for o in service.SWEEPS if len(service.reference(o).runs) >= 2]
    origins = shipped + ([service.HERE] if len(here) >= 2 else [])
    every = (*service.SWEEPS, service.HERE)
    share.shared_choice(SWEEP_KEY, share.choice_codec({o: o for o in every}), origins, origins[0])
    origin = st.radio(
        "Runs",
        origins,
        key=SWEEP_KEY,
        horizontal=True,
        format_func=service.sweep_choice,
    )
    sweep_frame, table = service.sweep(origin)
    st.caption(
        f"Over the final checkpoints of {format_count(len(sweep_frame), 'run')}. Kendall τ: τ-b over all runs; "
        "granulated "
        f"τ (Jiang et al. 2020): the mean over the hyperparameter axes "
        f"({', '.join(a for a in AXES if a != 'seed')}) of the mean τ among runs that differ in that axis "
        "alone; the seed's ψ is reported apart, as seed noise. A measure that predicts generalization ranks "
        "the runs as their gaps do (τ near +1). The intervals are 95 % percentile bootstraps over "
        "configurations (the seeds of one configuration drawn together), the granulated τ from the same "
        "draws for every axis. The verdict below reads fitted runs only."
    )
    grokking = service.grokking_reference()
    checked = service.grokking_checked() if grokking else None
    robust_rows = service.robust_rows(origin)
    sweep = lab_sweep_view(
        sweep_frame, table, service.against_baseline(origin), service.verdicts(origin), robust_rows, grokking, checked
    )
    st.markdown(sweep.reading)
    st.markdown(
        f"**Each measure against the gap over the final checkpoints of {format_count(sweep.runs, 'run')}, "
        "fitted or not** (descriptive: the verdict below reads the fitted runs alone)"
    )
    show_panels(sweep.measures, "lab_measures", per_row=3)
    st.subheader("Rank correlation with the gap")
    correlation_table = service.correlation_table(table)
    with folded("Rank correlation with the gap (table)"):  # folded on a projector, like every table
        draw_table(
            service.correlation_view(table),
            hide_index=True,
            key="lab_correlations",
            column_config=service.correlation_columns(correlation_table.columns),
        )
    st.subheader("Against ours at p*")
    st.caption(
        "Paired bootstrap of each measure's τ minus ours at p*, over the same draws of runs (and of groups "
        "for the granulated τ): distinguishable when the 95 % interval of the difference excludes 0. In the "
        "chart, a point right of 0 is a measure that orders the runs more like their gaps than ours does."
    )
    show_figure(sweep.differences, "lab_differences")
    with folded("Each difference in words"), st.container(key="lab_comparisons"):
        st.markdown("\n".join(f"- {sentence}" for sentence in sweep.comparisons))
    st.subheader("The verdict: what it stands on")
    st.caption(
        "The rules: a classification run counts when it fitted its training set (cross-entropy ≤ 0.01, or "
        "every label, flipped ones included, memorised); an environment where fewer than 80 % fitted, or "
        "with fewer than five seeds per configuration, is shown, not counted: kept out of the robust view, "
        "and its table is no verdict. The trivial baselines (1/n, the optimisation steps, the final "
        "training loss, the parameter count) are rows beside the measures, each read in one declared "
        "direction, and so are the measures' normalised forms: C / √n for an unsquared complexity, "
        "√(C / n) for a squared one. Each measure is tested against the strongest baseline, Holm-adjusted "
        "over every measure compared. τ within n and within parameter count: τ over the pairs of runs that "
        "share n (the parameter count): what a measure says beyond ordering data or model size."
    )
    for number, (source, env, sentence) in enumerate(sweep.verdicts):
        with st.container(key=f"lab_verdict_{number}"):
            st.markdown(f"**{plain(source)}.** " + plain(sentence))
        title = (
            f"The verdict of {env.environment}: {source} (table)"
            if env.counted
            else f"The table of {env.environment}: {source} (shown, not counted: {env.not_counted_because})"
        )
        # each table drawn only while its fold is open: six styled tables were a third of a switch to this view
        if box := on_demand(title, f"lab_verdict_fold_{number}"):
            with box:
                draw_table(service.verdict_view_frame(env), hide_index=True, key=f"lab_verdict_table_{number}")
    st.subheader("Robust across controlled experiments")
    st.caption(
        "Dziugaite et al. (2020): a coupling is two configurations that differ in one hyperparameter, "
        "compared seed for seed; on each pair the sign-error is 0 when the measure orders the two runs as "
        "their gaps, 1 when against, 1/2 on a tie; pairs whose gaps differ by less than 1.96 standard errors "
        "are left out, and a coupling needs two pairs. A measure is judged by the distribution of its "
        "sign-errors over the couplings of the environments that count: its worst case first, then its 90th "
        "percentile and mean; a best is named only where the paired interval (resampling configurations) of "
        "its mean against the runner-up's excludes 0. For "
        "a shipped reference the couplings of every shipped sweep count together; more environments join "
        "with `specbound lab sweep --task ... --family ...`."
    )
    with st.container(key="lab_robust"):
        st.markdown(plain(sweep.robust_sentence))
    if sweep.robust_cdf is not None:
        show_figure(sweep.robust_cdf, "lab_robust_cdf")
    with folded("The robust view (table)"):
        draw_table(service.robust_view_frame(robust_rows), hide_index=True, key="lab_robust_table")
    if sweep.grokking_sentence is not None:
        st.subheader("Grokking: does a measure move before the jump?")
        st.caption(
            "Modular addition mod 97 on 30 % of its pairs, a one-layer GPT-2 decoder, full-batch AdamW with "
            "weight decay 1 (`specbound lab sweep --preset grok --task modular --family gpt2`): training "
            "accuracy saturates early, test accuracy jumps much later. Every curve, smoothed by a running "
            "median over three checkpoints, is read from the step training accuracy reaches 0.99; it moves "
            "when it has covered half its excursion from there. A measure's lead is test accuracy's move step "
            "minus its own (positive: it moved first); the null is what the same rule gives on that measure's "
            "curves shifted circularly within a window around each jump, a verdict needs ten seeds, and where "
            "the positive control (the weight norm) or the power check (a synthetic leading curve) fails, "
            "every verdict is inconclusive."
        )
        with st.container(key="lab_grokking"):
            st.markdown(plain(sweep.grokking_sentence))
        seeds = [run.seed for run in sweep.grokking_runs]
        share.shared_choice(GROK_SEED_KEY, share.Codec(int, str), seeds, seeds[0])
        seed = st.radio("Seed", seeds, key=GROK_SEED_KEY, horizontal=True)
        show_figure(sweep.grokking_figure(seed), "lab_grokking_figure")
        with folded("Each measure's lead (table)"):
            draw_table(
                service.grokking_view_frame(service.grokking_summaries()), hide_index=True, key="lab_grokking_table"
            )
    st.caption(f"Reproducibility. {service.REPRODUCIBILITY}")
    bound_note()
    csv_download(correlation_table, "correlations.csv", "lab_download_correlations", "Download the table (CSV)")

else:
    st.caption(
        f"Train one {service.LAB_MODEL_LABEL} on this server: at most {caps.max_layers} layers, width "
        f"{' / '.join(map(str, caps.widths))}, n ≤ {caps.max_n_train:,}, {caps.max_steps} steps (about a "
        f"minute at most). Checkpoints are saved at step 0 and {caps.checkpoints} more times and analysed "
        f"like any model; the test error is measured on {caps.test_samples:,} fresh samples. The run then "
        f"joins the run picker."
    )
    default = service.DEFAULT_REQUEST
    progress = st.container()  # above the form: in view at 1024 x 768 while the run trains
    with st.form("lab_train_form"):
        a, b, c, d = st.columns(4)
        layers = a.number_input("Layers L", 1, caps.max_layers, default.layers, key="lab_form_layers")
        hidden = b.selectbox("Width N", caps.widths, index=caps.widths.index(default.hidden), key="lab_form_hidden")
        heads = c.selectbox("Heads H", caps.heads, index=caps.heads.index(default.heads), key="lab_form_heads")
        seed = d.number_input("Seed", 0, caps.max_seed, default.seed, key="lab_form_seed")
        a, b, c = st.columns(3)
        n_train = a.number_input("Training examples n", 1, caps.max_n_train, default.n_train, key="lab_form_n")
        noise = b.number_input(
            "Label noise q", 0.0, caps.max_label_noise, default.label_noise, step=0.05, key="lab_form_noise"
        )
        train_steps = c.number_input("Steps", 1, caps.max_steps, default.steps, key="lab_form_steps")
        submitted = st.form_submit_button("Train", type="primary", key="lab_train")
    if submitted:
        request = service.RunRequest(
            layers=int(layers),
            hidden=int(hidden),
            heads=int(heads),
            n_train=int(n_train),
            label_noise=float(noise),
            steps=int(train_steps),
            seed=int(seed),
        )
        try:
            service.start_training(request)
        except LabError as exc:
            st.error(plain(public_message(exc)))
        except service.LabBusy as exc:
            st.warning(plain(str(exc)))
    with progress:
        if service.session_job() is not None:
            service.progress_panel()
        elif (last := st.session_state.get(service.LAST_JOB_KEY)) is not None:
            st.caption(f"Last run started here: {last.text}.")
