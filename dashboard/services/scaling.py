"""The Scaling page's data: which models can enter the study, their cached summaries, what is missing.

How a profile is placed in the study: its (L, N) is read from the profile's own shape
(``num_layers``, ``hidden_size``), never parsed from a name. Which models belong to the miniatures
family, and so are in the study by default: a cached BERT Miniature, and an atlas model whose shape
is a miniature's (depth and width on the grid, heads of 64; whatever its name, e.g. a directory path)
or whose name is a miniature alias ``L{l}-H{n}`` that agrees with its shape. Anything else available
(the bundled MiniLM, a model opened by Hub id or directory) is offered too, but left out unless chosen.
Two models of one (L, N) cannot share a curve: the default keeps the first (atlas models before the
Hub cache).

The other families are the lab's (:func:`lab_candidates`): the final checkpoints of the depth x width
family of a shipped lab sweep, small encoders (the threshold task) or GPT-2 decoders (the Markov task)
trained by the specbound lab, so a class sees growth curves of trained models with no network. The
scaling grid (four depths by three widths) stands in for the Miniatures offline: the fewest sizes from
which a growth exponent along either size has an interval. Their
atlas is put in the upload store like an uploaded one, so they are opened by the same names as any
uploaded atlas model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler
from streamlit.delta_generator import DeltaGenerator

from dashboard import safety
from dashboard.state import atlas, data, session, share
from dashboard.wording.numbers import styled_table
from dashboard.wording.text import plain
from specbound.core.architecture import ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.defaults import DEFAULT_MODEL
from specbound.core.errors import SpecboundError
from specbound.core.profile import SpectralProfile
from specbound.core.progress import ProgressCallback, silent
from specbound.core.proxies import Proxy
from specbound.io import atlas as sb_atlas
from specbound.io.models import (
    MINIATURE_HEAD_SIZE,
    MINIATURE_LAYERS,
    MINIATURE_WIDTHS,
    is_miniature,
    miniature_alias,
    miniature_repo_id,
    parse_miniature_alias,
)
from specbound.present.figures.scaling import PROXY_LABELS
from specbound.present.numbers import format_count
from specbound.studies.scaling import CONFIDENCE, MEASURED_COLUMNS, MIN_SIZES, ModelSummary, summarize
from specbound_lab import reference as lab_reference

#: The study's models in a link: each by the name a link carries (an uploaded atlas by its digest).
MODELS_CODEC = share.Codec(
    parse=lambda text: [atlas.from_link(part) for part in text.split(",") if part],
    format=lambda names: ",".join(atlas.link_form(name) for name in names),
)

ATLAS, HUB_CACHE, BUNDLED, OPENED = "atlas file", "Hugging Face cache", "bundled model", "opened in this session"
LAB_REFERENCE = "trained by the specbound lab on the sparse threshold task, not a BERT Miniature"
#: Where each shipped lab family's models come from, by the key of its reference.
LAB_ORIGINS: dict[str, str] = {
    lab_reference.THRESHOLD_REFERENCE.key: LAB_REFERENCE,
    lab_reference.DECODER_REFERENCE.key: "a GPT-2 decoder trained by the specbound lab on the Markov task, "
    "not a released model",
    lab_reference.SCALING_REFERENCE.key: "the lab's scaling grid, trained on the sparse threshold task as a "
    "stand-in for the BERT Miniatures, not one of them",
}


@dataclass(frozen=True)
class Candidate:
    """A model that can enter the study without a download."""

    name: str  # what data.analysis_for opens (``atlas:FILE#MODEL`` for atlas models)
    num_layers: int
    hidden_size: int
    origin: str
    in_family: bool
    shown: str | None = None  # how it is named on screen, when not by atlas.display_name

    @property
    def label(self) -> str:
        return self.shown or atlas.display_name(self.name)

    @property
    def size(self) -> tuple[int, int]:
        return self.num_layers, self.hidden_size

    def describe(self) -> str:
        """The model's chip in the picker, short enough for a 1024-pixel window: its name, its size, and a
        mark when it is not of the family (where each comes from: :func:`origins_note`)."""
        outside = "" if self.in_family else " · not of the family"
        return f"{self.label} · L = {self.num_layers}, N = {self.hidden_size}{outside}"


def origins_note(chosen: list[Candidate]) -> str:
    """Where the chosen models come from, in one line: 'Hugging Face cache: L2-H128, L4-H256 · bundled model: …'."""
    by_origin: dict[str, list[str]] = {}
    for candidate in chosen:
        by_origin.setdefault(candidate.origin, []).append(candidate.label)
    return " · ".join(
        f"{origin}: {format_count(len(names), 'model')}" if len(names) > 3 else f"{origin}: {', '.join(names)}"
        for origin, names in by_origin.items()
    )


def family_member(shape: ModelShape, name: str = "") -> bool:
    """Whether a model stands for a BERT Miniature: a miniature's shape (L and N on the grid, heads of
    64), or a name that is a miniature alias agreeing with the shape."""
    layers, width = shape.num_layers, shape.hidden_size
    if is_miniature(layers, width) and shape.num_heads * MINIATURE_HEAD_SIZE == width:
        return True
    return parse_miniature_alias(name) == (layers, width)


def candidates() -> list[Candidate]:
    """Every model available now: the session's atlas, cached miniatures, the bundled and current model."""
    found: dict[str, Candidate] = {}

    def add(name: str, layers: int, width: int, origin: str, in_family: bool) -> None:
        if name not in found:
            found[name] = Candidate(name, layers, width, origin, in_family)

    file = atlas.loaded_file()
    for profile in atlas.loaded():
        shape: ModelShape = profile.shape
        assert file is not None
        add(
            atlas.model_name(file, profile.model),
            shape.num_layers,
            shape.hidden_size,
            ATLAS,
            family_member(shape, profile.model),
        )
    for entry in data.catalog_entries():
        if entry.available_offline:
            bundled = entry.name == DEFAULT_MODEL
            add(entry.name, entry.num_layers, entry.hidden_size, BUNDLED if bundled else HUB_CACHE, not bundled)
    current = session.current_model()
    if current not in found:
        try:
            shape = data.analysis_for(current).profile.shape
            add(current, shape.num_layers, shape.hidden_size, OPENED, False)
        except SpecboundError:
            pass
    return list(found.values())


@st.cache_resource(show_spinner=False)
def _lab_family_file(key: str) -> Path:
    """A shipped lab sweep's family atlas in the upload store (written once per store)."""
    shipped = next(s for s in lab_reference.EXPORTED if s.key == key)
    source = shipped.directory / lab_reference.ATLAS_FILE
    return atlas.store_upload(source.name, source.read_bytes())


def lab_candidates(key: str = lab_reference.THRESHOLD_REFERENCE.key) -> list[Candidate]:
    """A shipped lab sweep's depth x width family (final checkpoints), every one in the family of the
    study: the threshold task's encoders by default, ``key`` names another reference (:data:`LAB_ORIGINS`)."""
    path = _lab_family_file(key)
    return [
        Candidate(
            atlas.model_name(path, entry.name),
            entry.shape.num_layers,
            entry.shape.hidden_size,
            LAB_ORIGINS[key],
            True,
            shown=atlas.shown_member(entry.name),  # the run's words, not its run id
        )
        for entry in sb_atlas.read_manifest(path).entries
    ]


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
    rows = [
        {
            "model": miniature_alias(layers, width),
            "L": layers,
            "N": width,
            "Hub repository": miniature_repo_id(layers, width),
            "how to get it": (
                f"download it below or open it in the sidebar while online; or run "
                f"`specbound grid --layers {layers} --widths {width} --out grid --atlas "
                f"atlas.npz` where there is network and open the atlas here"
            ),
        }
        for layers in MINIATURE_LAYERS
        for width in MINIATURE_WIDTHS
        if (layers, width) not in covered
    ]
    return pd.DataFrame(rows, columns=["model", "L", "N", "Hub repository", "how to get it"])


# --- the exponents table -----------------------------------------------------------------------

#: Columns of the exponents table shown on the page, in order. The ordinary r² (it counts a pooled
#: fit's group intercepts as explained) and the intercepts stay in the CSV download only.
EXPONENT_ORDER = (
    "proxy",
    "against",
    "fixed",
    "model",
    "slope",
    "slope_se",
    "ci_low",
    "ci_high",
    "r_squared_within",
    "residual_df",
    "num_sizes",
    "num_points",
    "num_groups",
    "few_points",
    "better_fit",
)


#: The columns of an exponent's uncertainty, left empty ("—") on screen for a fit on too few sizes.
NO_INTERVAL_FROM_FEW = ("slope_se", "ci_low", "ci_high")


def exponents_shown(frame: pd.DataFrame) -> Styler:
    """The exponents table as the page shows it: proxies by their plain names, numbers in the project's
    format and "—" in empty cells (the fixed size of a pooled fit, a standard error without residual
    degrees of freedom, and the interval of a fit on fewer than three sizes), the values themselves kept
    so that the columns sort as numbers."""
    frame = frame.copy()
    # no interval from fewer than MIN_SIZES sizes: two points fit any law, and their spread says nothing
    frame.loc[frame["few_points"].astype(bool), list(NO_INTERVAL_FROM_FEW)] = float("nan")
    numbers = {column: "number" for column in ("slope", "slope_se", "ci_low", "ci_high", "r_squared_within")}
    counts = {column: "integer" for column in ("fixed", "residual_df", "num_sizes", "num_points", "num_groups")}
    styler = styled_table(frame, numbers | counts)
    return styler.format(lambda value: PROXY_LABELS.get(Proxy(value), str(value)), subset=["proxy"])


def models_shown(frame: pd.DataFrame) -> tuple[Styler, dict[str, Any]]:
    """The study's models table as the page shows it (:func:`specbound.studies.scaling.summaries_frame`): each
    proxy's value and its log10 under the proxy's plain name, in the project's number format, "—"
    where a proxy is not recorded or overflows; the values kept for sorting. Returns the table and
    its column headers."""
    formats: dict[str, str] = {"L": "integer", "N": "integer", "H": "integer"}
    # wider than a projector: the model stays in view while the proxies scroll sideways
    columns: dict[str, Any] = {"name": st.column_config.TextColumn("Model", pinned=True)}
    for proxy in Proxy:
        if proxy.value in frame.columns:
            formats |= {proxy.value: "number", f"{proxy.value}_log10": "log10"}
            columns[proxy.value] = st.column_config.NumberColumn(PROXY_LABELS[proxy])
            columns[f"{proxy.value}_log10"] = st.column_config.NumberColumn(f"log10 {PROXY_LABELS[proxy]}")
    return styled_table(frame, formats), columns


def exponent_columns() -> dict[str, Any]:
    """Readable headers (and help) for the columns of :func:`specbound.studies.scaling.exponents_frame`."""
    level = f"{CONFIDENCE:.0%}"
    number = st.column_config.NumberColumn
    return {
        "proxy": st.column_config.TextColumn("Proxy", pinned=True),  # in view while the fits scroll sideways
        "against": st.column_config.TextColumn("Against", help="The size that varies: depth L or width N."),
        "fixed": number("Fixed at", help="The value of the other size; empty for the pooled fit over all groups."),
        "model": st.column_config.TextColumn(
            "Law",
            help="power: ln proxy against ln size (slope = exponent); log-linear: ln proxy against L "
            "(slope = growth rate per layer, e to the slope = factor per layer).",
        ),
        "slope": number("Slope"),
        "slope_se": number("± s.e.", help="Standard error of the slope; empty with no residual degree of freedom."),
        "ci_low": number(f"{level} CI low", help="Student-t interval on the residual df."),
        "ci_high": number(f"{level} CI high"),
        "r_squared_within": number(
            "r² within groups",
            help="1 − SS_res / SS_within: the share of the variation inside each group that the slope explains.",
        ),
        "residual_df": number("Residual df", help="Number of models − number of groups − 1."),
        "num_sizes": number("Sizes"),
        "num_points": number("Models"),
        "num_groups": number("Groups"),
        "few_points": st.column_config.CheckboxColumn(
            f"Fewer than {MIN_SIZES} sizes", help="Two points fit any law exactly: r² = 1 is no evidence."
        ),
        "better_fit": st.column_config.TextColumn(
            "Better fit",
            help="The law with the smaller residual variance (against L only); undecided with "
            f"fewer than {MIN_SIZES} sizes or a tie.",
        ),
    }


# --- measured beside predicted ----------------------------------------------------------------

#: Columns of the measured-beside-predicted table (:func:`specbound.studies.scaling.measured_growth_frame`).
MEASURED_ORDER = MEASURED_COLUMNS


def measured_shown(frame: pd.DataFrame) -> Styler:
    """The measured-beside-predicted table as the page shows it: proxies by their plain names, exponents
    in the project's number format, "—" where no law is predicted or no interval is honest."""
    numbers = {column: "number" for column in ("predicted_exponent", "measured_exponent", "ci_low", "ci_high")}
    counts = {column: "integer" for column in ("num_sizes", "num_points")}
    styler = styled_table(frame, numbers | counts)
    return styler.format(lambda value: PROXY_LABELS.get(Proxy(value), str(value)), subset=["proxy"])


def measured_columns() -> dict[str, Any]:
    """Readable headers (and help) for the measured-beside-predicted table."""
    level = f"{CONFIDENCE:.0%}"
    number = st.column_config.NumberColumn
    return {
        "proxy": st.column_config.TextColumn("Proxy", pinned=True),
        "against": st.column_config.TextColumn("Against", help="The size that varies: depth L or width N."),
        "predicted_law": st.column_config.TextColumn(
            "Predicted law", help="What the bound's theory predicts under fixed per-layer norm radii; none in N."
        ),
        "predicted_exponent": number("Predicted exponent"),
        "measured_exponent": number(
            "Measured exponent", help="The pooled slope of ln proxy against ln size: one slope, an intercept per group."
        ),
        "ci_low": number(
            f"{level} CI low",
            help=f"Student-t interval on the slope's residual degrees of freedom; none from fewer than {MIN_SIZES} "
            "sizes, through which any law fits.",
        ),
        "ci_high": number(f"{level} CI high"),
        "num_sizes": number("Sizes"),
        "num_points": number("Models"),
        "agreement": st.column_config.TextColumn(
            "Against the prediction",
            help="holds: the interval contains the predicted exponent; steeper or flatter: the whole interval "
            "lies above or below it (ours is predicted √L or better: flatter agrees with the theory).",
        ),
    }


# --- summaries ----------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=256)
def _summary_record(name: str, shown: str, revision: str, content: str, _profile: SpectralProfile) -> dict[str, Any]:
    """The summary as a plain dict (cacheable), named ``shown``; keyed by name, revision and content."""
    return summarize(BoundAnalysis.from_profile(_profile), name=shown).to_dict()


def summary_for(
    name: str, progress: ProgressCallback = silent, shown: str | None = None
) -> tuple[ModelSummary, SpectralProfile]:
    """A model's scaling summary (cached by name, revision and content) and the profile it came from.

    Goes through the profile cache, not the analysis cache, so that a study of many models does not
    push the session's open models out of it.
    """
    profile = data.profile_for(name, data.progress_outside_cache(progress))
    content = atlas.profile_digest(profile)
    record = _summary_record(name, shown or atlas.display_name(name), profile.revision, content, profile)
    return ModelSummary.from_dict(record), profile


def summarise(
    names: Sequence[str], bar: DeltaGenerator, shown: Mapping[str, str] | None = None
) -> tuple[list[ModelSummary], list[SpectralProfile], dict[str, str]]:
    """(summaries, profiles, the message of each name that failed) of the chosen models, their progress
    written into the page's placeholder ``bar`` (emptied at the end); ``shown`` names models on screen
    where :func:`atlas.display_name` would not say what they are.

    A model that cannot be opened is left out with its message, for the page to show; the others go on.
    """
    summaries: list[ModelSummary] = []
    profiles: list[SpectralProfile] = []
    failed: dict[str, str] = {}
    if not names:
        return summaries, profiles, failed
    bar.progress(0.0, text="Summarising the models")
    for index, name in enumerate(names):
        given = (shown or {}).get(name)
        label = given or atlas.display_name(name)
        bar.progress(index / len(names), text=f"Summarising {plain(label)} ({index + 1} of {len(names)})")
        try:
            summary, profile = summary_for(name, data.bar_progress(bar, label), given)
        except (SpecboundError, OSError) as exc:
            failed[name] = f"{plain(label)} left out of the study: {plain(safety.public_message(exc))}"
            continue
        summaries.append(summary)
        profiles.append(profile)
    bar.empty()
    return summaries, profiles, failed


def plan_downloads(names: Sequence[str]) -> tuple[list[str], int, list[str]]:
    """Before any weight is fetched: (names that need a download, their total bytes, error messages).

    Each model's config.json is fetched and checked and its weights sized from the Hub's metadata
    (:func:`data.hub_download_plan`); a model above the download cap, or one that cannot be reached, is
    reported and left out.
    """
    needed, total, errors = [], 0, []
    for name in names:
        try:
            plan = data.hub_download_plan(name)
        except (SpecboundError, OSError) as exc:
            errors.append(f"Could not get {plain(name)}: {plain(safety.public_message(exc))}")
            continue
        needed.append(name)
        total += 0 if plan is None else plan.total_bytes
    return needed, total, errors


def download(names: Sequence[str], bar: DeltaGenerator) -> tuple[list[str], list[str]]:
    """Download and analyse miniatures, their progress written into the page's placeholder ``bar``
    (emptied at the end): (names obtained, error messages)."""
    got: list[str] = []
    errors: list[str] = []
    bar.progress(0.0, text="Starting the downloads")
    for name in names:
        try:
            data.profile_for(name, data.progress_outside_cache(data.bar_progress(bar, name)))
            got.append(name)
        except (SpecboundError, OSError) as exc:
            errors.append(f"Could not get {plain(name)}: {plain(safety.public_message(exc))}")
    bar.empty()
    data.catalog_entries.clear()  # the Hub cache has changed
    return got, errors
