"""From a model name to its spectral profile: resolve, fetch, look in the cache, else compute.

:func:`load_profile` resolves a name (a directory, a Hub id, an alias, an atlas model, a LoRA adapter),
fetches what is missing, reuses a cached profile when the checkpoint's revision is unchanged, and else
streams the checkpoint's layers into the per-layer engine (:func:`specbound.core.engine.compute_profile`).
The bound terms then come from :class:`specbound.core.bounds.BoundAnalysis` without touching any file.

From the Hub, the shards are fetched in layer order while the first layers are analysed. Each finished
layer is written to the profile cache as it comes (:class:`ResumeEntries`, keyed by the layer's own
files), so an analysis that is killed resumes at the next layer, and the finished profile is the one an
uninterrupted run gives, bit for bit. :func:`difference_profile` reads a model against a reference
(SPEC §14), both checkpoints streamed side by side.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..core.architecture import ModelShape
from ..core.backend import Backend, get_backend
from ..core.defaults import LARGE_NORM_11
from ..core.engine import LayerSpectra, compute_profile
from ..core.errors import CheckpointError
from ..core.matrices import LayerSource
from ..core.profile import SpectralProfile
from ..core.progress import ProgressCallback, silent
from ..core.text import quoted
from .cache import ProfileCache
from .checkpoints.checkpoint import (
    ADAPTER_CONFIG,
    Checkpoint,
    files_fingerprint,
    fingerprint,
    open_checkpoint,
    read_config,
)
from .checkpoints.hub import ShardDownloads, fetch, start_download
from .checkpoints.lora import (
    ADAPTER_WEIGHTS,
    base_reference,
    is_adapter_directory,
    open_adapter,
    read_adapter_config,
)
from .models import ModelRef, Source, parse_name, resolve
from .options import DEFAULT_COMPUTE, ComputeOptions

#: The revision recorded for a model analysed in memory (its weights are not a file that could change).
IN_MEMORY_REVISION = "in-memory"


class ResumeEntries:
    """Finished layers of one analysis in the profile cache, keyed by the layer's own revision
    (:meth:`Checkpoint.layer_revision <specbound.io.checkpoints.checkpoint.Checkpoint.layer_revision>`) and what
    computed them (the backend, and the library of its large eigen-solves where that is another:
    :meth:`~specbound.core.backend.BackendSpec.label_for`; and whether with every (1,1) norm), so that a
    resumed analysis reproduces an uninterrupted one exactly."""

    def __init__(
        self, cache: ProfileCache, model: str, shape: ModelShape, backend: Backend, large_norm_11: bool = LARGE_NORM_11
    ) -> None:
        self.cache, self.model, self.shape, self.backend = cache, model, shape, backend
        eigen_order = min(shape.hidden_size, shape.ffn_size)  # the feed-forward Gram matrices: the only eigen-solves
        self.label = backend.spec.label_for(eigen_order) + (":norm_11" if large_norm_11 else "")
        self.keys: list[tuple[int, str]] = []

    def _revision(self, index: int, layer: LayerSource) -> str | None:
        revision = getattr(layer, "revision", None)
        return f"{revision}:{self.label}" if isinstance(revision, str) else None

    def load(self, index: int, layer: LayerSource) -> LayerSpectra | None:
        revision = self._revision(index, layer)
        if revision is None:
            return None
        self.keys.append((index, revision))
        found = self.cache.load_layer(self.model, revision, index, self.shape)
        return None if found is None else LayerSpectra(*found)

    def save(self, index: int, layer: LayerSource, spectra: LayerSpectra) -> None:
        revision = self._revision(index, layer)
        if revision is None:
            return
        with contextlib.suppress(OSError):  # a read-only cache only costs the resumability
            self.cache.save_layer(
                self.model, revision, index, self.shape, spectra.singular_values, spectra.norm_21, spectra.norm_11
            )

    def clear(self) -> None:
        """Remove the entries once the whole profile is stored."""
        for index, revision in self.keys:
            self.cache.layer_path(self.model, revision, index).unlink(missing_ok=True)


def _computing(options: ComputeOptions) -> dict[str, Any]:
    """The keyword arguments of :func:`compute_profile` that ``options`` sets."""
    return {"backend": options.backend, "workers": options.workers, "large_norm_11": options.large_norm_11}


def profile_in_memory(
    config: Mapping[str, Any],
    state: Mapping[str, Any],
    *,
    name: str,
    options: ComputeOptions = DEFAULT_COMPUTE,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """The profile of a model held in memory: its config (a dict, as config.json holds it) and its
    state dict, streamed in place one layer (and one feed-forward matrix) at a time; nothing is
    written to disk or cached. ``options`` as :func:`load_profile`'s (its download cap unused)."""
    checkpoint = Checkpoint.from_state_dict(config, state, f"the model {name}")
    return checkpoint_profile(checkpoint, name=name, options=options, progress=progress)


def checkpoint_profile(
    checkpoint: Checkpoint,
    *,
    name: str,
    options: ComputeOptions = DEFAULT_COMPUTE,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """The profile of a checkpoint opened already (a model in memory, an adapter merged into a base in
    memory), never cached: its weights are no file whose revision could be checked."""
    return compute_profile(
        checkpoint.stream(),
        checkpoint.shape,
        model=name,
        revision=IN_MEMORY_REVISION,
        progress=progress,
        **_computing(options),
    )


def load_profile(
    model: str | ModelRef,
    options: ComputeOptions = DEFAULT_COMPUTE,
    *,
    progress: ProgressCallback = silent,
    cache: ProfileCache | None = None,
    use_cache: bool = True,
    resume: bool = True,
    adapter_base: str | None = None,
) -> SpectralProfile:
    """The spectral profile of a model by name (see :func:`specbound.io.models.resolve`).

    Downloads what is missing (with progress; sharded Hub checkpoints shard by shard in layer order,
    analysed as they arrive), reuses a cached profile when the checkpoint's revision is unchanged,
    resumes an interrupted analysis from its finished layers (``resume``), and stores a newly
    computed profile. How it is computed comes in one :class:`~specbound.io.options.ComputeOptions`
    (the command line's, :func:`specbound.analyze`'s, a grid or trajectory task's): the backend and
    device, the layer workers and the (1,1) norms of :func:`compute_profile` (a cached profile without
    the norms asked for is computed again), and the download cap
    (:func:`specbound.core.limits.max_download_bytes` unless it is set). None of them changes a number
    beyond rounding. A LoRA adapter directory is merged into ``adapter_base``, else into the base its
    config names (:mod:`specbound.io.checkpoints.lora`), and cached under the pair's revision.

    Examples:
        >>> profile = load_profile("minilm-l6")  # the bundled model: offline, a second at most
        >>> profile.shape.num_layers, profile.shape.hidden_size, profile.shape.num_heads
        (6, 384, 12)
        >>> load_profile("minilm-l6").model == profile.model  # the second time from the profile cache
        True
        >>> from specbound.core.backend import BackendSpec
        >>> on_torch = load_profile("minilm-l6", ComputeOptions(BackendSpec("torch"), workers=1), use_cache=False)
        >>> bool(abs(on_torch.singular_values - profile.singular_values).max() < 1e-10)
        True
    """
    ref = resolve(model) if isinstance(model, str) else model
    if ref.source is Source.ATLAS:
        from .atlas import atlas_member

        assert ref.path is not None
        return atlas_member(ref.path, ref.member)  # stored spectra: nothing to compute or cache
    be = options.backend if isinstance(options.backend, Backend) else get_backend(options.backend)
    options = dataclasses.replace(options, backend=be)
    cache = cache or ProfileCache()
    source = _weights_source(ref, adapter_base, progress, options.max_download_bytes)
    if use_cache and source.downloads is None:  # its revision is known before reading: a stored profile may do
        cached = cache.load(ref.name, source.revision)
        if cached is not None and not (options.large_norm_11 and np.isnan(cached.norm_11).any()):
            return cached
    checkpoint = source.opener()
    entries = (
        ResumeEntries(cache, ref.name, checkpoint.shape, be, options.large_norm_11) if use_cache and resume else None
    )
    profile = _streamed_profile(checkpoint, source, ref.name, options, entries)
    if use_cache:
        with contextlib.suppress(OSError):  # a read-only cache directory only costs speed next time
            cache.save(profile)
            if entries is not None:
                entries.clear()
    return profile


@dataclasses.dataclass(frozen=True)
class _WeightsSource:
    """Where :func:`load_profile` reads a model's weights from: ``opener`` opens them; ``revision`` is known
    before they are read for a local directory or an adapter with its base (so a cached profile can be
    used), and only once every shard has arrived for a sharded Hub download (``downloads``, then ""), whose
    ``progress`` relays each shard's bytes."""

    opener: Callable[[], Checkpoint]
    revision: str
    progress: ProgressCallback
    downloads: ShardDownloads | None = None


def _weights_source(
    ref: ModelRef, base: str | None, progress: ProgressCallback, max_download_bytes: int | None
) -> _WeightsSource:
    """A LoRA adapter merged into its base layer by layer (cached as the pair); a directory on disk, fetched
    whole first if it has to be; or a sharded Hub checkpoint whose shards are downloaded in layer order
    while the layers that arrived are analysed."""
    adapter = adapter_directory(ref)
    if adapter is not None:
        checkpoint, revision = _open_adapter(adapter, base, progress, max_download_bytes)
        return _WeightsSource(lambda: checkpoint, revision, progress)
    downloads = start_download(ref, progress, cap=max_download_bytes)
    if downloads is None:
        directory = fetch(ref, progress, cap=max_download_bytes)
        read_config(directory)  # a clear message for a directory that is not a checkpoint, before anything else
        return _WeightsSource(lambda: open_checkpoint(directory), fingerprint(directory), progress)
    relayed = downloads.relay(progress)
    checkpoint = Checkpoint.from_directory(downloads.directory, arrival=downloads)
    downloads.start(checkpoint.shard_order())
    return _WeightsSource(lambda: checkpoint, "", relayed, downloads)


def _streamed_profile(
    checkpoint: Checkpoint,
    source: _WeightsSource,
    name: str,
    options: ComputeOptions,
    entries: ResumeEntries | None,
) -> SpectralProfile:
    """The profile computed layer by layer as the checkpoint streams them (resumed from ``entries``); a
    download whose analysis fails is stopped, and one that finishes gives the whole checkpoint's revision."""
    try:
        profile = compute_profile(
            checkpoint.stream(),
            checkpoint.shape,
            model=name,
            revision=source.revision,
            progress=source.progress,
            layer_cache=entries,
            **_computing(options),
        )
    except BaseException:
        if source.downloads is not None:
            source.downloads.stop()  # the shards still to come are not fetched for nothing
        raise
    if source.downloads is None:
        return profile
    directory = source.downloads.finish()  # every shard is on disk: the revision of the whole checkpoint
    return dataclasses.replace(profile, revision=fingerprint(directory))


def adapter_directory(model: str | ModelRef) -> Path | None:
    """The directory of a LoRA adapter (:mod:`specbound.io.checkpoints.lora`) that ``model`` names, else None."""
    ref = resolve(model) if isinstance(model, str) else model
    if ref.source in (Source.LOCAL, Source.BUNDLED) and ref.path is not None and is_adapter_directory(ref.path):
        return ref.path
    return None


def adapter_base(model: str | ModelRef, given: str | None = None) -> str | None:
    """The base a LoRA adapter directory is read against, as a model name that opens it (a directory's
    full path or a Hub id; :func:`locate_adapter_base`); None for any other model."""
    directory = adapter_directory(model)
    return None if directory is None else locate_adapter_base(directory, given)


#: How many folders above an adapter's own its recorded relative base is looked for in (training ran in one).
ADAPTER_BASE_LEVELS_UP = 3


def locate_adapter_base(directory: Path, given: str | None = None, *, fetch_hub: bool = True) -> str:
    """Where the base of the adapter in ``directory`` is, as a model name that opens it.

    In this order: ``given`` (``--base``, ``base=``, the dashboard's field), as any model name; else the
    ``base_model_name_or_path`` its config records, taken relative to the adapter's own folder and
    the :data:`ADAPTER_BASE_LEVELS_UP` folders above it (peft writes the path it was given, relative to
    where training ran: ``"models/my-base"`` beside ``models/my-lora`` is found from the folder above
    the adapter's), then relative to the working directory, then as a catalog name (``minilm-l6``, the
    lab's ``finetune-base``) or a Hub id (from the Hub cache, or downloaded unless offline). Where none
    holds it, one line names the adapter, every place looked at and ``--base`` (a :class:`CheckpointError`).
    With ``fetch_hub`` False a Hub id is returned as it is, neither looked up nor downloaded (what
    :func:`content_revision` needs: the same base, found without fetching anything).

    Example:
        >>> import json, pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "runs" / "lora").mkdir(parents=True); (root / "runs" / "base").mkdir()
        >>> _ = (root / "runs" / "lora" / "adapter_config.json").write_text(
        ...     json.dumps({"peft_type": "LORA", "lora_alpha": 8, "base_model_name_or_path": "../base"}))
        >>> locate_adapter_base(root / "runs" / "lora") == str((root / "runs" / "base").resolve())
        True
        >>> import shutil; shutil.rmtree(root)
    """
    if given is not None:
        return given
    recorded = base_reference(directory, read_adapter_config(directory))
    shown = quoted(recorded)
    long = shown != recorded  # shown once, shortened: the places looked at are then named by their folders
    looked: list[str] = []
    try:
        path = Path(recorded).expanduser()
        folders = [directory, *list(directory.resolve().parents)[:ADAPTER_BASE_LEVELS_UP], Path.cwd()]
        places: dict[Path, str] = {path: "its own path"} if path.is_absolute() else {}
        for folder in [] if path.is_absolute() else folders:
            places.setdefault(folder / path, str(folder))
        for place, within in places.items():
            looked.append(quoted(within) if long else str(place))
            if place.is_dir():
                return str(place.resolve())
    except (OSError, RuntimeError):  # a name the file system cannot look up: perhaps a Hub id
        pass
    from ..core.errors import ModelNotFoundError, OfflineError

    try:
        ref = parse_name(recorded)
        if ref is not None and ref.source is not Source.HUB:  # a catalog name: the bundled model, the lab's trio
            return recorded
        if ref is not None:
            if fetch_hub:
                fetch(ref)  # from the Hub cache, or downloaded; offline, it says so
            return recorded
        looked.append("the Hugging Face Hub (not a Hub id)")
    except (ModelNotFoundError, OfflineError) as exc:
        hub = str(exc).split(";")[0]
        looked.append(f"the Hugging Face Hub ({hub.replace(repr(shown), 'the name') if long else hub})")
    raise CheckpointError(
        f"the base of the adapter {quoted(directory.name)}, '{shown}' (base_model_name_or_path), is not found: "
        f"looked {'for it in' if long else 'at'} {'; '.join(looked)}: give the base with --base "
        "(base= in Python, the base field in the dashboard)"
    )


def _open_adapter(
    directory: Path, base: str | None, progress: ProgressCallback, max_download_bytes: int | None
) -> tuple[Checkpoint, str]:
    """The adapted model (merged into ``base``, else into the base :func:`locate_adapter_base` finds)
    and its revision: the adapter's files and the base's together."""
    name = locate_adapter_base(directory, base)
    ref = resolve(name)
    if ref.source is Source.ATLAS or (ref.path is not None and is_adapter_directory(ref.path)):
        raise CheckpointError(f"the base of the adapter {directory.name} must be a model with weights, not {name}")
    base_directory = fetch(ref, progress, cap=max_download_bytes)
    checkpoint = open_adapter(directory, open_checkpoint(base_directory))
    adapter_files = [directory / ADAPTER_CONFIG, directory / ADAPTER_WEIGHTS]
    revision = files_fingerprint(directory, adapter_files) + "+" + fingerprint(base_directory)
    return checkpoint, revision


def open_weights(
    model: str | ModelRef,
    *,
    adapter_base: str | None = None,
    progress: ProgressCallback = silent,
    max_download_bytes: int | None = None,
) -> Checkpoint:
    """A model's weights by name, opened for reading layer by layer (fetched from the Hub first where
    needed); a LoRA adapter directory merged into its base (``adapter_base``, else the one its config
    names). An atlas member holds spectra and no weights: refused in one line."""
    ref = resolve(model) if isinstance(model, str) else model
    if ref.source is Source.ATLAS:
        raise CheckpointError(
            f"{ref.name} is an atlas member: an atlas stores spectra, not weights, so it cannot be centred "
            "or be a reference"
        )
    if (directory := adapter_directory(ref)) is not None:
        return _open_adapter(directory, adapter_base, progress, max_download_bytes)[0]
    return open_checkpoint(fetch(ref, progress, cap=max_download_bytes))


def difference_profile(
    tuned: Checkpoint,
    base: Checkpoint,
    *,
    model: str,
    options: ComputeOptions = DEFAULT_COMPUTE,
    progress: ProgressCallback = silent,
) -> SpectralProfile:
    """The profile of W - W⁰ for every proxy matrix of ``tuned`` against ``base`` (SPEC §14): the heads
    factored at size 2d, the feed-forward and expert differences streamed (:mod:`specbound.io.centred`).
    ``options`` as :func:`load_profile`'s (the checkpoints are open already: its download cap unused).

    The reference must have the model's family and every dimension
    (:class:`~specbound.io.centred.ReferenceMismatchError` naming the first difference); different
    storage types get one warning with the rounding's size, once the difference is computed (a pair
    refused on the way, for a NaN, gets the refusal alone). The result has the model's shape; it is
    never cached (it belongs to the pair).
    """
    from .centred import check_reference, difference_layers, difference_shape, warn_if_dtypes_differ

    check_reference(tuned.shape, base.shape, tuned.where, base.where)
    delta = compute_profile(
        difference_layers(tuned, base),
        difference_shape(tuned.shape),
        model=model,
        progress=progress,
        **_computing(options),
    )
    warn_if_dtypes_differ(tuned, base)  # about a difference that exists: not before a refusal (a NaN)
    return dataclasses.replace(delta, shape=tuned.shape)


def content_revision(model: str | ModelRef) -> str | None:
    """The content fingerprint of the files a model name reads, as the profile cache keys them
    (:func:`~specbound.io.checkpoints.checkpoint.fingerprint`: names, sizes, times and a content sample
    of the config and weights; for a LoRA adapter its files' and its base's, as :func:`load_profile`
    caches the pair, the base located by :func:`locate_adapter_base` as the analysis locates it),
    found without fetching or analysing anything. A Hub model's is its cached
    snapshot's; None when it is not cached (nothing can be said of it without fetching it).

    A record that caches work done on files (a trajectory's steps) keeps this beside its result, so
    weights replaced by others of the same sizes are analysed again, not taken for the old ones.

    Example:
        >>> content_revision("minilm-l6") == content_revision("minilm-l6")  # the bundled model's files
        True
    """
    from .checkpoints.hub import _cached_snapshot

    ref = resolve(model) if isinstance(model, str) else model
    if ref.source is Source.ATLAS:
        assert ref.path is not None
        return files_fingerprint(ref.path.parent, [ref.path])
    if (directory := adapter_directory(ref)) is not None:
        # the base the analysis opens, found where the loader finds it (not from the working directory)
        base_ref = resolve(locate_adapter_base(directory, fetch_hub=False))
        if adapter_directory(base_ref) is not None:
            return None  # not a base: opening the pair refuses it
        base = content_revision(base_ref)
        adapter_files = [directory / ADAPTER_CONFIG, directory / ADAPTER_WEIGHTS]
        return None if base is None else files_fingerprint(directory, adapter_files) + "+" + base
    if ref.path is not None:
        return fingerprint(ref.path)
    assert ref.repo_id is not None
    snapshot = _cached_snapshot(ref.repo_id, ref.revision)
    return None if snapshot is None else fingerprint(snapshot)
