"""The comparison measures and the spectra's power-law exponents against a dense computation from the
checkpoint's weights."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from tiny_models import MakeCheckpoint

from specbound.core.bounds import BoundAnalysis
from specbound.core.heavy_tail import fit_power_law
from specbound.io.loading import load_profile
from specbound_lab.measures import frobenius_sum, log_bartlett, log_spectral_product
from specbound_lab.registry import MEASURES, CheckpointMeasure, centred_measures

#: The CENTRED measures by name, typed.
CENTRED = {m.name: m for m in centred_measures()}


def test_measures_match_dense_matrices(make_checkpoint: MakeCheckpoint) -> None:
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


def _of_checkpoint(name: str) -> CheckpointMeasure:
    """A registered measure computed from one checkpoint's analysis."""
    measure = MEASURES[name]
    assert isinstance(measure, CheckpointMeasure)
    return measure


def _dense_proxies(directory: Path, layers: int, hidden: int, heads: int) -> list[np.ndarray]:
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
def test_power_law_measures_match_dense_spectra(make_checkpoint: MakeCheckpoint, hidden: int, heads: int) -> None:
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
    assert small == 0 and _of_checkpoint("alpha_skipped").compute(analysis) == 0
    assert _of_checkpoint("alpha").compute(analysis) == pytest.approx(np.mean(alphas), rel=1e-6)
    assert _of_checkpoint("alpha_hat").compute(analysis) == pytest.approx(np.mean(weighted), rel=1e-6)


def _dense_blocks(directory: Path, layers: int, hidden: int, heads: int) -> list[list[np.ndarray]]:
    """The 4L blocks of a checkpoint, each the list of its heads' dense matrices (one for M_in, M_out)."""
    proxies = _dense_proxies(directory, layers, hidden, heads)
    per_layer = 2 * heads + 2
    blocks = []
    for layer in range(layers):
        chunk = proxies[layer * per_layer : (layer + 1) * per_layer]
        blocks += [chunk[:heads], chunk[heads : 2 * heads], [chunk[-2]], [chunk[-1]]]
    return blocks


def test_measures_centred_at_a_reference_match_dense_differences(make_checkpoint: MakeCheckpoint) -> None:
    """Σ‖W − W⁰‖_F², Jiang et al.'s spectral measure centred at init and Bartlett et al.'s bound with the
    reference's blocks as reference matrices, against dense per-head differences QK_h − QK⁰_h."""
    from specbound.io.loading import difference_profile, open_weights
    from specbound_lab.measures import frobenius_distance, log_bartlett_init, log_spectral_init

    layers, hidden, heads = 2, 16, 2
    tuned = make_checkpoint(layers=layers, hidden=hidden, heads=heads, ffn=24, seed=3, name="tuned")
    start = make_checkpoint(layers=layers, hidden=hidden, heads=heads, ffn=24, seed=4, name="start")
    distance, log_prod, spec_ratios, bartlett_ratios = 0.0, 0.0, 0.0, 0.0
    for now, before in zip(
        _dense_blocks(tuned, layers, hidden, heads), _dense_blocks(start, layers, hidden, heads), strict=True
    ):
        spectral = sum(np.linalg.norm(m, 2) for m in now)  # the scale stays that of W
        differences = [m - m0 for m, m0 in zip(now, before, strict=True)]
        block_distance = sum(np.square(d).sum() for d in differences)
        distance += block_distance
        log_prod += math.log(spectral)
        spec_ratios += block_distance / spectral**2
        bartlett_ratios += (sum(np.linalg.norm(d, axis=0).sum() for d in differences) / spectral) ** (2 / 3)
    profile = load_profile(str(tuned))
    delta = difference_profile(open_weights(str(tuned)), open_weights(str(start)), model="tuned - start")
    assert frobenius_distance(delta) == pytest.approx(distance, rel=1e-10)
    assert log_spectral_init(profile, delta) == pytest.approx(2 * log_prod + math.log(spec_ratios), rel=1e-10)
    assert log_bartlett_init(profile, delta) == pytest.approx(log_prod + 1.5 * math.log(bartlett_ratios), rel=1e-10)
    centred = BoundAnalysis.from_profile(profile, delta=delta)
    ln10 = math.log(10)
    assert CENTRED["distance_frobenius"].compute(centred) == pytest.approx(distance, rel=1e-10)
    assert CENTRED["bartlett_init"].compute(centred) * ln10 == pytest.approx(
        log_prod + 1.5 * math.log(bartlett_ratios), rel=1e-10
    )
    assert CENTRED["ours_init"].compute(centred) * ln10 == pytest.approx(centred.evaluate().log_total, rel=1e-12)


def test_a_checkpoint_at_its_reference_is_at_distance_zero(make_checkpoint: MakeCheckpoint) -> None:
    """At the run's first step the difference is 0: distance 0, the centred bounds' logs -inf, and ours
    centred at init √L (every matrix rank 0)."""
    from specbound.io.loading import difference_profile, open_weights
    from specbound_lab.measures import frobenius_distance, log_bartlett_init, log_spectral_init

    start = make_checkpoint(layers=3, hidden=16, heads=2, ffn=24, seed=4)
    profile = load_profile(str(start))
    delta = difference_profile(open_weights(str(start)), open_weights(str(start)), model="start - start")
    assert frobenius_distance(delta) == 0.0
    assert log_spectral_init(profile, delta) == log_bartlett_init(profile, delta) == -math.inf
    centred = BoundAnalysis.from_profile(profile, delta=delta)
    assert CENTRED["ours_init"].compute(centred) == pytest.approx(math.log10(math.sqrt(3)), abs=1e-12)
    with pytest.raises(ValueError, match="centred at a reference"):
        CENTRED["ours_init"].compute(BoundAnalysis.from_profile(profile))
