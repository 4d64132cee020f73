"""The Bound explorer's view at one p assignment: its sentences, figures and tables, and its report.

Everything here follows from the analysis, the terms at the chosen p (``analysis.evaluate``) and the
page's two choices that are not p: how the per-layer sums are drawn, and which matrices' curves are
drawn. The depth factors do not depend on p, so the page builds them once per run
(:func:`depth_figure`) and every view at a new p reuses them.

Example (what the page does after its widgets, and what a test does without them):

    >>> import specbound
    >>> from specbound.core.bounds import BoundAnalysis, PAssignment
    >>> analysis = BoundAnalysis.from_profile(specbound.analyze("minilm-l6").profile)
    >>> half = PAssignment(default=0.5)
    >>> view = explorer_view(analysis, analysis.evaluate(half), assignment=half, p_text="default p = 0.5",
    ...                      model="minilm", sums_view=figures.SumsView.LOG, curve_rows=[0, 1],
    ...                      depth=depth_figure(analysis, "minilm"), source="minilm · default p = 0.5")
    >>> view.kind_table["kind"].tolist()
    ['QK', 'V', 'M_in', 'M_out']
    >>> [section.heading for section in view.report()][:2]  # the report: the same figures and tables
    ['Totals', 'Where the total comes from']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import pandas as pd
import plotly.graph_objects as go

from dashboard.views.common import ReportHeading
from dashboard.wording.numbers import format_number, ratio_sentence
from dashboard.wording.text import (
    BOUND_NOTE,
    EDELMAN_LABEL,
    OPTIMAL_LABEL,
    SQRT_DEPTH_LABEL,
    TOTAL_LABEL,
    with_centring,
)
from dashboard.wording.totals import headline_sentence, kind_shares, kind_shares_sentence, total_texts
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis, BoundTerms, PAssignment
from specbound.core.logspace import exp_array
from specbound.core.proxies import Proxy
from specbound.present.figures import bounds as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.style import Quantity
from specbound.present.numbers import format_log
from specbound.present.report import CENTRED_PREFIX, layer_frame, terms_frame

#: The report's title and the page's.
TITLE = "Bound explorer"
#: The per-layer table's headers on screen, under a caption that says they are sums of c(W; p).
LAYER_TABLE_LABELS = {f"sum_c_{kind.value}": kind.value for kind in Kind} | {"sum_c": "all kinds"}


def depth_figure(analysis: BoundAnalysis, source: str) -> go.Figure:
    """α⁽ℓ⁾ and ξ⁽ℓ⁾ per layer: independent of p, so built once per page run, not once per p."""
    return figures.depth_factors(analysis, source=source)


def choice_sentence(
    analysis: BoundAnalysis, terms: BoundTerms, assignment: PAssignment, centring: str | None = None
) -> str:
    """How ours at the chosen p compares with the Edelman-style proxy; at the defaults (every matrix at
    its p*) the Overview's headline sentence, so the two pages say it alike. Centred, the sentence
    begins by saying so (``centring``: "centred at BASE")."""
    if centring is not None:
        return f"{with_centring('Both proxies', centring)}. " + ratio_sentence(
            TOTAL_LABEL, terms.log_total, "the Edelman-style proxy", analysis.log_edelman
        )
    if assignment == PAssignment():
        return headline_sentence(analysis)
    return ratio_sentence(TOTAL_LABEL, terms.log_total, "the Edelman-style proxy", analysis.log_edelman)


@dataclass(frozen=True)
class ExplorerView:
    """The Bound explorer at ``terms``: the figures as drawn and the tables on demand.

    The tables cost a frame per matrix, so they are built the first time they are read (the page reads
    them only while their section is open; the report always does), then kept with the view.
    """

    heading: ReportHeading
    analysis: BoundAnalysis
    terms: BoundTerms
    #: ours at the chosen p against the Edelman-style proxy, in words
    sentence: str
    #: ours at p, ours at p* and the Edelman-style proxy side by side (the page's first chart)
    proxies: go.Figure
    #: "Share of the total by kind: QK 38.8 % · …"
    shares_sentence: str
    #: how the per-layer sums are drawn, the rows of the matrices whose curves are drawn, every subtitle
    sums_view: figures.SumsView
    curve_rows: Sequence[int]
    source: str
    #: α⁽ℓ⁾ and ξ⁽ℓ⁾ per layer (:func:`depth_figure`), or what builds it (drawn at the foot of the page)
    depth_source: go.Figure | Callable[[], go.Figure]
    #: "centred at BASE" when the analysis is centred (SPEC §14): every label, heading and table says it
    centring: str | None = None

    # The figures below the first chart are built the first time they are read, so the page sends its
    # first chart (:attr:`proxies`) before computing them.
    @cached_property
    def sums(self) -> go.Figure:
        """Σ c(W; p) per layer and kind, drawn as the page's choice says."""
        return figures.term_sums(self.analysis, self.terms, self.sums_view, source=self.source)

    @cached_property
    def curves(self) -> go.Figure | None:
        """c(W; p) against p for the chosen matrices; None when none is chosen."""
        if not self.curve_rows:
            return None
        return figures.contribution_curves(self.analysis, list(self.curve_rows), self.terms, source=self.source)

    @cached_property
    def depth(self) -> go.Figure:
        """α⁽ℓ⁾ and ξ⁽ℓ⁾ per layer."""
        return self.depth_source if isinstance(self.depth_source, go.Figure) else self.depth_source()

    @property
    def totals(self) -> list[tuple[str, str]]:
        """The headline's numbers as the page writes them: ours at p (with its change against p*), ours
        at p*, the Edelman-style proxy and √L."""
        value, change = total_texts(self.terms.log_total, self.analysis.optimal.log_total)
        centring = self.centring
        return [
            (with_centring(TOTAL_LABEL, centring), f"{value} ({change})"),
            (with_centring(OPTIMAL_LABEL, centring), format_log(self.analysis.optimal.log_total)),
            (with_centring(EDELMAN_LABEL, centring), format_log(self.analysis.log_edelman)),
            (SQRT_DEPTH_LABEL, format_number(self.terms.sqrt_depth)),
        ]

    @cached_property
    def terms_table(self) -> pd.DataFrame:
        """Every term per matrix (:func:`specbound.present.report.terms_frame`), named by matrix."""
        table = terms_frame(self.analysis, self.terms)
        table.insert(0, "matrix", [matrix.label for matrix in self.analysis.profile.ids])
        return table

    @cached_property
    def layer_table(self) -> pd.DataFrame:
        """Σ c(W; p) per layer and kind, log10 α⁽ℓ⁾ and Edelman's ξ⁽ℓ⁾
        (:func:`~specbound.present.report.layer_frame`)."""
        return layer_frame(self.analysis, self.terms)

    @cached_property
    def kind_table(self) -> pd.DataFrame:
        """Σ c(W; p) per kind and its share of the total (the numbers of :attr:`shares_sentence`);
        centred, its columns are named as every centred column is (``delta_sum_c``, ``delta_share``)."""
        log_sums, shares = self.terms.log_per_kind(), kind_shares(self.terms)
        kinds = self.terms.model_kinds
        prefix = "" if self.centring is None else CENTRED_PREFIX
        return pd.DataFrame(
            {
                "kind": [k.value for k in kinds],
                f"{prefix}sum_c": exp_array([log_sums[k] for k in kinds]),
                f"{prefix}share": [shares[k] for k in kinds],
            }
        )

    def report(self) -> Sequence[ReportSection]:
        """The page's sections in its order, with its figures and tables."""
        centring = self.centring
        return [
            ReportSection(
                with_centring("Totals", centring),
                [self.proxies],
                note=f"{self.sentence} {BOUND_NOTE}",
                totals=self.totals,
            ),
            ReportSection(with_centring("Where the total comes from", centring), [self.sums], [self.kind_table]),
            ReportSection(
                with_centring("c(W; p) against p", centring), [self.curves] if self.curves is not None else []
            ),
            ReportSection(
                with_centring("Every term", centring),
                tables=[self.terms_table, self.layer_table],
                table_captions=["Per matrix", "Per layer"],
            ),
            ReportSection(with_centring("Depth factors", centring), [self.depth]),
        ]


def explorer_view(
    analysis: BoundAnalysis,
    terms: BoundTerms,
    *,
    assignment: PAssignment,
    p_text: str,
    model: str,
    sums_view: figures.SumsView,
    curve_rows: Sequence[int],
    depth: go.Figure | Callable[[], go.Figure],
    source: str,
    centring: str | None = None,
) -> ExplorerView:
    """The explorer at ``terms`` (the analysis evaluated at ``assignment``, described as ``p_text``):
    the per-layer sums drawn as ``sums_view``, the curves of the matrices at ``curve_rows`` (none: no
    curves), every figure built here subtitled ``source``; ``depth`` is the page's, built once per run (or
    what builds it, called when the report or the page's foot first reads :attr:`ExplorerView.depth`).
    The sums, the curves and the depth factors are built when first read, after the first chart is drawn.
    ``centring`` ("centred at BASE", :func:`specbound.present.report.centred_label`) when ``analysis`` is
    centred: the report's title and headings, the totals' labels and the tables' columns say it (the
    figures say it through ``source``)."""
    return ExplorerView(
        heading=ReportHeading(with_centring(TITLE, centring), model, p_text, analysis.profile.shape, analysis.grid_m),
        analysis=analysis,
        terms=terms,
        sentence=choice_sentence(analysis, terms, assignment, centring),
        proxies=figures.proxy_comparison(
            {
                Quantity.OURS_AT_P: terms.log_total,
                Proxy.OURS: analysis.optimal.log_total,
                Proxy.EDELMAN: analysis.log_edelman,
            },
            source=source,
        ),
        shares_sentence=kind_shares_sentence(terms),
        sums_view=sums_view,
        curve_rows=tuple(curve_rows),
        source=source,
        depth_source=depth,
        centring=centring,
    )
