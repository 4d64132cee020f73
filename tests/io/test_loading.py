"""The loader (``specbound.io.loading``): from a name to a profile through the cache, the engine and the
checkpoint's own files. The engine's numbers are tested in ``tests/core``; here, what the loader adds:
the profile it returns is the engine's on the checkpoint's layers, bit for bit; the cache answers a
second call and only while the checkpoint is unchanged; a model in memory gives the profile of the
same model saved; one ``ComputeOptions`` reaches the engine whole."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import MakeCheckpoint

import specbound.io.loading as loading
from specbound.core.architecture import ModelShape
from specbound.core.engine import compute_profile
from specbound.core.matrices import LayerSource
from specbound.core.profile import SpectralProfile
from specbound.io.cache import ProfileCache
from specbound.io.checkpoints.checkpoint import open_checkpoint
from specbound.io.options import ComputeOptions


def _same(a: SpectralProfile, b: SpectralProfile) -> None:
    np.testing.assert_array_equal(a.singular_values, b.singular_values)
    np.testing.assert_array_equal(a.norm_21, b.norm_21)
    np.testing.assert_array_equal(a.norm_11, b.norm_11)
    assert a.shape == b.shape


def test_a_directory_gives_the_engines_profile_of_its_layers(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    directory = make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)
    profile = loading.load_profile(str(directory), cache=ProfileCache(tmp_path / "cache"))
    checkpoint = open_checkpoint(directory)
    engine = compute_profile(checkpoint.stream(), checkpoint.shape, workers=1)
    _same(profile, engine)
    assert profile.model == str(directory) and profile.revision  # named as asked, with the files' revision


def test_the_cache_answers_while_the_checkpoint_is_unchanged(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)
    cache = ProfileCache(tmp_path / "cache")
    first = loading.load_profile(str(directory), cache=cache)
    calls: list[str] = []
    original = compute_profile  # what loading calls

    def counted(*args: Any, **kwargs: Any) -> SpectralProfile:
        calls.append("computed")
        return original(*args, **kwargs)

    monkeypatch.setattr(loading, "compute_profile", counted)
    again = loading.load_profile(str(directory), cache=cache)
    assert calls == [] and again.revision == first.revision
    _same(again, first)
    config = json.loads((directory / "config.json").read_text())
    config["layer_norm_eps"] = 1e-6  # any change to the checkpoint's files is a new revision
    (directory / "config.json").write_text(json.dumps(config))
    changed = loading.load_profile(str(directory), cache=cache)
    assert calls == ["computed"] and changed.revision != first.revision
    assert loading.load_profile(str(directory), cache=cache, use_cache=False) is not None
    assert calls == ["computed", "computed"]  # use_cache=False computes even with a fresh entry


def test_a_model_in_memory_gives_the_profile_of_the_same_model_saved(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    transformers = pytest.importorskip("transformers")
    directory = make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)
    model = transformers.AutoModel.from_pretrained(directory)
    in_memory = loading.profile_in_memory(model.config.to_dict(), model.state_dict(), name="mine")
    saved = loading.load_profile(str(directory), cache=ProfileCache(tmp_path / "cache"))
    _same(in_memory, saved)
    assert in_memory.revision == loading.IN_MEMORY_REVISION and in_memory.model == "mine"


def test_one_compute_options_reaches_the_engine_whole(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)
    monkeypatch.setenv("SPECBOUND_CACHE", str(tmp_path / "cache"))
    seen: dict[str, object] = {}
    original = compute_profile  # what loading calls

    def recording(layers: Iterable[LayerSource], shape: ModelShape, **options: Any) -> SpectralProfile:
        seen.update(options)
        return original(layers, shape, **options)

    monkeypatch.setattr(loading, "compute_profile", recording)
    options = ComputeOptions(workers=1, large_norm_11=True)
    profile = loading.load_profile(str(directory), options, use_cache=False)
    assert seen["workers"] == 1 and seen["large_norm_11"] is True
    assert not np.isnan(profile.norm_11).any()
