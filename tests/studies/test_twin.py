"""The random-initialised twin: full ranks, reproducible, Marchenko-Pastur edge, MiniLM's closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.defaults import BERT_INITIALIZER_RANGE
from specbound.present.explain import structural_rank
from specbound.studies.twin import random_twin, random_twin_of, twin_layers

SMALL = ModelShape(num_layers=2, hidden_size=32, num_heads=4, ffn_size=48)
MINILM = ModelShape(num_layers=6, hidden_size=384, num_heads=12, ffn_size=1536)


@pytest.fixture(scope="module")
def minilm_twin() -> BoundAnalysis:
    return BoundAnalysis.from_profile(random_twin(MINILM, model="minilm-l6"))


def test_label_and_revision_say_what_it_is() -> None:
    profile = random_twin(SMALL, model="tiny", initializer_range=0.05, seed=7)
    assert profile.model == "random twin of tiny (seed 7, σ = 0.05)"
    assert profile.revision == "random-init seed=7 sigma=0.05" and profile.shape == SMALL
    again = random_twin_of(profile, seed=1)
    assert again.model == f"random twin of {profile.model} (seed 1, σ = 0.02)" and again.shape == SMALL


def test_weights_are_bert_initialisation_one_layer_at_a_time() -> None:
    layers = twin_layers(SMALL, 0.02, seed=3)
    first = next(layers)  # a generator: the second layer is not drawn yet
    assert first.ffn_in is not None and first.ffn_out is not None  # BERT's dense MLP
    assert first.ffn_in.shape == (48, 32) and first.ffn_out.shape == (32, 48) and first.query.shape == (32, 32)
    everything = np.concatenate(
        [w.ravel() for w in (first.query, first.key, first.value, first.attn_out, first.ffn_in, first.ffn_out)]
    )
    assert abs(everything.mean()) < 0.002 and everything.std() == pytest.approx(0.02, rel=0.05)
    assert len(list(layers)) == SMALL.num_layers - 1
    with pytest.raises(ValueError, match="initializer range"):
        next(twin_layers(SMALL, 0.0))


def test_reproducible_by_seed() -> None:
    a, b, c = (random_twin(SMALL, model="m", seed=s) for s in (0, 0, 1))
    np.testing.assert_array_equal(a.singular_values, b.singular_values)
    np.testing.assert_array_equal(a.norm_21, b.norm_21)
    assert not np.allclose(a.singular_values, c.singular_values)


def test_ranks_are_full(minilm_twin: BoundAnalysis) -> None:
    profile = minilm_twin.profile
    np.testing.assert_array_equal(profile.rank, structural_rank(profile))
    assert set(profile.rank[profile.mask(Kind.QK)]) == {32} and set(profile.rank[profile.mask(Kind.M_IN)]) == {384}


def test_spectral_norm_of_m_in_sits_at_the_marchenko_pastur_edge(minilm_twin: BoundAnalysis) -> None:
    profile = minilm_twin.profile
    edge = BERT_INITIALIZER_RANGE * (math.sqrt(384) + math.sqrt(1536))
    np.testing.assert_allclose(profile.per_layer(profile.spectral_norm, Kind.M_IN), edge, rtol=0.03)


def test_minilm_shaped_twin_is_the_architecture_only_number(minilm_twin: BoundAnalysis) -> None:
    """Every p* = 0, so ours = Σ sqrt(rank N) + sqrt(L) = 6 (24 sqrt(32 * 384) + 2 * 384) + sqrt(6)."""
    assert set(minilm_twin.p_opt) == {0.0}
    closed = 6 * (24 * math.sqrt(32 * 384) + 2 * 384) + math.sqrt(6)
    assert minilm_twin.optimal.total == pytest.approx(closed, rel=1e-12)
    assert closed == pytest.approx(20573.03, abs=0.005)
    assert 7.5 < math.log10(minilm_twin.edelman) < 9.0  # untrained: far below the trained model's 10^28.8
