"""Drill-down: one matrix opened from a table row, a heatmap cell or a picker, with everything about it.

The open matrix is a shareable picker (:data:`MATRIX_KEY`, its profile-order index in the link); a
click on a table row or a heatmap cell sets the picker through a callback that runs before the page
draws it. The detail shows the matrix's spectrum, its c(W; p) curve with p* and the current p, its γ,
s_W, p* and share of the total.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard.state import share
from dashboard.widgets import tables
from dashboard.widgets.export import show_figure
from dashboard.widgets.presentation import HEADLINE_KEY
from dashboard.wording.numbers import format_log10, format_p, format_percent
from dashboard.wording.text import plain, with_centring
from specbound.core.architecture import SELF_KINDS, Expert, Kind, ModelShape
from specbound.core.bounds import BoundAnalysis, BoundTerms
from specbound.core.logspace import to_log10
from specbound.core.profile import MatrixId, SpectralProfile
from specbound.present.figures import bounds as bound_figures
from specbound.present.figures import spectra as spectra_figures
from specbound.present.numbers import format_log

#: Session-state key (and link parameter) of the open matrix: its profile-order index, or None.
MATRIX_KEY = "matrix"
MATRIX_CODEC = share.Codec(int, str)
#: Key of the container of the open matrix's detail (CSS class ``st-key-drilldown``).
DETAIL_KEY = "drilldown"
#: Key of the element of the script that scrolls the detail into view (it shows nothing of its own).
FOCUS_SCRIPT_KEY = "drilldown_focus"
#: Session-state key: a click, or the link the page was opened with, opened a matrix, and the next run
#: brings its detail into view (a counter).
FOCUS_KEY = "_drilldown_focus"
#: How long the opened detail stays outlined, in milliseconds.
FLASH_MS = 1800
#: For how long after it is brought into view the detail is kept there while the charts above it are
#: still drawn and grow (a page opened from a link), in milliseconds; the reader's own scroll ends it.
SETTLE_MS = 6000
#: Pixels between the bottom of the sticky band (the toolbar, and the page's headline where it has one)
#: and the top of the detail brought into view (``drill_focus.js`` measures the band's height).
BAND_GAP_PX = 12
#: The detail's look while it is outlined; its distance from the top when scrolled to before the band is
#: measured (the script then puts it :data:`BAND_GAP_PX` under the band, however tall the band is).
FOCUS_CSS = f"""
.st-key-{DETAIL_KEY} {{ scroll-margin-top: 9rem; border-radius: 0.5rem; transition: box-shadow 0.4s ease-out; }}
.st-key-{DETAIL_KEY} h4 {{ padding: 0.25rem 0 0 0; }}
.st-key-{DETAIL_KEY}.specbound-focus {{ box-shadow: 0 0 0 3px #0072B2, 0 0 0 8px rgba(0, 114, 178, 0.18); }}
.st-key-{FOCUS_SCRIPT_KEY} {{ display: none; }}
"""

_focus_script = st.components.v2.component(
    "specbound_drilldown_focus", js=Path(__file__).with_name("drill_focus.js").read_text(encoding="utf-8")
)

#: Metric labels of the detail (tests read them).
P_OPT_LABEL, GAMMA_LABEL, SCALE_LABEL, SHARE_LABEL, C_LABEL = (
    "p* of this matrix",
    "γ",
    "log10 s_W",
    "share of the total",
    "c(W; p) now",
)


def open_matrix(index: int | None) -> None:
    """Open the matrix ``index`` from a click (a table row, a heatmap cell): its detail comes into view."""
    st.session_state[MATRIX_KEY] = index
    if index is not None:
        st.session_state[FOCUS_KEY] = st.session_state.get(FOCUS_KEY, 0) + 1


def from_table(key: str) -> None:
    """Callback of a per-matrix table in profile order: open the clicked row's matrix."""
    row = tables.selected_row(key)
    if row is not None:
        open_matrix(row)


#: Where a click on a chart points: (trace number, x, y) of the clicked point -> the matrix, or None.
Locate = Callable[[int, Any, Any], MatrixId | None]


def from_chart(key: str, analysis: BoundAnalysis, locate: Locate) -> None:
    """Callback of a chart drawn with ``on_select``: open the matrix under the clicked point."""
    state = st.session_state.get(key)
    points = state.selection.points if state is not None and hasattr(state, "selection") else []
    if not points:
        return
    point = points[0]
    try:
        matrix = locate(int(point.get("curve_number", 0)), point.get("x"), point.get("y"))
    except (ValueError, TypeError, IndexError, KeyError):
        return
    if matrix is not None:
        open_matrix(analysis.profile.index(matrix))


def head_cell(kind: Kind) -> Locate:
    """Locator of layer x head heatmaps of ``kind`` (x: head, y: layer), whatever the panel or cell trace."""
    return lambda _trace, x, y: MatrixId(int(y), kind, int(x))


def p_star_cell(
    trace: int, x: Any, y: Any, expert: Expert = None, head_kinds: Sequence[Kind] = SELF_KINDS
) -> MatrixId | None:
    """Locator of the p* map (its heatmaps, or the clickable cells over them, which follow in the same
    order): a panel per kind of ``head_kinds`` (x: head; QK and V, and QK_x, V_x on an encoder-decoder's
    decoder map), then the MLP strip (x: the kind's name); y is the layer in series. ``expert``: the
    expert whose MLP the map shows, in a mixture of experts."""
    panel = trace % (len(head_kinds) + 1)
    if panel < len(head_kinds):
        return MatrixId(int(y), head_kinds[panel], int(x))
    return MatrixId(int(y), Kind(str(x)), expert=expert)


def p_star_stack_cell(shape: ModelShape, stack: str) -> Locate:
    """Locator of one stack's p* map of an encoder-decoder (:func:`p_star_cell` with that stack's kinds)."""
    head_kinds = shape.stack_head_kinds(stack)
    return lambda trace, x, y: p_star_cell(trace, x, y, head_kinds=head_kinds)


def p_star_panel_cell(panel: int, expert: Expert = None) -> Locate:
    """Locator of panel ``panel`` of the p* map drawn as separate figures: QK, V, then the layer kinds
    (of ``expert``, in a mixture of experts)."""
    if panel < len(SELF_KINDS):
        return head_cell(SELF_KINDS[panel])
    return lambda _trace, x, y: MatrixId(int(y), Kind(str(x)), expert=expert)


def change_cell(profile: SpectralProfile) -> Locate:
    """Locator of the "what changed" map (:func:`~specbound.present.figures.spectra.change_heatmaps`): a
    layer x head panel per per-head kind (x: head, y: layer), then the MLP panel (x: "M_in", "M_in E3",
    ...; y: layer), heatmaps or the clickable cells over them in the same order."""
    head_kinds = [kind for kind in profile.model_kinds if kind.per_head]
    columns = {label: (kind, expert) for label, kind, expert in spectra_figures.change_columns(profile)}

    def locate(trace: int, x: Any, y: Any) -> MatrixId | None:
        panel = trace % (len(head_kinds) + 1)
        if panel < len(head_kinds):
            return MatrixId(int(y), head_kinds[panel], int(x))
        kind, expert = columns[str(x)]
        return MatrixId(int(y), kind, expert=expert)

    return locate


def picker(analysis: BoundAnalysis) -> int | None:
    """The shareable matrix picker; returns the open matrix's index or None."""
    profile = analysis.profile
    labels = [m.label for m in profile.ids]
    linked = share.from_link(MATRIX_KEY)
    chosen = share.shared(MATRIX_KEY, MATRIX_CODEC, None)
    if chosen is not None and not 0 <= int(chosen) < len(labels):  # a link made on a larger model
        st.session_state[MATRIX_KEY] = None
    elif chosen is not None and linked:  # a shared link names the matrix: open the page at its detail
        st.session_state[FOCUS_KEY] = st.session_state.get(FOCUS_KEY, 0) + 1
    index: int | None = st.selectbox(
        "Open one matrix",
        [None, *range(len(labels))],
        key=MATRIX_KEY,
        format_func=lambda i: "none" if i is None else labels[i],
        placeholder="none: click a table row or a heatmap cell, or choose here",
    )
    return index


def detail(analysis: BoundAnalysis, index: int, terms: BoundTerms, source: str, centring: str | None = None) -> None:
    """Everything about one matrix at the current assignment ``terms``, in a container that a click which
    opened it (or a shared link naming it) scrolls into view and outlines for a moment (the click is
    often far above, and a link's matrix screens down the page). A centred
    analysis's p*, c(W; p) and share say what they are centred at (``centring``, "centred at BASE")."""
    st.html(f"<style>{FOCUS_CSS}</style>")
    with st.container(key=DETAIL_KEY):
        _detail(analysis, index, terms, source, centring)
    clicks = st.session_state.get(FOCUS_KEY)
    if clicks is not None:
        _focus_script(
            key=FOCUS_SCRIPT_KEY,
            data={
                "target": f".st-key-{DETAIL_KEY}",
                "nonce": int(clicks),
                "flash_ms": FLASH_MS,
                "settle_ms": SETTLE_MS,
                "gap_px": BAND_GAP_PX,
                "headline": HEADLINE_KEY,
            },
        )


def _detail(analysis: BoundAnalysis, index: int, terms: BoundTerms, source: str, centring: str | None) -> None:
    profile = analysis.schatten_profile  # centred at a reference: the difference's spectrum, whose S_p counts
    matrix = profile.ids[index]
    log_share = float(terms.log_contribution[index]) - terms.log_total
    st.markdown(f"#### {plain(with_centring(matrix.label, centring))}")  # what a link or a click opened
    p_col, c_col, share_col, gamma_col, scale_col = st.columns(5)
    p_col.metric(
        with_centring(P_OPT_LABEL, centring),
        format_p(float(analysis.p_opt[index])),
        help=f"current p = {format_p(float(terms.p[index]))}",
    )
    c_col.metric(with_centring(C_LABEL, centring), format_log(float(terms.log_contribution[index])))
    share_col.metric(with_centring(SHARE_LABEL, centring), format_percent(math.exp(log_share)))
    gamma_col.metric(GAMMA_LABEL, format_log(float(analysis.log_gamma[index])))
    scale_col.metric(SCALE_LABEL, format_log10(float(to_log10(analysis.log_scale[index]))))
    spectrum_col, curve_col = st.columns(2)
    heads = [matrix.head] if matrix.head is not None else None
    with spectrum_col:
        if analysis.delta is not None:  # centred: the difference's spectrum beside the weights'
            spectrum = spectra_figures.difference_spectrum(
                analysis.profile, analysis.delta, index, source=f"{source} · {matrix.label}"
            )
        else:
            spectrum = spectra_figures.singular_value_profiles(
                profile, [matrix.layer], [matrix.kind], heads=heads, source=f"{source} · {matrix.label}"
            )
        show_figure(spectrum, "drill_spectrum")
    with curve_col:
        show_figure(
            bound_figures.contribution_curves(analysis, [index], terms, source=f"{source} · {matrix.label}"),
            "drill_curve",
        )
