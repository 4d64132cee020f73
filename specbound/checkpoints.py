"""Checkpoints on disk and on the Hugging Face Hub: the only module that touches torch, safetensors
or huggingface_hub, each imported lazily so that a cached analysis never loads them.

What it does, in order of a user's request:

* ``fetch`` turns a :class:`~specbound.models.ModelRef` into a local directory, downloading from the
  Hub only ``config.json`` and one weight format (safetensors preferred) into the standard Hub cache,
  with progress reported through a callback. Offline (no network, or ``HF_HUB_OFFLINE=1``) it uses
  the cache or says clearly that the model is not there.
* ``open_checkpoint`` reads ``config.json``, finds the family's adapter (:mod:`specbound.families`)
  and yields each layer's weights as float64 arrays in canonical (out, in) form, one layer at a time,
  so a large model never sits in memory in float64 (embeddings are never converted). Which tensors
  a layer has, their names and their shapes are the adapter's; this module only reads them.

Safety: no remote code is ever run; PyTorch pickles are loaded with ``weights_only=True``. Every
size is checked before it costs anything (limits in :mod:`specbound.limits`): config.json is read and
validated before any weight file is fetched, the download's total size comes from the Hub's metadata
and is refused above the cap, a tensor's dtype and shape come from the safetensors header (or the
mmap'd pickle) before it is converted, and weight files must lie inside their checkpoint directory.
"""

from __future__ import annotations

import errno
import hashlib
import io
import math
import os
import queue
import struct
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

import numpy as np

from .architecture import ModelShape
from .errors import CheckpointError, InvalidWeightsError, ModelNotFoundError, OfflineError, UnsupportedModelError
from .families import FamilyAdapter, adapter_of_config
from .families.base import LayerLayout
from .files import describe_os_error, open_regular, parse_json, read_json, regular_size
from .limits import (
    LIMITS,
    MAX_DOWNLOAD_ENV_VAR,
    LimitExceededError,
    check_encoder_shape,
    max_download_bytes,
)
from .matrices import LayerWeights
from .models import ModelRef
from .progress import ProgressCallback, ProgressEvent, silent
from .text import quoted
from .values import is_genuine_int

CONFIG_FILE = "config.json"
#: Weight files in order of preference: safetensors before pickles, single files before shards.
WEIGHT_FILES: tuple[str, ...] = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


# --- the Hub ------------------------------------------------------------------------------------


def _hub_file(
    repo_id: str, filename: str, revision: str | None, *, local_only: bool, progress: ProgressCallback
) -> Path:
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(
        repo_id,
        filename,
        revision=revision,
        local_files_only=local_only,
        tqdm_class=None if local_only else _forwarding_tqdm(progress, filename),
    )
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
    """The cached snapshot directory holding config.json and one complete weight format, or None."""
    from huggingface_hub import try_to_load_from_cache

    config = try_to_load_from_cache(repo_id, CONFIG_FILE, revision=revision)
    if not isinstance(config, str):
        return None
    snapshot = Path(config).parent
    try:
        complete = all(path.is_file() for path in weight_files(snapshot))  # every shard, not only the index
    except CheckpointError:
        return None
    return snapshot if complete else None


def is_cached(repo_id: str, revision: str | None = None) -> bool:
    """Whether a Hub model can be opened with no network (config and weights in the Hub cache)."""
    return _cached_snapshot(repo_id, revision) is not None


def fetch(ref: ModelRef, progress: ProgressCallback = silent, *, cap: int | None = None) -> Path:
    """The local directory holding the model's config and weights, downloading them if needed.

    A download first fetches and validates config.json, then sizes the weight files from the Hub's
    metadata and refuses them above the cap (``cap`` bytes, else :func:`specbound.limits.max_download_bytes`).
    """
    if ref.path is not None:
        return ref.path
    assert ref.repo_id is not None
    snapshot = _cached_snapshot(ref.repo_id, ref.revision)
    if snapshot is not None:
        return snapshot
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or offline_mode():
        raise OfflineError(_offline_message(ref, "offline mode is on (HF_HUB_OFFLINE)"))
    plan = download_plan(ref, progress, cap=cap)
    plan.check_cap()
    _announce(plan, progress)
    return _download(ref, plan, progress)


def _announce(plan: DownloadPlan, progress: ProgressCallback) -> None:
    """The size of what is about to be fetched, before the first weight byte is requested."""
    count = len(plan.files)
    progress(ProgressEvent("download", 0, plan.total_bytes, f"{count} weight file{'s' * (count != 1)}"))


def start_download(
    ref: ModelRef, progress: ProgressCallback = silent, *, cap: int | None = None
) -> ShardDownloads | None:
    """For a sharded Hub model not yet in the cache: its plan checked against the cap, and a
    :class:`ShardDownloads` ready to fetch the shards in layer order while the analysis reads them.
    None when there is nothing to stream (a local directory, a cached model, a single weight file,
    offline): :func:`fetch` then does the whole job."""
    if ref.path is not None or ref.repo_id is None or _cached_snapshot(ref.repo_id, ref.revision) is not None:
        return None
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or offline_mode():
        return None
    plan = download_plan(ref, progress, cap=cap)
    if len(plan.files) < 2:
        return None
    plan.check_cap()
    _announce(plan, progress)
    return ShardDownloads(ref, plan)


class ShardDownloads:
    """Fetches a plan's shards one by one in a background thread, in the order the layers need them.

    :meth:`wait` blocks until one shard is on disk (the checkpoint calls it before opening a shard),
    re-raising the download's error if it failed. Progress events of the download are queued and
    delivered on the analysing thread (:meth:`relay`): a dashboard may only draw from its own thread.
    """

    def __init__(self, ref: ModelRef, plan: DownloadPlan) -> None:
        self.ref, self.plan, self.directory = ref, plan, plan.directory
        self._events: queue.SimpleQueue[ProgressEvent] = queue.SimpleQueue()
        self._arrived: dict[str, threading.Event] = {name: threading.Event() for name, _ in plan.files}
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress: ProgressCallback = silent

    def start(self, order: list[Path]) -> None:
        names = [path.name for path in order if path.name in self._arrived]
        names += [name for name, _ in self.plan.files if name not in names]
        self._thread = threading.Thread(target=self._run, args=(names,), daemon=True, name="specbound-download")
        self._thread.start()

    def _run(self, names: list[str]) -> None:
        try:
            with _hub_errors(self.ref):
                for name in names:
                    if self._stop.is_set():
                        return
                    _hub_file(self.plan.repo_id, name, self.ref.revision, local_only=False, progress=self._events.put)
                    self._arrived[name].set()
        except BaseException as exc:  # handed to the analysing thread
            self._error = exc
        finally:
            for event in self._arrived.values():
                event.set()  # nobody waits forever; a missing shard then raises in wait()

    def relay(self, progress: ProgressCallback) -> ProgressCallback:
        """``progress`` preceded by the download's queued events, all on the calling thread."""

        def forward(event: ProgressEvent) -> None:
            self._pump(progress)
            progress(event)

        self._progress = progress
        return forward

    def _pump(self, progress: ProgressCallback) -> None:
        while True:
            try:
                progress(self._events.get_nowait())
            except queue.Empty:
                return

    def wait(self, filename: str) -> None:
        event = self._arrived.get(filename)
        if event is None:
            return
        while not event.wait(0.1):
            self._pump(self._progress)
        self._pump(self._progress)
        if self._error is not None:
            raise self._error
        if self._stop.is_set() and not (self.directory / filename).is_file():
            raise CheckpointError(f"the download of {filename} was stopped")

    def stop(self) -> None:
        """Stop after the file in progress (the analysis failed or finished)."""
        self._stop.set()

    def finish(self) -> Path:
        """Wait for every file, re-raising a download error; the checkpoint directory."""
        for name, _ in self.plan.files:
            self.wait(name)
        if self._thread is not None:
            self._thread.join()
        return self.directory


@dataclass(frozen=True)
class DownloadPlan:
    """What opening a Hub model would download: its weight files and their sizes, from metadata only.

    ``config.json`` (and a shard index) are already fetched and validated when a plan exists, so a
    plan is only ever made for a supported family of admissible size.
    """

    repo_id: str
    revision: str | None
    directory: Path  # the snapshot directory holding config.json
    files: tuple[tuple[str, int], ...]  # (file name, bytes) still to download
    cap_bytes: int

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)

    @property
    def within_cap(self) -> bool:
        return self.total_bytes <= self.cap_bytes

    def check_cap(self) -> None:
        if not self.within_cap:
            raise LimitExceededError(
                f"'{self.repo_id}' needs {self.total_bytes / 1e6:,.0f} MB of weights, more than the download "
                f"cap of {self.cap_bytes / 1e6:,.0f} MB (raise it with --max-download-gb or {MAX_DOWNLOAD_ENV_VAR})"
            )


def download_plan(ref: ModelRef, progress: ProgressCallback = silent, *, cap: int | None = None) -> DownloadPlan:
    """Fetch and validate config.json, then size the weight download from the Hub's metadata.

    The dashboard calls this to show the size before asking; :func:`fetch` calls it before any
    weight byte is requested. Raises the same errors as :func:`fetch` (not found, offline, not a
    supported family, sizes beyond the limits).
    """
    repo = ref.repo_id
    if repo is None:
        raise ModelNotFoundError(f"'{ref.name}' is not a Hub model: nothing to download")
    cap = max_download_bytes() if cap is None else cap
    with _hub_errors(ref):
        _check_reachable(ref)
        config_size = _remote_size(repo, CONFIG_FILE, ref.revision)
        if config_size is not None and config_size > LIMITS.max_config_bytes:
            raise LimitExceededError(
                f"{CONFIG_FILE} of '{repo}' is {config_size} bytes, more than the "
                f"{LIMITS.max_config_bytes} a model configuration may have"
            )
        config = _hub_file(repo, CONFIG_FILE, ref.revision, local_only=False, progress=progress)
        read_config(config.parent)  # not a supported family, or too large: stop before any weight
        for filename in WEIGHT_FILES:
            size = _remote_size(repo, filename, ref.revision)
            if size is None:
                continue
            if not filename.endswith(".index.json"):
                return DownloadPlan(repo, ref.revision, config.parent, ((filename, size),), cap)
            if size > LIMITS.max_index_bytes:
                raise LimitExceededError(
                    f"the shard index {filename} of '{repo}' is {size} bytes, more "
                    f"than the {LIMITS.max_index_bytes} allowed"
                )
            index = _hub_file(repo, filename, ref.revision, local_only=False, progress=progress)
            shards = sorted(set(_read_index(index).values()))
            sized = []
            for shard in shards:
                shard_size = _remote_size(repo, shard, ref.revision)
                if shard_size is None:
                    raise CheckpointError(f"the shard index of '{repo}' names {shard}, which the Hub does not have")
                sized.append((shard, shard_size))
            return DownloadPlan(repo, ref.revision, config.parent, tuple(sized), cap)
    raise CheckpointError(f"'{repo}' on the Hub has neither safetensors nor PyTorch weights")


def _remote_size(repo_id: str, filename: str, revision: str | None) -> int | None:
    """Size in bytes of a file of a Hub repository from a HEAD request, or None if it has no such file."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError

    try:
        metadata = get_hf_file_metadata(hf_hub_url(repo_id, filename, revision=revision))
    except EntryNotFoundError:
        return None
    if metadata.size is None:
        raise CheckpointError(f"the Hub does not say how large {filename} of '{repo_id}' is: not downloaded")
    return int(metadata.size)


def _download(ref: ModelRef, plan: DownloadPlan, progress: ProgressCallback) -> Path:
    with _hub_errors(ref):
        for filename, _ in plan.files:
            _hub_file(plan.repo_id, filename, ref.revision, local_only=False, progress=progress)
    return plan.directory


#: errno values of a local disk problem during a download (not a network one)
_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.ENAMETOOLONG})


class _hub_errors:
    """Turns huggingface_hub's exceptions into specbound's one-line errors (a context manager)."""

    def __init__(self, ref: ModelRef) -> None:
        self.ref = ref

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None or isinstance(exc, CheckpointError | ModelNotFoundError | OfflineError | LimitExceededError):
            return False
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            HfHubHTTPError,
            HFValidationError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        repo, ref = self.ref.repo_id, self.ref
        if isinstance(exc, GatedRepoError):
            raise ModelNotFoundError(
                f"'{repo}' is a gated repository on the Hub: log in with 'hf auth login' after accepting its terms"
            ) from None
        if isinstance(exc, RepositoryNotFoundError):
            raise ModelNotFoundError(f"there is no model '{repo}' on the Hugging Face Hub (or it is private)") from None
        if isinstance(exc, RevisionNotFoundError):
            raise ModelNotFoundError(f"'{repo}' has no revision '{ref.revision}' on the Hub") from None
        if isinstance(exc, HFValidationError):
            raise ModelNotFoundError(f"'{repo}' is not a valid Hub repository id or file name") from None
        if isinstance(exc, LocalEntryNotFoundError):  # a subclass of EntryNotFoundError: the network failed
            raise OfflineError(_offline_message(ref, f"the Hub cannot be reached ({type(exc).__name__})")) from None
        if isinstance(exc, EntryNotFoundError):
            raise CheckpointError(f"'{repo}' on the Hub has no {CONFIG_FILE}: not a transformers model") from None
        if isinstance(exc, OSError) and exc.errno in _DISK_ERRORS:
            raise CheckpointError(
                f"cannot store the files of '{repo}' in the Hugging Face cache: {describe_os_error(exc)}"
            ) from None
        if isinstance(exc, HfHubHTTPError | OSError):
            raise OfflineError(_offline_message(ref, f"the Hub cannot be reached ({type(exc).__name__})")) from None
        return False


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
    return (
        f"model '{ref.name}' is not in the local Hugging Face cache and {why}; connect to the "
        f"internet and retry to download it once, or pass a local checkpoint directory"
    )


# --- files on disk ------------------------------------------------------------------------------


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


def _read_index(index_file: Path) -> dict[str, str]:
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
        raise CheckpointError(f"no weights in {directory.name}: expected one of {', '.join(WEIGHT_FILES)}")
    if first.name.endswith(".index.json"):
        shards = sorted(set(_read_index(first).values()))
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
    digest = hashlib.sha256()
    for path in [directory / CONFIG_FILE, *weight_files(directory)]:
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


def read_config(directory: Path) -> tuple[ModelShape, FamilyAdapter]:
    """Shape and family adapter of a checkpoint, from its config.json, within the limits."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{directory.name} has no {CONFIG_FILE}: not a Hugging Face checkpoint directory")
    _contained(directory, CONFIG_FILE, "the checkpoint")
    where = f"{CONFIG_FILE} in {directory.name}"
    try:
        config = read_json(path, where, LIMITS.max_config_bytes)
    except OSError as exc:
        raise CheckpointError(f"cannot read {where}: {describe_os_error(exc)}") from None
    except ValueError as exc:
        raise CheckpointError(f"{where} is not valid JSON ({quoted(exc, 120)})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{where} is not a JSON object")
    adapter = adapter_of_config(config, where)
    shape = adapter.shape(config, where)
    check_encoder_shape(shape, where, stored_shapes(adapter, shape))
    return shape, adapter


def stored_shapes(adapter: FamilyAdapter, shape: ModelShape) -> dict[str, tuple[int, ...]]:
    """The stored shape of each of a layer's tensors by role, as the family adapter declares them."""
    return {role: spec.shape for role, spec in adapter.tensors(shape).items()}


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
        if itemsize is None or not begin <= end <= data_size or end - begin != itemsize * _product(shape):
            raise corrupt(f"tensor {quoted(name)} does not fit the file")
        tensors[name] = TensorInfo(dtype, tuple(shape), 8 + header_len + begin)
    return tensors


def _product(values: list[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


class _TensorSource(Protocol):
    """Named tensors: what a file declares about each before it is read, then its values as float64."""

    def names(self) -> list[str]: ...

    def info(self, name: str) -> TensorInfo: ...

    def get(self, name: str) -> np.ndarray: ...

    def shard_of(self, name: str) -> Path: ...

    def release(self, path: Path) -> None: ...

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None: ...


class _StateDictReader:
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


class _TensorReader:
    """Reads named tensors as float64 arrays from safetensors files or weights-only PyTorch pickles.

    :meth:`info` tells a tensor's dtype and shape without reading its data, so the caller checks them
    before :meth:`get` converts anything.
    """

    def __init__(
        self, files: list[Path], weight_map: dict[str, Path] | None = None, arrival: ShardArrival | None = None
    ) -> None:
        """``weight_map`` (a shard index's, tensor name -> shard) makes the shards open lazily, each the
        first time one of its tensors is asked for, after ``arrival`` says it is on disk (a download
        in progress); without it every file's tensor names are read now."""
        self._where: dict[str, Path] = {}
        self._headers: dict[Path, dict[str, TensorInfo]] = {}
        self._state_dicts: dict[Path, dict[str, Any]] = {}
        self._arrival = arrival
        if weight_map is not None:
            self._where = dict(weight_map)
            return
        for path in files:
            for name in self._keys(path):
                self._where[name] = path

    def names(self) -> list[str]:
        return list(self._where)

    def shard_of(self, name: str) -> Path:
        return self._where[name]

    def _keys(self, path: Path) -> list[str]:
        if path.suffix == ".safetensors":
            self._headers[path] = safetensors_header(path)
            return list(self._headers[path])
        return list(self._state_dict(path))

    def _opened(self, path: Path) -> None:
        """Wait for a shard still downloading, then read its header (or pickle) once."""
        if path in self._headers or path in self._state_dicts:
            return
        if self._arrival is not None:
            self._arrival.wait(path.name)
        self._keys(path)

    def _state_dict(self, path: Path) -> dict[str, Any]:
        if path not in self._state_dicts:
            self._state_dicts[path] = _load_pickle(path)
        return self._state_dicts[path]

    def release(self, path: Path) -> None:
        """Drop a pickled shard's tensors (its memory map or, for the legacy format, its data)."""
        self._state_dicts.pop(path, None)

    def _declared(self, name: str, path: Path) -> None:
        held = self._headers[path] if path.suffix == ".safetensors" else self._state_dicts[path]
        if name not in held:
            raise CheckpointError(f"the shard index puts tensor {quoted(name)} in {path.name}, which does not hold it")

    def info(self, name: str) -> TensorInfo:
        path = self._where[name]
        self._opened(path)
        self._declared(name, path)
        if path.suffix == ".safetensors":
            return self._headers[path][name]
        tensor = self._state_dict(path)[name]
        try:
            return TensorInfo(str(tensor.dtype), tuple(int(n) for n in tensor.shape))
        except Exception:  # not a tensor, or one without a plain shape (a nested tensor): refused by shape
            return TensorInfo(type(tensor).__name__, ())

    def mapped(self, name: str) -> tuple[np.ndarray, str] | None:
        """A safetensors tensor's stored values as a read-only memory map and their dtype, or None
        (a pickle, or a dtype without a numpy view). Call :meth:`info` first (it opens the shard)."""
        path = self._where[name]
        if path.suffix != ".safetensors":
            return None
        info = self._headers[path][name]
        dtype = _MAPPED_DTYPES.get(info.dtype)
        if dtype is None:
            return None
        try:
            return np.memmap(path, dtype=dtype, mode="r", offset=info.offset, shape=info.shape), info.dtype
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"cannot map tensor {quoted(name)} of {path.name} ({_first_line(exc)})") from None

    def get(self, name: str) -> np.ndarray:
        path = self._where[name]
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            info = self._headers[path][name]
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
                raise CheckpointError(
                    f"cannot read tensor {quoted(name)} from {path.name} ({_first_line(exc)})"
                ) from None
        else:
            array = _dense_float64(self._state_dict(path)[name], name, path.name)
        return np.asarray(array, dtype=np.float64)


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


class ShardArrival(Protocol):
    """Tells when a weight file that is still downloading is on disk (:class:`ShardDownloads`)."""

    def wait(self, filename: str) -> None: ...


class Checkpoint:
    """Opened weights: the model's shape, its family's adapter and, layer by layer, its weights.

    From a checkpoint directory (:meth:`from_directory`, :func:`open_checkpoint`) or from a model held
    in memory (:meth:`from_state_dict`); ``where`` names it in messages. A directory's layers can be
    streamed (:meth:`stream`): each shard is opened when a layer first needs it and, while the shards
    are still downloading (:func:`start_download`), only after it has arrived.
    """

    def __init__(
        self,
        shape: ModelShape,
        adapter: FamilyAdapter,
        reader: _TensorSource,
        where: str,
        directory: Path | None = None,
        arrival: ShardArrival | None = None,
    ) -> None:
        self.shape, self.adapter, self.where = shape, adapter, where
        self.directory, self._arrival = directory, arrival
        self._reader = reader
        self._prefix, self._layout = self._find_layout()
        self._records: dict[Path, bytes] = {}
        self._last_layer = self._last_layer_of_shards()

    @classmethod
    def from_directory(cls, directory: Path, arrival: ShardArrival | None = None) -> Checkpoint:
        """A checkpoint directory; with a shard index its shards open lazily (after ``arrival``)."""
        shape, adapter = read_config(directory)
        index = _find_weights(directory)
        weight_map = None
        if index is not None and index.name.endswith(".index.json"):
            tensors = _read_index(index)
            shards = {
                shard: _contained(directory, shard, f"the shard index {index.name}") for shard in set(tensors.values())
            }
            weight_map = {tensor: shards[shard] for tensor, shard in tensors.items()}
        reader = _TensorReader(weight_files(directory), weight_map, arrival)
        return cls(shape, adapter, reader, directory.name, directory, arrival)

    @classmethod
    def from_state_dict(cls, config: Mapping[str, Any], state: Mapping[str, Any], where: str) -> Checkpoint:
        """A model in memory: its config (as ``PretrainedConfig.to_dict()`` gives it) and its state dict,
        whose tensors stay where they are (any device) until a layer is read."""
        adapter = adapter_of_config(config, where)
        shape = adapter.shape(config, where)
        check_encoder_shape(shape, where, stored_shapes(adapter, shape))
        return cls(shape, adapter, _StateDictReader(state, where), where)

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

    def _key(self, index: int, role: str) -> str:
        return f"{self._prefix}{self._layout.root}.{index}.{self._layout.tensors[role].name}"

    def shards(self, index: int) -> list[Path]:
        """The weight files holding layer ``index``'s tensors (none for a model in memory)."""
        if self.directory is None:
            return []
        names = set(self._reader.names())
        keys = [self._key(index, role) for role in self._layout.tensors]
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
        spec = self._layout.tensors[role]
        key = f"{self._prefix}{self._layout.root}.{index}.{spec.name}"
        label = f"{self._layout.root}.{index}.{spec.name}"
        if key not in set(self._reader.names()):
            raise CheckpointError(
                f"weight '{key}' is missing from the checkpoint (config.json declares {self.shape.num_layers} layers)"
            )
        info = self._reader.info(key)
        if info.shape != spec.shape:
            raise UnsupportedModelError(
                f"weight '{label}' has shape {info.shape}, but config.json implies {spec.shape}"
            )
        if not info.is_float:
            raise UnsupportedModelError(f"weight '{label}' has dtype {quoted(info.dtype)}, not a floating-point type")
        return key, label

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
        return self.adapter.to_weights(self.read(index, self._layout.tensors), self.shape)

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
    (:mod:`specbound.loading`). It has the reading methods of :class:`~specbound.matrices.LayerWeights`."""

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

    def mlp_weight(self, field: str) -> np.ndarray:
        """One MLP weight ("gate", "ffn_in" or "ffn_out") in (out, in) form."""
        checkpoint = self.checkpoint
        adapter, shape = checkpoint.adapter, checkpoint.shape
        tensor = checkpoint.read(self.index, (field,))[field]
        return adapter.mlp_weight(field, tensor, shape)

    def mlp_mapped(self, field: str) -> MappedMatrix | None:
        """One MLP weight's row-vector matrix (Wᵀ) read block by block from a memory map, or None
        where the weights cannot be mapped (then :meth:`mlp_weight` reads it whole)."""
        checkpoint = self.checkpoint
        found = checkpoint.read_mapped(self.index, field)
        if found is None:
            return None
        stored, dtype, label = found
        weight = checkpoint.adapter.mlp_weight(field, stored, checkpoint.shape)  # a view: every adapter's is
        return MappedMatrix(weight.T, dtype, label)


@dataclass(frozen=True, eq=False)
class MappedMatrix:
    """A proxy matrix M (n x m) as a view of a memory-mapped tensor, widened to float64 block by block
    along its longer side (:func:`specbound.spectrum.gram_by_blocks`), each block checked for
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


def _check_values(array: np.ndarray, label: str) -> None:
    """NaN, infinite and too large weights are refused before any SVD sees them.

    The cap (:func:`specbound.limits.derived_max_abs_weight`) is what the float64 arithmetic of the
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


def offline_mode() -> bool:
    """Whether the Hugging Face libraries are told to stay offline (HF_HUB_OFFLINE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
