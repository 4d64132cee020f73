"""Tensor readers: what a weight file declares about each tensor before any of its bytes are read,
then the tensor itself as a float64 array. One reader per format, each behind :class:`TensorSource`:

* :class:`SafetensorsFile`: dtypes, shapes and data offsets from the header alone
  (:func:`safetensors_header`, checked against the file's size); BF16 widened exactly without torch;
  float tensors memory-mapped as stored for block-wise reading;
* :class:`PickleFile`: a PyTorch pickle, loaded with ``weights_only=True`` (never running the file's
  code) and memory-mapped where torch can;
* :class:`StateDictTensors`: a model held in memory, on any device, converted one tensor at a time.

:class:`WeightFiles` puts a checkpoint's files (one file, or the shards of an index, opened lazily
as a download delivers them) behind the same protocol. torch and safetensors are imported only
when a tensor needs them.
"""

from __future__ import annotations

import math
import struct
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ...core.errors import CheckpointError
from ...core.limits import LIMITS, LimitExceededError
from ...core.text import quoted
from ...core.values import is_genuine_int
from ..families.base import TensorSlice
from ..files import describe_os_error, parse_json, regular_size

#: safetensors dtype -> bytes per element (the format's full list, to check the data offsets)
_SAFETENSORS_ITEMSIZE = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E5M2": 1,
    "F8_E4M3": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}
#: dtypes a weight matrix may have
_FLOAT_DTYPES = frozenset({"F16", "BF16", "F32", "F64", "float16", "bfloat16", "float32", "float64"})


@dataclass(frozen=True)
class TensorInfo:
    """What a file declares about a tensor before any of its bytes are read."""

    dtype: str
    shape: tuple[int, ...]
    #: where a safetensors tensor's bytes start in its file (-1 when not known: a pickle)
    offset: int = -1

    @property
    def is_float(self) -> bool:
        return self.dtype.removeprefix("torch.") in _FLOAT_DTYPES


def safetensors_header(path: Path) -> dict[str, TensorInfo]:
    """The tensors a safetensors file declares, from its header alone (8-byte length, then JSON).

    The header length is capped, and every entry's dtype, shape and data offsets are checked against
    the file's size, so a lying header is refused before safetensors maps any tensor.
    """

    def corrupt(problem: str) -> CheckpointError:
        return CheckpointError(f"cannot read {path.name}: corrupt or not a safetensors file ({problem})")

    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise corrupt("shorter than its 8-byte header length")
            (header_len,) = struct.unpack("<Q", head)
            if header_len > LIMITS.max_safetensors_header_bytes:
                raise LimitExceededError(
                    f"{path.name} declares a header of {header_len} bytes, above the limit of "
                    f"{LIMITS.max_safetensors_header_bytes}"
                )
            if 8 + header_len > size:
                raise corrupt("header longer than the file")
            raw = f.read(header_len)
    except OSError as exc:
        raise CheckpointError(f"cannot read {path.name}: {describe_os_error(exc)}") from None
    try:
        header = parse_json(raw, "header", LIMITS.max_safetensors_header_bytes)
    except ValueError as exc:
        raise corrupt(quoted(exc)) from None
    if not isinstance(header, dict):
        raise corrupt("header is not a JSON object")
    data_size = size - 8 - header_len
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
            if not (
                isinstance(dtype, str)
                and isinstance(shape, list)
                and all(is_genuine_int(v) and v >= 0 for v in (*shape, begin, end))
            ):
                raise TypeError
        except (KeyError, TypeError, ValueError):
            raise corrupt(f"malformed entry for tensor {quoted(name)}") from None
        itemsize = _SAFETENSORS_ITEMSIZE.get(dtype)
        if itemsize is None or not begin <= end <= data_size or end - begin != itemsize * math.prod(shape):
            raise corrupt(f"tensor {quoted(name)} does not fit the file")
        tensors[name] = TensorInfo(dtype, tuple(shape), 8 + header_len + begin)
    return tensors


class TensorSource(Protocol):
    """Named tensors: what a file declares about each before it is read, then its values as float64."""

    def names(self) -> list[str]: ...

    def info(self, name: str) -> TensorInfo: ...

    def get(self, name: str) -> np.ndarray: ...

    def shard_of(self, name: str) -> Path: ...

    def release(self, path: Path) -> None: ...

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None: ...


class ShardArrival(Protocol):
    """Tells when a weight file that is still downloading is on disk
    (:class:`~specbound.io.checkpoints.hub.ShardDownloads`)."""

    def wait(self, filename: str) -> None: ...


class SafetensorsFile:
    """The tensors of one safetensors file: their dtypes, shapes and offsets from its header (read and
    checked when the file is opened), their values read one tensor at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._header = safetensors_header(path)

    def names(self) -> list[str]:
        return list(self._header)

    def __contains__(self, name: object) -> bool:
        return name in self._header

    def info(self, name: str) -> TensorInfo:
        return self._header[name]

    def shard_of(self, name: str) -> Path:
        return self.path

    def release(self, path: Path) -> None:
        """Nothing is held: each tensor is read from the file when asked for."""

    @property
    def in_memory(self) -> bool:
        return False

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None:
        """A tensor's stored values as a read-only memory map and their dtype, or None (a dtype
        without a numpy view)."""
        info = self._header[name]
        dtype = _MAPPED_DTYPES.get(info.dtype)
        if dtype is None:
            return None
        try:
            return np.memmap(self.path, dtype=dtype, mode="r", offset=info.offset, shape=info.shape), info.dtype
        except (OSError, ValueError) as exc:
            raise CheckpointError(
                f"cannot map tensor {quoted(name)} of {self.path.name} ({_first_line(exc)})"
            ) from None

    def get(self, name: str) -> np.ndarray:
        from safetensors import safe_open

        path, info = self.path, self._header[name]
        try:
            if info.dtype == "BF16":  # numpy has no bfloat16: widened here, exactly, without torch
                return _read_bfloat16(path, info)
            with safe_open(str(path), framework="np") as f:
                array = f.get_tensor(name)
        except OSError as exc:
            raise CheckpointError(
                f"cannot read tensor {quoted(name)} from {path.name}: {describe_os_error(exc)}"
            ) from None
        except TypeError:  # other dtypes numpy lacks: go through torch
            with safe_open(str(path), framework="pt") as f:
                array = f.get_tensor(name).double().numpy()
        except Exception as exc:
            raise CheckpointError(f"cannot read tensor {quoted(name)} from {path.name} ({_first_line(exc)})") from None
        return np.asarray(array, dtype=np.float64)


class PickleFile:
    """The tensors of one weights-only PyTorch pickle (:func:`_load_pickle`), loaded when the file is
    opened; :meth:`release` lets them go (its memory map or, for the legacy format, its data) and a
    later read loads the file again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._state: dict[str, Any] | None = _load_pickle(path)

    def _loaded(self) -> dict[str, Any]:
        if self._state is None:
            self._state = _load_pickle(self.path)
        return self._state

    def names(self) -> list[str]:
        return list(self._loaded())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def info(self, name: str) -> TensorInfo:
        tensor = self._loaded()[name]
        try:
            return TensorInfo(str(tensor.dtype), tuple(int(n) for n in tensor.shape))
        except Exception:  # not a tensor, or one without a plain shape (a nested tensor): refused by shape
            return TensorInfo(type(tensor).__name__, ())

    def get(self, name: str) -> np.ndarray:
        return np.asarray(_dense_float64(self._loaded()[name], name, self.path.name), dtype=np.float64)

    def shard_of(self, name: str) -> Path:
        return self.path

    def release(self, path: Path) -> None:
        self._state = None

    @property
    def in_memory(self) -> bool:
        """Whether the file's tensors are loaded now (mapped or, for the legacy format, read)."""
        return self._state is not None

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None:
        return None  # a pickle's storage is torch's: read whole, one tensor at a time


class StateDictTensors:
    """The tensors of a model in memory (a state dict), converted to float64 on the CPU one at a time.

    Nothing is copied before :meth:`get`: a model on a GPU stays there, and the embeddings, which the
    analysis never reads, are never converted.
    """

    def __init__(self, state: Mapping[str, Any], where: str = "the model") -> None:
        self._state, self.where = state, where

    def names(self) -> list[str]:
        return [name for name in self._state if isinstance(name, str)]

    def info(self, name: str) -> TensorInfo:
        tensor = self._state[name]
        if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
            return TensorInfo(type(tensor).__name__, ())
        return TensorInfo(str(tensor.dtype), tuple(int(n) for n in tensor.shape))

    def get(self, name: str) -> np.ndarray:
        tensor = self._state[name]
        if hasattr(tensor, "detach"):  # a torch tensor or parameter, on any device: a float64 copy on the CPU
            return _dense_float64(tensor, name, self.where, copy=True)
        return np.array(tensor, dtype=np.float64)

    def shard_of(self, name: str) -> Path:
        raise KeyError(f"{name} is held in memory, in no file")

    def release(self, path: Path) -> None:
        """Nothing to let go: the model's own tensors stay the caller's."""

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None:
        return None  # read whole, one tensor at a time (the caller's memory holds it anyway)


def open_weight_file(path: Path) -> SafetensorsFile | PickleFile:
    """The reader of one weight file, chosen by its format (safetensors, else a PyTorch pickle)."""
    return SafetensorsFile(path) if path.suffix == ".safetensors" else PickleFile(path)


class WeightFiles:
    """The tensors of a checkpoint's weight files, each read by its own file's reader.

    :meth:`info` tells a tensor's dtype and shape without reading its data, so the caller checks them
    before :meth:`get` converts anything.
    """

    def __init__(
        self, files: list[Path], weight_map: dict[str, Path] | None = None, arrival: ShardArrival | None = None
    ) -> None:
        """``weight_map`` (a shard index's, tensor name -> shard) makes the shards open lazily, each the
        first time one of its tensors is asked for, after ``arrival`` says it is on disk (a download
        in progress); without it every file is opened now and its tensor names read."""
        self._where: dict[str, Path] = {}
        self._files: dict[Path, SafetensorsFile | PickleFile] = {}
        self._arrival = arrival
        if weight_map is not None:
            self._where = dict(weight_map)
            return
        for path in files:
            self._files[path] = open_weight_file(path)
            for name in self._files[path].names():
                self._where[name] = path

    def names(self) -> list[str]:
        return list(self._where)

    def shard_of(self, name: str) -> Path:
        return self._where[name]

    def _opened(self, path: Path) -> SafetensorsFile | PickleFile:
        """A shard's reader, opened once, after waiting for it if it is still downloading."""
        file = self._files.get(path)
        if file is None:
            if self._arrival is not None:
                self._arrival.wait(path.name)
            file = self._files[path] = open_weight_file(path)
        return file

    def info(self, name: str) -> TensorInfo:
        path = self._where[name]
        file = self._opened(path)
        if name not in file:
            raise CheckpointError(f"the shard index puts tensor {quoted(name)} in {path.name}, which does not hold it")
        return file.info(name)

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None:
        """A tensor's stored values as a read-only memory map and their dtype, or None (a pickle, or a
        dtype without a numpy view). Call :meth:`info` first (it checks the shard holds the tensor)."""
        return self._opened(self._where[name]).mapped(name)

    def get(self, name: str) -> np.ndarray:
        return self._opened(self._where[name]).get(name)

    def release(self, path: Path) -> None:
        """Drop a pickled shard's tensors (a safetensors file holds none)."""
        file = self._files.get(path)
        if file is not None:
            file.release(path)

    def held(self) -> list[Path]:
        """The weight files whose tensors are in memory now (loaded pickles not yet released)."""
        return [path for path, file in self._files.items() if file.in_memory]


class SlicedTensors:
    """A :class:`TensorSource` in which some matrices stored fused inside a larger tensor also go by
    keys of their own (:meth:`~specbound.io.families.base.FamilyAdapter.fused_slices`: the experts of a
    mixture of experts saved fused on disk), so the reading code reads each as any other tensor.

    The fused tensor's shape is checked against the config's before anything is read. From a memory
    map (safetensors) a slice is widened alone, so a layer is still read expert by expert; where the
    file cannot be mapped (a PyTorch pickle) the fused tensor is converted once and kept until the next
    fused tensor or the release of its file.
    """

    def __init__(self, source: TensorSource, slices: Mapping[str, TensorSlice]) -> None:
        self._source = source
        present = set(source.names())
        self._slices = {key: piece for key, piece in slices.items() if key not in present}
        self._whole: tuple[str, np.ndarray] | None = None

    def names(self) -> list[str]:
        return [*self._source.names(), *self._slices]

    def info(self, name: str) -> TensorInfo:
        piece = self._slices.get(name)
        if piece is None:
            return self._source.info(name)
        whole = self._source.info(piece.source)
        piece.check(whole.shape)
        return TensorInfo(whole.dtype, piece.shape)

    def get(self, name: str) -> np.ndarray:
        piece = self._slices.get(name)
        if piece is None:
            return self._source.get(name)
        mapped = self._source.mapped(piece.source)
        if mapped is not None:
            return widen(np.asarray(piece.take(mapped[0])), mapped[1])  # (rows, columns), a float64 copy
        if self._whole is None or self._whole[0] != piece.source:
            self._whole = None  # let the previous fused tensor go before the next is converted
            self._whole = (piece.source, self._source.get(piece.source))
        return np.array(piece.take(self._whole[1]), dtype=np.float64)

    def shard_of(self, name: str) -> Path:
        piece = self._slices.get(name)
        return self._source.shard_of(name if piece is None else piece.source)

    def release(self, path: Path) -> None:
        self._whole = None
        self._source.release(path)

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None:
        piece = self._slices.get(name)
        if piece is None:
            return self._source.mapped(name)
        mapped = self._source.mapped(piece.source)
        return None if mapped is None else (piece.take(mapped[0]), mapped[1])


def _dense_float64(tensor: Any, name: str, where: str, *, copy: bool = False) -> np.ndarray:
    """A pickled tensor of any kind as a dense float64 array, or one CheckpointError line.

    A state dict may hold ``nn.Parameter`` objects (they require grad: detached here), sparse tensors
    in any of torch's layouts (made dense: their shape was checked before, so the dense array has
    the size of a weight of the declared shape), conjugate or negative views (resolved), and kinds
    that carry no values a weight can have (meta tensors, quantized or other layouts): those are
    refused by name. torch's warnings (sparse support in beta, ...) never reach the user.
    """
    import torch

    what = f"tensor {quoted(name)} in {where}"
    if not isinstance(tensor, torch.Tensor):
        raise CheckpointError(f"{what} is a {quoted(type(tensor).__name__)}, not a tensor")
    sparse = {torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = tensor.detach()
            if value.layout in sparse:
                value = value.to_dense()
            elif value.layout != torch.strided:
                raise CheckpointError(f"{what} has the layout {quoted(value.layout)}, which holds no plain matrix")
            if value.is_meta:
                raise CheckpointError(f"{what} is a meta tensor: it holds a shape but no values")
            if value.is_quantized or value.is_complex():
                raise CheckpointError(f"{what} has dtype {quoted(value.dtype)}, not a floating-point type")
            value = value.resolve_conj().resolve_neg()
            return value.to(device="cpu", dtype=torch.float64, copy=copy).numpy()  # copy: never a model's memory
    except CheckpointError:
        raise
    except Exception as exc:  # whatever else a tensor kind can do on conversion: one line, never a traceback
        raise CheckpointError(f"cannot convert {what} to float64 ({_first_line(exc)})") from None


#: numpy views of the safetensors float dtypes a memory map can hold as stored (BF16 as its bits)
_MAPPED_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def widen(stored: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values (a block of a memory map) as float64: BF16 bits shifted into float32, exactly."""
    if dtype == "BF16":
        return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return stored.astype(np.float64)


#: bfloat16 values widened per block, so the float64 result is the only full-size array
_BF16_BLOCK_VALUES = 1 << 22


def _read_bfloat16(path: Path, info: TensorInfo) -> np.ndarray:
    """A BF16 tensor of a safetensors file as float64, read block by block from its offset.

    bfloat16 is the top half of a float32 (sign, 8 exponent bits, 7 mantissa bits), so shifting its
    16 bits left into a uint32 gives that float32 exactly, and float32 -> float64 is exact: the same
    values torch's ``.double()`` gives, without importing torch (about 240 MB of memory) or holding
    the bf16 copy and its memory map beside the result.
    """
    count = math.prod(info.shape)
    out = np.empty(count, dtype=np.float64)
    with open(path, "rb") as f:
        f.seek(info.offset)
        for start in range(0, count, _BF16_BLOCK_VALUES):
            n = min(_BF16_BLOCK_VALUES, count - start)
            raw = np.fromfile(f, dtype="<u2", count=n)
            if raw.size != n:
                raise CheckpointError(f"cannot read {path.name}: the file ends inside a tensor")
            out[start : start + n] = (raw.astype(np.uint32) << 16).view(np.float32)
    return out.reshape(info.shape)


def _load_pickle(path: Path) -> dict[str, Any]:
    """A weights-only, memory-mapped state dict; torch's warnings and advice never reach the user.

    torch's own message for a pickle holding other objects suggests ``weights_only=False``, which
    would run the file's code: this tool never gives that advice, so the error is its own line.
    """
    import pickle

    import torch

    try:
        regular_size(path, path.name)  # torch would block on a FIFO or read a device without end
    except OSError as exc:
        raise CheckpointError(f"cannot read {path.name}: {describe_os_error(exc)}") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            except RuntimeError as exc:
                if "mmap" not in str(exc):
                    raise
                state = torch.load(path, map_location="cpu", weights_only=True)  # legacy format
    except pickle.UnpicklingError as exc:
        if "weights_only" in str(exc) or "Weights only" in str(exc):
            raise CheckpointError(
                f"cannot read {path.name}: it holds objects other than tensors, which are "
                f"never loaded (use a safetensors version of the model)"
            ) from None
        raise CheckpointError(
            f"cannot read {path.name}: corrupt, or not a weights-only PyTorch file ({_first_line(exc)})"
        ) from None
    except Exception as exc:  # garbage makes the unpickler fail in many ways (IndexError, ...)
        raise CheckpointError(
            f"cannot read {path.name}: corrupt, or not a weights-only PyTorch file ({_first_line(exc)})"
        ) from None
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise CheckpointError(f"{path.name} does not hold a state dict")
    return state


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return quoted(text[0], 160) if text else type(exc).__name__
