"""An atlas: the spectral profiles of several models in one portable file.

Someone with network access analyses a set of models and exports their profiles; anyone can then
open the atlas offline and get every bound term without the checkpoints (a profile holds all the
singular values and norms the bound needs, see :mod:`specbound.profile`).

Format: one ``.npz`` file (a zip of ``.npy`` arrays), read with ``allow_pickle=False``, holding

* ``manifest``: a JSON string ``{"format": "specbound-atlas", "schema": 1, "models": [...]}`` where
  each model has its name, revision, shape (L, N, H, d_ff), the keys of its four arrays and the
  SHA-256 of each array's bytes;
* per model i, ``m{i}_singular_values`` (float64, (M, K)), ``m{i}_full_dims`` (int64, (M,)),
  ``m{i}_norm_21`` and ``m{i}_norm_11`` (float64, (M,)), with M = L (2H + 2).

Arrays are stored as they are, so an imported profile is bit-for-bit the exported one. Import checks
the format tag, the schema, every dtype and shape, and every checksum: a corrupt or foreign file
raises :class:`AtlasError` with a plain message, never a half-read profile.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._version import __version__
from .errors import SpecboundError
from .files import atomic_write
from .matrices import EncoderShape
from .profile import SpectralProfile

FORMAT = "specbound-atlas"
#: Bump when the layout changes; older readers then refuse newer files with a clear message.
SCHEMA_VERSION = 1
MANIFEST_KEY = "manifest"
#: Stored array per profile field, with its exact dtype.
_ARRAYS: dict[str, np.dtype] = {
    "singular_values": np.dtype(np.float64), "full_dims": np.dtype(np.int64),
    "norm_21": np.dtype(np.float64), "norm_11": np.dtype(np.float64),
}
class AtlasError(SpecboundError):
    """The file is not a specbound atlas, or it is damaged."""


@dataclass(frozen=True)
class AtlasEntry:
    """What the manifest says about one model of an atlas."""

    name: str
    revision: str
    shape: EncoderShape
    singular_value_width: int  # K, the common zero-padded length of the singular-value rows


@dataclass(frozen=True)
class AtlasManifest:
    schema: int
    created_by: str
    entries: tuple[AtlasEntry, ...]


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _key(index: int, field_name: str) -> str:
    return f"m{index}_{field_name}"


# --- export -------------------------------------------------------------------------------------

def save_atlas(profiles: Iterable[SpectralProfile], path: Path | str) -> Path:
    """Write profiles to one atlas file (atomically: a temporary file renamed into place)."""
    profiles = list(profiles)
    if not profiles:
        raise ValueError("an atlas needs at least one profile")
    seen: set[tuple[str, str]] = set()
    arrays: dict[str, np.ndarray] = {}
    models: list[dict[str, Any]] = []
    for index, profile in enumerate(profiles):
        if (profile.model, profile.revision) in seen:
            raise ValueError(f"{profile.model} (revision {profile.revision}) is given twice")
        seen.add((profile.model, profile.revision))
        entry: dict[str, Any] = {
            "name": profile.model, "revision": profile.revision,
            "shape": dataclasses.asdict(profile.shape), "arrays": {}, "sha256": {},
        }
        for field_name, dtype in _ARRAYS.items():
            array = np.ascontiguousarray(getattr(profile, field_name))
            if array.dtype != dtype:
                array = array.astype(dtype)  # e.g. int32 dims on some platforms; values unchanged
            key = _key(index, field_name)
            arrays[key] = array
            entry["arrays"][field_name] = key
            entry["sha256"][field_name] = _digest(array)
        models.append(entry)
    manifest = {"format": FORMAT, "schema": SCHEMA_VERSION, "created_by": f"specbound {__version__}",
                "models": models}
    path = Path(path)
    with atomic_write(path) as f:
        np.savez_compressed(f, **{MANIFEST_KEY: np.array(json.dumps(manifest))}, **arrays)
    return path


# --- import -------------------------------------------------------------------------------------

def _require(condition: bool, path: Path, problem: str) -> None:
    if not condition:
        raise AtlasError(f"{path.name} is not a valid specbound atlas: {problem}")


def _parse_manifest(raw: Any, path: Path) -> tuple[AtlasManifest, list[Mapping[str, Any]]]:
    try:
        manifest = json.loads(str(raw[()]) if isinstance(raw, np.ndarray) else str(raw))
    except ValueError:
        raise AtlasError(f"{path.name} is not a valid specbound atlas: its manifest is not JSON") from None
    _require(isinstance(manifest, dict) and manifest.get("format") == FORMAT, path,
             f"the manifest does not declare format '{FORMAT}'")
    schema = manifest.get("schema")
    _require(isinstance(schema, int), path, "the manifest has no schema version")
    if schema > SCHEMA_VERSION:
        raise AtlasError(f"{path.name} uses atlas schema {schema}, newer than this specbound reads "
                         f"({SCHEMA_VERSION}); upgrade specbound")
    models = manifest.get("models")
    _require(isinstance(models, list) and len(models) > 0, path, "the manifest lists no models")
    entries = []
    for i, model in enumerate(models):
        try:
            name, revision = model["name"], model["revision"]
            shape = EncoderShape(**{f.name: model["shape"][f.name] for f in dataclasses.fields(EncoderShape)})
            keys, digests = model["arrays"], model["sha256"]
            if not (isinstance(name, str) and isinstance(revision, str)
                    and all(isinstance(keys[f], str) and isinstance(digests[f], str) for f in _ARRAYS)):
                raise TypeError
        except (KeyError, TypeError, ValueError):
            raise AtlasError(f"{path.name} is not a valid specbound atlas: manifest entry {i} is "
                             f"incomplete") from None
        entries.append(AtlasEntry(name, revision, shape, 0))
    return AtlasManifest(schema, str(manifest.get("created_by", "")), tuple(entries)), models


def _open(path: Path | str) -> tuple[Path, Any]:
    path = Path(path)
    if not path.is_file():
        raise AtlasError(f"no atlas file at {path}")
    try:
        return path, np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise AtlasError(f"{path.name} is not a specbound atlas (not a readable .npz file: "
                         f"{type(exc).__name__})") from None


def _read(path: Path | str, *, with_arrays: bool) -> tuple[AtlasManifest, tuple[SpectralProfile, ...]]:
    path, data = _open(path)
    _require(isinstance(data, np.lib.npyio.NpzFile), path, "it is a single array, not an archive")
    try:
        with data:
            _require(MANIFEST_KEY in data.files, path, "it has no manifest")
            manifest, models = _parse_manifest(data[MANIFEST_KEY], path)
            entries, profiles = [], []
            for entry, model in zip(manifest.entries, models):
                arrays = {}
                for field_name, dtype in _ARRAYS.items():
                    key = model["arrays"][field_name]
                    _require(key in data.files, path, f"array '{key}' of {entry.name} is missing")
                    array = data[key]
                    _require(array.dtype == dtype, path,
                             f"array '{key}' of {entry.name} has dtype {array.dtype}, expected {dtype}")
                    _require(_digest(array) == model["sha256"][field_name], path,
                             f"array '{key}' of {entry.name} does not match its checksum (damaged file)")
                    arrays[field_name] = array
                sv = arrays["singular_values"]
                entries.append(AtlasEntry(entry.name, entry.revision, entry.shape,
                                          sv.shape[1] if sv.ndim == 2 else 0))
                if with_arrays:
                    try:
                        profiles.append(SpectralProfile(model=entry.name, revision=entry.revision,
                                                        shape=entry.shape, **arrays))
                    except ValueError as exc:
                        raise AtlasError(f"{path.name} is not a valid specbound atlas: {entry.name}: "
                                         f"{exc}") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        raise AtlasError(f"{path.name} is damaged: an array cannot be read ({type(exc).__name__})") from None
    return AtlasManifest(manifest.schema, manifest.created_by, tuple(entries)), tuple(profiles)


def load_atlas(path: Path | str) -> tuple[SpectralProfile, ...]:
    """Every profile of an atlas, in the order exported, validated (AtlasError otherwise)."""
    return _read(path, with_arrays=True)[1]


def read_manifest(path: Path | str) -> AtlasManifest:
    """The atlas's table of contents, after the same validation as :func:`load_atlas`."""
    return _read(path, with_arrays=False)[0]


def atlas_member(path: Path | str, name: str | None = None) -> SpectralProfile:
    """One model of an atlas by name, or its only model when ``name`` is None (AtlasError otherwise).

    This is how ``atlas:FILE#MODEL`` references open (:func:`specbound.loading.load_profile`).
    """
    profiles = load_atlas(path)
    held = ", ".join(p.model for p in profiles)
    if name is None:
        if len(profiles) == 1:
            return profiles[0]
        raise AtlasError(f"{Path(path).name} holds {len(profiles)} models: name one as "
                         f"atlas:FILE#MODEL (it holds: {held})")
    for profile in profiles:
        if profile.model == name:
            return profile
    raise AtlasError(f"{Path(path).name} holds no model '{name}' (it holds: {held})")

