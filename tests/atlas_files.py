"""Atlas files written in the real format and then edited, as a careful tamperer would (the SHA-256 sums
recomputed): shared by the atlas tests and the hostile-input tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from specbound.core.profile import SpectralProfile


def write_atlas(
    path: Path,
    profiles: Sequence[SpectralProfile],
    edit: Callable[[dict[str, Any], dict[str, np.ndarray]], None] | None = None,
) -> Path:
    """An atlas in the real format whose manifest and arrays ``edit(manifest, arrays)`` may change
    first; the SHA-256 sums are recomputed afterwards, as a careful tamperer would."""
    import hashlib

    import numpy as np

    from specbound.io.atlas import save_atlas

    save_atlas(profiles, path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    manifest = json.loads(str(arrays.pop("manifest")))
    if edit is not None:
        edit(manifest, arrays)
    for model in manifest["models"]:
        for field, key in model["arrays"].items():
            if key in arrays:
                model["sha256"][field] = hashlib.sha256(np.ascontiguousarray(arrays[key]).tobytes()).hexdigest()
    with open(path, "wb") as f:
        np.savez(f, manifest=np.array(json.dumps(manifest)), **arrays)
    return path
