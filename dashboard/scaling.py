"""The Scaling page's data: which models can enter the study, their cached summaries, what is missing.

How a profile is placed in the study: its (L, N) is read from the profile's own shape
(``num_layers``, ``hidden_size``), never parsed from a name. Which models belong to the miniatures
family, and so are in the study by default, is decided by the name: a miniature alias ``L{l}-H{n}``
(a cached BERT Miniature, or an atlas model named that way, e.g. ``atlas:L4-H256``) whose numbers
agree with the shape. Anything else available (the bundled MiniLM, a model opened by Hub id or
directory, an atlas model with another name) is offered too, but left out unless chosen. Two models
of one (L, N) cannot share a curve: the default keeps the first (atlas models before the Hub cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from specbound.bounds import BoundAnalysis
from specbound.errors import SpecboundError
from specbound.models import (BUNDLED_ALIAS, MINIATURE_LAYERS, MINIATURE_WIDTHS, miniature_alias,
                              miniature_repo_id, parse_miniature_alias)
from specbound.profile import SpectralProfile
from specbound.progress import ProgressCallback, silent
from specbound.scaling import ModelSummary, summarize

from . import atlas, data

ATLAS, HUB_CACHE, BUNDLED, OPENED = "atlas file", "Hugging Face cache", "bundled model", "opened in this session"


@dataclass(frozen=True)
class Candidate:
    """A model that can enter the study without a download."""

    name: str  # what data.resolve_analysis opens (``atlas:`` names for atlas models)
    num_layers: int
    hidden_size: int
    origin: str
    in_family: bool

    @property
    def size(self) -> tuple[int, int]:
        return self.num_layers, self.hidden_size

    def describe(self) -> str:
        return f"{self.name} (L = {self.num_layers}, N = {self.hidden_size}; {self.origin})"


def family_member(name: str, num_layers: int, hidden_size: int) -> bool:
    """Whether a model name is a miniature alias that matches its shape (``atlas:`` prefix ignored)."""
    return parse_miniature_alias(atlas.model_in_atlas(name)) == (num_layers, hidden_size)


def candidates() -> list[Candidate]:
    """Every model available now: the session's atlas, cached miniatures, the bundled and current model."""
    found: dict[str, Candidate] = {}

    def add(name: str, layers: int, width: int, origin: str) -> None:
        if name not in found:
            found[name] = Candidate(name, layers, width, origin, family_member(name, layers, width))

    for profile in atlas.loaded():
        add(atlas.atlas_name(profile.model), profile.shape.num_layers, profile.shape.hidden_size, ATLAS)
    for entry in data.catalog_entries():
        if entry.available_offline:
            add(entry.name, entry.num_layers, entry.hidden_size, BUNDLED if entry.name == BUNDLED_ALIAS else HUB_CACHE)
    current = data.current_model()
    if current not in found:
        try:
            shape = data.resolve_analysis(current).profile.shape
            add(current, shape.num_layers, shape.hidden_size, OPENED)
        except SpecboundError:
            pass
    return list(found.values())


def default_selection(available: Sequence[Candidate]) -> list[str]:
    """The family members, one per (L, N) (the first one listed wins)."""
    chosen, sizes = [], set()
    for candidate in available:
        if candidate.in_family and candidate.size not in sizes:
            chosen.append(candidate.name)
            sizes.add(candidate.size)
    return chosen


def missing_miniatures(available: Sequence[Candidate]) -> pd.DataFrame:
    """The BERT Miniatures no available family member stands for, and how to get each."""
    covered = {c.size for c in available if c.in_family}
    rows = [{"model": miniature_alias(layers, width), "L": layers, "N": width,
             "Hub repository": miniature_repo_id(layers, width),
             "how to get it": (f"download it below or open it in the sidebar while online; or run "
                               f"`specbound grid --layers {layers} --widths {width} --out grid --atlas "
                               f"atlas.npz` where there is network and open the atlas here")}
            for layers in MINIATURE_LAYERS for width in MINIATURE_WIDTHS if (layers, width) not in covered]
    return pd.DataFrame(rows, columns=["model", "L", "N", "Hub repository", "how to get it"])


# --- summaries ----------------------------------------------------------------------------------

@st.cache_data(show_spinner=False, max_entries=256)
def _summary_record(name: str, revision: str, content: str, _profile: SpectralProfile) -> dict:
    """The summary as a plain dict (cacheable); keyed by name and revision (and content for atlases)."""
    return summarize(BoundAnalysis.from_profile(_profile), name=name).to_dict()


def _profile(name: str, progress: ProgressCallback) -> SpectralProfile:
    if atlas.is_atlas_name(name):
        return atlas.profile_named(name)
    return data.profile_for(name, data.progress_outside_cache(progress))


def summary_for(name: str, progress: ProgressCallback = silent) -> tuple[ModelSummary, SpectralProfile]:
    """A model's scaling summary (cached by name and revision) and the profile it came from.

    Goes through the profile cache, not the analysis cache, so that a study of many models does not
    push the session's open models out of it.
    """
    profile = _profile(name, progress)
    content = atlas.profile_digest(profile) if atlas.is_atlas_name(name) else ""
    return ModelSummary.from_dict(_summary_record(name, profile.revision, content, profile)), profile


def summarise(names: Sequence[str]) -> tuple[list[ModelSummary], list[SpectralProfile], list[str]]:
    """(summaries, profiles, names that failed) of the chosen models, with a progress bar.

    A model that cannot be opened is shown in an error box and left out; the others go on.
    """
    summaries, profiles, failed = [], [], []
    if not names:
        return summaries, profiles, failed
    bar = st.progress(0.0, text="Summarising the models")
    for index, name in enumerate(names):
        bar.progress(index / len(names), text=f"Summarising {name} ({index + 1} of {len(names)})")
        try:
            summary, profile = summary_for(name, data.bar_progress(bar, name))
        except (SpecboundError, OSError) as exc:
            failed.append(name)
            st.error(f"{name} left out of the study: {exc}")
            continue
        summaries.append(summary)
        profiles.append(profile)
    bar.empty()
    return summaries, profiles, failed


def download(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Download and analyse miniatures with a progress bar: (names obtained, error messages)."""
    got, errors, bar = [], [], st.progress(0.0, text="Starting the downloads")
    for name in names:
        try:
            data.profile_for(name, data.progress_outside_cache(data.bar_progress(bar, name)))
            got.append(name)
        except (SpecboundError, OSError) as exc:
            errors.append(f"Could not get {name}: {exc}")
    bar.empty()
    data.catalog_entries.clear()  # the Hub cache has changed
    return got, errors
