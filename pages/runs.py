"""Training runs: the bound's proxies through a real run, from a trajectory atlas (``specbound trajectory``),
or one of the lab runs the package ships (a grokking run drawn by the rule of :mod:`specbound_lab.grokking`)."""

from __future__ import annotations

import streamlit as st

from dashboard import safety
from dashboard.routing import ensure_app_entry
from dashboard.services import runs as service
from dashboard.state import atlas, share
from dashboard.views.runs import run_view, step_view
from dashboard.widgets.experts import expert_picker
from dashboard.widgets.export import csv_download, name_stem, show_figure, show_panels
from dashboard.widgets.presentation import bound_note
from dashboard.wording.numbers import format_count
from dashboard.wording.text import plain
from dashboard.wording.vocabulary import model_label, spec_words
from specbound.present.figures.spectra import PANEL_COLUMNS
from specbound_lab.grokking import SATURATION

ensure_app_entry()
RUN_KEY, STEP_KEY, UPLOAD_KEY = "runs_run", "runs_step", "runs_upload"

st.title("Training runs")
st.caption(
    "The proxies at every saved step of a real training run: a Trainer's checkpoints, a list of checkpoint "
    "directories, or a Hub model's revisions (Pythia's step0 … step143000), analysed with "
    "`specbound trajectory RUN --out DIR` (or the Trainer callback) into a trajectory atlas. The numbers "
    "come from the stored spectra of each step."
)

uploaded = st.file_uploader(
    "A trajectory atlas (.npz)",
    type=["npz"],
    key=UPLOAD_KEY,
    help="trajectory.npz from specbound trajectory, or the atlas= file of the Trainer callback: members NAME@STEP.",
)
if uploaded is not None:
    refusal = safety.upload_refusal(uploaded.name, uploaded.size)
    with safety.guarded("reading a trajectory atlas", lambda message: st.error(f"Could not read the atlas: {message}")):
        if refusal is not None:  # before its bytes are read
            st.error(refusal)
        else:
            atlas.use_upload(uploaded.name, uploaded.getvalue())

own = [*service.operator_runs(), *service.uploaded_runs(atlas.loaded(), str(atlas.loaded_file() or ""))]
runs = {run.key: run for run in [*own, *service.shipped_runs()]}
if not own:
    st.info(
        "No trajectory of your own here yet. Upload a trajectory atlas above; the operator of this server can "
        f"also name a directory of them when starting it ({service.RUNS_DIR_ENV}=DIR make run). Meanwhile the "
        "runs below are small models trained by the specbound lab and shipped with the package."
    )
if not runs:
    st.stop()


def run_choice(key: str) -> str:
    """A run as the picker lists it; a shipped run by the model it is and its hyperparameters, not its id."""
    run = runs[key]
    if run.lab is not None:
        spec = run.lab.spec
        return f"{model_label(spec)}: {spec_words(spec)} ({format_count(len(run.steps), 'saved step')}, shipped)"
    return f"{run.shown} ({format_count(len(run.steps), 'step')}, {run.origin})"


share.shared_choice(RUN_KEY, share.Codec(str, str), list(runs), next(iter(runs)))
key = st.selectbox(
    "Run",
    list(runs),
    key=RUN_KEY,
    format_func=run_choice,
)
run = runs[key]
steps = list(run.steps)
share.shared_choice(STEP_KEY, share.Codec(int, str), steps, steps[-1])
step = st.select_slider("Step", steps, key=STEP_KEY) if len(steps) > 1 else steps[0]

frame = service.trajectory_csv_frame(run.cache_key, run)
view = run_view(run.shown, run.lab, frame, step)
for column, (label, value) in zip(st.columns(3), view.totals, strict=True):
    column.metric(label, value)
left, right = st.columns(2)
with left:
    show_figure(view.proxies, "runs_proxies", half=True)
with right:
    show_figure(view.alpha, "runs_alpha", half=True)
if view.lab_caption is not None:
    st.caption(view.lab_caption)
if view.errors is not None:
    show_figure(view.errors, "runs_errors")
if view.grokking is not None and view.grokking_sentence is not None:
    st.subheader("Grokking: does a measure move before the jump?")
    st.caption(
        f"Every curve, smoothed by a running median over three checkpoints, is read from the step training "
        f"accuracy reaches {SATURATION:g}; it moves when it has covered half its excursion from there. A "
        "measure's lead is test accuracy's move step minus its own (positive: it moved first). One seed is no "
        "verdict: the Lab page's sweep view reads the seeds together, against a circular-shift null, with a "
        "positive control and a power check."
    )
    with st.container(key="runs_grokking"):
        st.markdown(plain(view.grokking_sentence))
    show_figure(view.grokking, "runs_grokking_figure")
if view.losses is not None:
    show_figure(view.losses, "runs_losses")

st.subheader(f"At step {step}")
analysis = service.step_analysis(run.cache_key, step, run.steps[step])
# the stacks and experts of this step's model (a run's steps may even differ in shape)
expert = expert_picker(analysis.profile.shape, "runs_expert")
at_step = step_view(run.shown, step, analysis, expert)
show_panels(list(at_step.p_map.figures), "runs_p_map", widths=at_step.p_map.widths)
show_panels(at_step.spectra, "runs_spectra", per_row=PANEL_COLUMNS)
bound_note(analysis.profile.shape)
csv_download(frame, f"{name_stem(run.shown)}-trajectory.csv", "runs_download", "Download the trajectory (CSV)")
