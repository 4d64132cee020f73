"""The atlas widgets: the sidebar's "Atlas file" source (upload or path, then one of its models) and the
button that downloads profiles as an atlas. What they open and pack is :mod:`dashboard.state.atlas`'s.
"""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from dashboard import safety
from dashboard.state.atlas import (
    HOW_TO_MAKE,
    LABEL_KEY,
    MODEL_PICK_KEY,
    PATH_INPUT_KEY,
    READ_KEY,
    UPLOAD_KEY,
    atlas_bytes,
    loaded,
    loaded_file,
    mark_new_upload,
    model_name,
    shown_member,
    use,
    use_upload,
)
from dashboard.widgets import export
from dashboard.wording.text import plain
from specbound.core.profile import SpectralProfile
from specbound.present.numbers import format_count


def export_button(profiles: Iterable[SpectralProfile], file_name: str, key: str, label: str) -> None:
    """A download button for an atlas of ``profiles`` (disabled when there are none)."""
    profiles = list(profiles)
    if not profiles:
        st.download_button(label, b"", file_name=file_name, key=key, disabled=True)
        return
    st.download_button(
        label,
        atlas_bytes(profiles),
        file_name=file_name,
        mime="application/octet-stream",
        key=key,
        on_click=export.NO_RERUN,
        help="An atlas file (.npz): the spectral profiles, which open offline in "
        "this dashboard (source 'Atlas file') and with `specbound atlas show`.",
    )


def _describe(profile: SpectralProfile) -> str:
    shape = profile.shape
    return f"{shown_member(profile.model)} (L = {shape.num_layers}, N = {shape.hidden_size}, {shape.num_heads} heads)"


def pick_from_atlas() -> str | None:
    """Sidebar inputs of the "Atlas file" source: upload or path, then one of its models."""
    uploaded = st.file_uploader(
        "Atlas file (.npz)",
        type=["npz"],
        key=UPLOAD_KEY,
        help="Spectral profiles exported by `specbound grid --atlas` or "
        "`specbound atlas export`; its models open with no checkpoint.",
    )
    path = ""
    if safety.server_paths_allowed():
        path = st.text_input("…or its path on the server", key=PATH_INPUT_KEY, placeholder="atlas.npz")
    refusal = None if uploaded is None else safety.upload_refusal(uploaded.name, uploaded.size)
    with safety.guarded("reading an atlas", lambda message: st.error(f"Could not read the atlas: {message}")):
        if refusal is not None:  # before its bytes are read
            st.error(refusal)
        elif uploaded is not None:
            before = loaded_file()
            use_upload(uploaded.name, uploaded.getvalue())
            if loaded_file() != before:  # a new file, not the same one the uploader hands every rerun
                mark_new_upload()
        elif safety.server_paths_allowed() and st.button("Read the atlas", key=READ_KEY, disabled=not path.strip()):
            use(path.strip())
    profiles, file = loaded(), loaded_file()
    if not profiles or file is None:
        st.caption("No atlas loaded. " + HOW_TO_MAKE)
        return None
    by_name = {p.model: p for p in profiles}
    label = plain(st.session_state.get(LABEL_KEY, "atlas"))
    st.caption(
        f"{label}: {format_count(len(profiles), 'model')}, opened from the stored spectra (no checkpoint). "
        f"The Scaling page uses {'it' if len(profiles) == 1 else 'all of them'}."
    )
    if st.session_state.get(MODEL_PICK_KEY) not in by_name:
        st.session_state.pop(MODEL_PICK_KEY, None)
    member = st.selectbox(
        "Model in the atlas", list(by_name), key=MODEL_PICK_KEY, format_func=lambda name: _describe(by_name[name])
    )
    return model_name(file, member)
