"""Spectra: singular-value profiles, layer x head heatmaps and cumulative energy of every proxy matrix.

Per layer the QK and V heads are drawn as their median with a min-max band (a few traces instead of
one per head); chosen heads are drawn one by one on demand.
"""

from __future__ import annotations

import streamlit as st

from dashboard.routing import ensure_app_entry
from dashboard.state import atlas, session, share
from dashboard.widgets import drilldown
from dashboard.widgets.controls import layer_label
from dashboard.widgets.experts import expert_picker
from dashboard.widgets.export import (
    clickable_cells,
    csv_download,
    file_stem,
    provenance,
    report_download,
    show_figure,
    show_panels,
)
from dashboard.widgets.presentation import folded
from dashboard.widgets.tables import show_table
from dashboard.wording.text import bound_note, code
from specbound.core.architecture import DECODER, ENCODER, HEAD_KINDS, Kind
from specbound.present.figures import spectra as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.style import split_panels
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
source = provenance(name, "spectra, independent of p")

st.title("Spectra")
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
    st.session_state[key] = [item for item in chosen if item in offered]  # a link made on a larger model
share.shared("spectra_normalise", share.BOOL, False)
share.shared("heatmap_kind", HEATMAP_KIND_CODEC, Kind.QK.value)

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
experts = None if expert is None else [expert]

profiles = energy = None
if layers and kinds:
    chosen_heads = heads or None
    profiles = split_panels(
        figures.singular_value_profiles(
            profile, layers, kinds, normalise=normalise, heads=chosen_heads, experts=experts, source=source
        )
    )
    show_panels(profiles, "sv_profiles", per_row=figures.PANEL_COLUMNS)
    energy = split_panels(
        figures.cumulative_energy_curves(profile, layers, kinds, heads=chosen_heads, experts=experts, source=source)
    )
    show_panels(energy, "cumulative_energy", per_row=figures.PANEL_COLUMNS)
else:
    st.caption("Choose at least one layer and one kind to draw the profiles.")

st.subheader("Per head: rank, stable rank, spectral norm")
head_kinds = [kind.value for kind in shape.head_kinds]
if st.session_state["heatmap_kind"] not in head_kinds:  # QK_x from a link made on an encoder-decoder
    st.session_state["heatmap_kind"] = Kind.QK.value
head_kind = Kind(st.radio("Heads of", head_kinds, horizontal=True, key="heatmap_kind"))
st.caption("Click a cell to open that matrix below.")
if shape.encoder_decoder:  # the encoder's heads and the decoder's side by side (the cross-attention: decoder only)
    stacks = [stack for stack in (ENCODER, DECODER) if figures.head_layers(profile, head_kind, stack)]
    heatmaps = [clickable_cells(figures.head_heatmaps(profile, head_kind, source=source, stack=s)) for s in stacks]
    panel_options = {"per_row": 2}
else:
    heatmaps = split_panels(
        clickable_cells(figures.head_heatmaps(profile, head_kind, source=source)),
        titles=[f"{head_kind.value} heads: {quantity}" for quantity in figures.HEATMAP_QUANTITIES],
    )
    panel_options = {}
show_panels(
    heatmaps,
    HEATMAP_KEY,
    on_select=lambda n: lambda: drilldown.from_chart(f"{HEATMAP_KEY}_{n}", analysis, drilldown.head_cell(head_kind)),
    **panel_options,
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
        show_figure(figures.esd_figure(profile, index, source=source), "esd")

st.subheader("Every matrix")
table = profile.to_frame()
with folded("Norms and ranks (table)"):
    st.caption(
        "Sizes, ranks and norms of each matrix (scroll sideways; the matrix stays in view). "
        "Click a row to open that matrix above."
    )
    show_table(
        table.assign(matrix=[m.label for m in profile.ids]),
        "spectra_table",
        on_select=lambda: drilldown.from_table("spectra_table"),
    )
    left, right = st.columns(2)
    with left:
        csv_download(table, f"{file_stem(profile)}-matrices.csv", "download_matrices", "Download this table (CSV)")
    with right:
        csv_download(
            lambda: singular_values_frame(profile),
            f"{file_stem(profile)}-singular-values.csv",
            "download_singular_values",
            "Download every singular value (CSV)",
        )

report_download(
    "Spectra",
    lambda: [
        ReportSection("Singular values", [*(profiles or []), *(energy or [])]),
        ReportSection(f"{head_kind.value} heads", heatmaps),
        ReportSection("Every matrix", tables=[table]),
    ],
    model=name,
    p_text="independent of p",
    key="report_spectra",
    shape=analysis.profile.shape,
    grid_m=analysis.grid_m,
)
