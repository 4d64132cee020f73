"""The random-initialised twin of a model: the same shape, weights drawn as BERT initialises them.

BERT initialises every ``nn.Linear`` weight with N(0, initializer_range^2) (0.02 unless config.json
says otherwise). A twin has the trained model's :class:`~specbound.matrices.EncoderShape` and such
weights, drawn with ``numpy.random.default_rng(seed)`` one layer at a time (peak memory: one layer) and
analysed exactly like a checkpoint, so trained and untrained can be compared term by term.

What to expect: an (n, m) Gaussian matrix with entries of standard deviation sigma has spectral
norm close to sigma (sqrt(n) + sqrt(m)) (the edge of the Marchenko-Pastur law) and full rank, so every
QK and V head has rank d and M_in, M_out rank min(N, d_ff).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from .defaults import BERT_INITIALIZER_RANGE, TWIN_SEED
from .loading import compute_profile
from .matrices import EncoderShape, LayerWeights
from .profile import SpectralProfile
from .progress import ProgressCallback, silent


def twin_layers(
    shape: EncoderShape, initializer_range: float = BERT_INITIALIZER_RANGE, seed: int = TWIN_SEED
) -> Iterator[LayerWeights]:
    """The six (out, in) weights of each layer, N(0, initializer_range^2), generated lazily bottom first."""
    if not (math.isfinite(initializer_range) and initializer_range > 0):
        raise ValueError(f"the initializer range must be a positive number, got {initializer_range}")
    rng = np.random.default_rng(seed)
    for _ in range(shape.num_layers):
        weights = {
            name: rng.normal(0.0, initializer_range, size=size)
            for name, size in LayerWeights.expected_shapes(shape).items()
        }
        yield LayerWeights(**weights)


def twin_name(model: str, initializer_range: float, seed: int) -> str:
    """The label every view shows for a twin, e.g. 'random twin of minilm-l6 (seed 0, σ = 0.02)'."""
    return f"random twin of {model} (seed {seed}, σ = {initializer_range:g})"


def random_twin(
    shape: EncoderShape,
    *,
    model: str,
    initializer_range: float = BERT_INITIALIZER_RANGE,
    seed: int = TWIN_SEED,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """Spectral profile of a randomly initialised encoder of ``shape``, labelled as the twin of ``model``.

    The revision encodes seed and sigma, so a profile cache keyed by (model, revision) keeps twins apart.
    """
    return compute_profile(
        twin_layers(shape, initializer_range, seed),
        shape,
        model=twin_name(model, initializer_range, seed),
        revision=f"random-init seed={seed} sigma={initializer_range!r}",
        progress=progress,
    )


def random_twin_of(
    profile: SpectralProfile,
    *,
    initializer_range: float = BERT_INITIALIZER_RANGE,
    seed: int = TWIN_SEED,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """The twin of an analysed model: its shape and name, new Gaussian weights."""
    return random_twin(
        profile.shape, model=profile.model, initializer_range=initializer_range, seed=seed, progress=progress
    )
