"""Page look shared by every page: the style sheet, presentation mode, folded notes and the sticky headline.

Presentation mode (a sidebar toggle kept in the link) is for a projector or a demo: larger type, notes
and tables folded away. Whatever the mode, a headline number never truncates (metric values wrap
instead of ending in "…", and so do toggle labels) and the container keyed :data:`HEADLINE_KEY`
stays at the top of the window while the page scrolls, so the total stays in view while its
controls move. (Streamlit wraps each container in a layout wrapper of the same height, so the
wrapper is what sticks.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from dashboard.state import share
from dashboard.state.mode import PRESENT_KEY, presenting
from dashboard.wording.text import BOUND_NOTE, adapted_proxy_note, plain
from specbound.core.architecture import ModelShape

#: Key of the container that holds a page's headline numbers (CSS class ``st-key-headline``).
HEADLINE_KEY = "headline"
#: Key of the element of the explorer's live-total script (:mod:`dashboard.widgets.live_total`): it shows
#: nothing of its own, so its element is hidden and takes no room.
LIVE_TOTAL_KEY = "live_total"
#: Key of the element of the sidebar script (:func:`page_script`), hidden like the live total's.
PAGE_SCRIPT_KEY = "page_script"
#: Below this window width (Streamlit's own breakpoint) the sidebar lies over the page: a phone.
NARROW_PX = 640
#: Seconds a control's rerun waits after filling the headline, before it draws the rest of the page.
HEADLINE_LEAD_S = 0.1

#: Always on. A headline number is never cut and never split (a value keeps to one line; labels of
#: toggles wrap); the header is opaque and the headline sticks right under it, in one compact line: the
#: label above the value, the change beside it (so switching p* off adds no row), the caption cut to one
#: line. On a phone the headline's metrics may wrap onto a second row (a value still never splits), and
#: once the headline sticks under the header it folds to its first metric, the total and its change
#: (``page_script.js`` marks it stuck). A multiselect's chips wrap onto more rows instead of scrolling out
#: of a narrow column ("2 ×", "M").
BASE_CSS = f"""
[data-testid="stMetricValue"] > div, [data-testid="stMetricValue"] p {{
  white-space: nowrap !important; overflow: visible; text-overflow: clip;
}}
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"] p {{
  white-space: normal !important; overflow-wrap: anywhere; text-overflow: clip;
}}
[data-testid="stMetricValue"] {{ font-size: clamp(1.15rem, 2.0vw, 2rem); line-height: 1.2; }}
[data-testid="stCheckbox"] [data-testid="stMarkdownContainer"],
[data-testid="stCheckbox"] [data-testid="stMarkdownContainer"] p {{
  white-space: normal !important; text-overflow: clip;
}}
.st-key-{LIVE_TOTAL_KEY}, .st-key-{PAGE_SCRIPT_KEY} {{ display: none; }}
[data-testid="stHeader"] {{ background: var(--st-background-color, #ffffff); }}
[data-testid="stLayoutWrapper"]:has(> .st-key-{HEADLINE_KEY}) {{
  position: sticky; top: 3.75rem; z-index: 990; background: var(--st-background-color, #ffffff);
  padding: 0.2rem 0 0.15rem 0; border-bottom: 1px solid rgba(49, 51, 63, 0.15);
}}
.st-key-{HEADLINE_KEY}, .st-key-{HEADLINE_KEY} [data-testid="stVerticalBlock"] {{ gap: 0.1rem; }}
.st-key-{HEADLINE_KEY} [data-testid="stCaptionContainer"] p {{ margin: 0; }}
.st-key-{HEADLINE_KEY} [data-testid="stMetric"] > div {{
  display: grid; grid-template-columns: auto 1fr; column-gap: 0.45rem; align-items: baseline;
}}
.st-key-{HEADLINE_KEY} [data-testid="stMetric"] > div > :first-child {{ grid-column: 1 / span 2; }}
.st-key-{HEADLINE_KEY} [data-testid="stMetricLabel"] {{ min-height: 0; font-size: 0.8rem; }}
.st-key-{HEADLINE_KEY} [data-testid="stMetricValue"] {{ font-size: clamp(1.05rem, 1.7vw, 1.6rem); }}
.st-key-{HEADLINE_KEY} [data-testid="stMetricDelta"] {{ font-size: 0.8rem; white-space: nowrap; }}
.st-key-{HEADLINE_KEY} [data-testid="stCaptionContainer"] {{
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; font-size: 0.75rem; margin-bottom: 0;
}}
@media (min-width: {NARROW_PX}px) {{
  .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] {{
    display: grid; grid-auto-flow: column; grid-auto-columns: auto; grid-template-rows: repeat(3, auto);
    row-gap: 0;
  }}
  .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] > [data-testid="stElementContainer"],
  .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] [data-testid="stMetric"],
  .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] [data-testid="stMetric"] > div {{
    display: grid; grid-row: span 3; grid-template-rows: subgrid; grid-template-columns: minmax(0, 1fr);
    row-gap: 0; width: auto; min-width: 0;
  }}
  .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] [data-testid="stMetric"] > div > :first-child {{
    grid-column: auto;
  }}
  .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] [data-testid="stMetricDelta"] {{
    justify-self: start; width: max-content; max-width: 100%; min-width: 0; white-space: normal;
    font-size: 0.72rem; line-height: 1.25; padding-top: 0.05rem; padding-bottom: 0.05rem;
  }}
  .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] [data-testid="stMetricDelta"] * {{
    white-space: normal !important; overflow: visible; text-overflow: clip;
  }}
}}
@media (max-width: {NARROW_PX - 0.02}px) {{
  [data-stuck] .st-key-{HEADLINE_KEY} [data-testid="stHorizontalBlock"] > :not(:first-child),
  [data-stuck] .st-key-{HEADLINE_KEY} [data-testid="stCaptionContainer"] {{ display: none; }}
}}
[data-testid="stMultiSelectTagsContainer"] {{
  flex-wrap: wrap; overflow: visible; max-height: none; height: auto; flex: 1 1 0; min-width: 0;
}}
[data-testid="stMultiSelect"] div:has(> [data-testid="stMultiSelectTagsContainer"]) {{
  max-height: none; height: auto;
}}
/* above the title, the toolbar's height and a little: not Streamlit's 6rem blank band, nor the title's
   own 1.25rem above its text */
[data-testid="stMainBlockContainer"] {{ padding-top: 4rem; }}
[data-testid="stMain"] h1 {{ padding-top: 0.25rem; }}
.katex-display {{ overflow-x: auto; overflow-y: hidden; padding-bottom: 0.35rem;
  scrollbar-width: thin; scrollbar-color: #9aa0a6 transparent; }}
"""
#: Presentation mode: larger type everywhere (headline values included, still on one line each).
PRESENT_CSS = f"""
html {{ font-size: 19px; }}
[data-testid="stMetricValue"] {{ font-size: clamp(1.3rem, 2.4vw, 2.4rem); }}
.st-key-{HEADLINE_KEY} [data-testid="stMetricValue"] {{ font-size: clamp(1.6rem, 3.4vw, 2.2rem); }}
[data-testid="stCaptionContainer"] {{ font-size: 0.95rem; }}
"""


def presentation_toggle() -> bool:
    """The sidebar toggle; returns whether presentation mode is on."""
    share.shared(PRESENT_KEY, share.BOOL, False)
    return st.toggle(
        "Presentation mode",
        key=PRESENT_KEY,
        help="Larger type for a projector; notes and tables fold away. Kept in the link.",
    )


_page_script = st.components.v2.component(
    "specbound_page_script", js=Path(__file__).with_name("page_script.js").read_text(encoding="utf-8")
)


def page_script() -> None:
    """Mount the script that collapses the sidebar when presentation mode turns on, closes it after a
    page is chosen on a phone, and there folds the stuck headline (``page_script.js``; from app.py, once
    per run)."""
    _page_script(
        key=PAGE_SCRIPT_KEY, data={"presenting": presenting(), "narrow_px": NARROW_PX, "headline_key": HEADLINE_KEY}
    )


def inject_style() -> None:
    """Add the style sheet to the page (once per run, from app.py)."""
    css = BASE_CSS + (PRESENT_CSS if presenting() else "")
    st.html(f"<style>{css}</style>")


@contextmanager
def folded(label: str) -> Iterator[None]:
    """Notes and tables: open normally, folded into a closed expander in presentation mode."""
    if presenting():
        with st.expander(label, expanded=False):
            yield
    else:
        yield


def on_demand(label: str, key: str) -> st.delta_generator.DeltaGenerator | None:
    """An expander, closed at first, whose content is drawn only while it is open; kept in the link.

    Returns the expander to draw into when it is open, else None (draw nothing). A plain expander's
    content is sent and rendered even while closed, and on every rerun the browser re-renders every
    element of the page at least twice before the first new value arrives (once when the run starts,
    once when it is marked running). Large tables there cost each slider move its share of that work;
    drawn on demand, they cost nothing until a visitor opens them.
    """
    share.shared(key, share.BOOL, False)
    box = st.expander(label, key=key, on_change="rerun")
    return box if box.open else None


def headline() -> st.delta_generator.DeltaGenerator:
    """The page's sticky headline container (fill it with metrics)."""
    return st.container(key=HEADLINE_KEY)


def metric_row() -> st.delta_generator.DeltaGenerator:
    """A row for a headline's metrics (draw them into it in order); it wraps when they do not fit.

    One element, where ``st.columns(n)`` sends n + 1: on a slider move the browser renders the whole
    page once per element it receives, so on the Bound explorer the total reached the screen some
    10-15 ms sooner this way (median of 16 moves, three runs each).
    """
    return st.container(horizontal=True, gap="medium")


def let_headline_through() -> None:
    """Give the headline just written a head start of :data:`HEADLINE_LEAD_S` over the rest of the page.

    Streamlit sends a run's messages from its event-loop thread while the script thread goes on. When
    the script goes straight on to draw controls and figures, the headline reaches the browser with them,
    and the browser paints it only after re-drawing every Plotly chart (100 to 250 ms of its main
    thread on a two-core machine). Pausing here releases the interpreter, so the headline is sent and
    painted on its own first; the figures follow a moment later. (The total itself is already on
    screen by then, written in the browser as the slider moved: :mod:`dashboard.widgets.live_total`; the
    headline's change colour, caption and baseline come with this rerun.) The dashboard benchmark
    (``benchmarks/bench_dashboard.py``) measures the effect: key press to the server's redrawn headline.
    """
    time.sleep(HEADLINE_LEAD_S)


def bound_note(shape: ModelShape | None = None) -> None:
    """The one-line reminder placed under every bound number or chart; for a model that is not a BERT
    encoder (``shape`` with adaptations, SPEC §11) it also says which adapted proxy the numbers are."""
    st.caption(BOUND_NOTE)
    if shape is not None and not shape.is_bert_like:
        st.caption(plain(adapted_proxy_note(shape)))
