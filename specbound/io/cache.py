"""On-disk cache of spectral profiles, keyed by model name and revision (never the weights).

Entries are ``.npz`` files read within limits (member sizes and ``.npy`` headers checked before any
array is read, never with pickles). An entry is used only if it matches its key, its arrays have the
shapes its model implies, their SHA-256 matches the one stored beside them and the profile passes
:func:`specbound.core.profile.validate_profile`; anything else is deleted and recomputed, never trusted.
Writes go through a temporary file and an atomic rename, so a crash cannot leave half an entry, and
temporary files left by a killed process are removed the next time the directory is written.

Beside whole profiles the cache holds **layer entries**: the rows of one finished layer of an analysis
still in progress, keyed by the model, the layer's own revision (its config and weight files) and
the layer's index, written atomically as each layer finishes. An analysis that is killed resumes
from them; they are read with the same checks as a whole entry and removed once the whole profile
is stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ..core.architecture import ModelShape
from ..core.defaults import CACHE_ENV_VAR
from ..core.limits import LIMITS
from ..core.profile import SpectralProfile, full_dims_of, validate_profile
from .files import NpzArchive, array_sha256, atomic_write, expand_user, parse_json, remove_stale_temps

#: Bump when the stored arrays or their meaning change: old entries then miss and are recomputed.
#: 2: entries carry a SHA-256 of their arrays. 3: the shape describes the block (family, key/value
#: heads, head size, MLP and residual kinds, adaptations); a version-2 entry is a BERT encoder's and
#: is still read (:data:`READABLE_SCHEMAS`). 4: the shape may hold experts (SPEC §12); a version-3
#: entry is a dense model's and is still read. 5: the shape may hold two stacks (an encoder-decoder);
#: a version-4 entry is a model of one stack's and is still read.
SCHEMA_VERSION = 5
READABLE_SCHEMAS = (5, 4, 3, 2)
_META = "meta"
_FLOATS, _INTS = np.dtype("<f8"), np.dtype("<i8")
#: room for a .npy member's own header beside its data
_NPY_HEADER_BYTES = 4096


def default_cache_dir() -> Path:
    """``$SPECBOUND_CACHE``, else ``$XDG_CACHE_HOME/specbound``, else ``~/.cache/specbound``."""
    if override := os.environ.get(CACHE_ENV_VAR):
        return expand_user(override, f"${CACHE_ENV_VAR}")  # '~user' of no user: one line, not a traceback
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return expand_user(base, "$XDG_CACHE_HOME") / "specbound"


def _is_entry(path: Path) -> bool:
    """Whether an entry is there to be read; a cache directory that cannot be searched has none."""
    try:
        return path.is_file()
    except OSError:
        return False


def _discard(path: Path) -> None:
    """Remove a bad entry so that the next analysis stores a good one; in a cache that cannot be
    written it stays, is passed over each time, and only costs the time of the analysis."""
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def _content_digest(arrays: dict[str, np.ndarray]) -> str:
    """One SHA-256 over the per-array digests, in a fixed order."""
    return hashlib.sha256("".join(array_sha256(arrays[k]) for k in sorted(arrays)).encode()).hexdigest()


def _stored_arrays(profile: SpectralProfile) -> dict[str, np.ndarray]:
    return {
        "singular_values": profile.singular_values.astype(_FLOATS, copy=False),
        "full_dims": profile.full_dims.astype(_INTS, copy=False),
        "norm_21": profile.norm_21.astype(_FLOATS, copy=False),
        "norm_11": profile.norm_11.astype(_FLOATS, copy=False),
    }


class ProfileCache:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def path(self, model: str, revision: str, schema: int = SCHEMA_VERSION) -> Path:
        key = hashlib.sha256(f"{schema}\0{model}\0{revision}".encode()).hexdigest()[:24]
        return self.directory / f"{key}.npz"

    def load(self, model: str, revision: str) -> SpectralProfile | None:
        """The cached profile, from an entry of this version or an older readable one, else None."""
        for schema in READABLE_SCHEMAS:
            path = self.path(model, revision, schema)
            if not _is_entry(path):
                continue
            try:
                return self._read(path, model, revision, schema)
            except Exception:  # any unreadable, foreign or tampered entry: drop it and let the caller recompute
                _discard(path)
        return None

    @staticmethod
    def _read(path: Path, model: str, revision: str, schema: int = SCHEMA_VERSION) -> SpectralProfile:
        width_bytes = 8 * LIMITS.max_profile_values
        with NpzArchive(
            path,
            max_file_bytes=2 * width_bytes,
            max_total_bytes=2 * width_bytes,
            max_member_bytes=width_bytes,
            max_members=5,
        ) as archive:
            meta = parse_json(archive.read_text(_META, LIMITS.max_config_bytes), "meta", 4 * LIMITS.max_config_bytes)
            if (meta["schema"], meta["model"], meta["revision"]) != (schema, model, revision):
                raise ValueError("entry does not match its key")
            sizes = meta["shape"]
            if not isinstance(sizes, dict):
                raise ValueError("the shape must be an object")
            if schema < 3:  # the four sizes of a BERT encoder, nothing else
                sizes = {name: sizes[name] for name in ("num_layers", "hidden_size", "num_heads", "ffn_size")}
            shape = ModelShape.from_dict(sizes)
            m, n = shape.num_matrices, shape.hidden_size
            if m * n > LIMITS.max_profile_values:
                raise ValueError("entry too large")
            arrays = {
                "singular_values": archive.read("singular_values", _FLOATS, (m, n)),
                "full_dims": archive.read("full_dims", _INTS, (m,)),
                "norm_21": archive.read("norm_21", _FLOATS, (m,)),
                "norm_11": archive.read("norm_11", _FLOATS, (m,)),
            }
        if _content_digest(arrays) != meta["sha256"]:
            raise ValueError("entry does not match its checksum")
        profile = SpectralProfile(model=model, revision=revision, shape=shape, **arrays)
        validate_profile(profile, full_width=True)
        return profile

    # --- layer entries of an analysis in progress ---------------------------------------------
    def layer_path(self, model: str, revision: str, layer: int) -> Path:
        key = hashlib.sha256(f"{SCHEMA_VERSION}\0layer\0{model}\0{revision}\0{layer}".encode()).hexdigest()[:24]
        return self.directory / f"{key}.layer.npz"

    def save_layer(
        self,
        model: str,
        revision: str,
        layer: int,
        shape: ModelShape,
        singular_values: np.ndarray,
        norm_21: np.ndarray,
        norm_11: np.ndarray,
    ) -> Path:
        """Store one finished layer's rows (atomically: a killed write leaves no entry)."""
        path = self.layer_path(model, revision, layer)
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path.parent)
        arrays = {
            "singular_values": singular_values.astype(_FLOATS, copy=False),
            "norm_21": norm_21.astype(_FLOATS, copy=False),
            "norm_11": norm_11.astype(_FLOATS, copy=False),
        }
        meta = {
            "schema": SCHEMA_VERSION,
            "model": model,
            "revision": revision,
            "layer": layer,
            "shape": shape.to_dict(),
            "sha256": _content_digest(arrays),
        }
        with atomic_write(path) as f:
            np.savez(f, allow_pickle=False, **{_META: np.array(json.dumps(meta)), **arrays})
        return path

    def load_layer(
        self, model: str, revision: str, layer: int, shape: ModelShape
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(singular values, norm_21, norm_11) of a finished layer, or None; a bad entry is deleted."""
        path = self.layer_path(model, revision, layer)
        if not _is_entry(path):
            return None
        try:
            return self._read_layer(path, model, revision, layer, shape)
        except Exception:  # unreadable, foreign or tampered: recompute the layer
            _discard(path)
            return None

    @staticmethod
    def _read_layer(
        path: Path, model: str, revision: str, layer: int, shape: ModelShape
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, n = shape.layer_size(layer), shape.hidden_size
        member_bytes = 8 * rows * n + _NPY_HEADER_BYTES  # the singular values, the largest member
        with NpzArchive(
            path,
            max_file_bytes=2 * member_bytes + 4 * LIMITS.max_config_bytes,
            max_total_bytes=2 * member_bytes + 4 * LIMITS.max_config_bytes,
            max_member_bytes=max(member_bytes, 4 * LIMITS.max_config_bytes),
            max_members=4,
        ) as archive:
            meta = parse_json(archive.read_text(_META, LIMITS.max_config_bytes), "meta", 4 * LIMITS.max_config_bytes)
            if (meta["schema"], meta["model"], meta["revision"], meta["layer"]) != (
                SCHEMA_VERSION,
                model,
                revision,
                layer,
            ) or ModelShape.from_dict(meta["shape"]) != shape:
                raise ValueError("entry does not match its key")
            arrays = {
                "singular_values": archive.read("singular_values", _FLOATS, (rows, n)),
                "norm_21": archive.read("norm_21", _FLOATS, (rows,)),
                "norm_11": archive.read("norm_11", _FLOATS, (rows,)),
            }
        if _content_digest(arrays) != meta["sha256"]:
            raise ValueError("entry does not match its checksum")
        one_layer = dataclasses.replace(shape, num_layers=1)  # the validator of every profile, on this layer
        validate_profile(
            SpectralProfile(
                model=model, revision=revision, shape=one_layer, full_dims=full_dims_of(one_layer), **arrays
            ),
            full_width=True,
        )
        return arrays["singular_values"], arrays["norm_21"], arrays["norm_11"]

    def save(self, profile: SpectralProfile) -> Path:
        """Store a profile (the cache directory and its parents are created: it is the operator's)."""
        path = self.path(profile.model, profile.revision)
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path.parent, earlier=lambda target: True)  # every name in the cache is its own
        arrays = _stored_arrays(profile)
        meta = {
            "schema": SCHEMA_VERSION,
            "model": profile.model,
            "revision": profile.revision,
            "shape": profile.shape.to_dict(),
            "sha256": _content_digest(arrays),
        }
        with atomic_write(path) as f:
            np.savez(f, allow_pickle=False, **{_META: np.array(json.dumps(meta)), **arrays})
        return path
