"""The Hugging Face Hub: a :class:`~specbound.io.models.ModelRef` of a Hub model turned into a local
directory holding its ``config.json`` and one weight format (safetensors preferred), in the standard
Hub cache, with progress reported through a callback. huggingface_hub is imported only here, and only
when the Hub is asked.

* :func:`fetch` uses the cache when it can, else downloads; offline (no network, or
  ``HF_HUB_OFFLINE=1``) it says clearly that the model is not there. :func:`is_cached` tells which
  models open without the network.
* :func:`download_plan` fetches and validates config.json first (before any weight file, so an
  unsupported family or an oversized model costs one small file), then sizes the weight download from
  the Hub's metadata; above the cap (:func:`specbound.core.limits.max_download_bytes`) it is refused.
* :func:`start_download` streams a sharded model's shards in a background thread
  (:class:`ShardDownloads`), in the order the layers need them, while the analysis reads them.
* huggingface_hub's exceptions become one-line errors (not found, gated, offline, disk full, ...).
"""

from __future__ import annotations

import errno
import io
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...core.errors import CheckpointError, ModelNotFoundError, OfflineError
from ...core.limits import LIMITS, MAX_DOWNLOAD_ENV_VAR, LimitExceededError, format_megabytes, max_download_bytes
from ...core.progress import ProgressCallback, ProgressEvent, silent
from ..files import describe_os_error
from ..models import ModelRef, Source, check_repo_id
from .checkpoint import CONFIG_FILE, WEIGHT_FILES, read_config, read_index, weight_files


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

    class ForwardingTqdm(tqdm):  # type: ignore[misc]  # tqdm ships no types (no stubs installed): its class is Any
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)
            progress(ProgressEvent("download", self.n, self.total, filename))

        def update(self, n: float | None = 1) -> bool | None:
            shown: bool | None = super().update(n)
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
    metadata and refuses them above the cap (``cap`` bytes, else :func:`specbound.core.limits.max_download_bytes`).
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
                f"'{self.repo_id}' needs {format_megabytes(self.total_bytes, 0)} of weights, more than the "
                f"download cap of {format_megabytes(self.cap_bytes, 0)} (raise it with --max-download-gb or "
                f"{MAX_DOWNLOAD_ENV_VAR})"
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
            shards = sorted(set(read_index(index).values()))
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


#: The end of an offline message that names a path on the machine: a page whose visitors cannot name
#: one cuts it (``dashboard.widgets.sidebar.visitor_advice``).
LOCAL_DIRECTORY_ADVICE = ", or pass a local checkpoint directory"


def _offline_message(ref: ModelRef, why: str) -> str:
    return (
        f"model '{ref.name}' is not in the local Hugging Face cache and {why}; connect to the "
        f"internet and retry to download it once{LOCAL_DIRECTORY_ADVICE}"
    )


def repo_branches(repo_id: str) -> list[str]:
    """The branches of a Hub model repository, through the Hub's API (OLMo and Pythia keep one branch
    per saved step); OfflineError in one line where the Hub cannot be reached or may not be asked."""
    from huggingface_hub import HfApi

    check_repo_id(repo_id)
    ref = ModelRef(name=repo_id, source=Source.HUB, repo_id=repo_id)
    unreachable = (
        f"listing the branches of '{repo_id}' needs the Hugging Face Hub, which {{why}}; name the "
        f"revisions instead (--revisions step1000 step2000 ...)"
    )
    if offline_mode():
        raise OfflineError(unreachable.format(why="HF_HUB_OFFLINE tells not to reach"))
    try:
        with _hub_errors(ref):
            refs = HfApi().list_repo_refs(repo_id)
    except OfflineError:
        raise OfflineError(unreachable.format(why="cannot be reached from here")) from None
    except Exception as exc:  # httpx transport errors: no DNS, refused, timed out
        if isinstance(exc, ModelNotFoundError | CheckpointError):
            raise
        raise OfflineError(unreachable.format(why=f"cannot be reached from here ({type(exc).__name__})")) from None
    return [branch.name for branch in refs.branches]


def offline_mode() -> bool:
    """Whether the Hugging Face libraries are told to stay offline (HF_HUB_OFFLINE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
