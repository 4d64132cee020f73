"""On-disk cache of spectral profiles, keyed by model name and revision (never the weights).

Entries are ``.npz`` files read with ``allow_pickle=False``; a file that cannot be read or does not
match its key is deleted and recomputed, never trusted. Writes go through a temporary file and an
atomic rename, so a crash cannot leave half an entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from .defaults import CACHE_ENV_VAR
from .files import atomic_write
from .matrices import EncoderShape
from .profile import SpectralProfile

#: Bump when the stored arrays or their meaning change: old entries then miss and are recomputed.
SCHEMA_VERSION = 1


def default_cache_dir() -> Path:
    """``$SPECBOUND_CACHE``, else ``$XDG_CACHE_HOME/specbound``, else ``~/.cache/specbound``."""
    if override := os.environ.get(CACHE_ENV_VAR):
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "specbound"


class ProfileCache:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def path(self, model: str, revision: str) -> Path:
        key = hashlib.sha256(f"{SCHEMA_VERSION}\0{model}\0{revision}".encode()).hexdigest()[:24]
        return self.directory / f"{key}.npz"

    def load(self, model: str, revision: str) -> SpectralProfile | None:
        path = self.path(model, revision)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if (meta["schema"], meta["model"], meta["revision"]) != (SCHEMA_VERSION, model, revision):
                    raise ValueError("entry does not match its key")
                return SpectralProfile(
                    model=model, revision=revision, shape=EncoderShape(**meta["shape"]),
                    singular_values=data["singular_values"].astype(np.float64),
                    full_dims=data["full_dims"].astype(np.int64),
                    norm_21=data["norm_21"].astype(np.float64),
                    norm_11=data["norm_11"].astype(np.float64),
                )
        except Exception:  # any unreadable entry: drop it and let the caller recompute
            path.unlink(missing_ok=True)
            return None

    def save(self, profile: SpectralProfile) -> Path:
        path = self.path(profile.model, profile.revision)
        meta = {"schema": SCHEMA_VERSION, "model": profile.model, "revision": profile.revision,
                "shape": dataclasses.asdict(profile.shape)}
        with atomic_write(path) as f:
            np.savez(f, meta=np.array(json.dumps(meta)), singular_values=profile.singular_values,
                     full_dims=profile.full_dims, norm_21=profile.norm_21, norm_11=profile.norm_11)
        return path
