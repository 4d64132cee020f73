"""An atlas: the spectral profiles of several models in one portable file.

Someone with network access analyses a set of models and exports their profiles; anyone can then
open the atlas offline and get every bound term without the checkpoints (a profile holds all the
singular values and norms the bound needs, see :mod:`specbound.core.profile`).

Format: one ``.npz`` file (a zip of ``.npy`` arrays), read with ``allow_pickle=False``, holding

* ``manifest``: a JSON string ``{"format": "specbound-atlas", "schema": 2, "models": [...]}`` (schema 3
  when a model is a mixture of experts, whose shape adds its experts, SPEC §12; 4 with an
  encoder-decoder, whose shape adds its encoder's layers; 5 when such a model's decoder has its own
  MLP width) where
  each model has its name, revision, shape (:meth:`ModelShape.to_dict
  <specbound.core.architecture.ModelShape.to_dict>`: L, N, H, d_ff, H_kv, d, MLP and residual kinds,
  family, activation, adaptations), the keys of its four arrays and the SHA-256 of each array's bytes;
  schema 1 (written before other families were read) held the four sizes of a BERT encoder and is
  still read;
* per model i, ``m{i}_singular_values`` (float64, (M, K)), ``m{i}_full_dims`` (int64, (M,)),
  ``m{i}_norm_21`` and ``m{i}_norm_11`` (float64, (M,)), with M = L (2H + 2), L (2H + 3) with a
  gated MLP, L (2H + 3E [+ 3]) with experts.

Arrays are stored as they are, so an imported profile is bit-for-bit the exported one. Import checks,
before any array is read, the file's size, every member's declared uncompressed size and every
``.npy`` header against the manifest and the limits of :mod:`specbound.core.limits` (a deflate bomb or a
header declaring 10^7 x 10^7 values costs nothing); then every checksum (hashed through a memoryview,
no copy) and every profile (:func:`specbound.core.profile.validate_profile`). A corrupt, foreign or
oversized file raises :class:`AtlasError` with a plain message, never a half-read profile; ``atlas
show`` runs exactly the same checks.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..core.architecture import ModelShape
from ..core.errors import SpecboundError
from ..core.limits import LIMITS, check_declared_sizes, check_encoder_shape
from ..core.profile import SpectralProfile, validate_profile
from ..core.text import quoted
from ..core.values import is_genuine_int
from .files import (
    ARCHIVE_ERRORS,
    NpzArchive,
    array_sha256,
    atomic_write,
    describe_os_error,
    open_regular,
    parse_json,
    require_parent,
)
from .models import short_model_name

FORMAT = "specbound-atlas"
#: Bump when the layout changes; older readers then refuse newer files with a clear message.
#: 2: the shape describes the block (SPEC §11); version 1 files are read as BERT encoders.
#: 3: a shape may hold experts (SPEC §12). An atlas without a mixture of experts is still written as
#: version 2 (:func:`schema_for`), so that a specbound from before experts opens it.
#: 4: a shape may hold two stacks (an encoder-decoder); written only when one is among the models.
#: 5: an encoder-decoder's decoder may have its own MLP width (``decoder_ffn_size``); written only then.
SCHEMA_VERSION = 5
STACK_SCHEMA_VERSION = 4
MOE_SCHEMA_VERSION = 3
DENSE_SCHEMA_VERSION = 2
MANIFEST_KEY = "manifest"
#: Stored array per profile field, with its exact dtype.
_ARRAYS: dict[str, np.dtype] = {
    "singular_values": np.dtype(np.float64),
    "full_dims": np.dtype(np.int64),
    "norm_21": np.dtype(np.float64),
    "norm_11": np.dtype(np.float64),
}


class AtlasError(SpecboundError):
    """The file is not a specbound atlas, or it is damaged."""


@dataclass(frozen=True)
class AtlasEntry:
    """What the manifest says about one model of an atlas."""

    name: str
    revision: str
    shape: ModelShape
    singular_value_width: int  # K, the common zero-padded length of the singular-value rows


@dataclass(frozen=True)
class AtlasManifest:
    schema: int
    created_by: str
    entries: tuple[AtlasEntry, ...]


#: The four sizes every manifest entry has (the whole shape of a schema-1 entry).
_SIZES = ("num_layers", "hidden_size", "num_heads", "ffn_size")


def _key(index: int, field_name: str) -> str:
    return f"m{index}_{field_name}"


# --- export -------------------------------------------------------------------------------------


def member_names(names: Sequence[str]) -> list[str]:
    """The names an atlas stores its models under when they are exported from a machine's folders: each
    folder by its own name (:func:`~specbound.io.models.short_model_name`), not the exporting machine's
    path to it, which a reader of the file elsewhere has no use for (and should not be shown). Names that
    would then collide keep as many trailing folders as tell them apart (the whole name where nothing
    does); a Hub id or an alias stays as it is.

    Example::

        >>> member_names(["/data/runs/a/my-lora", "/data/runs/b/my-lora", "/data/base", "google/bert"])
        ['a/my-lora', 'b/my-lora', 'base', 'google/bert']
    """
    short = [short_model_name(name) for name in names]
    parts = [name.replace("\\", "/").rstrip("/").split("/") for name in names]
    shown = []
    for i, name in enumerate(names):
        clashing = [j for j, other in enumerate(short) if other == short[i] and j != i]
        depth = next(
            (d for d in range(2, len(parts[i]) + 1) if all(parts[j][-d:] != parts[i][-d:] for j in clashing)), None
        )
        shown.append(short[i] if not clashing else name if depth is None else "/".join(parts[i][-depth:]))
    # a shortened name that meets another model's own name: both keep their whole names
    return [name if shown.count(s) > 1 else s for name, s in zip(names, shown, strict=True)]


def save_atlas(profiles: Iterable[SpectralProfile], path: Path | str, *, names: Sequence[str] | None = None) -> Path:
    """Write profiles to one atlas file (atomically: a temporary file renamed into place).

    ``names``, when given, are the names the models are stored under, one per profile in order
    (:func:`member_names`: a folder's name rather than the path to it); by default each profile's own.
    """
    profiles = list(profiles)
    if not profiles:
        raise ValueError("an atlas needs at least one profile")
    if names is not None:
        if len(names) != len(profiles) or len(set(names)) != len(names):
            raise ValueError(f"{len(profiles)} profiles need as many distinct names, not {list(names)}")
        profiles = [dataclasses.replace(p, model=name) for p, name in zip(profiles, names, strict=True)]
    seen: set[tuple[str, str]] = set()
    arrays: dict[str, np.ndarray] = {}
    models: list[dict[str, Any]] = []
    for index, profile in enumerate(profiles):
        if (profile.model, profile.revision) in seen:
            raise ValueError(f"{profile.model} (revision {profile.revision}) is given twice")
        seen.add((profile.model, profile.revision))
        entry: dict[str, Any] = {
            "name": profile.model,
            "revision": profile.revision,
            "shape": profile.shape.to_dict(),
            "arrays": {},
            "sha256": {},
        }
        for field_name, dtype in _ARRAYS.items():
            array = np.ascontiguousarray(getattr(profile, field_name))
            if array.dtype != dtype:
                array = array.astype(dtype)  # e.g. int32 dims on some platforms; values unchanged
            if field_name == "singular_values" and array.shape[1] < profile.shape.hidden_size:
                # rows are always stored N wide (a hand-made profile may be narrower): pad with zeros
                array = np.pad(array, ((0, 0), (0, profile.shape.hidden_size - array.shape[1])))
            key = _key(index, field_name)
            arrays[key] = array
            entry["arrays"][field_name] = key
            entry["sha256"][field_name] = array_sha256(array)
        models.append(entry)
    schema = schema_for(profile.shape for profile in profiles)
    manifest = {"format": FORMAT, "schema": schema, "created_by": f"specbound {__version__}", "models": models}
    path = Path(path)
    members = {MANIFEST_KEY: np.array(json.dumps(manifest)), **arrays}
    check_readable(members, len(models), path)
    require_parent(path, "atlas")
    with atomic_write(path) as f:
        np.savez_compressed(f, allow_pickle=False, **members)
        written = f.tell()
        if written > LIMITS.max_atlas_file_bytes:  # the compressed size is known only now; nothing is renamed
            raise AtlasError(_unreadable(path, f"it would take {written} bytes", LIMITS.max_atlas_file_bytes))
    return path


def check_readable(members: Mapping[str, np.ndarray], num_models: int, path: Path) -> None:
    """Refuse, before a byte is written, an atlas that :func:`load_atlas` would refuse for its size:
    more models than it reads, a member or all of them together above its limits (each ``.npy``
    member counted with its own header, as the zip directory declares it), or a manifest too long.
    Whatever the package writes, it reads back."""
    if num_models > LIMITS.max_atlas_models:
        raise AtlasError(_unreadable(path, f"it would hold {num_models} models", LIMITS.max_atlas_models))
    manifest = str(members[MANIFEST_KEY][()])
    if len(manifest.encode("utf-8")) > LIMITS.max_manifest_bytes:
        raise AtlasError(_unreadable(path, "its manifest would be too long", LIMITS.max_manifest_bytes))
    sizes = {key: _npy_bytes(array) for key, array in members.items()}
    key, largest = max(sizes.items(), key=lambda item: item[1])
    if largest > LIMITS.max_atlas_member_bytes:
        raise AtlasError(
            _unreadable(path, f"its member {key} would take {largest} bytes", LIMITS.max_atlas_member_bytes)
        )
    if sum(sizes.values()) > LIMITS.max_atlas_total_bytes:
        raise AtlasError(
            _unreadable(path, f"its members would take {sum(sizes.values())} bytes", LIMITS.max_atlas_total_bytes)
        )


def _npy_bytes(array: np.ndarray) -> int:
    """The size of ``array`` saved as an ``.npy`` member: its magic string and header (format 1.0,
    what np.savez writes for these arrays) and its data."""
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(array))
    return header.tell() + array.nbytes  # the header written includes the magic string


def _unreadable(path: Path, problem: str, limit: int) -> str:
    return f"{path.name} is not written: {problem}, above the limit of {limit} an atlas is read with"


# --- import -------------------------------------------------------------------------------------


def _require(condition: bool, path: Path, problem: str) -> None:
    if not condition:
        raise AtlasError(f"{path.name} is not a valid specbound atlas: {problem}")


def schema_for(shapes: Iterable[ModelShape]) -> int:
    """The atlas schema a set of models needs: 5 with an encoder-decoder whose stacks have MLPs of different
    widths, 4 with any other encoder-decoder among them, 3 with a mixture of experts, else 2 (the oldest
    version that holds them, so that older readers open what they can and refuse what they cannot)."""
    shapes = tuple(shapes)
    if any(shape.decoder_ffn_size for shape in shapes):
        return SCHEMA_VERSION
    if any(shape.encoder_decoder for shape in shapes):
        return STACK_SCHEMA_VERSION
    return MOE_SCHEMA_VERSION if any(shape.moe for shape in shapes) else DENSE_SCHEMA_VERSION


def _parse_entry(i: int, model: Any, path: Path, schema: int = SCHEMA_VERSION) -> AtlasEntry:
    """One manifest entry, with genuine integer sizes within the limits (nothing is read for it yet)."""
    try:
        name, revision, sizes = model["name"], model["revision"], model["shape"]
        keys, digests = model["arrays"], model["sha256"]
        if not (
            isinstance(name, str)
            and name
            and isinstance(revision, str)
            and isinstance(sizes, dict)
            and isinstance(keys, dict)
            and isinstance(digests, dict)
            and all(isinstance(keys[f], str) and isinstance(digests[f], str) for f in _ARRAYS)
        ):
            raise TypeError
        values = {name: sizes[name] for name in _SIZES}
        if schema >= 2:
            values |= {name: sizes[name] for name in sizes if name not in _SIZES}
    except (KeyError, TypeError, ValueError):
        raise AtlasError(f"{path.name} is not a valid specbound atlas: manifest entry {i} is incomplete") from None
    _require(
        all(is_genuine_int(values[name]) and values[name] >= 1 for name in _SIZES),
        path,
        f"manifest entry {i} has sizes that are not positive integers",
    )
    try:
        check_declared_sizes(values, f"manifest entry {i}")
        shape = ModelShape.from_dict(values)
        check_encoder_shape(shape, f"manifest entry {i}")
    except (ValueError, SpecboundError) as exc:
        raise AtlasError(f"{path.name} is not a valid specbound atlas: {exc}") from None
    return AtlasEntry(name, revision, shape, shape.hidden_size)


def _parse_manifest(text: str, path: Path) -> tuple[AtlasManifest, list[Mapping[str, Any]]]:
    try:
        manifest = parse_json(text, "the manifest", LIMITS.max_manifest_bytes)
    except ValueError:
        raise AtlasError(f"{path.name} is not a valid specbound atlas: its manifest is not JSON") from None
    _require(
        isinstance(manifest, dict) and manifest.get("format") == FORMAT,
        path,
        f"the manifest does not declare format '{FORMAT}'",
    )
    schema = manifest.get("schema")
    _require(is_genuine_int(schema) and int(schema) >= 1, path, "the manifest has no schema version")
    if schema > SCHEMA_VERSION:
        raise AtlasError(
            f"{path.name} uses atlas schema {schema}, newer than this specbound reads "
            f"({SCHEMA_VERSION}); upgrade specbound"
        )
    models = manifest.get("models")
    _require(isinstance(models, list) and len(models) > 0, path, "the manifest lists no models")
    _require(
        len(models) <= LIMITS.max_atlas_models,
        path,
        f"it lists {len(models)} models, above the limit of {LIMITS.max_atlas_models}",
    )
    entries = tuple(_parse_entry(i, model, path, schema) for i, model in enumerate(models))
    seen: set[str] = set()
    for entry in entries:
        _require(entry.name not in seen, path, f"model name '{quoted(entry.name)}' is listed twice")
        seen.add(entry.name)
    created_by = manifest.get("created_by", "")
    return AtlasManifest(schema, created_by if isinstance(created_by, str) else "", entries), models


def _expected(field_name: str, shape: ModelShape) -> tuple[int, ...]:
    m = shape.num_matrices
    return (m, shape.hidden_size) if field_name == "singular_values" else (m,)


def _read(path: Path | str) -> tuple[AtlasManifest, tuple[SpectralProfile, ...]]:
    """Validate the whole atlas: sizes from the zip directory and .npy headers before any array is
    read, then every checksum (streamed) and every profile (:func:`validate_profile`)."""
    path = Path(path)
    if not path.exists():
        raise AtlasError(f"no atlas file at {path.name}")
    try:
        with NpzArchive(
            path,
            max_file_bytes=LIMITS.max_atlas_file_bytes,
            max_total_bytes=LIMITS.max_atlas_total_bytes,
            max_member_bytes=LIMITS.max_atlas_member_bytes,
            max_members=1 + len(_ARRAYS) * LIMITS.max_atlas_models,
        ) as archive:
            _require(MANIFEST_KEY in archive.keys, path, "it has no manifest")
            manifest, models = _parse_manifest(archive.read_text(MANIFEST_KEY, LIMITS.max_manifest_bytes), path)
            for entry, model in zip(manifest.entries, models, strict=True):  # every declared size, before any data
                _check_declared(archive, entry, model, path)
            profiles = tuple(
                _read_profile(archive, entry, model, path)
                for entry, model in zip(manifest.entries, models, strict=True)
            )
    except AtlasError:
        raise
    except zipfile.BadZipFile:
        _require(_head(path) != b"\x93NUMPY", path, "it is a single array, not an archive")
        raise AtlasError(f"{path.name} is not a specbound atlas (not a readable .npz file)") from None
    except OSError as exc:  # not a regular file, unreadable, too large: its kind, never its path
        raise AtlasError(f"{path.name} is not a valid specbound atlas: {describe_os_error(exc)}") from None
    except ARCHIVE_ERRORS as exc:  # whatever zipfile, zlib or numpy raise on a damaged or encrypted member
        raise AtlasError(f"{path.name} is not a valid specbound atlas: {_reason(exc)}") from None
    return manifest, profiles


def _head(path: Path) -> bytes:
    try:
        with open_regular(path, path.name) as f:
            return f.read(6)
    except OSError:
        return b""


def _reason(exc: BaseException) -> str:
    """A library exception as a short reason (an encrypted member says so; zipfile says it at length)."""
    text = str(exc)
    if "encrypted" in text.lower():
        return "a member is encrypted (an atlas never is)"
    return quoted(exc, 160) or type(exc).__name__


def _check_declared(archive: NpzArchive, entry: AtlasEntry, model: Mapping[str, Any], path: Path) -> None:
    """Each array's .npy header declares exactly the dtype and shape the manifest implies."""
    for field_name, dtype in _ARRAYS.items():
        key, expected = model["arrays"][field_name], _expected(field_name, entry.shape)
        _require(key in archive.keys, path, f"array '{quoted(key)}' of {quoted(entry.name)} is missing")
        header = archive.header(key)
        _require(
            header.dtype == dtype and header.shape == expected,
            path,
            f"array '{quoted(key)}' of {quoted(entry.name)} is declared {header.dtype} {header.shape}, "
            f"but its manifest implies {dtype} {expected}",
        )


def _read_profile(archive: NpzArchive, entry: AtlasEntry, model: Mapping[str, Any], path: Path) -> SpectralProfile:
    """One model's arrays, each matching its checksum, as a validated profile."""
    arrays = {}
    for field_name, dtype in _ARRAYS.items():
        key = model["arrays"][field_name]
        array = archive.read(key, dtype, _expected(field_name, entry.shape))
        _require(
            array_sha256(array) == model["sha256"][field_name],
            path,
            f"array '{quoted(key)}' of {quoted(entry.name)} does not match its checksum (damaged file)",
        )
        arrays[field_name] = array
    try:
        profile = SpectralProfile(model=entry.name, revision=entry.revision, shape=entry.shape, **arrays)
        validate_profile(profile, full_width=True)
    except ValueError as exc:
        raise AtlasError(f"{path.name} is not a valid specbound atlas: {quoted(entry.name)}: {exc}") from None
    return profile


def load_atlas(path: Path | str) -> tuple[SpectralProfile, ...]:
    """Every profile of an atlas, in the order exported, validated (AtlasError otherwise)."""
    return _read(path)[1]


def read_manifest(path: Path | str) -> AtlasManifest:
    """The atlas's table of contents, after exactly the validation of :func:`load_atlas`."""
    return _read(path)[0]


def atlas_member(path: Path | str, name: str | None = None) -> SpectralProfile:
    """One model of an atlas by name, or its only model when ``name`` is None (AtlasError otherwise).

    This is how ``atlas:FILE#MODEL`` references open (:func:`specbound.io.loading.load_profile`).
    """
    profiles = load_atlas(path)
    held = ", ".join(p.model for p in profiles)
    if name is None:
        if len(profiles) == 1:
            return profiles[0]
        raise AtlasError(
            f"{Path(path).name} holds {len(profiles)} models: name one as atlas:FILE#MODEL (it holds: {held})"
        )
    for profile in profiles:
        if profile.model == name:
            return profile
    raise AtlasError(f"{Path(path).name} holds no model '{quoted(name)}' (it holds: {held})")
