"""Class 5 (package side): weight files stay inside their checkpoint directory, outputs never create
parent directories, and error messages name files, not the server's absolute paths."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import assert_one_line_error, cli
from tiny_models import MakeCheckpoint

from specbound.core.errors import CheckpointError
from specbound.io.checkpoints import weight_files


def _index(directory: Path, shard: str) -> None:
    (directory / "model.safetensors").rename(directory / "real.safetensors")
    weight_map = {"encoder.layer.0.attention.self.query.weight": shard}
    (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


@pytest.mark.parametrize(
    "shard",
    [
        "../other/model.safetensors",
        "/etc/passwd",
        "sub/../../x.safetensors",
        "..",
        "a\\..\\..\\b",
        "./../real.safetensors",
        "~/model.safetensors",
    ],
)
def test_shard_names_leading_out_of_the_directory_are_refused(make_checkpoint: MakeCheckpoint, shard: str) -> None:
    directory = make_checkpoint()
    _index(directory, shard)
    if shard.startswith("~"):  # a literal '~' is a plain folder name inside the directory, never expanded
        assert weight_files(directory) == [directory / "~" / "model.safetensors"]
        assert_one_line_error(cli("analyze", str(directory)), "cannot read")
        return
    with pytest.raises(CheckpointError, match="outside the checkpoint directory"):
        weight_files(directory)
    assert_one_line_error(cli("analyze", str(directory)), "outside the checkpoint directory", "refused")


@pytest.mark.parametrize("link", ["shard", "single", "config"])
def test_links_escaping_the_directory_are_refused(make_checkpoint: MakeCheckpoint, tmp_path: Path, link: str) -> None:
    directory = make_checkpoint()
    outside = tmp_path / "outside"
    outside.mkdir()
    if link == "shard":
        (directory / "model.safetensors").rename(outside / "model-1.safetensors")
        (directory / "model-1.safetensors").symlink_to(outside / "model-1.safetensors")
        _index_only(directory, "model-1.safetensors")
    elif link == "single":
        (directory / "model.safetensors").rename(outside / "model.safetensors")
        (directory / "model.safetensors").symlink_to(outside / "model.safetensors")
    else:
        (directory / "config.json").rename(outside / "config.json")
        (directory / "config.json").symlink_to(outside / "config.json")
    assert_one_line_error(cli("analyze", str(directory), "--no-cache"), "outside the checkpoint directory")


def _index_only(directory: Path, shard: str) -> None:
    weight_map = {"encoder.layer.0.attention.self.query.weight": shard}
    (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def test_links_inside_the_directory_are_fine(make_checkpoint: MakeCheckpoint) -> None:
    directory = make_checkpoint()
    (directory / "weights").mkdir()
    (directory / "model.safetensors").rename(directory / "weights" / "model.safetensors")
    (directory / "model.safetensors").symlink_to(directory / "weights" / "model.safetensors")
    assert cli("analyze", str(directory), "--json").returncode == 0


# --- outputs create at most their last directory --------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["atlas", "export", "--models", "{ckpt}", "--out", "{tmp}/a/b/c.npz"],
        ["grid", "--models", "{ckpt}", "--out", "{tmp}/x/y/z"],
        ["grid", "--models", "{ckpt}", "--out", "{tmp}/study", "--atlas", "{tmp}/p/q/r.npz"],
        ["export", "{ckpt}", "--out", "{tmp}/e/f"],
    ],
    ids=["atlas export", "grid --out", "grid --atlas", "export --out"],
)
def test_outputs_never_create_parent_directories(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, command: list[str]
) -> None:
    checkpoint = make_checkpoint()
    work = tmp_path / "work"
    work.mkdir()
    argv = [a.format(ckpt=checkpoint, tmp=work) for a in command]
    assert_one_line_error(cli(*argv), "its parent is not an existing directory")
    assert sorted(p.name for p in work.iterdir()) == []  # nothing created, not even the study directory


def test_the_last_directory_is_created(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    out = tmp_path / "new-results"
    assert cli("export", str(make_checkpoint()), "--out", str(out)).returncode == 0
    assert (out / "summary.json").is_file()


# --- messages name files, not absolute paths --------------------------------------------------------


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: (d / "config.json").unlink(),
        lambda d: (d / "model.safetensors").unlink(),
        lambda d: (d / "model.safetensors").write_bytes(b"\x10" + b"\0" * 7 + b"garbage"),
        lambda d: (d / "config.json").write_text("{"),
        lambda d: (d / "config.json").write_text('{"model_type": "bert"}'),
    ],
    ids=["no config", "no weights", "corrupt weights", "bad json", "incomplete config"],
)
def test_errors_do_not_embed_the_absolute_directory(
    make_checkpoint: MakeCheckpoint, spoil: Callable[[Path], object]
) -> None:
    directory = make_checkpoint()
    spoil(directory)
    line = assert_one_line_error(cli("analyze", str(directory), "--no-cache"))
    assert str(directory.parent) not in line
