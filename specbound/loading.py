"""From a model name to its spectral profile: resolve, fetch, look in the cache, else compute.

``compute_profile`` is the slow, exact part (one pass over the layers); ``load_profile`` wraps it with
model resolution, the Hub and the disk cache, or reads the stored profile of an atlas model. The
bound terms then come from :class:`specbound.bounds.BoundAnalysis` without touching any file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .architecture import ModelShape
from .cache import ProfileCache
from .checkpoints import Checkpoint, fetch, fingerprint, open_checkpoint, read_config
from .matrices import LayerWeights, layer_factors
from .models import ModelRef, Source, resolve
from .profile import SpectralProfile, full_dims_of
from .progress import ProgressCallback, ProgressEvent, silent
from .spectrum import entrywise_norms_factored, norm_11, norm_21, singular_values, singular_values_factored


def compute_profile(
    layers: Iterable[LayerWeights],
    shape: ModelShape,
    *,
    model: str = "",
    revision: str = "",
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """Singular values and (2,1), (1,1) norms of all L (2H + 2) (gated: L (2H + 3)) proxy matrices, layer by layer.

    ``layers`` yields each layer's weights in (out, in) form (:class:`~specbound.matrices.LayerWeights`),
    as a family adapter reads them (:mod:`specbound.checkpoints`).
    """
    N = shape.hidden_size
    k_ffn = min(N, shape.ffn_size)
    width = max(N, k_ffn)
    rows_sv, rows_21, rows_11 = [], [], []
    for index, weights in enumerate(layers):
        factors = layer_factors(weights, shape)
        for left, right in ((factors.qk_left, factors.qk_right), (factors.v_left, factors.v_right)):
            sv = singular_values_factored(left, right)  # (H, <= d)
            rows_sv.append(np.pad(sv, ((0, 0), (0, width - sv.shape[1]))))
            n21, n11 = entrywise_norms_factored(left, right)  # (H,) each
            rows_21.append(n21)
            rows_11.append(n11)
        for matrix in factors.mlp.values():  # M_gate (gated only), M_in, M_out
            rows_sv.append(np.pad(singular_values(matrix), (0, width - k_ffn))[None, :])
            rows_21.append(np.atleast_1d(norm_21(matrix)))
            rows_11.append(np.atleast_1d(norm_11(matrix)))
        progress(ProgressEvent("analyse", index + 1, shape.num_layers, f"layer {index + 1}"))
    if not rows_sv:
        raise ValueError("no layers given")
    return SpectralProfile(
        model=model,
        revision=revision,
        shape=shape,
        singular_values=np.concatenate(rows_sv, axis=0),  # (M, width)
        full_dims=full_dims_of(shape),
        norm_21=np.concatenate(rows_21),
        norm_11=np.concatenate(rows_11),
    )


def profile_in_memory(
    config: Mapping[str, Any],
    state: Mapping[str, Any],
    *,
    name: str,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """The profile of a model held in memory: its config (a dict, as config.json holds it) and its
    state dict, read in place one layer at a time (nothing is written to disk or cached)."""
    from .api import IN_MEMORY_REVISION

    checkpoint = Checkpoint.from_state_dict(config, state, f"the model {name}")
    return compute_profile(
        checkpoint.layers(), checkpoint.shape, model=name, revision=IN_MEMORY_REVISION, progress=progress
    )


def load_profile(
    model: str | ModelRef,
    *,
    progress: ProgressCallback = silent,
    cache: ProfileCache | None = None,
    use_cache: bool = True,
) -> SpectralProfile:
    """The spectral profile of a model by name (see :func:`specbound.models.resolve`).

    Downloads what is missing (with progress), reuses a cached profile when the checkpoint's
    revision is unchanged, and stores a newly computed one.
    """
    ref = resolve(model) if isinstance(model, str) else model
    if ref.source is Source.ATLAS:
        from .atlas import atlas_member

        assert ref.path is not None
        return atlas_member(ref.path, ref.member)  # stored spectra: nothing to compute or cache
    directory = fetch(ref, progress)
    read_config(directory)  # a clear message for a directory that is not a checkpoint, before anything else
    revision = fingerprint(directory)
    cache = cache or ProfileCache()
    if use_cache and (cached := cache.load(ref.name, revision)) is not None:
        return cached
    checkpoint = open_checkpoint(directory)
    profile = compute_profile(
        checkpoint.layers(), checkpoint.shape, model=ref.name, revision=revision, progress=progress
    )
    if use_cache:
        with contextlib.suppress(OSError):  # a read-only cache directory only costs speed next time
            cache.save(profile)
    return profile
