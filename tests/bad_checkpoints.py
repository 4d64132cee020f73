"""Real tiny checkpoints spoiled in every way SPEC §8 names, each with the error and words it must give.

Shared by the package tests (``test_checkpoints.py``) and the command-line tests (``test_cli.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from specbound.core.errors import CheckpointError, InvalidWeightsError, UnsupportedModelError

if TYPE_CHECKING:
    import torch


def edit_config(directory: Path, **changes: object) -> None:
    path = directory / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config))


def edit_weights(directory: Path, edit: Callable[[dict[str, torch.Tensor]], None]) -> None:
    """Rewrite model.safetensors after ``edit(state)`` changes the dict of torch tensors in place."""
    from safetensors.torch import load_file, save_file

    path = directory / "model.safetensors"
    state = load_file(str(path))
    edit(state)
    save_file(state, str(path), metadata={"format": "pt"})


def _missing_weights(d: Path) -> None:
    (d / "model.safetensors").unlink()


def _corrupt_safetensors(d: Path) -> None:
    (d / "model.safetensors").write_bytes(b"\x13\x00\x00\x00\x00\x00\x00\x00not a header at all" * 10)


def _truncated_safetensors(d: Path) -> None:
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])


def _corrupt_bin(d: Path) -> None:
    (d / "model.safetensors").unlink()
    (d / "pytorch_model.bin").write_bytes(b"this is not a pickle nor a zip archive\n" * 20)


def _no_config(d: Path) -> None:
    (d / "config.json").unlink()


def _config_not_json(d: Path) -> None:
    (d / "config.json").write_text('{"model_type": "bert", "hidden_size": 32,')


def _config_without_heads(d: Path) -> None:
    edit_config(d, num_attention_heads=None)


def _xlnet(d: Path) -> None:
    edit_config(d, model_type="xlnet")


def _heads_not_dividing(d: Path) -> None:
    edit_config(d, num_attention_heads=5)


def _nan_weight(d: Path) -> None:
    def edit(state: dict[str, torch.Tensor]) -> None:
        state["encoder.layer.1.attention.self.key.weight"][3, 4] = float("nan")

    edit_weights(d, edit)


def _inf_weight(d: Path) -> None:
    def edit(state: dict[str, torch.Tensor]) -> None:
        state["encoder.layer.0.output.dense.weight"][0, 0] = float("-inf")

    edit_weights(d, edit)


def _wrong_shape(d: Path) -> None:
    import torch

    def edit(state: dict[str, torch.Tensor]) -> None:
        state["encoder.layer.1.intermediate.dense.weight"] = torch.zeros(40, 32)

    edit_weights(d, edit)


def _layer_missing(d: Path) -> None:
    def edit(state: dict[str, torch.Tensor]) -> None:
        for name in [n for n in state if n.startswith("encoder.layer.1.")]:
            del state[name]

    edit_weights(d, edit)


def _not_a_bert_layout(d: Path) -> None:
    def edit(state: dict[str, torch.Tensor]) -> None:
        for name in [n for n in state if n.startswith("encoder.layer.")]:
            state[name.replace("encoder.layer.", "blocks.")] = state.pop(name)

    edit_weights(d, edit)


#: id -> (how to spoil a tiny BERT checkpoint, the error class, words its message must contain)
BAD_CHECKPOINTS = {
    "missing weights": (_missing_weights, CheckpointError, ["no weights in", "model.safetensors"]),
    "corrupt safetensors": (
        _corrupt_safetensors,
        CheckpointError,
        ["cannot read model.safetensors", "corrupt or not a safetensors file"],
    ),
    "truncated safetensors": (
        _truncated_safetensors,
        CheckpointError,
        ["model.safetensors", "corrupt or not a safetensors file"],
    ),
    "corrupt bin": (
        _corrupt_bin,
        CheckpointError,
        ["cannot read pytorch_model.bin", "not a weights-only PyTorch file"],
    ),
    "no config": (_no_config, CheckpointError, ["has no config.json", "not a Hugging Face checkpoint directory"]),
    "config not json": (_config_not_json, CheckpointError, ["config.json", "is not valid JSON"]),
    "no heads in config": (_config_without_heads, CheckpointError, ["lacks a positive integer 'num_attention_heads'"]),
    "xlnet": (
        _xlnet,
        UnsupportedModelError,
        ["model type 'xlnet' is not supported", "supported families:", "gpt2", "llama"],
    ),
    "heads not dividing N": (
        _heads_not_dividing,
        UnsupportedModelError,
        ["hidden size 32 is not divisible by 5 attention heads"],
    ),
    "nan weight": (
        _nan_weight,
        InvalidWeightsError,
        ["'encoder.layer.1.attention.self.key.weight'", "NaN or infinite"],
    ),
    "inf weight": (_inf_weight, InvalidWeightsError, ["'encoder.layer.0.output.dense.weight'", "NaN or infinite"]),
    "wrong shape": (
        _wrong_shape,
        UnsupportedModelError,
        ["'encoder.layer.1.intermediate.dense.weight' has shape (40, 32)", "implies (48, 32)"],
    ),
    "layer missing": (
        _layer_missing,
        CheckpointError,
        ["'encoder.layer.1.attention.self.query.weight' is missing", "config.json declares 2 layers"],
    ),
    "other layout": (_not_a_bert_layout, CheckpointError, ["no weight named", "encoder.layer"]),
}
