"""The random-initialised twin of a model: the same shape, weights drawn as its family initialises them.

Every family specbound reads initialises its attention and MLP weights with N(0, σ²), σ the config's
``initializer_range`` (OPT's ``init_std``; 0.02 unless the config says otherwise), which the shape
records; GPT-2 scales its residual projections (``attn.c_proj``, ``mlp.c_proj``) by 1/√(2L)
(:meth:`~specbound.io.families.base.FamilyAdapter.init_scale`). A twin has the trained model's
:class:`~specbound.core.architecture.ModelShape` and such weights, drawn with ``numpy.random.default_rng(seed)``
one layer at a time (peak memory: one layer) and analysed exactly like a checkpoint, so trained
and untrained can be compared term by term.

What to expect: an (n, m) Gaussian matrix with entries of standard deviation sigma has spectral
norm close to sigma (sqrt(n) + sqrt(m)) (the edge of the Marchenko-Pastur law) and full rank, so every
QK and V head has rank d and M_in, M_out rank min(N, d_ff).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ..core.architecture import ModelShape
from ..core.defaults import TWIN_SEED
from ..core.engine import compute_profile
from ..core.matrices import LayerWeights
from ..core.profile import SpectralProfile
from ..core.progress import ProgressCallback, silent
from ..io.families import adapter_for


def twin_layers(
    shape: ModelShape, initializer_range: float | None = None, seed: int = TWIN_SEED
) -> Iterator[LayerWeights]:
    """The (out, in) weights of each layer, N(0, σ²) (σ = initializer_range, else the shape's), generated
    lazily bottom first; a Gaussian matrix's law does not depend on how a family stores it."""
    sigma = shape.initializer_range if initializer_range is None else initializer_range
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"the initializer range must be a positive number, got {sigma}")
    adapter = adapter_for(shape.family)
    rng = np.random.default_rng(seed)
    for layer in range(shape.num_layers):
        weights = {
            name: rng.normal(0.0, sigma * adapter.init_scale(name, shape), size=size)
            for name, size in LayerWeights.expected_shapes(shape, layer).items()
        }
        yield LayerWeights.of_fields(weights)


def twin_name(model: str, initializer_range: float, seed: int) -> str:
    """The label every view shows for a twin, e.g. 'random twin of minilm-l6 (seed 0, σ = 0.02)'."""
    return f"random twin of {model} (seed {seed}, σ = {initializer_range:g})"


def random_twin(
    shape: ModelShape,
    *,
    model: str,
    initializer_range: float | None = None,
    seed: int = TWIN_SEED,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """Spectral profile of a randomly initialised model of ``shape``, labelled as the twin of ``model``.

    σ is ``initializer_range``, else the shape's (the config's). The revision encodes seed and σ, so
    a profile cache keyed by (model, revision) keeps twins apart.
    """
    sigma = shape.initializer_range if initializer_range is None else initializer_range
    return compute_profile(
        twin_layers(shape, sigma, seed),
        shape,
        model=twin_name(model, sigma, seed),
        revision=f"random-init seed={seed} sigma={sigma!r}",
        progress=progress,
    )


def random_twin_of(
    profile: SpectralProfile,
    *,
    initializer_range: float | None = None,
    seed: int = TWIN_SEED,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """The twin of an analysed model: its shape and name, new Gaussian weights (σ from its config by default)."""
    return random_twin(
        profile.shape, model=profile.model, initializer_range=initializer_range, seed=seed, progress=progress
    )
