"""Every size limit of the package, in one place, so that work is refused before it is started.

A checkpoint, a cache entry, an atlas or a command-line option is checked against these numbers from
its header, manifest or config alone, before any array is allocated or any byte is downloaded (SPEC
§9). The maxima are well above every BERT-family encoder (BERT-large: 24 layers, N = 1024, 16 heads,
d_ff = 4096) and admit the 70B-class decoders (Llama-2-70B: 80 layers, N = 8192, 64 query heads,
8 key/value heads, d_ff = 28672), whose layers the analysis streams one at a time: the memory limit
is on what one layer's analysis holds at its peak (:func:`layer_peak_bytes`, from the family
adapter's actual tensor shapes), not on the model.

Only the download cap is configurable: through ``$SPECBOUND_MAX_DOWNLOAD_MB`` (the server's setting,
which the dashboard's visitors get) or, on an operator's own command line, ``--max-download-gb``.
It is the one limit an operator may reasonably want to lower (a shared server) or raise (a large
private model); the default stays small because whoever opens the dashboard's link may ask for a
download.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

from .architecture import ModelShape
from .errors import SpecboundError

#: Environment variable that overrides the download cap, in megabytes (10^6 bytes).
MAX_DOWNLOAD_ENV_VAR = "SPECBOUND_MAX_DOWNLOAD_MB"
#: Default download cap: enough for BERT-large in either format (1.34 GB), not for a multi-GB LLM.
DEFAULT_MAX_DOWNLOAD_MB = 1500


@dataclass(frozen=True)
class Limits:
    """The documented maxima; :data:`LIMITS` is the single instance the package reads."""

    # config.json of a checkpoint
    max_layers: int = 96
    max_hidden_size: int = 8192
    max_heads: int = 256
    max_ffn_size: int = 32768
    #: float64 bytes one layer's analysis holds at its peak (:func:`layer_peak_bytes`): a Llama-2-70B
    #: layer needs 2.9 GiB, a Llama-2-7B layer 0.4 GiB, BERT-large's 0.05 GiB.
    max_layer_bytes: int = 4 * 1024**3
    #: values in one spectral profile, (L (2H + 2)) x max(N, min(N, d_ff)): 1 GiB of float64 (a
    #: 70B-class decoder's profile has 8.6e7 values, 0.7 GB).
    max_profile_values: int = 2**27
    # small JSON files read whole: config.json, a shard index, an atlas manifest, a cache entry's meta
    max_config_bytes: int = 1024**2
    max_index_bytes: int = 16 * 1024**2
    max_manifest_bytes: int = 16 * 1024**2
    #: the JSON header of one safetensors file (BERT-large's is about 40 kB)
    max_safetensors_header_bytes: int = 16 * 1024**2
    #: largest |w| accepted in a weight matrix: squares and products of two weights summed over
    #: 10^9 terms stay far below the float64 maximum (1.8e308), so no SVD or norm overflows.
    max_abs_weight: float = 1e100
    #: an atlas: whole file, the sum of its members' uncompressed sizes, and any one member
    max_atlas_file_bytes: int = 512 * 1024**2
    max_atlas_total_bytes: int = 1024**3
    #: one member of an atlas (a visitor may upload one): 256 MiB, a profile of 2^25 values, which a
    #: 7B-class model's (8.8e6 values) fits and a 70B-class one's does not
    max_atlas_member_bytes: int = 256 * 1024**2
    max_atlas_models: int = 256
    #: the post-hoc grid P_m has 2m + 1 points; every bound evaluation is linear in it
    max_grid_m: int = 1000
    #: Lipschitz constant of the activation (GELU's is 1.13): anything above is a typo
    max_l_phi: float = 1e6
    #: characters of a model name typed by a user (a Hub id has at most 96)
    max_model_name_chars: int = 4096
    #: characters of user- or file-supplied text quoted in an error message
    max_quoted_chars: int = 60
    #: temporary files of an interrupted atomic write older than this are removed
    stale_temp_seconds: float = 600.0


LIMITS = Limits()


class LimitExceededError(SpecboundError):
    """A size declared by a file, a manifest, the Hub or an option is above a documented limit."""


def quoted(value: object, limit: int | None = None) -> str:
    """Text from a user or a file, on one line and shortened, for quoting in an error message."""
    limit = limit or LIMITS.max_quoted_chars
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_genuine_int(value: object) -> TypeGuard[int | np.integer]:
    """An integer size as a file declares it: an int (numpy's too), never a bool or a float like 2.0."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def download_cap_bytes(gigabytes: float) -> int:
    """``--max-download-gb`` in bytes (10^9 per GB), checked like the environment variable."""
    if not (gigabytes >= 0 and gigabytes < 1e6):
        raise SpecboundError(f"the download cap must be between 0 and 1e6 GB, got {gigabytes:g}")
    return int(gigabytes * 10**9)


def max_download_bytes() -> int:
    """The download cap in bytes: ``$SPECBOUND_MAX_DOWNLOAD_MB`` megabytes, else the default."""
    text = os.environ.get(MAX_DOWNLOAD_ENV_VAR, "").strip()
    if not text:
        return DEFAULT_MAX_DOWNLOAD_MB * 10**6
    try:
        megabytes = float(text)
    except ValueError:
        raise SpecboundError(f"{MAX_DOWNLOAD_ENV_VAR} must be a number of megabytes, got '{text[:40]}'") from None
    if not (megabytes >= 0 and megabytes < 1e9):
        raise SpecboundError(f"{MAX_DOWNLOAD_ENV_VAR} must be between 0 and 1e9 megabytes, got '{text[:40]}'")
    return int(megabytes * 10**6)


#: Each declared size and the limit it must not exceed (head_dim is at most a width).
_SIZE_LIMITS = {
    "num_layers": "max_layers",
    "hidden_size": "max_hidden_size",
    "num_heads": "max_heads",
    "num_kv_heads": "max_heads",
    "ffn_size": "max_ffn_size",
    "head_dim": "max_hidden_size",
}


def check_declared_sizes(sizes: Mapping[str, object], where: str) -> None:
    """Refuse a declared size above its limit before the sizes are even checked for consistency."""
    for name, limit_name in _SIZE_LIMITS.items():
        value, limit = sizes.get(name), getattr(LIMITS, limit_name)
        if is_genuine_int(value) and value > limit:
            raise LimitExceededError(f"{where} declares {name} = {value}, above the limit of {limit}")


#: The roles of a layer's MLP weights; each is analysed alone (:mod:`specbound.loading`).
_MLP_ROLES = frozenset({"gate", "ffn_in", "ffn_out"})


def layer_peak_bytes(shape: ModelShape, stored: Mapping[str, tuple[int, ...]] | None = None) -> int:
    """Bytes one layer's analysis holds at its peak, from the family's tensor shapes.

    The attention tensors are held together in float64 (``stored``: the family adapter's stored shape
    of each tensor by role; the canonical (out, in) shapes when not given), then each MLP weight alone
    with its Gram matrix and the eigen-solver's copy of it, 2 min(N, d_ff)² values: the peak is the
    larger of the two phases, 8 max(Σ attention, max MLP + 2 min(N, d_ff)²) bytes.
    """
    n, f, d = shape.hidden_size, shape.ffn_size, shape.head_dim
    if stored is None:
        attention = 2 * shape.num_heads * d * n + 2 * shape.num_kv_heads * d * n
        largest_mlp = n * f
    else:
        sizes = {role: math.prod(dims) for role, dims in stored.items()}
        attention = sum(size for role, size in sizes.items() if role not in _MLP_ROLES)
        largest_mlp = max((size for role, size in sizes.items() if role in _MLP_ROLES), default=0)
    return 8 * max(attention, largest_mlp + 2 * min(n, f) ** 2)


def check_encoder_shape(shape: ModelShape, where: str, stored: Mapping[str, tuple[int, ...]] | None = None) -> None:
    """Refuse a model whose declared sizes exceed the maxima, before anything is allocated for it
    (``stored``: the family adapter's tensor shapes by role, for the per-layer memory peak)."""
    check_declared_sizes({name: getattr(shape, name) for name in _SIZE_LIMITS}, where)
    n = shape.hidden_size
    layer_bytes = layer_peak_bytes(shape, stored)
    if layer_bytes > LIMITS.max_layer_bytes:
        raise LimitExceededError(
            f"{where} declares layers whose analysis needs {layer_bytes / 2**30:.1f} GiB in float64, above "
            f"the limit of {LIMITS.max_layer_bytes / 2**30:.1f} GiB"
        )
    values = shape.num_matrices * n
    if values > LIMITS.max_profile_values:
        raise LimitExceededError(
            f"{where} declares {shape.num_matrices} matrices of width {n}: a spectral "
            f"profile of {values} values, above the limit of {LIMITS.max_profile_values}"
        )
