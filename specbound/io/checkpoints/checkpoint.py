"""Opened checkpoints: a directory's ``config.json`` and weight files, or a model held in memory,
read layer by layer as float64 arrays in canonical (out, in) form.

:func:`open_checkpoint` reads ``config.json``, finds the family's adapter (:mod:`specbound.io.families`)
and yields each layer's weights one layer at a time, so a large model never sits in memory in float64
(embeddings are never converted). Which tensors a layer has, their names and their shapes are the
adapter's; this module only reads them, through the readers of :mod:`.tensors`.

Safety: no remote code is ever run. Every size is checked before it costs anything (limits in
:mod:`specbound.core.limits`): config.json is read within its limit and validated before any weight is
opened, a tensor's dtype and shape come from the safetensors header (or the mmap'd pickle) before it is
converted, its values are checked before any SVD, and weight files (a shard index's included) must
lie inside their checkpoint directory. :func:`fingerprint` keys a directory's revision for the cache.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ...core.architecture import ModelShape
from ...core.errors import CheckpointError, InvalidWeightsError, ModelNotFoundError, UnsupportedModelError
from ...core.limits import LIMITS, check_encoder_shape
from ...core.matrices import LayerWeights
from ...core.text import quoted
from ..families import FamilyAdapter, adapter_of_config
from ..families.base import LayerLayout
from ..files import describe_os_error, open_regular, read_json, regular_size
from .tensors import ShardArrival, SlicedTensors, StateDictTensors, TensorSource, WeightFiles, widen

CONFIG_FILE = "config.json"
#: Weight files in order of preference: safetensors before pickles, single files before shards.
#: The file that makes a folder a peft adapter (its LoRA factors are read by :mod:`.lora`).
ADAPTER_CONFIG = "adapter_config.json"
WEIGHT_FILES: tuple[str, ...] = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


#: torch's (and numpy's) names of the floating-point storage types, by safetensors' name for them.
_STORAGE_NAMES: dict[str, str] = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16"}


def _inside(directory: Path, path: Path) -> bool:
    """Whether ``path``, links followed, stays inside the checkpoint directory.

    A Hub snapshot's files are links into the repository's content-addressed ``blobs`` folder,
    which is accepted as inside.
    """
    root, target = directory.resolve(), path.resolve()
    if target.is_relative_to(root):
        return True
    return root.parent.name == "snapshots" and target.is_relative_to(root.parent.parent / "blobs")


def _contained(directory: Path, name: Any, source: str) -> Path:
    """The file ``name`` of the checkpoint, refusing names and links that lead out of its directory."""
    if not isinstance(name, str) or not name or "\0" in name or len(name) > 255:
        raise CheckpointError(f"{source} names a weight file that is not a file name ({quoted(name)})")
    pure = PurePosixPath(name)
    path = directory / name
    if pure.is_absolute() or ".." in pure.parts or "\\" in name or not _inside(directory, path):
        raise CheckpointError(f"{source} names a file outside the checkpoint directory ({quoted(name)}): refused")
    _require_regular(path, f"{quoted(name)} in {directory.name}")
    return path


def _require_regular(path: Path, what: str) -> None:
    """A file that exists must be a regular one: a FIFO or a device would hang or never end a read.

    A missing file passes (its reader says it is missing); links are followed (containment is
    :func:`_inside`'s business).
    """
    try:
        regular_size(path, what)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CheckpointError(f"cannot read {what}: {describe_os_error(exc)}") from None


def _find_weights(directory: Path) -> Path | None:
    """The first weight file of :data:`WEIGHT_FILES` present; one that is present but not a regular
    file (a FIFO, a device, a directory) is refused rather than passed over."""
    for name in WEIGHT_FILES:
        path = directory / name
        if path.exists():
            _require_regular(path, f"{name} in {directory.name}")
            return path
    return None


def read_index(index_file: Path) -> dict[str, str]:
    """tensor name -> shard file name, from a ``*.index.json`` of a sharded checkpoint."""
    try:
        weight_map = read_json(index_file, f"the shard index {index_file.name}", LIMITS.max_index_bytes)["weight_map"]
    except OSError as exc:
        raise CheckpointError(f"cannot read the shard index {index_file.name}: {describe_os_error(exc)}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(
            f"cannot read the shard index {index_file.name}: {quoted(exc) or type(exc).__name__}"
        ) from None
    if not isinstance(weight_map, dict):
        raise CheckpointError(f"the shard index {index_file.name} has no weight_map")
    for tensor, shard in weight_map.items():
        if not isinstance(shard, str):
            raise CheckpointError(
                f"the shard index {index_file.name} gives tensor {quoted(tensor)} a shard "
                f"that is not a file name ({quoted(shard)})"
            )
    return weight_map


def weight_files(directory: Path) -> list[Path]:
    """The weight files the analysis reads (one format), for loading and for the cache fingerprint.

    Every file must lie inside the checkpoint directory (see :func:`_inside`).
    """
    first = _find_weights(directory)
    if first is None:
        if (directory / ADAPTER_CONFIG).is_file():  # an adapter folder that a config.json makes read as a model
            raise CheckpointError(
                f"no weights in {quoted(directory.name)}: it holds a peft adapter ({ADAPTER_CONFIG}) beside a "
                f"model's config.json, so it is read as a model and needs one of {', '.join(WEIGHT_FILES)}; to read "
                "it as an adapter, move the config.json out of the folder"
            )
        raise CheckpointError(f"no weights in {quoted(directory.name)}: expected one of {', '.join(WEIGHT_FILES)}")
    if first.name.endswith(".index.json"):
        shards = sorted(set(read_index(first).values()))
        return [_contained(directory, shard, f"the shard index {first.name}") for shard in shards]
    return [_contained(directory, first.name, "the checkpoint")]


#: Bytes hashed at each end of a weight file, and the evenly spaced blocks hashed in between: the
#: content part of the revision key. About 3 MiB per file, so a cache hit stays in milliseconds.
_SAMPLE_EDGE = 1 << 20
_SAMPLE_BLOCKS, _SAMPLE_BLOCK = 16, 64 << 10


def _content_sample(path: Path, size: int) -> bytes:
    """SHA-256 of a file's first and last MiB (and the whole safetensors header) and 16 blocks between.

    A small file is hashed whole. With the size, mtime and ctime in the key, this catches a file
    rewritten in place (same size, mtime restored) without reading a large checkpoint in full.
    """
    digest = hashlib.sha256()
    with open_regular(path, path.name) as f:  # a FIFO or a device would never end the sample
        head = _SAMPLE_EDGE
        if path.suffix == ".safetensors" and size >= 8:
            (header_len,) = struct.unpack("<Q", f.read(8))
            head = max(head, 8 + min(header_len, LIMITS.max_safetensors_header_bytes))
            f.seek(0)
        if size <= head + _SAMPLE_EDGE + _SAMPLE_BLOCKS * _SAMPLE_BLOCK:
            while chunk := f.read(_SAMPLE_EDGE):
                digest.update(chunk)
            return digest.digest()
        digest.update(f.read(head))
        span = size - head - _SAMPLE_EDGE - _SAMPLE_BLOCK
        for i in range(_SAMPLE_BLOCKS):
            f.seek(head + span * i // (_SAMPLE_BLOCKS - 1))
            digest.update(f.read(_SAMPLE_BLOCK))
        f.seek(size - _SAMPLE_EDGE)
        digest.update(f.read(_SAMPLE_EDGE))
    return digest.digest()


def fingerprint(directory: Path) -> str:
    """Revision key of a checkpoint directory: its config and weights' names, sizes, times and content.

    Hub snapshots link to content-addressed blobs, so the resolved name already carries the hash; for
    local files the change time and a content sample (:func:`_content_sample`) make a rewrite with
    the same size and a restored mtime (``cp -p``) a new revision.
    """
    return files_fingerprint(directory, [directory / CONFIG_FILE, *weight_files(directory)])


def files_fingerprint(directory: Path, paths: Iterable[Path]) -> str:
    """Revision key of some files of a directory (:func:`fingerprint`'s records of each)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(_file_record(directory, path))
    return digest.hexdigest()[:16]


def _file_record(directory: Path, path: Path) -> bytes:
    """One file's part of a revision key: its names, size, times and content sample (:func:`fingerprint`)."""
    try:
        regular_size(path, path.name)
        stat = path.stat()
        sample = _content_sample(path, stat.st_size)
    except OSError as exc:
        raise CheckpointError(f"cannot read {path.name} in {directory.name}: {describe_os_error(exc)}") from None
    return (
        f"{path.name}:{path.resolve().name}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:".encode()
        + sample
        + b"\n"
    )


def read_config_object(path: Path, where: str) -> dict[str, Any]:
    """A small JSON config file (config.json, a LoRA adapter's adapter_config.json) read within the
    config size limit, as a JSON object; CheckpointError in one line naming ``where`` otherwise."""
    try:
        config = read_json(path, where, LIMITS.max_config_bytes)
    except OSError as exc:
        raise CheckpointError(f"cannot read {where}: {describe_os_error(exc)}") from None
    except ValueError as exc:
        raise CheckpointError(f"{where} is not valid JSON ({quoted(exc, 120)})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{where} is not a JSON object")
    return config


def read_config(directory: Path) -> tuple[ModelShape, FamilyAdapter]:
    """Shape and family adapter of a checkpoint, from its config.json, within the limits."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{directory.name} has no {CONFIG_FILE}: not a Hugging Face checkpoint directory")
    _contained(directory, CONFIG_FILE, "the checkpoint")
    where = f"{CONFIG_FILE} in {directory.name}"
    config = read_config_object(path, where)
    adapter = adapter_of_config(config, where)
    shape = adapter.shape(config, where)
    check_encoder_shape(shape, where, stored_shapes(adapter, shape), adapter.mlp_tensor_roles(shape))
    return shape, adapter


def stored_shapes(adapter: FamilyAdapter, shape: ModelShape) -> dict[str, tuple[int, ...]]:
    """The stored shape of each of a layer's tensors by role, as the family adapter declares them."""
    return {role: spec.shape for role, spec in adapter.tensors(shape).items()}


class Checkpoint:
    """Opened weights: the model's shape, its family's adapter and, layer by layer, its weights.

    From a checkpoint directory (:meth:`from_directory`, :func:`open_checkpoint`) or from a model held
    in memory (:meth:`from_state_dict`); ``where`` names it in messages. A directory's layers can be
    streamed (:meth:`stream`): each shard is opened when a layer first needs it and, while the shards
    are still downloading (:func:`~specbound.io.checkpoints.hub.start_download`), only after it has arrived.
    """

    def __init__(
        self,
        shape: ModelShape,
        adapter: FamilyAdapter,
        reader: TensorSource,
        where: str,
        directory: Path | None = None,
        arrival: ShardArrival | None = None,
    ) -> None:
        self.shape, self.adapter, self.where = shape, adapter, where
        self.directory, self._arrival = directory, arrival
        self._reader = reader
        self._prefix, self._layout = self._find_layout()
        self._stacks = adapter.stack_layouts(shape)
        self._records: dict[Path, bytes] = {}
        self._last_layer = self._last_layer_of_shards()

    @classmethod
    def from_directory(cls, directory: Path, arrival: ShardArrival | None = None) -> Checkpoint:
        """A checkpoint directory; with a shard index its shards open lazily (after ``arrival``)."""
        shape, adapter = read_config(directory)
        index = _find_weights(directory)
        weight_map = None
        if index is not None and index.name.endswith(".index.json"):
            tensors = read_index(index)
            shards = {
                shard: _contained(directory, shard, f"the shard index {index.name}") for shard in set(tensors.values())
            }
            weight_map = {tensor: shards[shard] for tensor, shard in tensors.items()}
        files = WeightFiles(weight_files(directory), weight_map, arrival)
        slices = adapter.fused_slices(files.names(), shape)  # experts saved fused: read one by one
        reader: TensorSource = SlicedTensors(files, slices) if slices else files
        return cls(shape, adapter, reader, directory.name, directory, arrival)

    @classmethod
    def from_state_dict(cls, config: Mapping[str, Any], state: Mapping[str, Any], where: str) -> Checkpoint:
        """A model in memory: its config (as ``PretrainedConfig.to_dict()`` gives it) and its state dict,
        whose tensors stay where they are (any device) until a layer is read. A state dict that holds
        LoRA layers (a transformers model with an adapter attached, peft's ``LoraModel``, a
        ``PeftModel``'s state dict) is refused in one line that says what to give instead."""
        _refuse_lora_layers(state, where)
        adapter = adapter_of_config(config, where)
        shape = adapter.shape(config, where)
        check_encoder_shape(shape, where, stored_shapes(adapter, shape), adapter.mlp_tensor_roles(shape))
        return cls(shape, adapter, StateDictTensors(adapter.state_views(state, shape), where), where)

    @property
    def reader(self) -> TensorSource:
        """Where the tensors come from (a LoRA adapter lays its updates over a base's)."""
        return self._reader

    def _find_layout(self) -> tuple[str, LayerLayout]:
        """The key prefix (one of the adapter's: "", "bert.", "model.", ...) and layout, from layer 0's first tensor."""
        adapter = self.adapter
        names = set(self._reader.names())
        layouts = adapter.layouts(self.shape)
        for layout in layouts:
            suffix = f"{layout.root}.0.{next(iter(layout.tensors.values())).name}"
            prefixes = [prefix for prefix in adapter.prefixes if f"{prefix}{suffix}" in names]
            if prefixes:
                return min(prefixes, key=len), layout
        suffix = f"{layouts[0].root}.0.{next(iter(layouts[0].tensors.values())).name}"
        raise CheckpointError(
            f"no weight named '{suffix}' (bare or after {', '.join(repr(p) for p in adapter.prefixes if p)}) in "
            f"{self.where}: the weights do not match the {adapter.label} layout that config.json declares"
        )

    def layout_of(self, index: int) -> tuple[LayerLayout, int]:
        """The layout of layer ``index`` and the layer's number in its keys: the layer itself, or for an
        encoder-decoder its stack's layout and its number within the stack."""
        if self._stacks is None:
            return self._layout, index
        encoder, decoder = self._stacks
        return (decoder, self.shape.stack_layer(index)) if self.shape.has_cross(index) else (encoder, index)

    def roles(self, index: int) -> tuple[str, ...]:
        """The roles of layer ``index``'s tensors (a decoder layer of an encoder-decoder has more)."""
        return tuple(self.layout_of(index)[0].tensors)

    def _key(self, index: int, role: str) -> str:
        layout, number = self.layout_of(index)
        return f"{self._prefix}{layout.root}.{number}.{layout.tensors[role].name}"

    def shards(self, index: int) -> list[Path]:
        """The weight files holding layer ``index``'s tensors (none for a model in memory)."""
        if self.directory is None:
            return []
        names = set(self._reader.names())
        keys = [self._key(index, role) for role in self.roles(index)]
        return sorted({self._reader.shard_of(key) for key in keys if key in names})

    def _last_layer_of_shards(self) -> dict[Path, int]:
        last: dict[Path, int] = {}
        for index in range(self.shape.num_layers):
            for path in self.shards(index):
                last[path] = index
        return last

    def shard_order(self) -> list[Path]:
        """Every weight file in the order the layers need them (files holding no layer last)."""
        order: list[Path] = []
        for index in range(self.shape.num_layers):
            order += [path for path in self.shards(index) if path not in order]
        files = weight_files(self.directory) if self.directory is not None else []
        return order + [path for path in files if path not in order]

    def layer_revision(self, index: int) -> str | None:
        """Revision key of one layer: config.json and the files holding it (:func:`fingerprint`'s records);
        None for a model in memory, which has no files to key it by.

        A finished layer's spectra are cached under it, so they stay valid exactly as long as the
        files they were read from, and can be keyed before the other shards have downloaded.
        """
        if self.directory is None:
            return None
        digest = hashlib.sha256(f"layer {index}\n".encode())
        for path in [self.directory / CONFIG_FILE, *self.shards(index)]:
            if path not in self._records:
                if path.name != CONFIG_FILE and self._arrival is not None:
                    self._arrival.wait(path.name)
                self._records[path] = _file_record(self.directory, path)
            digest.update(self._records[path])
        return digest.hexdigest()[:16]

    def _checked(self, index: int, role: str) -> tuple[str, str]:
        """(key, label) of one layer's tensor, its presence, shape and dtype checked from its header."""
        layout, number = self.layout_of(index)
        spec = layout.tensors[role]
        key = f"{self._prefix}{layout.root}.{number}.{spec.name}"
        label = f"{layout.root}.{number}.{spec.name}"
        if key not in set(self._reader.names()):
            declared = (
                f"{self.shape.encoder_layers} encoder and {self.shape.decoder_layers} decoder layers"
                if self.shape.encoder_decoder
                else f"{self.shape.num_layers} layers"
            )
            raise CheckpointError(f"weight '{key}' is missing from the checkpoint (config.json declares {declared})")
        info = self._reader.info(key)
        if info.shape != spec.shape:
            raise UnsupportedModelError(
                f"weight '{label}' has shape {info.shape}, but config.json implies {spec.shape}"
            )
        if not info.is_float:
            raise UnsupportedModelError(f"weight '{label}' has dtype {quoted(info.dtype)}, not a floating-point type")
        return key, label

    def storage_dtype(self) -> str | None:
        """How the weights are stored, as safetensors names it ("F32", "BF16", ...), read from layer 0's
        first tensor's header; None for a type without such a name."""
        key, _ = self._checked(0, self.roles(0)[0])
        dtype = self._reader.info(key).dtype
        return _STORAGE_NAMES.get(dtype.removeprefix("torch."), dtype if dtype in _STORAGE_NAMES.values() else None)

    def read(self, index: int, roles: Iterable[str]) -> dict[str, np.ndarray]:
        """Some of one layer's tensors by role, float64, each checked for dtype and shape from its header
        before it is read, then for finiteness and magnitude before any SVD."""
        arrays = {}
        for role in roles:
            key, label = self._checked(index, role)
            array = self._reader.get(key)
            _check_values(array, label)
            arrays[role] = array
        return arrays

    def read_mapped(self, index: int, role: str) -> tuple[np.ndarray, str, str] | None:
        """One tensor's stored values as a read-only memory map (BF16 as its uint16 bits), with its
        safetensors dtype and label, checked as :meth:`read` checks; None where it cannot be mapped
        (a PyTorch pickle, a model in memory, a dtype numpy cannot view). Its values are checked
        block by block as they are widened (:class:`MappedMatrix`)."""
        key, label = self._checked(index, role)
        mapped = self._reader.mapped(key)
        return None if mapped is None else (mapped[0], mapped[1], label)

    def layer(self, index: int) -> LayerWeights:
        """One layer's weights in canonical (out, in) form, float64 (every tensor checked, see :meth:`read`)."""
        return self.adapter.to_weights(self.read(index, self.roles(index)), self.shape)

    def layers(self) -> Iterator[LayerWeights]:
        for index in range(self.shape.num_layers):
            yield self.layer(index)

    def stream(self) -> Iterator[StreamedLayer]:
        """Each layer as a :class:`StreamedLayer` that reads its tensors only when asked; a pickled
        shard is released once the last layer it holds has been handed on."""
        for index in range(self.shape.num_layers):
            yield StreamedLayer(self, index)
            self.finished(index)

    def finished(self, index: int) -> None:
        """Layer ``index`` is done: release every pickled shard no later layer reads."""
        for path, last in self._last_layer.items():
            if last <= index:
                self._reader.release(path)


class StreamedLayer:
    """One layer of a checkpoint, read part by part: the attention weights together, then each MLP
    weight alone, so that at most one feed-forward matrix is held in float64 at a time
    (:mod:`specbound.io.loading`). It has the reading methods of :class:`~specbound.core.matrices.LayerWeights`."""

    def __init__(self, checkpoint: Checkpoint, index: int) -> None:
        self.checkpoint, self.index = checkpoint, index

    @property
    def revision(self) -> str | None:
        """The layer's revision key (:meth:`Checkpoint.layer_revision`), None for a model in memory."""
        return self.checkpoint.layer_revision(self.index)

    def attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query, key, value, attn_out) in (out, in) form."""
        checkpoint = self.checkpoint
        adapter, shape = checkpoint.adapter, checkpoint.shape
        tensors = checkpoint.read(self.index, adapter.attention_roles(shape))
        return adapter.attention_weights(tensors, shape)

    def cross_attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The cross-attention's (query, key, value, attn_out) of a decoder layer of an encoder-decoder,
        None for any other layer."""
        checkpoint = self.checkpoint
        adapter, shape = checkpoint.adapter, checkpoint.shape
        if not shape.has_cross(self.index):
            return None
        tensors = checkpoint.read(self.index, adapter.cross_roles(shape))
        return adapter.cross_attention_weights(tensors, shape)

    def mlp_weight(self, field: str) -> np.ndarray:
        """One MLP weight ("gate", "ffn_in" or "ffn_out") in (out, in) form."""
        checkpoint = self.checkpoint
        adapter, shape = checkpoint.adapter, checkpoint.shape
        tensors = checkpoint.read(self.index, adapter.mlp_roles(field, shape))
        return adapter.mlp_weight(field, tensors, shape)

    def mlp_mapped(self, field: str) -> MappedMatrix | None:
        """One MLP weight's row-vector matrix (Wᵀ) read block by block from a memory map, or None
        where the weights cannot be mapped (then :meth:`mlp_weight` reads it whole)."""
        checkpoint = self.checkpoint
        adapter, shape = checkpoint.adapter, checkpoint.shape
        roles = adapter.mlp_roles(field, shape)
        if len(roles) != 1:
            return None
        found = checkpoint.read_mapped(self.index, roles[0])
        if found is None:
            return None
        stored, dtype, label = found
        weight = adapter.mlp_weight(field, {roles[0]: stored}, shape)  # a view: every adapter's is
        return MappedMatrix(weight.T, dtype, label)


@dataclass(frozen=True, eq=False)
class MappedMatrix:
    """A proxy matrix M (n x m) as a view of a memory-mapped tensor, widened to float64 block by block
    along its longer side (:func:`specbound.core.spectrum.gram_by_blocks`), each block checked for
    finiteness and magnitude as it comes."""

    stored: np.ndarray  # (n, m) view of the stored values (BF16 as uint16 bits)
    dtype: str  # the safetensors dtype
    label: str

    @property
    def shape(self) -> tuple[int, int]:
        n, m = self.stored.shape
        return n, m

    def blocks(self, max_bytes: int) -> Iterator[np.ndarray]:
        n, m = self.shape
        columns = n <= m
        width = max(1, max_bytes // (8 * min(n, m)))
        for start in range(0, max(n, m), width):
            part = self.stored[:, start : start + width] if columns else self.stored[start : start + width, :]
            block = widen(part, self.dtype)
            _check_values(block, self.label)
            yield block


#: The name parts of the tensors peft's LoRA layers add to a model (``q_proj.base_layer.weight``,
#: ``q_proj.lora_A.default.weight``, ...); no family's own tensor is named so.
LORA_LAYER_PARTS = frozenset({"base_layer", "lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B"})


def _refuse_lora_layers(state: Mapping[str, Any], where: str) -> None:
    """One line, where a state dict is first read, when it holds LoRA layers: their base weights sit
    under ``base_layer`` beside factors no family reads, so the family's layout would not match, and
    merging them is what a ``PeftModel`` (or an adapter's folder) is read for.

    Example::

        >>> _refuse_lora_layers({"h.0.attn.c_attn.base_layer.weight": None}, "the model m")
        Traceback (most recent call last):
        ...
        specbound.core.errors.UnsupportedModelError: the model m holds LoRA layers ('h.0.attn.c_attn.base_layer...): ...
    """
    for key in state:
        if isinstance(key, str) and not LORA_LAYER_PARTS.isdisjoint(key.split(".")):
            tail = key if len(key) <= LIMITS.max_quoted_chars else "..." + key[3 - LIMITS.max_quoted_chars :]
            raise UnsupportedModelError(  # the key's end names the LoRA part: shortened at its start
                f"{where} holds LoRA layers ('{quoted(tail)}'): give specbound.analyze the PeftModel itself, or its "
                "merge_and_unload(), or save the adapter (save_pretrained) and give its folder"
            )


def _check_values(array: np.ndarray, label: str) -> None:
    """NaN, infinite and too large weights are refused before any SVD sees them.

    The cap (:func:`specbound.core.limits.derived_max_abs_weight`) is what the float64 arithmetic of the
    norms carries for the largest admissible shapes, so every weight under it analyses.
    """
    peak = max(float(array.max()), -float(array.min())) if array.size else 0.0
    if not np.isfinite(peak):
        raise InvalidWeightsError(f"weight '{label}' contains NaN or infinite values")
    if peak > LIMITS.max_abs_weight:
        raise InvalidWeightsError(
            f"weight '{label}' has entries of magnitude {peak:.3g}: too large to analyse "
            f"(at most {LIMITS.max_abs_weight:.0e})"
        )


def open_checkpoint(directory: Path | str) -> Checkpoint:
    directory = Path(directory)
    if not directory.is_dir():
        raise ModelNotFoundError(f"{directory} is not a directory")
    return Checkpoint.from_directory(directory)
