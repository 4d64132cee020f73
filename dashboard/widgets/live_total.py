"""The Bound explorer's total follows its p sliders in the browser, in the frame the slider moves.

A slider move otherwise waits for a round trip: the browser sends the value, the fragment reruns, and
the browser renders the page two or three times before it paints the new total (about 100 ms on a
two-core machine, most of it in the browser, whatever the page holds). Here the server sends, with
each run, the total and its change against p* at every position within :data:`REACH` steps of each
slider that moves the total, formatted by :func:`dashboard.wording.totals.total_texts` exactly as the
metric shows them; a small script (``live_total.js``, a Streamlit component without a view of its
own) writes the position's texts into the metric as soon as the slider's value changes. The server's
rerun then draws the same texts and updates everything else as before. The numbers come from
:meth:`specbound.core.bounds.BoundAnalysis.sweep`: one table of c(W; p) per slider, the totals bit for
bit those of the moved assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from dashboard.widgets.controls import PChoice, moving_sliders, slider_positions, slider_step
from dashboard.widgets.presentation import LIVE_TOTAL_KEY
from dashboard.wording.text import TOTAL_LABEL
from dashboard.wording.totals import total_texts
from specbound.core.bounds import BoundAnalysis, BoundTerms

#: Slider positions on either side of the current one that the browser can show without the server;
#: a drag further than this shows the server's total when it arrives.
REACH = 25

_component = st.components.v2.component(
    "specbound_live_total", js=Path(__file__).with_name("live_total.js").read_text(encoding="utf-8")
)


@dataclass(frozen=True)
class SliderTable:
    """What the total's metric shows at some positions of one slider: position -> (value, change against p*).

    Position i is the slider's value i * step; ``now`` is the slider's position as the table was made.
    """

    step: float
    now: int
    texts: Mapping[int, tuple[str, str]]


def slider_tables(
    analysis: BoundAnalysis, choice: PChoice, terms: BoundTerms, reach: int = REACH
) -> dict[str, SliderTable]:
    """Widget key -> the total's texts at the positions of that slider near its value (and its ends), others held.

    ``terms`` are the terms at ``choice`` (the headline's): the tables start from them.
    """
    assignment = choice.assignment
    log_optimal = analysis.optimal.log_total
    step = slider_step(choice.grid_m, choice.snap)
    tables = {}
    for slider in moving_sliders(choice):
        positions = slider_positions(choice.grid_m, choice.snap, slider.p, reach)
        rows = assignment.decided_by(analysis.profile, kind=slider.kind, layer=slider.layer)
        sweep = analysis.sweep(terms, rows, np.array(list(positions.values())))
        tables[slider.key] = SliderTable(
            step,
            round(slider.p / step),
            {
                position: total_texts(float(log_total), log_optimal)
                for position, log_total in zip(positions, sweep.log_total, strict=True)
            },
        )
    return tables


def live_total(analysis: BoundAnalysis, choice: PChoice, terms: BoundTerms) -> None:
    """Mount the script that shows the total at the sliders' positions (draw it inside the explorer's fragment).

    ``terms`` are the terms at ``choice``, as the headline shows them.
    """
    tables = slider_tables(analysis, choice, terms)
    data: dict[str, Any] = {
        "label": TOTAL_LABEL,
        "sliders": {key: {"step": t.step, "now": t.now, "texts": t.texts} for key, t in tables.items()},
    }
    _component(key=LIVE_TOTAL_KEY, data=data)
