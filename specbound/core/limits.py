"""Every size limit of the analysis, in one place, so that work is refused before it is started (the
lab's training runs have theirs in :mod:`specbound_lab.limits`).

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
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from .architecture import ModelShape
from .errors import SpecboundError
from .values import is_genuine_int

#: The megabyte of every size the package writes or reads from a person (caps, downloads, uploads):
#: 10^6 bytes, as the Hugging Face Hub and disk makers count (a configured 2^20-byte cap is shown in it too).
MEGABYTE: int = 10**6
#: Environment variable that overrides the download cap, in megabytes (10^6 bytes).
MAX_DOWNLOAD_ENV_VAR = "SPECBOUND_MAX_DOWNLOAD_MB"
#: Default download cap: enough for BERT-large in either format (1.34 GB), not for a multi-GB LLM.
DEFAULT_MAX_DOWNLOAD_MB = 1500


#: config.json maxima of the hidden and feed-forward sizes (the defaults of :class:`Limits` below).
_MAX_HIDDEN_SIZE, _MAX_FFN_SIZE = 8192, 32768
#: Headroom factor under float64's maximum for rounding, LAPACK's internal scaling and the few sums of
#: already-large terms (2^16: far more than any accumulated relative error of these computations).
_WEIGHT_HEADROOM = 2.0**16


def derived_max_abs_weight(max_hidden: int = _MAX_HIDDEN_SIZE, headroom: float = _WEIGHT_HEADROOM) -> float:
    """The largest |w| for which every intermediate of the norms and spectra stays finite in float64.

    With every weight at most w in magnitude, N the hidden size, d = N / H <= N the head size and d_ff
    the feed-forward size, the analysis (:mod:`specbound.core.spectrum`, :mod:`specbound.core.profile`,
    :mod:`specbound.core.bounds`) forms:

    * QK = Q_h^T K_h and V = V_h^T O_h from d x N factors: each entry is a sum of d products of two
      weights, at most d w^2; a column's squared norm, for the (2,1) norm, sums N of their squares,
      at most N d^2 w^4; the (1,1) norm sums N^2 entries, at most N^2 d w^2;
    * their singular values from the d x d core R_q R_k^T of the QR factors (entries at most d N w^2),
      with sigma_1 <= ||Q_h||_F ||K_h||_F <= d N w^2; the Frobenius norm, the stable rank, the energy
      curves and S_2 square them: sum_i sigma_i^2 = ||QK||_F^2 <= (d N w^2)^2 = d^2 N^2 w^4;
    * for M_in and M_out (N x d_ff) the Gram matrix, entries at most max(N, d_ff) w^2 and eigenvalues
      sigma_i^2 <= ||M||_F^2 <= N d_ff w^2 (squared weights only: within the limits N d_ff <= N^4);
    * S_p = sum sigma_i^p for p in [0, 2] is at most the rank plus ||W||_F^2, and every product of
      norms in alpha, gamma and the proxies is carried as a logarithm (:mod:`specbound.core.logspace`).

    The largest is d^2 N^2 w^4 <= N^4 w^4 (one head: d = N). So w is capped where N^4 w^4 times the
    headroom reaches float64's maximum (1.8e308), rounded down to a power of ten: for N <= 8192,
    (1.8e308 / 2^16 / 8192^4)^(1/4) = 8.8e71, so 1e71. Anything under the cap analyses, anything over
    it is refused before any SVD with the cap's own message.
    """
    exact = (float(np.finfo(np.float64).max) / headroom / float(max_hidden) ** 4) ** 0.25
    return float(10.0 ** math.floor(math.log10(exact)))


@dataclass(frozen=True)
class Limits:
    """The documented maxima; :data:`LIMITS` is the single instance the package reads."""

    # config.json of a checkpoint
    max_layers: int = 96
    max_hidden_size: int = _MAX_HIDDEN_SIZE
    max_heads: int = 256
    max_ffn_size: int = _MAX_FFN_SIZE
    #: routed experts per layer of a mixture of experts (OLMoE and Qwen3-MoE have 64 and 128)
    max_experts: int = 512
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
    #: largest |w| accepted in a weight matrix: what the float64 arithmetic of the norms carries for
    #: the largest shapes above (see :func:`derived_max_abs_weight`: 1e71)
    max_abs_weight: float = derived_max_abs_weight()
    #: an atlas: whole file, the sum of its members' uncompressed sizes, and any one member
    max_atlas_file_bytes: int = 512 * 1024**2
    max_atlas_total_bytes: int = 1024**3
    #: one member of an atlas (a visitor may upload one): 256 MiB, a profile of 2^25 values, which a
    #: 7B-class model's (8.8e6 values) fits and a 70B-class one's does not
    max_atlas_member_bytes: int = 256 * 1024**2
    #: models in one atlas: a trajectory keeps one profile per saved step (Pythia's 154 revisions; a
    #: Trainer run measured every 10 steps for 40,000 steps, 4,000), and the byte limits above
    #: bound its memory whatever the count; 4096 models take 16,385 zip members and a 3 MB manifest
    max_atlas_models: int = 4096
    #: the post-hoc grid P_m has 2m + 1 points; every bound evaluation is linear in it
    max_grid_m: int = 1000
    #: Lipschitz constant of the activation (GELU's is 1.13): anything above is a typo
    max_l_phi: float = 1e6
    #: automaton states all of a LoRA adapter config's ``rank_pattern`` and ``alpha_pattern`` keys may
    #: unroll to together (each key at most :data:`specbound.core.patterns.MAX_STATES`)
    max_pattern_states: int = 20_000
    #: steps matching those keys to the adapter's module names may take, summed from
    #: :meth:`specbound.core.patterns.SuffixPattern.cost` before any is run. A step has a bounded cost
    #: whatever the key (a character class is one membership test, however many items it lists):
    #: 120 to 275 ns on a busy two-core machine (``benchmarks/bench_patterns.py``), so the worst config
    #: admitted runs in about half a second at most, where 9 keys ``(?:[^\n]*){4900}ZZ`` took 99 s. A
    #: per-module rank_pattern of a 7B model (224 dotted keys on its 224 modules) costs 0.75 million.
    max_pattern_match_steps: int = 2_000_000
    #: characters of a model name typed by a user (a Hub id has at most 96)
    max_model_name_chars: int = 4096
    #: characters of one tensor name in an adapter file (peft's ``base_model.model.`` prefix included):
    #: the longest of a 70B-class decoder's LoRA factors has under 100, so a longer name is no module's
    #: and is refused before any name is matched (a suffix search over it costs its length times its parts)
    max_tensor_name_chars: int = 1024
    #: characters of user- or file-supplied text quoted in an error message
    max_quoted_chars: int = 60
    #: temporary files of an interrupted atomic write older than this are removed
    stale_temp_seconds: float = 600.0
    #: characters of one option value or argument echoed in a usage error
    max_echoed_chars: int = 200
    #: a lab grid file, and one run's trajectory record (steps x matrices numbers, a few MB at most)
    max_grid_bytes: int = 1024**2
    max_record_bytes: int = 64 * 1024**2


LIMITS = Limits()


class LimitExceededError(SpecboundError):
    """A size declared by a file, a manifest, the Hub or an option is above a documented limit."""


def download_cap_bytes(gigabytes: float) -> int:
    """``--max-download-gb`` in bytes (10^9 per GB), checked like the environment variable."""
    if not (gigabytes >= 0 and gigabytes < 1e6):
        raise SpecboundError(f"the download cap must be between 0 and 1e6 GB, got {gigabytes:g}")
    return int(gigabytes * 10**9)


def format_megabytes(size: float | None, digits: int = 1) -> str:
    """A number of bytes in :data:`MEGABYTE` units, the one way every page and message writes a size;
    "?" when it is not known (a download whose server gives no length).

    >>> format_megabytes(12_345_678), format_megabytes(5e9, digits=0), format_megabytes(50 * 2**20, 0)
    ('12.3 MB', '5,000 MB', '52 MB')
    >>> format_megabytes(None)
    '?'
    """
    return "?" if size is None else f"{size / MEGABYTE:,.{digits}f} MB"


def max_download_bytes() -> int:
    """The download cap in bytes: ``$SPECBOUND_MAX_DOWNLOAD_MB`` megabytes, else the default."""
    text = os.environ.get(MAX_DOWNLOAD_ENV_VAR, "").strip()
    if not text:
        return DEFAULT_MAX_DOWNLOAD_MB * MEGABYTE
    try:
        megabytes = float(text)
    except ValueError:
        raise SpecboundError(f"{MAX_DOWNLOAD_ENV_VAR} must be a number of megabytes, got '{text[:40]}'") from None
    if not (megabytes >= 0 and megabytes < 1e9):
        raise SpecboundError(f"{MAX_DOWNLOAD_ENV_VAR} must be between 0 and 1e9 megabytes, got '{text[:40]}'")
    return int(megabytes * MEGABYTE)


#: Each declared size and the limit it must not exceed (head_dim is at most a width).
_SIZE_LIMITS = {
    "num_layers": "max_layers",
    "hidden_size": "max_hidden_size",
    "num_heads": "max_heads",
    "num_kv_heads": "max_heads",
    "ffn_size": "max_ffn_size",
    "decoder_ffn_size": "max_ffn_size",
    "shared_expert_size": "max_ffn_size",
    "head_dim": "max_hidden_size",
    "num_experts": "max_experts",
}


def check_declared_sizes(sizes: Mapping[str, object], where: str) -> None:
    """Refuse a declared size above its limit before the sizes are even checked for consistency."""
    for name, limit_name in _SIZE_LIMITS.items():
        value, limit = sizes.get(name), getattr(LIMITS, limit_name)
        if is_genuine_int(value) and value > limit:
            raise LimitExceededError(f"{where} declares {name} = {value}, above the limit of {limit}")


#: The roles of a dense layer's MLP weights; each is analysed alone (:mod:`specbound.io.loading`). A
#: family adapter gives its own (``mlp_tensor_roles``: an expert's are named by expert).
_MLP_ROLES = frozenset({"gate", "ffn_in", "ffn_out"})


def layer_peak_bytes(
    shape: ModelShape,
    stored: Mapping[str, tuple[int, ...]] | None = None,
    mlp_roles: Collection[str] = _MLP_ROLES,
) -> int:
    """Bytes one layer's analysis holds at its peak, from the family's tensor shapes.

    The attention tensors are held together in float64 (``stored``: the family adapter's stored shape
    of each tensor by role; the canonical (out, in) shapes when not given), then each MLP weight alone
    with its Gram matrix and the eigen-solver's copy of it, 2 min(N, d_ff)² values: the peak is the
    larger of the two phases, 8 max(Σ attention, max MLP + 2 min(N, d_ff)²) bytes. ``mlp_roles``: the
    roles of ``stored`` that hold MLP weights (a fused tensor such as Phi-3's gate and up is one, read
    whole). A mixture of experts is analysed expert by expert, so its MLP phase is that of its largest
    expert's one matrix (the shared expert's, when it is wider), not of the E experts together.
    """
    n, d = shape.hidden_size, shape.head_dim
    f = shape.max_ffn_size
    if stored is None:
        attention = 2 * shape.num_heads * d * n + 2 * shape.num_kv_heads * d * n
        largest_mlp = n * f
    else:
        sizes = {role: math.prod(dims) for role, dims in stored.items()}
        attention = sum(size for role, size in sizes.items() if role not in mlp_roles)
        # the stored tensors are one layer's (an encoder-decoder's decoder layer): the other stack's MLP may be wider
        largest_mlp = max(n * f, max((size for role, size in sizes.items() if role in mlp_roles), default=0))
    return 8 * max(attention, largest_mlp + 2 * min(n, f) ** 2)


def check_encoder_shape(
    shape: ModelShape,
    where: str,
    stored: Mapping[str, tuple[int, ...]] | None = None,
    mlp_roles: Collection[str] = _MLP_ROLES,
) -> None:
    """Refuse a model whose declared sizes exceed the maxima, before anything is allocated for it
    (``stored``: the family adapter's tensor shapes by role, ``mlp_roles`` those of its MLP, for the
    per-layer memory peak)."""
    check_declared_sizes({name: getattr(shape, name) for name in _SIZE_LIMITS}, where)
    n = shape.hidden_size
    layer_bytes = layer_peak_bytes(shape, stored, mlp_roles)
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
