"""The comparison measures and the spectra's power-law exponents against a dense computation from the
checkpoint's weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from safetensors.numpy import load_file

from specbound.core.bounds import BoundAnalysis
from specbound.core.heavy_tail import fit_power_law
from specbound.io.loading import load_profile
from specbound.lab.measures import frobenius_sum, log_bartlett, log_spectral_product
from specbound.lab.registry import MEASURES


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


def _dense_proxies(directory, layers: int, hidden: int, heads: int) -> list[np.ndarray]:
    """Every proxy matrix of a checkpoint, dense: per head QK = W_Q^h^T W_K^h and V, then M_in, M_out."""
    weights = {k: v.astype(np.float64) for k, v in load_file(directory / "model.safetensors").items()}
    d = hidden // heads
    out = []
    for layer in range(layers):
        prefix = f"encoder.layer.{layer}."
        q, k, v, o = (
            weights[prefix + n + ".weight"]
            for n in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense")
        )
        heads_ = [slice(h * d, (h + 1) * d) for h in range(heads)]
        out += [q[s].T @ k[s] for s in heads_] + [v[s].T @ o.T[s] for s in heads_]
        out += [weights[prefix + "intermediate.dense.weight"].T, weights[prefix + "output.dense.weight"].T]
    return out


@pytest.mark.parametrize("hidden, heads", [(32, 2), (16, 4)])  # d = 16, or d = 4: WeightWatcher fits 4 values
def test_power_law_measures_match_dense_spectra(make_checkpoint, hidden: int, heads: int) -> None:
    directory = make_checkpoint(layers=2, hidden=hidden, heads=heads, ffn=48, seed=5)
    alphas, weighted, small = [], [], 0
    for matrix in _dense_proxies(directory, 2, hidden, heads):
        sv = np.linalg.svd(matrix, compute_uv=False)
        eigenvalues = np.square(sv[sv > 1e-9 * sv[0]])  # the rank-d products' zero singular values dropped
        fit = fit_power_law(eigenvalues)
        if fit is None:
            small += 1
            continue
        alphas.append(fit.alpha)
        weighted.append(fit.alpha * math.log10(eigenvalues.max()))
    analysis = BoundAnalysis.from_profile(load_profile(str(directory)))
    assert small == 0 and MEASURES["alpha_skipped"].compute(analysis) == 0
    assert MEASURES["alpha"].compute(analysis) == pytest.approx(np.mean(alphas), rel=1e-6)
    assert MEASURES["alpha_hat"].compute(analysis) == pytest.approx(np.mean(weighted), rel=1e-6)
