"""The comparison measures against a dense computation from the checkpoint's weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from safetensors.numpy import load_file

from specbound.lab.measures import frobenius_sum, log_bartlett, log_spectral_product
from specbound.loading import load_profile


def test_measures_match_dense_matrices(make_checkpoint) -> None:
    layers, hidden, heads = 2, 16, 2
    directory = make_checkpoint(layers=layers, hidden=hidden, heads=heads, ffn=24, seed=3)
    weights = {k: v.astype(np.float64) for k, v in load_file(directory / "model.safetensors").items()}
    d = hidden // heads
    frob, log_prod, ratios = 0.0, 0.0, 0.0
    for layer in range(layers):

        def w(name: str, layer: int = layer) -> np.ndarray:
            return weights[f"encoder.layer.{layer}.{name}.weight"]

        q, k, v, o = (
            w("attention.self.query"),
            w("attention.self.key"),
            w("attention.self.value"),
            w("attention.output.dense"),
        )
        blocks: dict[str, list[np.ndarray]] = {"QK": [], "V": []}
        for h in range(heads):
            s = slice(h * d, (h + 1) * d)
            blocks["QK"].append(q[s].T @ k[s])  # (N, N)
            blocks["V"].append(v[s].T @ o.T[s])  # (N, N)
        blocks["M_in"] = [w("intermediate.dense").T]
        blocks["M_out"] = [w("output.dense").T]
        for matrices in blocks.values():
            spectral = sum(np.linalg.norm(m, 2) for m in matrices)
            norm21 = sum(np.linalg.norm(m, axis=0).sum() for m in matrices)
            frob += sum(np.square(m).sum() for m in matrices)
            log_prod += math.log(spectral)
            ratios += (norm21 / spectral) ** (2 / 3)
    profile = load_profile(str(directory))
    assert frobenius_sum(profile) == pytest.approx(frob, rel=1e-10)
    assert log_spectral_product(profile) == pytest.approx(log_prod, rel=1e-10)
    assert log_bartlett(profile) == pytest.approx(log_prod + 1.5 * math.log(ratios), rel=1e-10)
