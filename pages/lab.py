"""Lab: small encoders and decoders trained by the lab on synthetic tasks, with their measured gaps.

It opens on its answer: does the bound predict the gap? One sentence and a forest plot of τ against
the trivial baselines, read from the shipped verdict tables. Below it, what was trained (folded), then
three views: one run through training (every bound term and the errors per saved step, a step slider
for the spectra and the p* map there, and opening that step as the model of the other pages); the
sweep (each measure against the gap over the final checkpoints, with its τ); and training one small
run now. Each view is widgets, one view call (:mod:`dashboard.views.lab`) and what it returned, drawn;
data, caches and the training thread live in :mod:`dashboard.services.lab`, the words in
:mod:`dashboard.wording.lab`.
"""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.safety import public_message
from dashboard.services import lab as service
from dashboard.services.jobs import JobState, LabBusy, RunRequest
from dashboard.state import choices, share
from dashboard.views.common import step_spectra
from dashboard.views.lab import lab_answer_view, lab_inventory, lab_run_view, lab_sweep_view
from dashboard.widgets import lab as lab_widgets
from dashboard.widgets.export import csv_download, show_figure, show_panels
from dashboard.widgets.presentation import bound_note, folded, on_demand
from dashboard.widgets.tables import draw_table
from dashboard.wording import lab as words
from dashboard.wording.text import plain
from specbound.core.profile import SpectralProfile
from specbound.present.figures.spectra import PANEL_COLUMNS
from specbound_lab.limits import VISITOR_CAPS
from specbound_lab.train import LabError

ensure_app_entry()

RUN_VIEW, SWEEP_VIEW, TRAIN_VIEW = "One run through training", "Sweep: measures against the gap", "Train a run now"
VIEW_KEY, RUN_KEY, STEP_KEY, SWEEP_KEY = "lab_view", "lab_run", "lab_step", "lab_sweep"
GROK_SEED_KEY = "lab_grok_seed"
caps = VISITOR_CAPS

st.title("Lab")
answer = lab_answer_view(service.answer(), service.study())
with st.container(key="lab_answer"):
    st.markdown(f"**{plain(answer.sentence)}**")
show_figure(answer.forest, "lab_answer_forest")
st.caption(answer.caption)
if answer.study is not None:  # under the forest: the first screen holds the answer and the τ it stands on
    st.caption(answer.study)
with st.expander("What the lab trained, and how it measures a gap"):
    st.markdown(lab_inventory(service.shipped_counts()))
st.subheader("Behind the answer")

choices.keep((RUN_KEY, STEP_KEY))  # Streamlit drops a widget's state while it is not drawn: keep the choice

finished = service.collect_finished()
runs = service.available_runs()
keys = list(runs)
if finished is not None:
    (st.success if finished.state is JobState.DONE else st.warning)(finished.text)
    done_key = service.run_key(service.HERE, finished.run)
    if finished.state is JobState.DONE and done_key in runs:  # show the run just trained
        choices.choose({RUN_KEY: done_key, STEP_KEY: runs[done_key].final.step, VIEW_KEY: RUN_VIEW})

share.shared(VIEW_KEY, share.choice_codec({RUN_VIEW: "run", SWEEP_VIEW: "sweep", TRAIN_VIEW: "train"}), RUN_VIEW)
view = st.radio("View", [RUN_VIEW, SWEEP_VIEW, TRAIN_VIEW], key=VIEW_KEY, horizontal=True, label_visibility="collapsed")

if view == RUN_VIEW:
    share.shared_choice(RUN_KEY, share.TEXT, keys, service.default_run(keys))
    key = st.selectbox("Run", keys, key=RUN_KEY, format_func=lambda k: words.run_choice(service.shipped_of(k), runs[k]))
    run = runs[key]
    steps = [s.step for s in run.steps]
    share.shared_choice(STEP_KEY, share.INT, steps, steps[-1])
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
    profile: SpectralProfile | None
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
        lab_widgets.open_error()
        st.button(
            "Open as a model",
            key="lab_open",
            type="primary",
            disabled=profile is None,
            on_click=lab_widgets.open_as_model,
            args=(key, step),
            help=words.OPEN_HELP,
        )
        st.caption(shown.open_caption)
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
        format_func=lambda o: service.source(o).words,
    )
    sweep = lab_sweep_view(service.sweep_data(origin))
    st.caption(sweep.method)
    st.markdown(sweep.reading)
    st.markdown(sweep.measures_heading)
    show_panels(sweep.measures, "lab_measures", per_row=3)
    st.subheader("Rank correlation with the gap")
    with folded("Rank correlation with the gap (table)"):  # folded on a projector, like every table
        draw_table(
            sweep.correlations,
            hide_index=True,
            key="lab_correlations",
            column_config=lab_widgets.correlation_columns(sweep.correlation_table.columns),
        )
    st.subheader("Against ours at p*")
    st.caption(words.DIFFERENCES)
    show_figure(sweep.differences, "lab_differences")
    with folded("Each difference in words"), st.container(key="lab_comparisons"):
        st.markdown("\n".join(f"- {sentence}" for sentence in sweep.comparisons))
    st.subheader("The verdict: what it stands on")
    st.caption(words.VERDICT_RULES)
    for number, shown_verdict in enumerate(sweep.verdicts):
        with st.container(key=f"lab_verdict_{number}"):
            st.markdown(f"**{plain(shown_verdict.source)}.** " + plain(shown_verdict.sentence))
        # each table drawn only while its fold is open: six styled tables were a third of a switch to this view
        if box := on_demand(shown_verdict.title, f"lab_verdict_fold_{number}"):
            with box:
                draw_table(sweep.verdict_table(number), hide_index=True, key=f"lab_verdict_table_{number}")
    if sweep.forgetting_sentence is not None:  # a sweep of fine-tunes: does anything order forgetting?
        st.subheader("Forgetting: what orders a fine-tune's loss of its base's task")
        st.caption(words.FORGETTING_METHOD)
        with st.container(key="lab_forgetting"):
            st.markdown(plain(sweep.forgetting_sentence))
        if sweep.forgetting_table is not None:
            with folded("Forgetting and the gap, each measure (table)"):
                draw_table(sweep.forgetting_table, hide_index=True, key="lab_forgetting_table")
    st.subheader("Robust across controlled experiments")
    st.caption(words.ROBUST_METHOD)
    with st.container(key="lab_robust"):
        st.markdown(plain(sweep.robust_sentence))
    if sweep.robust_cdf is not None:
        show_figure(sweep.robust_cdf, "lab_robust_cdf")
    with folded("The robust view (table)"):
        draw_table(sweep.robust_table, hide_index=True, key="lab_robust_table")
    if sweep.grokking_sentence is not None:
        st.subheader("Grokking: does a measure move before the jump?")
        st.caption(words.GROKKING_METHOD)
        with st.container(key="lab_grokking"):
            st.markdown(plain(sweep.grokking_sentence))
        seeds = [run.seed for run in sweep.grokking_runs]
        share.shared_choice(GROK_SEED_KEY, share.INT, seeds, seeds[0])
        seed = st.radio("Seed", seeds, key=GROK_SEED_KEY, horizontal=True)
        show_figure(sweep.grokking_figure(seed), "lab_grokking_figure")
        if sweep.grokking_table is not None:
            with folded("Each measure's lead (table)"):
                draw_table(sweep.grokking_table, hide_index=True, key="lab_grokking_table")
    st.caption(f"Reproducibility. {words.REPRODUCIBILITY}")
    bound_note()
    csv_download(sweep.correlation_table, "correlations.csv", "lab_download_correlations", "Download the table (CSV)")

else:
    st.caption(words.training_caption(words.LAB_MODEL_LABEL, caps))
    default = RunRequest()
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
        request = RunRequest(
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
        except LabBusy as exc:
            st.warning(plain(str(exc)))
    with progress:
        if service.session_job() is not None:
            lab_widgets.progress_panel()
        elif (last := service.last_job()) is not None:
            st.caption(f"Last run started here: {last.text}.")
