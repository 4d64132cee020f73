"""Where uploaded atlases are kept: one folder of the profile cache, one file per content digest.

Both the visitor rules (:mod:`dashboard.safety`, which accepts a model of an uploaded atlas from the
text of its name alone) and the atlas source (:mod:`dashboard.state.atlas`, which stores the uploads) need
the store's location; it lives here, below both, so neither imports the other for it.
"""

from __future__ import annotations

from pathlib import Path

from specbound.io.cache import default_cache_dir

#: Folder of the profile cache where uploaded atlases are kept, one file per content digest.
UPLOAD_DIR = "atlases"
#: Characters of the SHA-256 that name an uploaded atlas (in its file name and in links).
DIGEST_CHARS = 16


def upload_dir() -> Path:
    return default_cache_dir() / UPLOAD_DIR
