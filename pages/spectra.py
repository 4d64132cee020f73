"""Spectra: singular-value profiles, layer x head heatmaps and cumulative energy of every proxy matrix.

Per layer the QK and V heads are drawn as their median with a min-max band (a few traces instead of
one per head); chosen heads are drawn one by one on demand.
"""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, choices, session, share
from dashboard.views.spectra import P_TEXT, TITLE, spectra_view
from dashboard.widgets import drilldown
from dashboard.widgets.controls import layer_label
from dashboard.widgets.experts import expert_picker
from dashboard.widgets.export import csv_download, file_stem, provenance, report_download, show_figure, show_panels
from dashboard.widgets.presentation import bound_note, folded
from dashboard.widgets.tables import show_table
from dashboard.wording.text import code
from specbound.core.architecture import HEAD_KINDS, Kind
from specbound.present.figures.spectra import PANEL_COLUMNS, esd_figure
from specbound.present.report import singular_values_frame

ensure_app_entry()

HEATMAP_KEY = "head_heatmaps"
HEATMAP_KIND_CODEC = share.choice_codec({kind.value: kind.value.lower() for kind in HEAD_KINDS})

analysis = session.current_analysis()
profile = analysis.profile
shape = profile.shape
name = atlas.display_name(session.current_model())
all_layers = list(range(shape.num_layers))
all_kinds = [kind.value for kind in profile.model_kinds]
source = provenance(name, f"spectra, {P_TEXT}")

st.title(TITLE)
st.caption(
    f"{code(name)}: singular values of its {shape.matrix_count_formula} = {shape.num_matrices} proxy matrices "
    f"({', '.join(k.value for k in shape.head_kinds)} per query head, "
    f"{', '.join(k.value for k in shape.layer_kinds)} per "
    f"{'expert' if shape.moe else 'layer'}), exact in float64. "
    f"Zero singular values (below the numerical-rank threshold) cannot sit on a log axis: each panel title "
    f"counts them."
)

all_heads = list(range(shape.num_heads))
for key, codec, offered in (
    ("spectra_layers", share.INTS, all_layers),
    ("spectra_kinds", share.TEXTS, all_kinds),
    ("spectra_heads", share.INTS, all_heads),
):
    chosen = share.shared(key, codec, offered if key != "spectra_heads" else [])
    choices.trimmed(key, chosen, offered)  # a link made on a larger model
share.shared("spectra_normalise", share.BOOL, False)
head_kinds = [kind.value for kind in shape.head_kinds]  # QK_x from a link made on an encoder-decoder: QK
share.shared_choice("heatmap_kind", HEATMAP_KIND_CODEC, head_kinds, Kind.QK.value)

layer_col, kind_col, head_col = st.columns(3)  # the toggle on its own line: a fourth column cut its label at 1024 px
layers = layer_col.multiselect(
    "Layers", all_layers, key="spectra_layers", format_func=lambda layer: layer_label(shape, layer)
)
kinds = kind_col.multiselect("Kinds", all_kinds, key="spectra_kinds")
heads = head_col.multiselect(
    "Draw these heads one by one",
    all_heads,
    key="spectra_heads",
    placeholder="median and range",
    help="Empty: per layer, the median over the heads with a band from min to max.",
)
expert = expert_picker(shape, "spectra_expert")
normalise = st.toggle("Normalise by σ₁", key="spectra_normalise")
profiles_place = st.container()

st.subheader("Per head: rank, stable rank, spectral norm")
head_kind = Kind(st.radio("Heads of", head_kinds, horizontal=True, key="heatmap_kind"))

view = spectra_view(
    analysis,
    model=name,
    layers=layers,
    kinds=kinds,
    heads=heads,
    experts=None if expert is None else [expert],
    normalise=normalise,
    head_kind=head_kind,
    source=source,
)
with profiles_place:
    if view.profiles:
        show_panels(view.profiles, "sv_profiles", per_row=PANEL_COLUMNS)
        show_panels(view.energy, "cumulative_energy", per_row=PANEL_COLUMNS)
    else:
        st.caption("Choose at least one layer and one kind to draw the profiles.")
st.caption("Click a cell to open that matrix below.")
show_panels(
    view.heatmaps,
    HEATMAP_KEY,
    per_row=view.heatmaps_per_row,
    on_select=lambda n: lambda: drilldown.from_chart(f"{HEATMAP_KEY}_{n}", analysis, drilldown.head_cell(head_kind)),
)

st.subheader("One matrix")
index = drilldown.picker(analysis)
if index is not None:
    st.caption("At p*, each matrix's own optimum; the Bound explorer shows it at any p.")
    drilldown.detail(analysis, index, analysis.optimal, provenance(name, "p*"))
    bound_note(analysis.profile.shape)  # the page's only bound numbers
    with folded("Its eigenvalue spectrum and power-law fit (WeightWatcher's α)"):
        st.caption(
            "The eigenvalues λ = σ² of WᵀW on log-spaced bins, and the power law WeightWatcher 0.7.7 fits to "
            "their upper tail (from the dashed x_min on): a smaller α is a heavier tail. Every matrix's α: "
            "`specbound analyze MODEL --power-law` or `Analysis.power_law_frame()`."
        )
        show_figure(esd_figure(profile, index, source=source), "esd")

st.subheader("Every matrix")
with folded("Norms and ranks (table)"):
    st.caption(
        "Sizes, ranks and norms of each matrix (scroll sideways; the matrix stays in view). "
        "Click a row to open that matrix above."
    )
    show_table(
        view.table.assign(matrix=[m.label for m in profile.ids]),
        "spectra_table",
        on_select=lambda: drilldown.from_table("spectra_table"),
    )
    left, right = st.columns(2)
    with left:
        csv_download(view.table, f"{file_stem(profile)}-matrices.csv", "download_matrices", "Download this table (CSV)")
    with right:
        csv_download(
            lambda: singular_values_frame(profile),
            f"{file_stem(profile)}-singular-values.csv",
            "download_singular_values",
            "Download every singular value (CSV)",
        )

report_download(view, key="report_spectra")
