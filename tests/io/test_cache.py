"""The on-disk profile cache: hits, misses after a weight change, corrupt entries, where it lives."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest
from tiny_models import MakeCheckpoint

from specbound import Kind, MatrixId, ModelShape, load_profile
from specbound.core.errors import CheckpointError
from specbound.core.profile import SpectralProfile
from specbound.io.cache import ProfileCache, default_cache_dir
from specbound.io.checkpoints import fingerprint


def assert_same_profile(a: SpectralProfile, b: SpectralProfile | None) -> None:
    assert b is not None  # found
    assert (a.model, a.revision, a.shape) == (b.model, b.revision, b.shape)
    for name in ("singular_values", "full_dims", "norm_21", "norm_11"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def cache_entry(directory: Path, cache: ProfileCache) -> Path:
    return cache.path(str(directory.resolve()), fingerprint(directory))


def test_second_load_is_a_cache_hit_that_does_not_open_the_checkpoint(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    directory = make_checkpoint(seed=4)
    first = load_profile(str(directory), cache=cache)
    entry = cache_entry(directory, cache)
    assert entry.is_file() and list(cache.directory.iterdir()) == [entry]
    written = entry.stat().st_mtime_ns

    def no_opening(directory: Path) -> NoReturn:
        raise AssertionError("a cache hit opened the checkpoint")

    monkeypatch.setattr("specbound.io.loading.open_checkpoint", no_opening)
    second = load_profile(str(directory), cache=cache)
    assert_same_profile(first, second)
    assert second is not first
    assert entry.stat().st_mtime_ns == written  # not rewritten


def test_a_rewrite_with_the_same_size_and_mtime_is_a_new_revision(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    """`cp -p` of other weights over the checkpoint: the stale entry must not be served."""
    cache = ProfileCache(tmp_path / "profiles")
    directory = make_checkpoint(seed=4)
    first = load_profile(str(directory), cache=cache)
    weights = directory / "model.safetensors"
    stat = weights.stat()
    weights.write_bytes(b"\0" * stat.st_size)
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert fingerprint(directory) != first.revision
    with pytest.raises(CheckpointError, match="corrupt or not a safetensors file"):
        load_profile(str(directory), cache=cache)


def test_changed_weights_change_the_revision_and_miss(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    cache = ProfileCache(tmp_path / "profiles")
    directory = make_checkpoint(seed=5)
    before = load_profile(str(directory), cache=cache)
    old_entry = cache_entry(directory, cache)

    weights = directory / "model.safetensors"
    state = load_file(str(weights))
    state["encoder.layer.1.intermediate.dense.weight"] *= 3.0
    save_file(state, str(weights), metadata={"format": "pt"})
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a distinct mtime however fast
    assert fingerprint(directory) != before.revision

    after = load_profile(str(directory), cache=cache)
    assert after.revision == fingerprint(directory) != before.revision
    new_entry = cache_entry(directory, cache)
    assert new_entry != old_entry
    assert sorted(cache.directory.iterdir()) == sorted([old_entry, new_entry])
    m_in_1 = after.index(MatrixId(1, Kind.M_IN))
    # the weights are float32 on disk: tripling them rounds each entry by up to one float32 ulp
    np.testing.assert_allclose(after.singular_values[m_in_1], 3.0 * before.singular_values[m_in_1], rtol=1e-6)
    unchanged = np.ones(after.shape.num_matrices, dtype=bool)
    unchanged[m_in_1] = False
    np.testing.assert_array_equal(after.singular_values[unchanged], before.singular_values[unchanged])


def test_touching_the_weight_file_is_a_new_revision(make_checkpoint: MakeCheckpoint) -> None:
    directory = make_checkpoint()
    key = fingerprint(directory)
    weights = directory / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert fingerprint(directory) != key
    (directory / "config.json").write_text((directory / "config.json").read_text() + " ")
    assert len({key, fingerprint(directory)}) == 2


@pytest.mark.parametrize("garbage", [b"", b"not an npz file", b"PK\x03\x04" + b"\0" * 64])
def test_corrupt_entry_is_recomputed_and_replaced(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, garbage: bytes
) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    directory = make_checkpoint(seed=6)
    good = load_profile(str(directory), cache=cache)
    entry = cache_entry(directory, cache)
    entry.write_bytes(garbage)
    assert cache.load(good.model, good.revision) is None
    assert not entry.exists()  # dropped, not trusted

    entry.write_bytes(garbage)
    again = load_profile(str(directory), cache=cache)
    assert_same_profile(good, again)
    assert entry.stat().st_size > 1000
    assert_same_profile(good, cache.load(good.model, good.revision))


def test_entry_of_another_model_under_this_key_is_not_trusted(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    a = load_profile(str(make_checkpoint(seed=1, name="a")), cache=cache)
    b_dir = make_checkpoint(seed=2, name="b")
    b_entry = cache_entry(b_dir, cache)
    cache_entry(Path(a.model), cache).rename(b_entry)  # a's arrays stored where b's belong
    b = load_profile(str(b_dir), cache=cache)
    assert b.model == str(b_dir.resolve())
    assert not np.array_equal(a.singular_values, b.singular_values)
    assert_same_profile(b, cache.load(b.model, b.revision))


def test_round_trip_keeps_every_array_exactly(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    profile = load_profile(str(make_checkpoint("distilbert", layers=3)), use_cache=False)
    path = cache.save(profile)
    assert path.suffix == ".npz" and not list(cache.directory.glob("*.tmp"))
    loaded = cache.load(profile.model, profile.revision)
    assert_same_profile(profile, loaded)
    assert loaded is not None
    assert loaded.shape == ModelShape(3, 32, 4, 48, family="distilbert")
    assert cache.load(profile.model, "another-revision") is None
    assert cache.load("another-model", profile.revision) is None


def test_no_cache_neither_reads_nor_writes(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    load_profile(str(make_checkpoint()), cache=cache, use_cache=False)
    assert not cache.directory.exists()


def test_unwritable_cache_directory_only_costs_speed(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = ProfileCache(blocker / "profiles")  # cannot be created: its parent is a file
    profile = load_profile(str(make_checkpoint()), cache=cache)
    assert profile.shape.num_matrices == 20


def test_default_profile_cache_follows_specbound_cache(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECBOUND_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    assert ProfileCache().directory == tmp_path / "mine"
    load_profile(str(make_checkpoint()))
    assert len(list((tmp_path / "mine").glob("*.npz"))) == 1


def test_cache_directory_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECBOUND_CACHE", "~/profiles")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "home" / "profiles"  # the override wins, ~ expanded

    monkeypatch.delenv("SPECBOUND_CACHE")
    assert default_cache_dir() == tmp_path / "xdg" / "specbound"

    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "specbound"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "specbound"


def test_cache_keys_depend_on_model_and_revision(tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path)
    keys = {cache.path(m, r) for m in ("a", "b") for r in ("1", "2")}
    assert len(keys) == 4
    assert all(p.parent == tmp_path and p.suffix == ".npz" for p in keys)
    assert cache.path("a", "1") == ProfileCache(tmp_path).path("a", "1")


def test_an_entry_of_the_previous_schema_still_opens_as_a_bert_encoder(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 2 entries (written before other families were read) held the four sizes of a BERT:
    they are read as such, bit for bit, and never recomputed."""
    import json

    from specbound.io import cache as cache_module
    from specbound.io.files import atomic_write

    cache = ProfileCache(tmp_path / "profiles")
    profile = load_profile(str(make_checkpoint(layers=2)), use_cache=False)
    arrays = cache_module._stored_arrays(profile)
    meta: dict[str, Any] = {
        "schema": 2,
        "model": profile.model,
        "revision": profile.revision,
        "shape": {"num_layers": 2, "hidden_size": 32, "num_heads": 4, "ffn_size": 48},
        "sha256": cache_module._content_digest(arrays),
    }
    legacy = cache.path(profile.model, profile.revision, schema=2)
    legacy.parent.mkdir(parents=True)
    with atomic_write(legacy) as f:
        np.savez(f, allow_pickle=False, meta=np.array(json.dumps(meta)), **arrays)
    assert not cache.path(profile.model, profile.revision).exists()
    loaded = cache.load(profile.model, profile.revision)
    assert loaded is not None and loaded.shape == ModelShape(2, 32, 4, 48)
    assert_same_profile(profile, loaded)


def test_an_entry_of_schema_3_still_opens_with_its_block(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    """Version 3 entries (before experts) described the block without experts: a dense model's entry
    is read as it was written, bit for bit, and never recomputed."""
    import json

    from specbound.io import cache as cache_module
    from specbound.io.files import atomic_write

    cache = ProfileCache(tmp_path / "profiles")
    profile = load_profile(str(make_checkpoint(layers=2)), use_cache=False)
    arrays = cache_module._stored_arrays(profile)
    meta: dict[str, Any] = {
        "schema": 3,
        "model": profile.model,
        "revision": profile.revision,
        "shape": profile.shape.to_dict(),  # a dense shape writes no expert field, as version 3 did
        "sha256": cache_module._content_digest(arrays),
    }
    assert "num_experts" not in meta["shape"]
    earlier = cache.path(profile.model, profile.revision, schema=3)
    earlier.parent.mkdir(parents=True)
    with atomic_write(earlier) as f:
        np.savez(f, allow_pickle=False, meta=np.array(json.dumps(meta)), **arrays)
    assert cache_module.SCHEMA_VERSION == 5 and not cache.path(profile.model, profile.revision).exists()
    loaded = cache.load(profile.model, profile.revision)
    assert loaded is not None and loaded.shape == profile.shape
    assert_same_profile(profile, loaded)
