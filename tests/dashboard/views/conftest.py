"""Analyses the view tests share: MiniLM (from the session's fixture), its random twin, and the shipped
fine-tuning pair (a two-layer BERT whose matrices take several p*, and its fine-tune)."""

from __future__ import annotations

import pytest

from specbound.core.bounds import BoundAnalysis
from specbound.io.loading import difference_profile, load_profile, open_weights
from specbound.studies.twin import random_twin_of


@pytest.fixture(scope="module")
def twin(minilm: BoundAnalysis) -> BoundAnalysis:
    """MiniLM's random-initialised twin (σ = 0.02, seed 0): the same shape and ranks, other sizes."""
    return BoundAnalysis.from_profile(random_twin_of(minilm.profile, initializer_range=0.02, seed=0))


@pytest.fixture(scope="module")
def finetune_base() -> BoundAnalysis:
    return BoundAnalysis.from_profile(load_profile("finetune-base"))


@pytest.fixture(scope="module")
def finetune_full() -> BoundAnalysis:
    return BoundAnalysis.from_profile(load_profile("finetune-full"))


@pytest.fixture(scope="module")
def centred_full(finetune_full: BoundAnalysis) -> BoundAnalysis:
    """The fine-tune's bound centred at its base (SPEC §14), as the dashboard forms it."""
    delta = difference_profile(open_weights("finetune-full"), open_weights("finetune-base"), model="full - base")
    return BoundAnalysis.from_profile(finetune_full.profile, delta=delta)


@pytest.fixture(scope="module")
def directions_full():
    """Where the fine-tune's singular vectors moved from its base's (SPEC §14b), as the dashboard finds it."""
    from specbound.io.centred import directions_of

    return directions_of(open_weights("finetune-full"), open_weights("finetune-base"))
