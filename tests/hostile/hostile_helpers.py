"""Hand-made hostile files (safetensors headers, tampered atlases, .npy headers) and profiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from specbound.core.profile import SpectralProfile


def write_safetensors(
    path: Path, header: dict[str, Any], data: bytes = b"", *, declared_length: int | None = None
) -> Path:
    """A safetensors file with exactly this header (8-byte little-endian length, JSON) and data."""
    raw = json.dumps(header).encode()
    length = len(raw) if declared_length is None else declared_length
    path.write_bytes(length.to_bytes(8, "little") + raw + data)
    return path


def npy_bytes(array: np.ndarray) -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_header_only(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    """The magic and header of an .npy file declaring ``shape``, followed by no data at all."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def hand_profile(
    layers: int = 1, hidden: int = 16, heads: int = 2, ffn: int = 24, seed: int = 0, name: str = "hand"
) -> SpectralProfile:
    """A valid profile with random descending spectra, built without any checkpoint."""
    import numpy as np

    from specbound.core.architecture import ModelShape
    from specbound.core.profile import SpectralProfile, full_dims_of

    shape = ModelShape(layers, hidden, heads, ffn)
    rng = np.random.default_rng(seed)
    dims = full_dims_of(shape)
    sv = np.zeros((shape.num_matrices, hidden))
    for i, k in enumerate(dims):
        rank = hidden // heads if i % shape.matrices_per_layer < 2 * heads else k
        sv[i, :rank] = np.sort(rng.uniform(0.1, 3.0, rank))[::-1]
    return SpectralProfile(name, "r", shape, sv, dims, rng.uniform(1, 5, len(dims)), rng.uniform(5, 20, len(dims)))
