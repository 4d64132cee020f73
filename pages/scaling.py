"""Scaling: how the proxies grow with depth L and width N over the BERT Miniatures available here, or
over the lab's trained models (shipped, so the study works with no network): its scaling grid (four
depths by three widths, the Miniatures' stand-in), its encoders or its decoders. Each measured exponent
is set beside the one the bounds predict.

Models come from the session's atlas file and the Hugging Face cache (see :mod:`dashboard.services.scaling`
for how a model is placed at its (L, N) and which ones count as the family); missing miniatures are
listed with how to get them, and can be downloaded on request.
"""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.services import scaling as service
from dashboard.state import atlas, choices, session, share
from dashboard.views.scaling import scaling_view
from dashboard.widgets import atlas_files
from dashboard.widgets.export import csv_download, file_stem, show_panels
from dashboard.widgets.presentation import bound_note
from dashboard.widgets.tables import draw_table
from dashboard.wording.numbers import MISSING, format_count
from dashboard.wording.text import plain
from specbound.core.proxies import Proxy
from specbound.present.figures.scaling import growth_panel_columns, predicted_note
from specbound.present.numbers import raised_powers
from specbound.studies.scaling import MIN_SIZES, Axis, ScalingStudy
from specbound_lab.reference import DECODER_REFERENCE, SCALING_REFERENCE, THRESHOLD_REFERENCE

ensure_app_entry()

#: Session-state key of the errors met by the last download request (shown until the next one).
DOWNLOAD_ERRORS_KEY = "scaling_download_errors"
#: Session-state keys of the study's model choice, and of models just downloaded that should join it.
MODELS_KEY, DOWNLOADED_KEY = "scaling_models", "scaling_downloaded"
#: Session-state key of the models whose download size was shown and awaits a click, with that size.
PENDING_KEY = "scaling_pending_download"
#: The family radio, and each lab family's own model choice (its options are other models).
FAMILY_KEY, LAB_MODELS_KEY, LAB_DECODER_MODELS_KEY, LAB_GRID_MODELS_KEY = (
    "scaling_family",
    "scaling_lab_models",
    "scaling_lab_decoder_models",
    "scaling_lab_grid_models",
)
MINIATURES = "BERT Miniatures"
LAB_GRID = "Lab scaling grid (the Miniatures' stand-in, L 1–4 × N 32–128)"
LAB_FAMILY = "Lab encoders (trained by the specbound lab on the sparse threshold task)"
LAB_DECODERS = "Lab decoders (GPT-2, trained by the specbound lab on the Markov task)"
#: Each lab family: the key of its shipped reference and of its model choice.
LAB_FAMILIES = {
    LAB_GRID: (SCALING_REFERENCE.key, LAB_GRID_MODELS_KEY),
    LAB_FAMILY: (THRESHOLD_REFERENCE.key, LAB_MODELS_KEY),
    LAB_DECODERS: (DECODER_REFERENCE.key, LAB_DECODER_MODELS_KEY),
}
#: The chart keys of the growth against each axis.
GROWTH_KEYS = {Axis.WIDTH: "growth_width", Axis.DEPTH: "growth_depth"}

st.title("Scaling")
st.caption(
    "The paper's growth study: each proxy against width N at fixed depth L, and against L at fixed N, "
    "divided by its value at one common reference, the smallest L and N in the study (log y). "
    "A flatter curve grows more slowly."
)


def first_family() -> str:
    """The miniatures if at least two are here; else the lab's scaling grid, shipped, so a study with
    intervals shows at once."""
    return MINIATURES if len(service.default_selection(service.candidates())) >= 2 else LAB_GRID


share.shared(
    FAMILY_KEY,
    share.choice_codec({MINIATURES: "mini", LAB_GRID: "lab-grid", LAB_FAMILY: "lab", LAB_DECODERS: "lab-decoders"}),
    MINIATURES,
    initial=first_family,
)
family = st.radio(
    "Family",
    [MINIATURES, LAB_GRID, LAB_FAMILY, LAB_DECODERS],
    key=FAMILY_KEY,
    horizontal=True,
    help="The lab's families are small BERT encoders and GPT-2 decoders trained by the specbound lab on "
    "synthetic tasks, shipped with the package: growth curves of trained models with no network. The "
    "scaling grid (depth 1, 2, 3, 4 by width 32, 64, 128, one seed) stands in for the 24 Miniatures; the "
    "encoders and decoders (depth 1–2, width 32–64) are the class sweeps' families. None of them are BERT "
    "Miniatures or released models.",
)
lab_family = family in LAB_FAMILIES
available = service.lab_candidates(LAB_FAMILIES[family][0]) if lab_family else service.candidates()
by_name = {c.name: c for c in available}
if downloaded := choices.take(DOWNLOADED_KEY):  # join the study once they are available
    choices.choose({MODELS_KEY: list(dict.fromkeys([*st.session_state.get(MODELS_KEY, []), *downloaded]))})
models_key = LAB_FAMILIES[family][1] if lab_family else MODELS_KEY
linked = share.shared(models_key, service.MODELS_CODEC, service.default_selection(available))
here = choices.trimmed(models_key, linked, by_name)  # a link names what this server has
if len(here) < len(linked):
    st.caption(f"{len(linked) - len(here)} of the linked models are not available here.")
chosen = st.multiselect(
    "Models in the study",
    list(by_name),
    key=models_key,
    format_func=lambda name: by_name[name].describe(),
    help="The final checkpoints of the lab reference's depth × width family (no label noise, first seed, largest n)."
    if lab_family
    else "By default the BERT Miniatures available here (from an atlas file or the Hugging Face cache). "
    "The bundled MiniLM and other opened models can be added, but they are not of the family.",
)
if chosen:
    st.caption(plain(service.origins_note([by_name[name] for name in chosen])))
share.shared("scaling_fixed_p", share.BOOL, False)
show_fixed = st.toggle(
    "Also show the fixed-p regimes p = 0, 1, 2",
    key="scaling_fixed_p",
    help="Every matrix at one p (rank, nuclear, Frobenius): what choosing p per matrix buys.",
)
proxies = [Proxy.OURS, Proxy.EDELMAN] + ([Proxy.P0, Proxy.P1, Proxy.P2] if show_fixed else [])

summaries, profiles, failed = service.summarise(chosen, st.empty(), {c.name: c.label for c in available if c.shown})
for message in failed.values():
    st.error(message)

study = None
if len(summaries) < 2:
    st.info(
        f"The study needs at least two models of the family; {len(summaries)} "
        f"{'is' if len(summaries) == 1 else 'are'} chosen and available. Download miniatures below, open "
        f"an atlas file in the sidebar (source 'Atlas file'), or choose more models above. "
        f"{atlas.HOW_TO_MAKE}"
    )
else:
    try:
        study = ScalingStudy.from_summaries(summaries)
    except ValueError as exc:  # two models of one (L, N)
        st.error(f"{plain(str(exc))}: deselect one of them above.")

if study is not None:
    view = scaling_view(study, proxies)
    for note in view.notes:
        st.warning(plain(note))
    for growth in view.growth:
        if growth.panels:  # one figure per panel: a phone stacks them
            show_panels(growth.panels, GROWTH_KEYS[growth.axis], per_row=growth_panel_columns(len(growth.panels)))
        elif growth.missing is not None:
            st.info(growth.missing)
    st.caption(plain(raised_powers(predicted_note())))
    bound_note()

    if not view.measured.empty:
        st.subheader("Measured beside predicted")
        st.caption(
            "Each proxy's pooled power-law exponent (one slope of ln proxy against ln L or ln N shared by "
            "the groups, an intercept per group) beside the exponent its bound predicts. The interval is "
            "Student-t on the slope's residual degrees of freedom, assuming normal, independent scatter of "
            f"the models about the law; it is given from {MIN_SIZES} sizes up, never from two. Ours is "
            "predicted √L or better, so an interval below its line agrees with the theory."
        )
        draw_table(
            service.measured_shown(view.measured),
            hide_index=True,
            key="scaling_measured",
            column_config=service.measured_columns(),
            column_order=service.MEASURED_ORDER,
        )
        st.markdown("\n".join(f"- {plain(raised_powers(sentence))}" for sentence in view.measured_sentences))

    st.subheader("Fitted growth exponents")
    st.caption(
        "Least-squares slope of ln(proxy) against ln L (at each fixed N) or ln N (at each fixed L); "
        "rows without a 'Fixed at' value are the pooled fits, one common slope over all groups. "
        "**r² within groups** counts only the variation inside each group, not the differences "
        "between groups that their own intercepts absorb. Against L each proxy is also fitted "
        "**log-linearly** (ln proxy against L, a growth rate per layer: the right law for exponential "
        "growth such as Edelman's), and 'Better fit' names the law with the smaller residual variance. "
        f"± is one standard error; fits on fewer than {MIN_SIZES} sizes are flagged and get no interval, "
        "since two points fit any law exactly."
    )
    draw_table(
        service.exponents_shown(view.exponents),
        hide_index=True,
        key="scaling_exponents",
        column_config=service.exponent_columns(),
        column_order=service.EXPONENT_ORDER,
    )
    csv_download(view.exponents, "growth-exponents.csv", "download_exponents", "Download the exponents (CSV)")

    st.subheader("The models")
    shown_models, model_columns = service.models_shown(view.models)
    draw_table(shown_models, hide_index=True, key="scaling_models_table", column_config=model_columns)
    csv_download(view.models, "scaling-models.csv", "download_scaling_models", "Download the proxies (CSV)")

st.subheader("Not available here")
missing = service.missing_miniatures(available)
if failed:
    st.caption(
        "Chosen but left out (see the errors above): " + ", ".join(plain(atlas.display_name(name)) for name in failed)
    )
if lab_family:
    st.caption(
        "Every model of the lab family is shipped with the package. For the BERT Miniatures choose that family above."
    )
elif missing.empty:
    st.caption("Every one of the 24 BERT Miniatures is available.")
else:
    st.caption(
        f"{len(missing)} of the 24 BERT Miniatures are neither in the Hugging Face cache nor in an "
        f"opened atlas, so they are not in the study:"
    )
    st.dataframe(missing, hide_index=True, key="scaling_missing", placeholder=MISSING)
    with st.form("scaling_download_form"):
        wanted = st.multiselect(
            "Download and analyse (needs network access to the Hugging Face Hub)",
            list(missing["model"]),
            key="scaling_download_models",
        )
        requested = st.form_submit_button("Check the download size")
    if requested and wanted:  # sizes first, from config.json and the Hub's metadata: no weight is fetched yet
        needed, size, errors = service.plan_downloads(wanted)
        choices.hold(DOWNLOAD_ERRORS_KEY, errors)
        choices.hold(PENDING_KEY, (needed, size))
    if pending := st.session_state.get(PENDING_KEY):
        needed, size = pending
        if needed and st.button(
            f"Download {size / 1e6:,.1f} MB for {len(needed)} model(s) and analyse them",
            key="scaling_confirm_download",
            type="primary",
        ):
            choices.take(PENDING_KEY)
            got, errors = service.download(needed, st.empty())
            choices.hold(DOWNLOAD_ERRORS_KEY, errors)
            if got:
                choices.hold(DOWNLOADED_KEY, got)
                st.rerun()  # the new models are now in the cache: list them and add them to the study
    for message in st.session_state.get(DOWNLOAD_ERRORS_KEY, []):
        st.error(message)

st.subheader("Export as an atlas")
st.caption(
    "The spectral profiles as one portable file, which opens offline in this dashboard (source "
    "'Atlas file') or with `specbound atlas show`."
)
left, right = st.columns(2)
with left:
    atlas_files.export_button(
        profiles,
        "scaling-atlas.npz",
        "export_scaling_atlas",
        f"Export the {format_count(len(profiles), 'model')} of the study",
    )
with right:
    current = session.current_analysis()
    atlas_files.export_button(
        [current.profile],
        f"{file_stem(current.profile)}-atlas.npz",
        "export_current_atlas",
        f"Export the current model ({atlas.display_name(session.current_model())})",
    )
