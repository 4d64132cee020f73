"""Streamlit caches wrapped around the specbound package (which model a session shows is
:mod:`dashboard.state.session`'s).

Two layers of caching, both keyed by the model name (any name of :func:`specbound.io.models.resolve`,
atlas models included):

* ``profile_for`` (``st.cache_data``): the spectral profile, i.e. every singular value and norm
  (the slow part: download, read, SVD; behind it sits specbound's own disk cache);
* ``analysis_for`` (``st.cache_resource``): the opened model as a shared object, a
  :class:`~specbound.core.bounds.BoundAnalysis` holding the profile and everything that does not depend
  on p. Pages call ``analysis.evaluate(p)`` on it, which is array arithmetic over cached singular
  values only: a slider move never reads a file or runs an SVD.

Progress is reported through specbound's callback. Streamlit records every element drawn while a
cached function runs and replays it on later cache hits; a progress bar must not be replayed (its
container no longer exists then), so :func:`progress_outside_cache` runs the drawing in the
caller's context, where no cached function is active.
"""

from __future__ import annotations

import contextvars

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard import safety
from dashboard.state import adapters
from dashboard.wording.text import plain
from specbound.core.bounds import BoundAnalysis
from specbound.core.directions import Directions
from specbound.core.limits import format_megabytes
from specbound.core.profile import SpectralProfile
from specbound.core.progress import ProgressCallback, ProgressEvent, format_eta, silent
from specbound.io import checkpoints, loading, models
from specbound.io.centred import directions_of
from specbound.io.models import ModelRef
from specbound.present.explain import PStarSummary, explain_p_star, p_star_summary


def _adapter_pair(name: str) -> tuple[ModelRef, str | None]:
    """The model a name opens and, for a LoRA adapter opened on a given base
    (:mod:`dashboard.state.adapters`), that base's name; both through the visitor rules."""
    model, base = adapters.split_base(name)
    if base is not None:
        safety.model_ref(base)  # a base too is a name a visitor gives
    return safety.model_ref(model), base


@st.cache_data(show_spinner=False, max_entries=32)
def profile_for(name: str, _progress: ProgressCallback = silent) -> SpectralProfile:
    """The spectral profile of a model (download, disk cache or computation, with progress).

    The name goes through :func:`dashboard.safety.model_ref`: what a visitor may open is decided there.
    """
    ref, base = _adapter_pair(name)
    return loading.load_profile(ref, progress=_progress, adapter_base=base)


@st.cache_resource(show_spinner=False, max_entries=8)
def analysis_for(name: str, _progress: ProgressCallback = silent) -> BoundAnalysis:
    """The opened model: its profile and the p-independent bound terms, shared by all sessions."""
    return BoundAnalysis.from_profile(profile_for(name, _progress))


@st.cache_resource(show_spinner=False, max_entries=4)
def centred_for(name: str, base: str) -> BoundAnalysis:
    """The model's bound centred at ``base`` (SPEC §14): the scales of its own analysis, S_p of the
    difference of the two checkpoints' weights, shared by all sessions. Both names go through the
    visitor rules; a reference that does not match raises the package's one-line error."""
    (model, model_base), (reference_model, reference_base) = _adapter_pair(name), _adapter_pair(base)
    tuned = loading.open_weights(model, adapter_base=model_base)
    reference = loading.open_weights(reference_model, adapter_base=reference_base)
    delta = loading.difference_profile(tuned, reference, model=f"{name} - {base}")
    return BoundAnalysis.from_profile(analysis_for(name).profile, delta=delta)


@st.cache_resource(show_spinner=False, max_entries=4)
def directions_for(name: str, base: str) -> Directions:
    """Where the model's singular vectors moved from ``base``'s (SPEC §14b): intruder dimensions and
    top-k subspace overlaps at peft's k and ε, shared by all sessions; names as :func:`centred_for`'s."""
    tuned = loading.open_weights(safety.model_ref(name))
    reference = loading.open_weights(safety.model_ref(base))
    return directions_of(tuned, reference)


@st.cache_data(show_spinner=False)
def catalog_entries() -> list[models.CatalogEntry]:
    """The bundled model and the 24 miniatures with their offline availability.

    Looking at the Hub cache reads the disk, so it is done once and again only after a model is
    opened (see :func:`reopen`), never on a slider move.
    """
    return models.catalog(checkpoints.is_cached)


def progress_outside_cache(callback: ProgressCallback) -> ProgressCallback:
    """Wrap a callback that draws Streamlit elements so that the caches do not record the drawing."""
    context = contextvars.copy_context()

    def forward(event: ProgressEvent) -> None:
        context.run(callback, event)

    return forward


def bar_progress(bar: DeltaGenerator, model: str) -> ProgressCallback:
    """Show specbound's progress events for ``model`` in an ``st.progress`` bar.

    Downloads report bytes of each file, the analysis its layers.
    """
    shown = plain(model)

    def update(event: ProgressEvent) -> None:
        if event.stage == "download":
            done, total = format_megabytes(event.done), format_megabytes(event.total)
            text = f"{shown}: downloading {plain(event.detail)}, {done} of {total}"
        else:
            text = (
                f"{shown}: computing spectra, {plain(event.detail)} of {event.total:g}"
                if event.total
                else f"{shown}: computing spectra"
            )
            if eta := format_eta(event.eta_s):
                text += f" ({eta})"
        bar.progress(event.fraction or 0.0, text=text)

    return update


def hub_download_plan(name: str) -> checkpoints.DownloadPlan | None:
    """What opening ``name`` would download from the Hub, or None when nothing (not a Hub model, cached).

    Fetches and checks the model's config.json and sizes its weights from the Hub's metadata, so the
    size can be shown before any weight is fetched; raises LimitExceededError above the download cap
    (``SPECBOUND_MAX_DOWNLOAD_MB``, :mod:`specbound.core.limits`) and the errors of a download otherwise.
    """
    ref = _adapter_pair(name)[0]
    if ref.source is not models.Source.HUB or ref.repo_id is None or checkpoints.is_cached(ref.repo_id):
        return None
    if checkpoints.offline_mode():
        return None  # opening says that the model is not cached and the Hub is off
    plan = checkpoints.download_plan(ref)
    plan.check_cap()
    return plan


def reopen(name: str, progress: ProgressCallback = silent) -> BoundAnalysis:
    """The analysis of ``name``, read again: an explicit open drops the in-memory caches for this name
    first, so a checkpoint rewritten in place since (a directory after more training) is read again,
    while an unchanged one comes back from specbound's disk cache, keyed by its revision, in
    milliseconds. The catalog's offline marks are read again too (a download may have changed them).
    Which model a session shows is :mod:`dashboard.state.session`'s."""
    profile_for.clear(name)
    analysis_for.clear(name)
    explanation_for.clear(name)
    result = analysis_for(name, progress_outside_cache(progress))
    catalog_entries.clear()
    return result


@st.cache_resource(show_spinner=False, max_entries=16)
def explanation_for(name: str) -> tuple[PStarSummary, str]:
    """The p* summary of a model and the one sentence that explains it from its own s_W (cached per model)."""
    analysis = analysis_for(name)
    return p_star_summary(analysis), explain_p_star(analysis)
