"""The "Why p* wins" page's view: which p each matrix takes, its rank against the structural maximum, and
per matrix the scale s_W against the break-even scale below which some p > 0 would beat counting rank.

Example, on MiniLM, whose 156 matrices all take p* = 0:

    >>> import specbound
    >>> from specbound.core.bounds import BoundAnalysis
    >>> from specbound.present.explain import explain_p_star, p_star_summary
    >>> analysis = BoundAnalysis.from_profile(specbound.analyze("minilm-l6").profile)
    >>> view = why_view(analysis, p_star_summary(analysis), explain_p_star(analysis), model="minilm",
    ...                 map_expert=None, rank_kind="QK", source="minilm · p*")
    >>> view.p_map is None  # one p* for all: its map would be one block of colour
    True
    >>> view.shown_table["first_winning_p"].iloc[0]
    'none: p = 0 wins'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import pandas as pd
import plotly.graph_objects as go

from dashboard.views.common import ReportHeading, clickable_cells
from dashboard.wording.numbers import format_p
from specbound.core.architecture import Expert
from specbound.core.bounds import BoundAnalysis
from specbound.present.explain import PStarSummary, break_even
from specbound.present.figures import bounds as figures
from specbound.present.figures.html_report import ReportSection
from specbound.present.figures.spectra import rank_against_maximum

#: The report's title and the page's.
TITLE = "Why p* wins"
#: On screen, the first winning p of a matrix where none wins.
NONE_WINS = "none: p = 0 wins"


@dataclass(frozen=True)
class WhyView:
    """Why p* takes its values: the map and histogram of p*, ranks, scales against break-even."""

    heading: ReportHeading
    summary: PStarSummary
    #: the one sentence that explains p* from the model's own s_W
    sentence: str
    #: the p* map as panels (cells clickable); None when every matrix takes one p*
    p_map: figures.PStarPanels | None
    #: how many matrices take each p*, by kind; None likewise
    histogram: go.Figure | None
    #: each head (or layer) matrix's rank against its structural maximum, for the chosen kind
    ranks: go.Figure
    #: the analysis the scales below are read from, and every figure's subtitle
    analysis: BoundAnalysis
    source: str

    # The scales against break-even are drawn below the first charts (the p* map, or the ranks): built the
    # first time they are read, so the page sends its first chart before computing them.
    @cached_property
    def break_even(self) -> go.Figure:
        """s_W against s*_W, one point per matrix."""
        return figures.break_even_figure(self.analysis, source=self.source)

    @cached_property
    def table(self) -> pd.DataFrame:
        """Per matrix: p*, both scales, decades between them, the first p > 0 that wins (NaN: none), rank."""
        return break_even_table(self.analysis)

    @property
    def shown_table(self) -> pd.DataFrame:
        """The table as the page shows it: "none: p = 0 wins" instead of an empty (NaN) cell, and the
        columns that fit a projector (the decades above s*_W are the difference of the two scales shown,
        the ranks are in the chart); the CSV keeps every column, and NaN."""
        return self.table.drop(columns=["decades_above", "rank"]).assign(
            first_winning_p=[format_p(p) if p == p else NONE_WINS for p in self.table["first_winning_p"]]
        )

    def report(self) -> Sequence[ReportSection]:
        """The page's sections in its order, with its figures and table."""
        p_star = [] if self.p_map is None or self.histogram is None else [*self.p_map.figures, self.histogram]
        return [
            ReportSection("p* of every matrix", p_star, note=f"{self.summary.headline()}. {self.sentence}"),
            ReportSection("Rank against its structural maximum", [self.ranks]),
            ReportSection("Scale against break-even", [self.break_even], [self.table]),
        ]


def break_even_table(analysis: BoundAnalysis) -> pd.DataFrame:
    """Per matrix: p*, log10 s_W, log10 s*_W, the decades between them, the first p > 0 that beats
    counting rank (NaN when none does) and the rank (:func:`specbound.present.explain.break_even`)."""
    even = break_even(analysis)
    profile = analysis.profile
    return pd.DataFrame(
        {
            "matrix": [m.label for m in profile.ids],
            "p_opt": analysis.p_opt,
            "log10_scale": even.log10_scale,
            "log10_break_even": even.log10_break_even,
            "decades_above": even.decades_above,
            "first_winning_p": even.first_winning_p,
            "rank": profile.rank,
        }
    )


def p_star_varies(summary: PStarSummary) -> bool:
    """Whether the matrices take more than one p*: with one value for all, the map would be one block of
    colour and the histogram one bar, so neither is drawn (the page says so instead)."""
    return len(summary.used()) > 1


def why_view(
    analysis: BoundAnalysis,
    summary: PStarSummary,
    sentence: str,
    *,
    model: str,
    map_expert: Expert,
    rank_kind: str,
    source: str,
) -> WhyView:
    """Why p* wins in ``analysis`` (``summary`` and ``sentence``: its p* pattern and the sentence that
    explains it), the map's MLP strip of ``map_expert`` in a mixture of experts, the ranks of
    ``rank_kind``; every figure subtitled ``source``."""
    varied = p_star_varies(summary)
    return WhyView(
        heading=ReportHeading(TITLE, model, "p*", analysis.profile.shape, analysis.grid_m),
        summary=summary,
        sentence=sentence,
        p_map=(
            figures.p_star_heatmap_panels(analysis, source=source, expert=map_expert, prepare=clickable_cells)
            if varied
            else None
        ),
        histogram=figures.p_star_histogram(analysis, source=source) if varied else None,
        ranks=rank_against_maximum(analysis.profile, rank_kind, source=source),
        analysis=analysis,
        source=source,
    )
