"""Checkpoints on disk and on the Hugging Face Hub: the only module that touches torch, safetensors
or huggingface_hub, each imported lazily so that a cached analysis never loads them.

What it does, in order of a user's request:

* ``fetch`` turns a :class:`~specbound.models.ModelRef` into a local directory, downloading from the
  Hub only ``config.json`` and one weight format (safetensors preferred) into the standard Hub cache,
  with progress reported through a callback. Offline (no network, or ``HF_HUB_OFFLINE=1``) it uses
  the cache or says clearly that the model is not there.
* ``open_checkpoint`` reads ``config.json`` of a BERT-family encoder and yields the six weight
  matrices of each layer as float64 arrays, one layer at a time, so a large model never sits in
  memory in float64 (embeddings are never converted).

Safety: no remote code is ever run; PyTorch pickles are loaded with ``weights_only=True``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import (CheckpointError, InvalidWeightsError, ModelNotFoundError, OfflineError,
                     UnsupportedModelError)
from .matrices import EncoderShape, LayerWeights
from .models import ModelRef
from .progress import ProgressCallback, ProgressEvent, silent

CONFIG_FILE = "config.json"
#: Weight files in order of preference: safetensors before pickles, single files before shards.
WEIGHT_FILES: tuple[str, ...] = (
    "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json",
)


@dataclass(frozen=True)
class LayerNaming:
    """Where a family keeps its per-layer weights: ``{root}.{i}.{name}``."""

    root: str
    query: str
    key: str
    value: str
    attn_out: str
    ffn_in: str
    ffn_out: str
    config_fields: tuple[str, str, str, str]  # layers, hidden size, heads, feed-forward size

    def tensor_names(self) -> dict[str, str]:
        return {f: getattr(self, f) for f in ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")}


BERT_NAMING = LayerNaming(
    root="encoder.layer", query="attention.self.query.weight", key="attention.self.key.weight",
    value="attention.self.value.weight", attn_out="attention.output.dense.weight",
    ffn_in="intermediate.dense.weight", ffn_out="output.dense.weight",
    config_fields=("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size"),
)
DISTILBERT_NAMING = LayerNaming(
    root="transformer.layer", query="attention.q_lin.weight", key="attention.k_lin.weight",
    value="attention.v_lin.weight", attn_out="attention.out_lin.weight",
    ffn_in="ffn.lin1.weight", ffn_out="ffn.lin2.weight",
    config_fields=("n_layers", "dim", "n_heads", "hidden_dim"),
)
#: model_type in config.json -> layer naming. MiniLM checkpoints declare "bert".
FAMILIES: dict[str, LayerNaming] = {
    "bert": BERT_NAMING, "roberta": BERT_NAMING, "xlm-roberta": BERT_NAMING, "camembert": BERT_NAMING,
    "electra": BERT_NAMING, "distilbert": DISTILBERT_NAMING,
}


# --- the Hub ------------------------------------------------------------------------------------

def _hub_file(repo_id: str, filename: str, revision: str | None, *, local_only: bool,
              progress: ProgressCallback) -> Path:
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(repo_id, filename, revision=revision, local_files_only=local_only,
                           tqdm_class=None if local_only else _forwarding_tqdm(progress, filename))
    return Path(path)


def _forwarding_tqdm(progress: ProgressCallback, filename: str) -> type:
    """A tqdm class that stays silent and forwards byte counts to ``progress``."""
    from tqdm.std import tqdm

    class ForwardingTqdm(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)
            progress(ProgressEvent("download", self.n, self.total, filename))

        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            progress(ProgressEvent("download", self.n, self.total, filename))
            return shown

    return ForwardingTqdm


def _cached_snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The cached snapshot directory holding config.json and one weight format, or None."""
    from huggingface_hub import try_to_load_from_cache

    config = try_to_load_from_cache(repo_id, CONFIG_FILE, revision=revision)
    if not isinstance(config, str):
        return None
    snapshot = Path(config).parent
    return snapshot if _find_weights(snapshot) is not None else None


def is_cached(repo_id: str, revision: str | None = None) -> bool:
    """Whether a Hub model can be opened with no network (config and weights in the Hub cache)."""
    return _cached_snapshot(repo_id, revision) is not None


def fetch(ref: ModelRef, progress: ProgressCallback = silent) -> Path:
    """The local directory holding the model's config and weights, downloading them if needed."""
    if ref.path is not None:
        return ref.path
    assert ref.repo_id is not None
    snapshot = _cached_snapshot(ref.repo_id, ref.revision)
    if snapshot is not None:
        return snapshot
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or offline_mode():
        raise OfflineError(_offline_message(ref, "offline mode is on (HF_HUB_OFFLINE)"))
    return _download(ref, progress)


def _download(ref: ModelRef, progress: ProgressCallback) -> Path:
    from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HfHubHTTPError,
                                        LocalEntryNotFoundError, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    repo = ref.repo_id
    assert repo is not None
    try:
        _check_reachable(ref)
        config = _hub_file(repo, CONFIG_FILE, ref.revision, local_only=False, progress=progress)
        for filename in WEIGHT_FILES:
            try:
                weights = _hub_file(repo, filename, ref.revision, local_only=False, progress=progress)
            except LocalEntryNotFoundError:
                raise
            except EntryNotFoundError:
                continue
            if filename.endswith(".index.json"):
                for shard in sorted(set(_read_index(weights).values())):
                    _hub_file(repo, shard, ref.revision, local_only=False, progress=progress)
            return config.parent
    except GatedRepoError:
        raise ModelNotFoundError(f"'{repo}' is a gated repository on the Hub: log in with "
                                 f"'hf auth login' after accepting its terms") from None
    except RepositoryNotFoundError:
        raise ModelNotFoundError(f"there is no model '{repo}' on the Hugging Face Hub "
                                 f"(or it is private)") from None
    except RevisionNotFoundError:
        raise ModelNotFoundError(f"'{repo}' has no revision '{ref.revision}' on the Hub") from None
    except LocalEntryNotFoundError as exc:  # a subclass of EntryNotFoundError: the network failed
        raise OfflineError(_offline_message(ref, f"the Hub cannot be reached ({type(exc).__name__})")) from None
    except EntryNotFoundError:
        raise CheckpointError(f"'{repo}' on the Hub has no {CONFIG_FILE}: not a transformers model") from None
    except (HfHubHTTPError, OSError) as exc:
        raise OfflineError(_offline_message(ref, f"the Hub cannot be reached ({type(exc).__name__})")) from None
    raise CheckpointError(f"'{repo}' on the Hub has neither safetensors nor PyTorch weights")


def _check_reachable(ref: ModelRef) -> None:
    """One request for the config's metadata, without retries, before any download.

    With no network, hf_hub_download retries with back-off for about 20 s and logs every retry on
    stderr; this probe fails at once instead. HTTP answers (no such repository, gated, ...) are
    left to the caller, which has a specific message for each.
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError

    assert ref.repo_id is not None
    try:
        get_hf_file_metadata(hf_hub_url(ref.repo_id, CONFIG_FILE, revision=ref.revision))
    except HfHubHTTPError:
        raise
    except Exception as exc:  # httpx transport errors: no DNS, refused, timed out
        raise OfflineError(_offline_message(ref, f"the Hub cannot be reached ({type(exc).__name__})")) from None


def _offline_message(ref: ModelRef, why: str) -> str:
    return (f"model '{ref.name}' is not in the local Hugging Face cache and {why}; connect to the "
            f"internet and retry to download it once, or pass a local checkpoint directory")


# --- files on disk ------------------------------------------------------------------------------

def _find_weights(directory: Path) -> Path | None:
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return directory / name
    return None


def _read_index(index_file: Path) -> dict[str, str]:
    """tensor name -> shard file name, from a ``*.index.json`` of a sharded checkpoint."""
    try:
        weight_map = json.loads(index_file.read_text())["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"cannot read the shard index {index_file.name}: {exc}") from None
    if not isinstance(weight_map, dict):
        raise CheckpointError(f"the shard index {index_file.name} has no weight_map")
    return weight_map


def weight_files(directory: Path) -> list[Path]:
    """The weight files the analysis reads (one format), for loading and for the cache fingerprint."""
    first = _find_weights(directory)
    if first is None:
        raise CheckpointError(f"no weights in {directory}: expected one of {', '.join(WEIGHT_FILES)}")
    if first.name.endswith(".index.json"):
        return [directory / shard for shard in sorted(set(_read_index(first).values()))]
    return [first]


def fingerprint(directory: Path) -> str:
    """Revision key of a checkpoint directory: names, sizes and mtimes of its config and weights.

    Hub snapshots link to content-addressed blobs, so the resolved name already carries the hash.
    """
    digest = hashlib.sha256()
    for path in [directory / CONFIG_FILE, *weight_files(directory)]:
        try:
            stat = path.stat()
        except OSError as exc:
            raise CheckpointError(f"cannot read {path.name} in {directory}: {exc.strerror}") from None
        digest.update(f"{path.name}:{path.resolve().name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def read_config(directory: Path) -> tuple[EncoderShape, LayerNaming]:
    """Shape and naming scheme of a BERT-family encoder, from its config.json."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{directory} has no {CONFIG_FILE}: not a Hugging Face checkpoint directory")
    try:
        config = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{CONFIG_FILE} in {directory} is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{CONFIG_FILE} in {directory} is not a JSON object")
    model_type = config.get("model_type")
    if model_type not in FAMILIES:
        raise UnsupportedModelError(
            f"model type '{model_type}' is not a BERT-family encoder "
            f"(supported: {', '.join(sorted(FAMILIES))})"
        )
    naming = FAMILIES[model_type]
    values = []
    for name in naming.config_fields:
        value = config.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CheckpointError(f"{CONFIG_FILE} in {directory} lacks a positive integer '{name}', "
                                  f"which the analysis needs")
        values.append(value)
    try:
        shape = EncoderShape(*values)
    except ValueError as exc:
        raise UnsupportedModelError(str(exc)) from None
    return shape, naming


class _TensorReader:
    """Reads named tensors as float64 arrays from safetensors files or weights-only PyTorch pickles."""

    def __init__(self, files: list[Path]) -> None:
        self._where: dict[str, Path] = {}
        self._state_dicts: dict[Path, dict[str, Any]] = {}
        for path in files:
            for name in self._keys(path):
                self._where[name] = path

    def names(self) -> list[str]:
        return list(self._where)

    def _keys(self, path: Path) -> list[str]:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            try:
                with safe_open(str(path), framework="np") as f:
                    return list(f.keys())
            except Exception as exc:  # safetensors raises its own error type for any malformed file
                raise CheckpointError(f"cannot read {path.name}: corrupt or not a safetensors file "
                                      f"({_first_line(exc)})") from None
        return list(self._state_dict(path))

    def _state_dict(self, path: Path) -> dict[str, Any]:
        if path not in self._state_dicts:
            import torch

            try:
                try:
                    state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
                except RuntimeError as exc:
                    if "mmap" not in str(exc):
                        raise
                    state = torch.load(path, map_location="cpu", weights_only=True)  # legacy format
            except Exception as exc:  # garbage makes the unpickler fail in many ways (IndexError, ...)
                raise CheckpointError(f"cannot read {path.name}: corrupt, or not a weights-only "
                                      f"PyTorch file ({_first_line(exc)})") from None
            if not isinstance(state, dict):
                raise CheckpointError(f"{path.name} does not hold a state dict")
            self._state_dicts[path] = state
        return self._state_dicts[path]

    def get(self, name: str) -> np.ndarray:
        path = self._where[name]
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            try:
                with safe_open(str(path), framework="np") as f:
                    array = f.get_tensor(name)
            except TypeError:  # bfloat16 and other dtypes numpy lacks: go through torch
                with safe_open(str(path), framework="pt") as f:
                    array = f.get_tensor(name).double().numpy()
            except Exception as exc:
                raise CheckpointError(f"cannot read tensor {name} from {path.name} ({_first_line(exc)})") from None
        else:
            array = self._state_dict(path)[name].double().numpy()
        return np.asarray(array, dtype=np.float64)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class Checkpoint:
    """An opened BERT-family checkpoint directory: its shape and, layer by layer, its weights."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.shape, self.naming = read_config(directory)
        self._reader = _TensorReader(weight_files(directory))
        self._prefix = self._find_prefix()

    def _find_prefix(self) -> str:
        """The model's key prefix ("", "bert.", "roberta.", ...), found from layer 0's query weight."""
        suffix = f"{self.naming.root}.0.{self.naming.query}"
        prefixes = [n[: -len(suffix)] for n in self._reader.names() if n.endswith(suffix)]
        if not prefixes:
            raise CheckpointError(f"no weight named '*{suffix}' in {self.directory.name}: the weights do "
                                  f"not match the {self.naming.root} layout that config.json declares")
        return min(prefixes, key=len)

    def layer(self, index: int) -> LayerWeights:
        """The six weights of one layer, float64, validated for shape and finiteness."""
        arrays = {}
        names = set(self._reader.names())
        for field_name, tensor in self.naming.tensor_names().items():
            key = f"{self._prefix}{self.naming.root}.{index}.{tensor}"
            if key not in names:
                raise CheckpointError(f"weight '{key}' is missing from the checkpoint "
                                      f"(config.json declares {self.shape.num_layers} layers)")
            arrays[field_name] = self._reader.get(key)
        weights = LayerWeights(**arrays)
        for field_name, expected in weights.expected_shapes(self.shape).items():
            array = getattr(weights, field_name)
            key = f"{self.naming.root}.{index}.{self.naming.tensor_names()[field_name]}"
            if array.shape != expected:
                raise UnsupportedModelError(f"weight '{key}' has shape {array.shape}, but config.json "
                                            f"implies {expected}")
            if not np.all(np.isfinite(array)):
                raise InvalidWeightsError(f"weight '{key}' contains NaN or infinite values")
        return weights

    def layers(self) -> Iterator[LayerWeights]:
        for index in range(self.shape.num_layers):
            yield self.layer(index)


def open_checkpoint(directory: Path | str) -> Checkpoint:
    directory = Path(directory)
    if not directory.is_dir():
        raise ModelNotFoundError(f"{directory} is not a directory")
    return Checkpoint(directory)


def offline_mode() -> bool:
    """Whether the Hugging Face libraries are told to stay offline (HF_HUB_OFFLINE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
