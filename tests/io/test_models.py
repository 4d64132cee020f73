"""Model names, the catalog, and models that live in the Hugging Face Hub cache.

A cached Hub model is made the way huggingface_hub lays one out (content-addressed blobs, a snapshot
directory of links per commit, ``refs/main`` naming the commit), from a real tiny checkpoint, so the
real huggingface_hub finds it in offline mode.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import numpy as np
import pytest
from tiny_models import MakeCheckpoint

from specbound import ModelShape, load_profile
from specbound.core.defaults import DEFAULT_MODEL
from specbound.core.errors import ModelNotFoundError
from specbound.io.checkpoints import is_cached
from specbound.io.models import (
    BUNDLED_REPO_ID,
    MINIATURE_LAYERS,
    MINIATURE_WIDTHS,
    OTHER_FAMILY_MODELS,
    Source,
    bundled_model_dir,
    catalog,
    miniature_repo_id,
    resolve,
)


def hub_cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


class PutInHub(Protocol):
    """The ``hub_entry`` fixture: a checkpoint directory's ``files`` put into the Hub cache as ``repo_id``
    at ``commit``; returns the snapshot folder."""

    def __call__(
        self,
        repo_id: str,
        source: Path,
        files: tuple[str, ...] = ("config.json", "model.safetensors"),
        commit: str = "0123456789abcdef0123456789abcdef01234567",
    ) -> Path: ...


@pytest.fixture
def hub_entry() -> Iterator[PutInHub]:
    """Put a checkpoint directory's files into the Hub cache as ``repo_id`` (removed afterwards)."""
    made: list[Path] = []

    def put(
        repo_id: str,
        source: Path,
        files: tuple[str, ...] = ("config.json", "model.safetensors"),
        commit: str = "0123456789abcdef0123456789abcdef01234567",
    ) -> Path:
        repo_dir = hub_cache_dir() / f"models--{repo_id.replace('/', '--')}"
        made.append(repo_dir)
        snapshot = repo_dir / "snapshots" / commit
        (repo_dir / "blobs").mkdir(parents=True, exist_ok=True)
        snapshot.mkdir(parents=True, exist_ok=True)
        for name in files:
            data = (source / name).read_bytes()
            blob = repo_dir / "blobs" / hashlib.sha256(data).hexdigest()
            blob.write_bytes(data)
            (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
        (repo_dir / "refs").mkdir(exist_ok=True)
        (repo_dir / "refs" / "main").write_text(commit)
        return snapshot

    yield put
    for repo_dir in made:
        shutil.rmtree(repo_dir, ignore_errors=True)


# --- names ---------------------------------------------------------------------------------------


def test_bundled_alias_resolves_to_the_installed_package() -> None:
    ref = resolve(" MiniLM-L6 ")
    assert (ref.name, ref.source, ref.repo_id) == (DEFAULT_MODEL, Source.BUNDLED, BUNDLED_REPO_ID)
    assert ref.path == bundled_model_dir()
    assert (ref.path / "config.json").is_file() and (ref.path / "model.safetensors").is_file()


@pytest.mark.parametrize(
    "name, alias, repo",
    [
        ("L4-H256", "L4-H256", "google/bert_uncased_L-4_H-256_A-4"),
        ("l12-h768", "L12-H768", "google/bert_uncased_L-12_H-768_A-12"),
        ("L2-H128", "L2-H128", "google/bert_uncased_L-2_H-128_A-2"),
    ],
)
def test_miniature_aliases(name: str, alias: str, repo: str) -> None:
    ref = resolve(name, revision="abc")
    assert (ref.name, ref.source, ref.repo_id, ref.path, ref.revision) == (alias, Source.HUB, repo, None, "abc")


def test_hub_id_and_local_directory(tmp_path: Path) -> None:
    ref = resolve("prajjwal1/bert-tiny")
    assert (ref.name, ref.source, ref.repo_id, ref.path) == (
        "prajjwal1/bert-tiny",
        Source.HUB,
        "prajjwal1/bert-tiny",
        None,
    )
    local = resolve(str(tmp_path))
    assert (local.name, local.source, local.path) == (str(tmp_path.resolve()), Source.LOCAL, tmp_path.resolve())


@pytest.mark.parametrize(
    "name, message",
    [
        ("", "no model given"),
        ("   ", "no model given"),
        (
            "L3-H128",
            "'L3-H128' is not a BERT Miniature: depth must be one of [2, 4, 6, 8, 10, 12] "
            "and width one of [128, 256, 512, 768]",
        ),
        ("L4-H1024", "'L4-H1024' is not a BERT Miniature"),
        (
            "not a model!",
            "'not a model!' is neither a local directory, a Hub repository id (owner/name), "
            "a miniature alias such as L4-H256, an atlas model (atlas:FILE#MODEL), nor 'minilm-l6'",
        ),
        ("a/b/c", "'a/b/c' is neither a local directory"),
        ("../x", "'../x' is neither a local directory"),
        ("owner/..", "'owner/..' is not a valid Hub repository id"),
    ],
)
def test_nonsense_names_are_rejected_with_a_specific_message(
    name: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "cwd"
    empty.mkdir()
    monkeypatch.chdir(empty)  # relative names such as ../x must not find a real directory
    with pytest.raises(ModelNotFoundError) as info:
        resolve(name)
    assert str(info.value).startswith(message)
    with pytest.raises(ModelNotFoundError):
        load_profile(name)


def test_a_file_is_not_a_checkpoint_directory(make_checkpoint: MakeCheckpoint) -> None:
    weights = make_checkpoint() / "model.safetensors"
    with pytest.raises(ModelNotFoundError, match="is a file; give the checkpoint directory that holds it"):
        resolve(str(weights))


# --- the catalog ---------------------------------------------------------------------------------


def test_catalog_lists_the_bundled_model_then_24_miniatures_then_other_families() -> None:
    entries = catalog(is_cached)
    assert len(entries) == 25 + len(OTHER_FAMILY_MODELS)
    others = entries[25:]
    assert [e.repo_id for e in others][:2] == ["openai-community/gpt2", "EleutherAI/pythia-70m"]
    assert {e.family for e in others} == {
        "gpt2", "gpt_neox", "opt", "qwen2", "vit", "gemma3_text", "qwen3", "olmo2", "bloom", "phi", "phi3", "olmoe",
        "t5", "bart",
    }  # fmt: skip
    from specbound.io.families import ADAPTERS

    assert {e.family for e in others} <= set(ADAPTERS)  # every catalog family is one the analysis reads
    assert not any(e.is_miniature for e in others) and all(e.is_miniature for e in entries[1:25])
    bundled = entries[0]
    assert (bundled.name, bundled.repo_id, bundled.num_layers, bundled.hidden_size, bundled.num_heads) == (
        "minilm-l6",
        BUNDLED_REPO_ID,
        6,
        384,
        12,
    )
    assert bundled.available_offline is True
    expected = [
        (f"L{l}-H{h}", miniature_repo_id(l, h), l, h, h // 64) for l in MINIATURE_LAYERS for h in MINIATURE_WIDTHS
    ]
    assert [(e.name, e.repo_id, e.num_layers, e.hidden_size, e.num_heads) for e in entries[1:25]] == expected
    assert entries[24].name == "L12-H768" and entries[24].num_heads == 12


# --- models in the Hub cache ---------------------------------------------------------------------


def test_cached_miniature_is_offline_in_the_catalog_and_loads_offline(
    make_checkpoint: MakeCheckpoint, hub_entry: PutInHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = "google/bert_uncased_L-2_H-128_A-2"
    source = make_checkpoint(layers=2, hidden=128, heads=2, ffn=512, seed=7)
    assert not is_cached(repo)
    assert not {e.name: e.available_offline for e in catalog(is_cached)}["L2-H128"]

    snapshot = hub_entry(repo, source)
    assert is_cached(repo)
    offline = {e.name: e.available_offline for e in catalog(is_cached)}
    assert offline["L2-H128"] is True and offline["minilm-l6"] is True
    assert offline["L2-H256"] is False and offline["L12-H768"] is False

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    profile = load_profile("L2-H128", use_cache=False)
    assert profile.model == "L2-H128"
    assert profile.shape == ModelShape(num_layers=2, hidden_size=128, num_heads=2, ffn_size=512)
    direct = load_profile(str(source), use_cache=False)
    np.testing.assert_array_equal(profile.singular_values, direct.singular_values)
    np.testing.assert_array_equal(profile.norm_11, direct.norm_11)
    # the Hub snapshot links into content-addressed blobs; the revision key sees through the link
    assert (snapshot / "model.safetensors").is_symlink()
    assert profile.revision != direct.revision

    result = subprocess.run(
        [sys.executable, "-m", "specbound.cli", "models"],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert result.returncode == 0 and result.stderr == ""
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:26]}
    assert rows["L2-H128"] == ["L2-H128", "2", "128", "2", "yes", repo]
    assert rows["L2-H256"][4] == "no"


def test_any_cached_hub_repository_loads_offline(
    make_checkpoint: MakeCheckpoint, hub_entry: PutInHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = make_checkpoint("roberta", layers=1, hidden=16, heads=2, ffn=24)
    hub_entry("someone/tiny-roberta", source)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    profile = load_profile("someone/tiny-roberta", use_cache=False)
    assert profile.model == "someone/tiny-roberta"
    assert profile.shape == ModelShape(1, 16, 2, 24, family="roberta")
    assert profile.rank.tolist() == [8] * 4 + [16, 16]


def test_cached_repository_needs_no_network_even_when_online_mode_is_on(
    make_checkpoint: MakeCheckpoint, hub_entry: PutInHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With HF_HUB_OFFLINE unset, a cached model is still opened from the cache without a request."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    hub_entry("someone/tiny-bert", make_checkpoint(layers=1))
    profile = load_profile("someone/tiny-bert", use_cache=False)
    assert profile.shape == ModelShape(1, 32, 4, 48)


def test_cache_entry_without_weights_is_not_cached(
    make_checkpoint: MakeCheckpoint, hub_entry: PutInHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specbound.core.errors import OfflineError

    hub_entry("someone/config-only", make_checkpoint(), files=("config.json",))
    assert not is_cached("someone/config-only")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match=r"^model 'someone/config-only' is not in the local Hugging Face cache"):
        load_profile("someone/config-only")


def test_cached_pytorch_format_repository(
    make_checkpoint: MakeCheckpoint, hub_entry: PutInHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Most miniatures ship pytorch_model.bin only; a cached one loads weights-only from the pickle."""
    source = make_checkpoint(layers=2, hidden=32, heads=4, safe=False)
    hub_entry("someone/bin-only", source, files=("config.json", "pytorch_model.bin"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert is_cached("someone/bin-only")
    profile = load_profile("someone/bin-only", use_cache=False)
    assert profile.rank.tolist() == ([8] * 8 + [32, 32]) * 2


def test_parse_miniature_alias() -> None:
    from specbound.io.models import parse_miniature_alias

    assert parse_miniature_alias("L4-H256") == (4, 256)
    assert parse_miniature_alias(" l12-h768 ") == (12, 768)
    assert parse_miniature_alias("L3-H100") == (3, 100)  # parsed; resolve() checks the grid
    assert parse_miniature_alias("google/bert") is None
