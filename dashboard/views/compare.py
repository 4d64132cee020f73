"""The Compare page's view: the open model against a pinned baseline, both at their own p*.

Its totals, sentences (and, when the two totals agree, why), the per-kind and per-layer sums, the
spectra of one kind and layer overlaid, and, when the baseline's weights can be a reference W⁰ for the
model's, the bound centred at it with a map of what changed, in size (SPEC §14) and in direction
(intruder dimensions of the singular vectors, SPEC §14b).

Example, MiniLM against its random-initialised twin (no weights, so no centred reading):

    >>> import specbound
    >>> from specbound.core.bounds import BoundAnalysis
    >>> from specbound.studies.twin import random_twin_of
    >>> model = BoundAnalysis.from_profile(specbound.analyze("minilm-l6").profile)
    >>> twin = BoundAnalysis.from_profile(random_twin_of(model.profile, initializer_range=0.02))
    >>> view = compare_view(model, twin, name="minilm", base_name="its twin", overlay_kind="M_in",
    ...                     overlay_layer=0, centred=lambda: "a twin has no weights", source="minilm against its twin")
    >>> view.why.startswith("**Why the totals agree:**")  # both count ranks at p* = 0
    True
    >>> [section.heading for section in view.report()]
    ['Totals', 'Per kind and per layer', 'Spectra overlaid']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.views.common import ReportHeading, clickable_cells
from dashboard.wording.numbers import format_change, format_integer, ratio_sentence
from dashboard.wording.text import plain
from specbound.core.bounds import BoundAnalysis
from specbound.core.directions import Directions
from specbound.core.logspace import exp_array
from specbound.present.figures import bounds as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.spectra import change_heatmaps, intruder_heatmaps, overlaid_spectra
from specbound.present.numbers import format_log
from specbound.present.report import centred_label
from specbound.studies.compare import Comparison, compare, totals_agree

#: The report's title and the page's.
TITLE = "Compare"
MODEL_LABEL, BASELINE_LABEL, CHANGE_LABEL = "Ours at p*: model", "Ours at p*: baseline", "model − baseline"
#: The fixed p at which the page shows that the two models do differ.
FIXED_P = 1.0
#: The sentence that explains equal totals begins so (tests read it).
WHY_AGREE = "Why the totals agree:"
#: The centred total's label begins so; the rest names the baseline (:func:`centred_label`).
CENTRED_LABEL = "Ours"
#: The heading of the centred reading's section, on the page and in its report.
CHANGED_HEADING = "What changed: size and direction"
#: Why there is no map of directions when the page's switch turned the comparison of singular vectors off.
DIRECTIONS_OFF = "the comparison of singular vectors is switched off"
INTRUDERS_LABEL = "Intruder dimensions"


def why_totals_agree(model: BoundAnalysis, base: BoundAnalysis, base_name: str) -> str | None:
    """Markdown that words :func:`specbound.studies.compare.totals_agree` with this model's numbers; None
    when the totals differ."""
    why = totals_agree(model, base, FIXED_P)
    if why is None:
        return None
    if why.counts_ranks:
        reason = (
            f"every one of the {format_integer(why.matrices)} matrices of both models takes p* = 0, where a "
            "matrix contributes √(rank · N) whatever the size of its singular values: ours = Σ √(rank · N) + √L "
            f"counts ranks only, and both models have the same ranks ({format_integer(why.rank_sum)} in all, "
            "full rank). Counting rank is the cheapest choice for both because every scale s_W lies above its "
            "break-even scale, below which some p > 0 would win."
        )
    else:
        reason = "the two models' matrices have the same ranks and take the same p*, so their terms coincide."
    (edelman, base_edelman), (fixed, base_fixed) = why.log_edelman, why.log_at_fixed_p
    return (
        f"**{WHY_AGREE}** {plain(reason)} "
        f"The two models **do** differ where sizes count: the Edelman-style proxy "
        f"({plain(format_log(edelman))} against {plain(format_log(base_edelman))}), ours at a "
        f"fixed p = {why.fixed_p:g} ({plain(format_log(fixed))} against {plain(format_log(base_fixed))}, in the "
        f"Bound explorer with p* off), the spectra below, and, on the page “Why p\\* wins”, the scales at which "
        f"p\\* would leave 0 (baseline: {plain(base_name)})."
    )


def overlay_kinds(model: BoundAnalysis, base: BoundAnalysis) -> list[str]:
    """The kinds whose spectra can be overlaid: those both models have, in the model's order."""
    return [k.value for k in model.profile.model_kinds if k in base.profile.model_kinds]


def overlay_layers(model: BoundAnalysis, base: BoundAnalysis) -> list[int]:
    """The layers whose spectra can be overlaid: those both models have."""
    return list(range(min(model.profile.shape.num_layers, base.profile.shape.num_layers)))


@dataclass(frozen=True)
class CentredView:
    """The bound centred at the baseline (the baseline's weights as W⁰) and what the model changed."""

    #: the model's analysis centred at the baseline: S_p, rank and p* of W − W⁰, the model's own scales
    analysis: BoundAnalysis
    #: "centred at BASE": what every centred number here says it is (:func:`specbound.present.report.centred_label`)
    label: str
    #: (label, value) for the centred total, the model's own total and the matrices changed
    totals: list[tuple[str, str]]
    #: what the centred reading is, and the two totals compared (plain text)
    sentence: str
    #: where W − W⁰ is large, per layer and head (its cells clickable)
    changes: go.Figure
    #: where W points away from W⁰: intruder dimensions per layer and head (SPEC §14b), or why there are none
    intruders: go.Figure | str = DIRECTIONS_OFF
    #: what the intruder map counts (plain text); empty without it
    direction_sentence: str = ""

    def section(self, base_name: str) -> ReportSection:
        figures = [self.changes] + ([self.intruders] if isinstance(self.intruders, go.Figure) else [])
        note = f"Reference W⁰: {base_name}" + (f". {self.direction_sentence}" if self.direction_sentence else "")
        return ReportSection(f"{CHANGED_HEADING}, {self.label}", figures, note=note)


def direction_sentence(directions: Directions) -> str:
    """What the intruder map counts, with its settings and how many matrices have any (plain text)."""
    settings = directions.settings
    with_any = int((directions.intruders > 0).sum())
    ties = int(directions.near_tie.sum())
    return (
        f"Intruder dimensions (Shuttleworth et al. 2025, as peft defines them): of the top k = {settings.k} "
        "left singular vectors of each matrix, those whose best |cosine| with every singular vector of the "
        f"baseline's is below ε = {settings.eps:g}; {format_integer(int(directions.intruders.sum()))} in "
        f"{format_integer(with_any)} of {format_integer(directions.intruders.size)} matrices. A random "
        "direction's best cosine is about √(2 ln k / D) (an approximation, in each cell's hover)."
        + (
            f" {format_integer(ties)} matrices have near-tied singular values: their counts may depend on the solver."
            if ties
            else ""
        )
    )


def centred_view(
    model: BoundAnalysis,
    base: BoundAnalysis,
    centred: BoundAnalysis,
    base_name: str,
    source: str,
    directions: Directions | str = DIRECTIONS_OFF,
) -> CentredView:
    """The centred reading of ``model`` at ``base`` (``centred``: the analysis of W − W⁰; ``directions``:
    where each matrix of the model points away from the baseline's, or why that is not known)."""
    delta = centred.schatten_profile
    changed = int((delta.rank > 0).sum())
    label = centred_label(base_name)
    sentence = (
        f"{label[0].upper()}{label[1:]}: each c(W; p) takes S_p, the rank and p* of the difference "
        f"W − W⁰ from the baseline, {base_name}, and keeps the scale s_W of the open model's own weights; "
        "a matrix left unchanged has rank 0 and adds nothing. "
        + ratio_sentence("Centred", centred.optimal.log_total, "the uncentred total", model.optimal.log_total)
    )
    return CentredView(
        analysis=centred,
        label=label,
        totals=[
            (f"{CENTRED_LABEL} {label}", format_log(centred.optimal.log_total)),
            (MODEL_LABEL, format_log(model.optimal.log_total)),
            ("Matrices changed", f"{format_integer(changed)} of {format_integer(delta.rank.size)}"),
        ],
        sentence=sentence,
        changes=clickable_cells(change_heatmaps(base.profile, delta, source=label)),
        intruders=directions
        if isinstance(directions, str)
        else clickable_cells(intruder_heatmaps(base.profile, directions, source=label)),
        direction_sentence="" if isinstance(directions, str) else direction_sentence(directions),
    )


@dataclass(frozen=True)
class CompareView:
    """The model against its baseline at p*: what the Compare page draws and its report holds."""

    heading: ReportHeading
    model: BoundAnalysis
    base: BoundAnalysis
    comparison: Comparison
    base_name: str
    #: every figure's subtitle
    source: str
    #: (label, value) of the headline: the model's total, the baseline's, their change
    totals: list[tuple[str, str]]
    #: the two totals and the two Edelman-style proxies compared, in words (plain text)
    sentence: str
    #: why the totals agree (markdown, its names escaped), or None when they differ
    why: str | None
    bars: go.Figure
    #: Σ c(W; p*) per kind: model, baseline, difference
    kinds: pd.DataFrame
    #: the same per layer; None when the depths differ (the layers do not correspond)
    layers: pd.DataFrame | None
    overlay: go.Figure
    #: gives the model's analysis centred at the baseline, or why there is none (:attr:`centred` reads it)
    centred_reading: Callable[[], BoundAnalysis | str]
    #: gives where the model's singular vectors moved from the baseline's (SPEC §14b), or why not known;
    #: None when the page's switch turned that comparison off (:data:`DIRECTIONS_OFF`)
    directions_reading: Callable[[], Directions | str] | None = None

    @cached_property
    def centred(self) -> CentredView | str:
        """The centred reading (:func:`centred_view`), or why there is none: read the first time it is
        asked for, since it opens both checkpoints and takes the spectra of their difference (seconds,
        when not cached), so a page draws everything above it first."""
        reading = self.centred_reading()
        if isinstance(reading, str):
            return reading
        directions = DIRECTIONS_OFF if self.directions_reading is None else self.directions_reading()
        return centred_view(self.model, self.base, reading, self.base_name, self.source, directions)

    def report(self) -> Sequence[ReportSection]:
        """The page's sections in its order, with its figures and tables."""
        tables = [self.kinds] + ([self.layers] if self.layers is not None else [])
        centred = [] if isinstance(self.centred, str) else [self.centred.section(self.base_name)]
        return [
            ReportSection("Totals", [self.bars], note=f"Baseline: {self.base_name}", totals=self.totals),
            ReportSection(
                "Per kind and per layer",
                tables=tables,
                table_captions=["Σ c(W; p*) per kind", "Σ c(W; p*) per layer"][: len(tables)],
            ),
            ReportSection("Spectra overlaid", [self.overlay]),
            *centred,
        ]


def _kind_table(comparison: Comparison) -> pd.DataFrame:
    kinds = comparison.kinds
    return pd.DataFrame(
        {
            "kind": [kind.value for kind in kinds],
            "model": exp_array([comparison.log_kind_sums_model.get(kind, -math.inf) for kind in kinds]),
            "baseline": exp_array([comparison.log_kind_sums_baseline.get(kind, -math.inf) for kind in kinds]),
            "difference": [comparison.kind_difference[kind] for kind in kinds],
        }
    )


def _layer_table(comparison: Comparison) -> pd.DataFrame | None:
    if not comparison.layers_match:
        return None
    return pd.DataFrame(
        {
            "layer": np.arange(len(comparison.log_layer_sums_model)),
            "model": exp_array(comparison.log_layer_sums_model),
            "baseline": exp_array(comparison.log_layer_sums_baseline),
            "difference": comparison.per_layer_difference,
        }
    )


def compare_view(
    model: BoundAnalysis,
    base: BoundAnalysis,
    *,
    name: str,
    base_name: str,
    overlay_kind: str,
    overlay_layer: int,
    centred: Callable[[], BoundAnalysis | str],
    source: str,
    directions: Callable[[], Directions | str] | None = None,
) -> CompareView:
    """``model`` (named ``name``) against ``base`` (``base_name``), each at its own p*, with the spectra of
    ``overlay_kind`` in ``overlay_layer`` overlaid; ``centred`` gives the model's analysis centred at the
    baseline, or why there is none, when the view's :attr:`~CompareView.centred` is first read, and
    ``directions`` then where its singular vectors moved (SPEC §14b; None: not compared, the page's switch
    off, and the centred reading is the same without its map of intruders). Every figure is subtitled
    ``source``."""
    comparison = compare(model, base, None, None)
    ours, theirs = comparison.model, comparison.baseline
    sentence = (
        ratio_sentence(f"Ours at p* for {name}", ours.log_ours_opt, "its baseline's", theirs.log_ours_opt)
        + " "
        + ratio_sentence("Its Edelman-style proxy", ours.log_edelman, "the baseline's", theirs.log_edelman)
    )
    return CompareView(
        heading=ReportHeading(TITLE, name, "p*", model.profile.shape, model.grid_m),
        model=model,
        base=base,
        comparison=comparison,
        base_name=base_name,
        source=source,
        totals=[
            (MODEL_LABEL, format_log(ours.log_ours_opt)),
            (BASELINE_LABEL, format_log(theirs.log_ours_opt)),
            (CHANGE_LABEL, format_change(ours.log_ours_opt, theirs.log_ours_opt)),
        ],
        sentence=sentence,
        why=why_totals_agree(model, base, base_name),
        bars=figures.compare_bars(comparison, source=source),
        kinds=_kind_table(comparison),
        layers=_layer_table(comparison),
        overlay=overlaid_spectra(model.profile, base.profile, overlay_kind, overlay_layer, source=source),
        centred_reading=centred,
        directions_reading=directions,
    )
