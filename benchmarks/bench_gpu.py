"""The torch backend on a CUDA device: a Llama-7B-shaped slice and one 70B-shaped layer, against the CPU.

Run on a machine with a GPU: ``python benchmarks/bench_gpu.py`` (under five minutes on one recent
GPU; ``--device cuda:1`` for another one). Everything is float64 on the device; nothing is cast to
half precision. It measures, in this run:

* a Llama-7B-shaped slice (N = 4096, 32 query heads, 8 key/value heads, d_ff = 11008, two layers):
  wall time per layer on the GPU, peak device memory, and the agreement of every singular value and
  norm with the CPU (numpy) result, relative to σ₁ (target 1e-12);
* one Llama-2-70B-shaped layer (N = 8192, 64 query heads, 8 key/value heads, d_ff = 28672): wall time
  and peak device memory on the GPU, and its agreement with the CPU on the attention heads and one
  feed-forward matrix (the CPU's 8192 x 8192 eigen-solves of all three would take long on a laptop;
  ``--full-cpu`` compares them all).

The weights are N(0, 0.02²) from a fixed seed, built in memory (no checkpoint file is needed: the
layer analysis reads canonical weights, :class:`specbound.core.matrices.LayerWeights`). Without a CUDA
device it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import numpy as np

from specbound import ModelShape
from specbound.core.architecture import Mlp
from specbound.core.backend import get_backend
from specbound.core.engine import LayerSpectra, analyse_layer
from specbound.core.factored import head_spectra
from specbound.core.matrices import LayerWeights, attention_heads
from specbound.core.spectrum import norm_11, norm_21, singular_values

SEED = 0
SHAPES = {
    "Llama-7B-shaped slice": (ModelShape(2, 4096, 32, 11008, num_kv_heads=8, mlp=Mlp.GATED, activation="silu"), 2),
    "Llama-70B-shaped layer": (ModelShape(1, 8192, 64, 28672, num_kv_heads=8, mlp=Mlp.GATED, activation="silu"), 1),
}


def layer_weights(shape: ModelShape, seed: int) -> LayerWeights:
    rng = np.random.default_rng(seed)
    return LayerWeights.of_fields({k: rng.normal(0.0, 0.02, s) for k, s in LayerWeights.expected_shapes(shape).items()})


def worst_disagreement(ours: LayerSpectra, reference: LayerSpectra) -> tuple[float, float]:
    """max |Δσ| / σ₁ over the rows, and the largest relative difference of the two norms."""
    rows = slice(None)
    sv, ref = ours.singular_values, reference.singular_values
    sigma = np.abs(sv - ref).max(axis=1) / ref[:, 0]
    norms = max(
        float(np.max(np.abs(ours.norm_21[rows] - reference.norm_21[rows]) / reference.norm_21[rows])),
        float(np.max(np.abs(ours.norm_11[rows] - reference.norm_11[rows]) / reference.norm_11[rows])),
    )
    return float(sigma.max()), norms


def cpu_reference(weights: LayerWeights, shape: ModelShape, full: bool) -> tuple[LayerSpectra, list[int]]:
    """numpy's result for the layer, or (not ``full``) for its attention heads and M_out only: (spectra, rows)."""
    cpu = get_backend("numpy")
    if full:
        spectra = analyse_layer(weights, shape, cpu)
        return spectra, list(range(shape.matrices_per_layer))
    parts = [head_spectra(heads, cpu) for heads in attention_heads(*weights.attention_weights(), shape)]
    assert weights.ffn_out is not None  # a dense layer has its M_out
    m_out = weights.ffn_out.T  # (d_ff, N)
    sv = np.concatenate([np.pad(p.singular_values, ((0, 0), (0, shape.hidden_size - p.singular_values.shape[1])))
                         for p in parts] + [singular_values(m_out, cpu)[None, :]])  # fmt: skip
    n21 = np.concatenate([p.norm_21 for p in parts] + [np.atleast_1d(norm_21(m_out))])
    n11 = np.concatenate([p.norm_11 for p in parts] + [np.atleast_1d(norm_11(m_out))])
    rows = [*range(2 * shape.num_heads), shape.matrices_per_layer - 1]
    return LayerSpectra(sv, n21, n11), rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--full-cpu", action="store_true", help="compare every matrix of the 70B layer on the CPU")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here: this benchmark needs one (the CPU backends are in bench_large.py)")
        return 2
    gpu = get_backend("torch", args.device)
    print(f"device: {torch.cuda.get_device_name(torch.device(args.device))}, torch {torch.__version__}", flush=True)
    ok = True
    for name, (shape, layers) in SHAPES.items():
        one = dataclasses.replace(shape, num_layers=1)
        print(f"\n== {name}: N={shape.hidden_size}, H={shape.num_heads}, H_kv={shape.num_kv_heads}, "
              f"d_ff={shape.ffn_size}, {layers} layer(s) ==", flush=True)  # fmt: skip
        full = layers > 1 or args.full_cpu
        for index in range(layers):
            weights = layer_weights(shape, SEED + index)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            on_gpu = analyse_layer(weights, one, gpu)
            gpu.synchronize()
            gpu_s = time.perf_counter() - start
            peak = torch.cuda.max_memory_allocated() / 2**30
            start = time.perf_counter()
            reference, rows = cpu_reference(weights, one, full)
            cpu_s = time.perf_counter() - start
            mine = LayerSpectra(on_gpu.singular_values[rows], on_gpu.norm_21[rows], on_gpu.norm_11[rows])
            sigma, norms = worst_disagreement(mine, reference)
            ok &= sigma <= 1e-12
            print(
                f"layer {index + 1}: GPU {gpu_s:.1f} s (peak {peak:.1f} GiB on the device), CPU {cpu_s:.1f} s"
                f"{'' if full else ' for its heads and M_out'}; max |Δσ|/σ₁ = {sigma:.1e}, norms {norms:.1e}",
                flush=True,
            )
    print("\nagreement with the CPU within 1e-12 of σ₁:", "ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
