"""Atlas files in the dashboard: open one, resolve ``atlas:<model>`` names against it, export profiles.

An atlas (:mod:`specbound.atlas`) holds the spectral profiles of several models, so its models open
with no checkpoint and no network. A session loads at most one atlas at a time, from an upload or
from a path on the server; the profiles live in the session (they are spectra, not weights). A model
of the loaded atlas is named ``atlas:<model name>`` everywhere in the dashboard, which keeps it apart
from the checkpoint of the same name: :func:`dashboard.data.resolve_analysis` sends those names here.

Parsed atlases and analyses are shared between sessions by content (a SHA-256 of the file, or of a
profile's arrays), never by name alone: two atlases may hold different profiles under one name.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable
from pathlib import Path

import streamlit as st

from specbound import atlas as sb_atlas
from specbound.atlas import AtlasError
from specbound.bounds import BoundAnalysis
from specbound.profile import SpectralProfile

#: Prefix of a model name that refers to a profile of the session's atlas.
ATLAS_PREFIX = "atlas:"
#: Session-state keys: the loaded profiles, the file's name, and its path when it was read from one.
PROFILES_KEY = "atlas_profiles"
LABEL_KEY = "atlas_label"
PATH_KEY = "atlas_path"
#: Widget keys of the sidebar's atlas source.
UPLOAD_KEY, PATH_INPUT_KEY, READ_KEY, MODEL_PICK_KEY = "atlas_upload", "atlas_path_input", "atlas_read", "atlas_model"
#: How people get an atlas, quoted wherever one is asked for.
HOW_TO_MAKE = ("Make one where the checkpoints are (with network for the miniatures): "
               "`specbound grid --layers 2 4 --widths 128 256 --out grid --atlas atlas.npz`, "
               "or `specbound atlas export --models L2-H128 L4-H128 --out atlas.npz`.")


def atlas_name(model: str) -> str:
    return ATLAS_PREFIX + model


def is_atlas_name(name: str) -> bool:
    return name.startswith(ATLAS_PREFIX)


def model_in_atlas(name: str) -> str:
    """The model's own name: ``atlas:<model>`` -> ``<model>``; other names are returned as they are."""
    return name.removeprefix(ATLAS_PREFIX)


def loaded() -> tuple[SpectralProfile, ...]:
    """The profiles of the session's atlas (empty when none is loaded)."""
    return st.session_state.get(PROFILES_KEY, ())


def profile_digest(profile: SpectralProfile) -> str:
    """Content key of a profile: its name, revision, shape and every stored array."""
    digest = hashlib.sha256(f"{profile.model}\n{profile.revision}\n{profile.shape}\n".encode())
    for array in (profile.singular_values, profile.full_dims, profile.norm_21, profile.norm_11):
        digest.update(array.tobytes())
    return digest.hexdigest()


# --- reading ------------------------------------------------------------------------------------

@st.cache_resource(show_spinner=False, max_entries=8)
def _read_upload(digest: str, file_name: str, _content: bytes) -> tuple[SpectralProfile, ...]:
    """Profiles of uploaded bytes (keyed by their SHA-256); the file name only shapes messages."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / (Path(file_name).name or "atlas.npz")
        path.write_bytes(_content)
        return sb_atlas.load_atlas(path)


@st.cache_resource(show_spinner=False, max_entries=8)
def _read_path(path: str, size: int, mtime_ns: int) -> tuple[SpectralProfile, ...]:
    """Profiles of an atlas on the server's disk (re-read when its size or time changes)."""
    return sb_atlas.load_atlas(path)


def _remember(profiles: tuple[SpectralProfile, ...], label: str, path: str | None) -> None:
    st.session_state[PROFILES_KEY] = profiles
    st.session_state[LABEL_KEY] = label
    if path is None:
        st.session_state.pop(PATH_KEY, None)
    else:
        st.session_state[PATH_KEY] = path


def load_upload(file_name: str, content: bytes) -> tuple[SpectralProfile, ...]:
    """Make an uploaded atlas the session's atlas (AtlasError if it is not one)."""
    profiles = _read_upload(hashlib.sha256(content).hexdigest(), file_name, content)
    _remember(profiles, Path(file_name).name, None)
    return profiles


def load_path(path: str) -> tuple[SpectralProfile, ...]:
    """Make the atlas at ``path`` the session's atlas (AtlasError if it is missing or not one)."""
    target = Path(path.strip()).expanduser()
    try:
        stat = target.stat()
    except OSError:
        raise AtlasError(f"no atlas file at {path.strip()}") from None
    profiles = _read_path(str(target.resolve()), stat.st_size, stat.st_mtime_ns)
    _remember(profiles, target.name, path.strip())
    return profiles


def profile_named(name: str) -> SpectralProfile:
    """The profile behind ``atlas:<model>`` in the session's atlas (AtlasError if it is not there)."""
    model = model_in_atlas(name)
    profiles = loaded()
    if not profiles:
        raise AtlasError(f"'{model}' comes from an atlas file and no atlas is loaded in this session: "
                         f"open the atlas in the sidebar (source 'Atlas file')")
    for profile in profiles:
        if profile.model == model:
            return profile
    raise AtlasError(f"the loaded atlas ({st.session_state.get(LABEL_KEY, 'atlas')}) holds no model "
                     f"'{model}'")


@st.cache_resource(show_spinner=False, max_entries=32)
def _analysis(digest: str, _profile: SpectralProfile) -> BoundAnalysis:
    return BoundAnalysis.from_profile(_profile)


def analysis_for(name: str) -> BoundAnalysis:
    """The bound analysis of an atlas model: no checkpoint, only its stored spectra."""
    profile = profile_named(name)
    return _analysis(profile_digest(profile), profile)


# --- writing ------------------------------------------------------------------------------------

def _unique(profiles: Iterable[SpectralProfile]) -> list[SpectralProfile]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for profile in profiles:
        if (profile.model, profile.revision) not in seen:
            seen.add((profile.model, profile.revision))
            kept.append(profile)
    return kept


@st.cache_data(show_spinner=False, max_entries=16)
def _atlas_bytes(digests: tuple[str, ...], _profiles: tuple[SpectralProfile, ...]) -> bytes:
    with tempfile.TemporaryDirectory() as directory:
        return sb_atlas.save_atlas(_profiles, Path(directory) / "atlas.npz").read_bytes()


def atlas_bytes(profiles: Iterable[SpectralProfile]) -> bytes:
    """An atlas file holding these profiles (one per model and revision), as bytes for a download."""
    kept = tuple(_unique(profiles))
    return _atlas_bytes(tuple(profile_digest(p) for p in kept), kept)


def export_button(profiles: Iterable[SpectralProfile], file_name: str, key: str, label: str) -> None:
    """A download button for an atlas of ``profiles`` (disabled when there are none)."""
    profiles = list(profiles)
    if not profiles:
        st.download_button(label, b"", file_name=file_name, key=key, disabled=True)
        return
    st.download_button(label, atlas_bytes(profiles), file_name=file_name, mime="application/octet-stream",
                       key=key, help="An atlas file (.npz): the spectral profiles, which open offline in "
                                     "this dashboard (source 'Atlas file') and with `specbound atlas show`.")


# --- the sidebar source ---------------------------------------------------------------------------

def _describe(profile: SpectralProfile) -> str:
    shape = profile.shape
    return f"{profile.model} (L = {shape.num_layers}, N = {shape.hidden_size}, {shape.num_heads} heads)"


def pick_from_atlas() -> str | None:
    """Sidebar inputs of the "Atlas file" source: upload or path, then one of its models."""
    uploaded = st.file_uploader("Atlas file (.npz)", type=["npz"], key=UPLOAD_KEY,
                                help="Spectral profiles exported by `specbound grid --atlas` or "
                                     "`specbound atlas export`; its models open with no checkpoint.")
    path = st.text_input("…or its path on the server", key=PATH_INPUT_KEY, placeholder="atlas.npz")
    try:
        if uploaded is not None:
            load_upload(uploaded.name, uploaded.getvalue())
        elif st.button("Read the atlas", key=READ_KEY, disabled=not path.strip()):
            load_path(path)
    except AtlasError as exc:
        st.error(str(exc))
    profiles = loaded()
    if not profiles:
        st.caption("No atlas loaded. " + HOW_TO_MAKE)
        return None
    by_name = {p.model: p for p in profiles}
    st.caption(f"{st.session_state.get(LABEL_KEY, 'atlas')}: {len(profiles)} models, opened from their "
               f"stored spectra (no checkpoint). The Scaling page uses all of them.")
    model = st.selectbox("Model in the atlas", list(by_name), key=MODEL_PICK_KEY,
                         format_func=lambda name: _describe(by_name[name]))
    return atlas_name(model)

