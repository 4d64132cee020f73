"""Atlas files in the dashboard: open one as the session's atlas, name its models, pack profiles into one.

An atlas (:mod:`specbound.io.atlas`) holds the spectral profiles of several models, so its models open
with no checkpoint and no network. Its models are ordinary model references of the package,
``atlas:FILE#MODEL`` (:mod:`specbound.io.models`), opened by :func:`specbound.io.loading.load_profile` like
any other name: nothing here parses names.

A session has at most one atlas at a time, from an upload or, when the operator allows server paths
(:func:`dashboard.safety.server_paths_allowed`), from a path on the server. An upload
is stored once in the upload store, a folder of the profile cache, under the SHA-256 of its bytes,
so its models have a file to name and a shared link to them works on the same server. In links and
on screen the store's folder is never shown: :func:`link_form` writes ``atlas:@<digest>#MODEL``
instead and :func:`from_link` reads it back; :func:`display_name` names a model by its atlas's
file name.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath

import numpy as np
import streamlit as st

from dashboard import safety
from dashboard.state import run_names
from dashboard.state.upload_store import DIGEST_CHARS, upload_dir
from specbound.core.errors import SpecboundError
from specbound.core.profile import SpectralProfile
from specbound.io import atlas as sb_atlas
from specbound.io.atlas import AtlasError
from specbound.io.files import atomic_write
from specbound.io.models import ATLAS_MEMBER_SEP, ATLAS_PREFIX, ModelRef, Source, atlas_reference, short_model_name

#: Session-state keys: the path of the session's atlas file, and the name it is shown under.
FILE_KEY = "atlas_file"
LABEL_KEY = "atlas_label"
#: Session-state key: an atlas was just uploaded (a file new to the session), and the sidebar opens the
#: model it picks at once, as a file dropped on the page is expected to open (:func:`take_new_upload`).
NEW_UPLOAD_KEY = "_atlas_new_upload"
#: Beside an upload ``<digest>.npz`` in the store, ``<digest>.name`` holds the file name it was uploaded under.
UPLOAD_NAME_SUFFIX = ".name"
#: At most this many characters of an uploaded file's name are kept and shown.
MAX_LABEL_CHARS = 120
#: Widget keys of the sidebar's atlas source.
UPLOAD_KEY, PATH_INPUT_KEY, READ_KEY, MODEL_PICK_KEY = "atlas_upload", "atlas_path_input", "atlas_read", "atlas_model"
#: How a link names an uploaded atlas instead of its path: ``atlas:@<digest>#MODEL``.
UPLOAD_TOKEN = "@"
#: How people get an atlas, quoted wherever one is asked for.
HOW_TO_MAKE = (
    "Make one where the checkpoints are (with network for the miniatures): "
    "`specbound grid --layers 2 4 --widths 128 256 --out grid --atlas atlas.npz`, "
    "or `specbound atlas export --models L2-H128 L4-H128 --out atlas.npz`."
)


# --- names --------------------------------------------------------------------------------------


def atlas_ref(name: str) -> ModelRef | None:
    """The reference behind ``name`` when it is an atlas model, else None (also when it names nothing,
    or nothing a visitor may open: see :func:`dashboard.safety.model_ref`)."""
    try:
        ref = safety.model_ref(name)
    except SpecboundError:
        return None
    return ref if ref.source is Source.ATLAS else None


def model_name(path: Path | str, member: str) -> str:
    """The model name of one profile of an atlas file."""
    return atlas_reference(Path(path).resolve(), member)


def member_label(member: str) -> str:
    """An atlas member as the screen names it: a model exported from a directory is stored under the
    exporting machine's full path; on screen it is that path's last component (as messages name files),
    while a Hub id (``owner/name``) and any other name stay whole."""
    if "\\" in member:  # a Windows path
        return PureWindowsPath(member).name or member
    if member.startswith(("/", "~", ".")):
        return PurePosixPath(member).name or member
    return member


def upload_label(path: Path) -> str | None:
    """The file name an upload was made under (kept beside it in the store), so an atlas opened from a link
    by its digest is named as its uploader named it; None for a file that is not an upload (only the upload
    store's files have a label: a file beside an atlas elsewhere on the server is never read)."""
    try:
        if path.resolve().parent != upload_dir().resolve():
            return None
        return (path.with_suffix(UPLOAD_NAME_SUFFIX)).read_text(encoding="utf-8")[:MAX_LABEL_CHARS] or None
    except (OSError, UnicodeDecodeError):
        return None


def shown_member(member: str) -> str:
    """An atlas member as every label names it: a lab run's saved step by the run's short name, never its
    run id (:func:`dashboard.state.run_names.short_name`), any other by :func:`member_label`."""
    return run_names.short_name(member) or member_label(member)


def display_name(name: str) -> str:
    """How a model is named on screen: an atlas model as ``MODEL (atlas FILE)``, a lab run's step by the
    run's short name alone (:func:`shown_member`), a model opened from a directory of the server by that
    directory's name (:func:`~specbound.io.models.short_model_name`: ``/srv/runs/my-lora`` is
    ``my-lora``), never with its folders; a Hub id or an alias as it is."""
    ref = atlas_ref(name)
    if ref is None or ref.path is None:
        return short_model_name(name)
    if ref.member and (lab_run := run_names.short_name(ref.member)) is not None:
        return lab_run
    label = st.session_state.get(LABEL_KEY) if str(ref.path) == st.session_state.get(FILE_KEY) else None
    member = member_label(ref.member) if ref.member else "its model"
    return f"{member} (atlas {label or upload_label(ref.path) or ref.path.name})"


def _short_members(path: Path) -> dict[str, str]:
    """Each member of an atlas by its on-screen name (:func:`member_label`), where that name is its own
    in the file (two members ending in the same folder name keep their whole names)."""
    try:
        members = [p.model for p in _profiles_of(path)]
    except AtlasError:
        return {}
    labels = [member_label(m) for m in members]
    return {label: m for label, m in zip(labels, members, strict=True) if labels.count(label) == 1}


def link_form(name: str) -> str:
    """The model name as a link carries it: an uploaded atlas by its digest, not its server path, and the
    member of any atlas by the name the screen shows (the last component of an exporting machine's path,
    where that is unique in the file), so a shared link does not carry the exporter's folders."""
    ref = atlas_ref(name)
    if ref is None or ref.path is None:
        return name
    member = ref.member
    if member is not None and _short_members(ref.path).get(member_label(member)) == member:
        member = member_label(member)
    if ref.path.parent != upload_dir().resolve():
        return atlas_reference(ref.path, member)
    shown = "" if member is None else f"{ATLAS_MEMBER_SEP}{member}"
    return f"{ATLAS_PREFIX}{UPLOAD_TOKEN}{ref.path.stem}{shown}"


def from_link(text: str) -> str:
    """The inverse of :func:`link_form`: ``atlas:@<digest>#MODEL`` back to the stored upload's name, and
    a member's short name back to the member it stands for in that file."""
    token = ATLAS_PREFIX + UPLOAD_TOKEN
    if text.startswith(token):
        digest, sep, member = text[len(token) :].partition(ATLAS_MEMBER_SEP)
        if len(digest) != DIGEST_CHARS or not all(c in "0123456789abcdef" for c in digest):
            return text  # not a digest: let resolution report the name as it is
        path = upload_dir().resolve() / f"{digest}.npz"
    else:
        ref = atlas_ref(text)  # a server path, under the operator's rule for server paths
        if ref is None or ref.path is None or ref.member is None:
            return text
        path, sep, member = ref.path, ATLAS_MEMBER_SEP, ref.member
    if sep and path.is_file():
        member = _short_members(path).get(member, member)
    return atlas_reference(path, member if sep else None)


# --- the session's atlas ------------------------------------------------------------------------


@st.cache_resource(show_spinner=False, max_entries=8)
def _read(path: str, size: int, mtime_ns: int) -> tuple[SpectralProfile, ...]:
    """Profiles of an atlas file (read again when its size or time changes)."""
    return sb_atlas.load_atlas(path)


def _profiles_of(path: Path) -> tuple[SpectralProfile, ...]:
    try:
        stat = path.stat()
    except OSError:
        raise AtlasError(f"the atlas file {path.name} is no longer there") from None
    return _read(str(path), stat.st_size, stat.st_mtime_ns)


def use(path: Path | str, label: str | None = None) -> tuple[SpectralProfile, ...]:
    """Make the atlas at ``path`` the session's atlas (AtlasError if it is missing or not one)."""
    target = Path(path).expanduser()
    if not target.is_file():
        raise AtlasError(f"no atlas file at {path}")
    profiles = _profiles_of(target.resolve())
    st.session_state[FILE_KEY] = str(target.resolve())
    st.session_state[LABEL_KEY] = label or upload_label(target.resolve()) or target.name
    return profiles


def store_upload(file_name: str, content: bytes) -> Path:
    """Keep uploaded bytes in the upload store under their digest (once) and return the file; the name it
    was uploaded under is kept beside it (:func:`upload_label`), the first one given."""
    target = upload_dir() / f"{hashlib.sha256(content).hexdigest()[:DIGEST_CHARS]}.npz"
    if not target.is_file():
        with atomic_write(target) as f:
            f.write(content)
    label = target.with_suffix(UPLOAD_NAME_SUFFIX)
    if not label.is_file():
        with atomic_write(label) as f:
            f.write(Path(file_name).name[:MAX_LABEL_CHARS].encode("utf-8"))
    return target


def use_upload(file_name: str, content: bytes) -> tuple[SpectralProfile, ...]:
    """Make an uploaded atlas the session's atlas; if it is refused for any reason (not an atlas, a
    member zipfile cannot read, a bug), nothing of it is kept in the store."""
    target = store_upload(file_name, content)
    try:
        return use(target, Path(file_name).name)
    except BaseException:
        target.unlink(missing_ok=True)
        target.with_suffix(UPLOAD_NAME_SUFFIX).unlink(missing_ok=True)
        raise


def mark_new_upload() -> None:
    """Note that the sidebar's atlas source has just read a file new to the session (:func:`take_new_upload`)."""
    st.session_state[NEW_UPLOAD_KEY] = True


def take_new_upload() -> bool:
    """Whether the sidebar's atlas source read a newly uploaded atlas since the last call (then the sidebar
    opens its chosen model without waiting for "Open model"); True once per upload."""
    return bool(st.session_state.pop(NEW_UPLOAD_KEY, False))


def loaded() -> tuple[SpectralProfile, ...]:
    """The profiles of the session's atlas (empty when none is open)."""
    path = st.session_state.get(FILE_KEY)
    if not path:
        return ()
    try:
        return _profiles_of(Path(path))
    except AtlasError:
        return ()


def loaded_file() -> Path | None:
    path = st.session_state.get(FILE_KEY)
    return Path(path) if path else None


def profile_digest(profile: SpectralProfile) -> str:
    """Content key of a profile: its name, revision, shape and every stored array."""
    digest = hashlib.sha256(f"{profile.model}\n{profile.revision}\n{profile.shape}\n".encode())
    for array in (profile.singular_values, profile.full_dims, profile.norm_21, profile.norm_11):
        digest.update(np.ascontiguousarray(array).data)
    return digest.hexdigest()


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
