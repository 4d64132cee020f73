"""Where an update points (SPEC §14b) against how large it is (SPEC §14), in the same run.

Run with ``python benchmarks/bench_directions.py`` (under a minute on two cores; ``--shape llama`` for
a grouped-query, gated layer of a 1B-class decoder). Layers of random weights of the chosen shape and
a fine-tune of each (every weight moved by noise of a tenth of its scale) are held in memory; the
centred analysis's difference pass (the spectra of W - W⁰, :func:`specbound.core.engine.compute_profile`
over :class:`specbound.io.centred.DifferenceLayer`) and the singular-vector pass
(:func:`specbound.core.directions.layer_directions`: each head's factored SVD of W and W⁰, a dense thin
SVD of each feed-forward matrix and of its reference) are timed on the same layers, best of
``--rounds``, and the ratio directions / difference is printed. The feed-forward SVDs dominate: two
dense SVDs per matrix (W and W⁰) where the difference pass forms one Gram matrix, so a ratio of a few
is the expectation.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from specbound.core.architecture import Mlp, ModelShape
from specbound.core.directions import DirectionSettings, layer_directions
from specbound.core.engine import compute_profile
from specbound.core.matrices import LayerWeights
from specbound.io.centred import DifferenceLayer, difference_shape

SHAPES = {
    "bert": ModelShape(2, 768, 12, 3072),  # two BERT-base layers
    "llama": ModelShape(1, 2048, 32, 8192, num_kv_heads=8, mlp=Mlp.GATED),  # a 1B-class decoder's layer
}


def _layer(rng: np.random.Generator, shape: ModelShape) -> LayerWeights:
    n, d, f = shape.hidden_size, shape.head_dim, shape.ffn_size
    fields = {f_: (f, n) for f_ in ("ffn_in", "gate")} if shape.gated else {"ffn_in": (f, n)}
    weights = {name: rng.standard_normal(size) * 0.02 for name, size in fields.items()}
    return LayerWeights.of_fields(
        {
            "query": rng.standard_normal((shape.num_heads * d, n)) * 0.02,
            "key": rng.standard_normal((shape.num_kv_heads * d, n)) * 0.02,
            "value": rng.standard_normal((shape.num_kv_heads * d, n)) * 0.02,
            "attn_out": rng.standard_normal((n, shape.num_heads * d)) * 0.02,
            "ffn_out": rng.standard_normal((n, f)) * 0.02,
            **weights,
        }
    )


def _moved(rng: np.random.Generator, layer: LayerWeights) -> LayerWeights:
    names = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out", "gate")
    moved: dict[str, np.ndarray] = {}
    for name in names:
        weight = getattr(layer, name)
        if weight is not None:
            moved[name] = weight + 0.1 * weight.std() * rng.standard_normal(weight.shape)
    return LayerWeights.of_fields(moved)


def _best(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="bert")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shape = SHAPES[args.shape]
    rng = np.random.default_rng(0)
    bases = [_layer(rng, shape) for _ in range(shape.num_layers)]
    tuned = [_moved(rng, layer) for layer in bases]

    def difference() -> None:
        layers = [DifferenceLayer(t, b, shape) for t, b in zip(tuned, bases, strict=True)]
        compute_profile(layers, difference_shape(shape), workers=1)

    def directions() -> None:
        for t, b in zip(tuned, bases, strict=True):
            layer_directions(t, b, shape, DirectionSettings())

    spent_difference = _best(difference, args.rounds)
    spent_directions = _best(directions, args.rounds)
    print(f"shape {args.shape}: L={shape.num_layers} N={shape.hidden_size} H={shape.num_heads} d_ff={shape.ffn_size}")
    print(f"difference pass (spectra of W - W0):       {spent_difference:8.3f} s")
    print(f"singular-vector pass (intruders, overlaps): {spent_directions:8.3f} s")
    print(f"ratio directions / difference: {spent_directions / spent_difference:.2f}")


if __name__ == "__main__":
    main()
