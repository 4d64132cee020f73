"""The per-layer engine: the singular values and norms of every proxy matrix, one layer at a time.

:func:`compute_profile` takes layers from any source (weights in memory, a streamed checkpoint, the
difference of two) and returns the :class:`~specbound.core.profile.SpectralProfile`; finding the
layers from a model's name, the Hub and the cache is :mod:`specbound.io.loading`'s part.

A layer's attention weights are analysed together and let go, then each feed-forward matrix alone, so
at most one layer's attention weights or one feed-forward matrix (and its Gram matrix) are held in
float64 (:func:`specbound.core.limits.layer_peak_bytes` bounds it). A feed-forward matrix over
``MAPPED_MATRIX_BYTES`` that its source can read in blocks is not even held whole: its Gram matrix and
norms are accumulated from 32 MiB blocks (:func:`~specbound.core.spectrum.gram_by_blocks`).

**Cores.** Many small layers (an encoder of BERT's size) are analysed in parallel, one layer per
core, each with serial BLAS; a large layer is analysed alone (one layer's matrices in memory), its
Gram products with every BLAS thread and its eigen-solves on one (:func:`default_workers`; the
measurements behind the choice are in ``benchmarks/bench_large.py --only cores``). With a layer cache
(:class:`LayerCache`), finished layers are kept as they come, so an interrupted analysis resumes.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .architecture import Kind, ModelShape
from .backend import Backend, BackendSpec, get_backend
from .defaults import LARGE_NORM_11
from .factored import head_spectra
from .limits import layer_peak_bytes
from .matrices import LayerSource, attention_heads, mlp_field, mlp_matrix
from .profile import SpectralProfile, full_dims_of
from .progress import ProgressCallback, ProgressEvent, silent
from .spectrum import PRODUCT_BLOCK_BYTES, gram_by_blocks, gram_singular_values, norm_11, norm_21
from .threads import serial_blas

#: A layer whose analysis holds more than this many bytes is analysed alone (its BLAS calls threaded);
#: smaller ones run in parallel, one per core (see the module docstring and benchmarks/bench_large.py).
PARALLEL_LAYER_MAX_BYTES: int = 256 * 1024**2
#: A feed-forward matrix larger than this in float64 (a 7B-class decoder's: 360 MB) is read from its
#: memory-mapped tensor block by block into its Gram matrix, never whole
#: (:func:`~specbound.core.spectrum.gram_by_blocks`).
MAPPED_MATRIX_BYTES: int = 128 * 1024**2
#: At most this many layers in parallel.
MAX_LAYER_WORKERS: int = 8


class LayerCache(Protocol):
    """Where finished layers are kept so that an interrupted analysis resumes (:class:`ResumeEntries`)."""

    def load(self, index: int, layer: LayerSource) -> LayerSpectra | None: ...

    def save(self, index: int, layer: LayerSource, spectra: LayerSpectra) -> None: ...


@dataclass(frozen=True, eq=False)
class LayerSpectra:
    """The profile rows of one layer, in profile order: singular values (2H + k, N), norms (2H + k,)."""

    singular_values: np.ndarray
    norm_21: np.ndarray
    norm_11: np.ndarray


def default_workers(shape: ModelShape, backend: Backend) -> int:
    """Layers analysed in parallel: one per core for small layers on a backend that can
    (:attr:`~specbound.core.backend.Backend.layers_in_threads`: numpy's), else one (module docstring)."""
    if not backend.layers_in_threads or layer_peak_bytes(shape) > PARALLEL_LAYER_MAX_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, shape.num_layers, MAX_LAYER_WORKERS))


def analyse_layer(
    layer: LayerSource,
    shape: ModelShape,
    backend: Backend | None = None,
    *,
    index: int | None = None,
    large_norm_11: bool = LARGE_NORM_11,
) -> LayerSpectra:
    """Singular values and (2,1), (1,1) norms of one layer's 2H + 2 (gated: 2H + 3) proxy matrices
    (the (1,1) norm of a factored product too large to form whole only with ``large_norm_11``); a
    decoder layer of an encoder-decoder has 2H more, its cross-attention's QK_x and V_x after QK and V.

    The attention weights are read and analysed first and let go (the cross-attention's after the
    self-attention's); then each feed-forward matrix is read, analysed and let go in turn, so that the
    peak is :func:`~specbound.core.limits.layer_peak_bytes`. ``index`` is the layer's place in the model, needed
    only where the stacks of an encoder-decoder have MLPs of different widths.
    """
    if index is None and shape.decoder_ffn_size:
        raise ValueError("the layer's index is needed: this encoder-decoder's stacks have MLPs of different widths")
    be = backend or get_backend()
    width = shape.hidden_size  # max(N, min(N, d_ff))
    rows_sv, rows_21, rows_11 = [], [], []
    for read in (layer.attention_weights, layer.cross_attention_weights):
        weights = read()
        if weights is None:  # no cross-attention in this layer
            continue
        for heads in attention_heads(*weights, shape):  # QK, then V (QK_x, then V_x)
            spectra = head_spectra(heads, be, large_norm_11=large_norm_11)
            sv = spectra.singular_values  # (H, <= d)
            rows_sv.append(np.pad(sv, ((0, 0), (0, width - sv.shape[1]))))
            rows_21.append(spectra.norm_21)
            rows_11.append(spectra.norm_11)
            del heads
        del weights
    for expert in shape.experts:  # one dense MLP, or expert by expert (the shared one last)
        ffn_size = shape.expert_ffn_size(expert, index)
        k_ffn = min(shape.hidden_size, ffn_size)
        by_blocks = be.reads_mapped_blocks and 8 * shape.hidden_size * ffn_size > MAPPED_MATRIX_BYTES
        for kind in shape.layer_kinds:  # M_gate (gated only), M_in, M_out
            n21, n11, sv = _feed_forward(layer, kind, mlp_field(kind, expert), be, by_blocks)
            rows_21.append(np.atleast_1d(n21))
            rows_11.append(np.atleast_1d(n11))
            rows_sv.append(np.pad(sv, (0, width - k_ffn))[None, :])
    return LayerSpectra(np.concatenate(rows_sv, axis=0), np.concatenate(rows_21), np.concatenate(rows_11))


def _feed_forward(
    layer: LayerSource, kind: Kind, field: str, be: Backend, by_blocks: bool
) -> tuple[float, float, np.ndarray]:
    """(2,1) norm, (1,1) norm and singular values of one feed-forward matrix, from its Gram matrix.

    With ``by_blocks`` a memory-mapped matrix is never held whole (its Gram matrix comes from 32 MiB
    blocks, :func:`~specbound.core.spectrum.gram_by_blocks`); otherwise it is read whole and let go once its
    Gram matrix is formed, so that the eigen-solve's copy of the Gram matrix is the peak. An
    ill-conditioned matrix falls back to the SVD of the matrix itself, read again.
    """
    mapped = layer.mlp_mapped(field) if by_blocks else None
    if mapped is not None:
        found = gram_by_blocks(mapped.blocks(PRODUCT_BLOCK_BYTES), mapped.shape)
        n21, n11, dims, gram = found.norm_21, found.norm_11, mapped.shape, found.gram
        del found, mapped
    else:
        matrix = mlp_matrix(kind, layer.mlp_weight(field))
        n21, n11, dims = float(norm_21(matrix)), float(norm_11(matrix)), (matrix.shape[0], matrix.shape[1])
        gram = be.gram(be.array(matrix))  # (min(N, d_ff), min(N, d_ff))
        del matrix
    sv = gram_singular_values(gram, dims, be)
    del gram
    if sv is None:
        sv = singular_values_dense(mlp_matrix(kind, layer.mlp_weight(field)), be)
    return n21, n11, sv


def singular_values_dense(matrix: np.ndarray, be: Backend) -> np.ndarray:
    """Every singular value of a matrix by the SVD itself (the Gram route's fallback)."""
    with be.serial_lapack():
        return be.numpy(be.svdvals(be.array(matrix)))


def compute_profile(
    layers: Iterable[LayerSource],
    shape: ModelShape,
    *,
    model: str = "",
    revision: str = "",
    progress: ProgressCallback = silent,
    backend: Backend | BackendSpec | str | None = None,
    device: str | None = None,
    workers: int | None = None,
    layer_cache: LayerCache | None = None,
    large_norm_11: bool = LARGE_NORM_11,
) -> SpectralProfile:
    """Singular values and (2,1), (1,1) norms of all L (2H + 2) (gated: L (2H + 3)) proxy matrices, layer by layer.

    ``layers`` yields each layer's weights (:class:`~specbound.core.matrices.LayerWeights`, or a streamed
    layer of a checkpoint) as a family adapter reads them (:mod:`specbound.io.checkpoints`). ``backend``
    and ``device`` choose the linear algebra (:mod:`specbound.core.backend`; numpy by default);
    ``workers`` the layers analysed in parallel (:func:`default_workers` when None). With
    ``layer_cache``, layers found there are not recomputed and each computed one is stored. Progress
    is reported after every layer, with an estimate of the time left. ``large_norm_11``: also the
    (1,1) norms of factored products too large to form whole (:data:`~specbound.core.defaults.LARGE_NORM_11`).

    Examples:
        Weights held in memory, one layer of a tiny BERT-shaped model (N = 8, two heads of d = 4):

        >>> import numpy as np
        >>> from specbound.core.matrices import LayerWeights
        >>> rng = np.random.default_rng(0)
        >>> layer = LayerWeights(
        ...     query=rng.normal(size=(8, 8)), key=rng.normal(size=(8, 8)), value=rng.normal(size=(8, 8)),
        ...     attn_out=rng.normal(size=(8, 8)), ffn_in=rng.normal(size=(16, 8)), ffn_out=rng.normal(size=(8, 16)))
        >>> profile = compute_profile([layer], ModelShape(1, 8, 2, 16), model="tiny")
        >>> profile.rank.tolist()  # QK and V of each head: rank d = 4; M_in and M_out: rank N = 8
        [4, 4, 4, 4, 8, 8]
    """
    be = backend if isinstance(backend, Backend) else get_backend(backend, device)
    workers = default_workers(shape, be) if workers is None else max(1, workers)
    parts: list[LayerSpectra] = []
    computed_seconds, computed = 0.0, 0
    total = shape.num_layers
    for index, spectra, seconds in _analysed(layers, shape, be, workers, layer_cache, large_norm_11):
        parts.append(spectra)
        if seconds is not None:
            computed_seconds, computed = computed_seconds + seconds, computed + 1
        eta = computed_seconds / computed * (total - index - 1) if computed else None
        progress(ProgressEvent("analyse", index + 1, total, f"layer {index + 1}", eta_s=eta))
    if not parts:
        raise ValueError("no layers given")
    return SpectralProfile(
        model=model,
        revision=revision,
        shape=shape,
        singular_values=np.concatenate([p.singular_values for p in parts], axis=0),  # (M, N)
        full_dims=full_dims_of(shape),
        norm_21=np.concatenate([p.norm_21 for p in parts]),
        norm_11=np.concatenate([p.norm_11 for p in parts]),
    )


def _timed(
    index: int, layer: LayerSource, shape: ModelShape, be: Backend, large_norm_11: bool
) -> tuple[LayerSpectra, float]:
    start = time.perf_counter()
    spectra = analyse_layer(layer, shape, be, index=index, large_norm_11=large_norm_11)
    return spectra, time.perf_counter() - start


def _analysed(
    layers: Iterable[LayerSource],
    shape: ModelShape,
    be: Backend,
    workers: int,
    layer_cache: LayerCache | None,
    large_norm_11: bool,
) -> Iterator[tuple[int, LayerSpectra, float | None]]:
    """(index, spectra, seconds or None when resumed from the cache) for each layer, in order.

    With several workers, at most that many layers are in flight, each in a thread with serial BLAS
    (numpy's LAPACK releases the GIL), so memory grows with the workers, not with the model.
    """
    pending: deque[tuple[int, LayerSource, Future[tuple[LayerSpectra, float]] | LayerSpectra]] = deque()
    pool = ThreadPoolExecutor(workers) if workers > 1 else None
    limits = serial_blas() if pool is not None else contextlib.nullcontext()
    try:
        with limits:
            for index, layer in enumerate(layers):
                cached = layer_cache.load(index, layer) if layer_cache is not None else None
                if cached is not None:
                    pending.append((index, layer, cached))
                elif pool is None:
                    pending.append((index, layer, pool_free_result(_timed(index, layer, shape, be, large_norm_11))))
                else:
                    pending.append((index, layer, pool.submit(_timed, index, layer, shape, be, large_norm_11)))
                while pending and (len(pending) >= workers or not isinstance(pending[0][2], Future)):
                    yield _finish(pending.popleft(), layer_cache)
            while pending:
                yield _finish(pending.popleft(), layer_cache)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def pool_free_result(result: tuple[LayerSpectra, float]) -> Future[tuple[LayerSpectra, float]]:
    """A finished Future holding ``result``: the serial path shares the parallel one's bookkeeping."""
    future: Future[tuple[LayerSpectra, float]] = Future()
    future.set_result(result)
    return future


def _finish(
    item: tuple[int, LayerSource, Future[tuple[LayerSpectra, float]] | LayerSpectra], layer_cache: LayerCache | None
) -> tuple[int, LayerSpectra, float | None]:
    index, layer, outcome = item
    if not isinstance(outcome, Future):
        return index, outcome, None
    spectra, seconds = outcome.result()
    if layer_cache is not None:
        layer_cache.save(index, layer, spectra)
    return index, spectra, seconds
