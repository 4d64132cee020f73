"""Spectra: singular-value profiles, layer x head heatmaps and cumulative energy of every proxy matrix."""

from __future__ import annotations

import streamlit as st

from dashboard import atlas, data
from dashboard.export import csv_download, file_stem, show_figure
from dashboard.routing import ensure_app_entry
from dashboard.text import code
from specbound.figures import spectra as figures
from specbound.matrices import Kind
from specbound.report import singular_values_frame

ensure_app_entry()

analysis = data.current_analysis()
profile = analysis.profile
shape = profile.shape
all_layers = list(range(shape.num_layers))
all_kinds = [kind.value for kind in Kind]

st.title("Spectra")
st.caption(f"{code(atlas.display_name(data.current_model()))}: singular values of its L(2H + 2) = {shape.num_matrices} proxy matrices "
           f"(QK and V per head, M_in and M_out per layer), exact in float64.")

layer_col, kind_col, option_col = st.columns([3, 3, 2])
layers = layer_col.multiselect("Layers", all_layers, default=all_layers, key="spectra_layers")
kinds = kind_col.multiselect("Kinds", all_kinds, default=all_kinds, key="spectra_kinds")
normalise = option_col.toggle("Normalise by σ₁", key="spectra_normalise")

if layers and kinds:
    show_figure(figures.singular_value_profiles(profile, layers, kinds, normalise=normalise), "sv_profiles")
    show_figure(figures.cumulative_energy_curves(profile, layers, kinds), "cumulative_energy")
else:
    st.caption("Choose at least one layer and one kind to draw the profiles.")

st.subheader("Per head: rank, stable rank, spectral norm")
head_kind = st.radio("Heads of", [Kind.QK.value, Kind.V.value], horizontal=True, key="heatmap_kind")
show_figure(figures.head_heatmaps(profile, head_kind), "head_heatmaps")

st.subheader("Every matrix")
table = profile.to_frame()
st.dataframe(table, hide_index=True, key="spectra_table")
left, right = st.columns(2)
with left:
    csv_download(table, f"{file_stem(profile)}-matrices.csv", "download_matrices",
                 "Download this table (CSV)")
with right:
    csv_download(singular_values_frame(profile), f"{file_stem(profile)}-singular-values.csv",
                 "download_singular_values", "Download every singular value (CSV)")
