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

import streamlit as st

from . import share

#: Widget key (and link parameter) of the presentation toggle.
PRESENT_KEY = "present"
#: Key of the container that holds a page's headline numbers (CSS class ``st-key-headline``).
HEADLINE_KEY = "headline"
#: Key of the element of the explorer's live-total script (:mod:`dashboard.live_total`): it shows
#: nothing of its own, so its element is hidden and takes no room.
LIVE_TOTAL_KEY = "live_total"
#: Seconds a control's rerun waits after filling the headline, before it draws the rest of the page.
HEADLINE_LEAD_S = 0.1

#: Always on: headline values and labels wrap rather than truncate, and the headline container is sticky.
BASE_CSS = f"""
[data-testid="stMetricValue"] > div, [data-testid="stMetricValue"] p,
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"] p {{
  white-space: normal !important; overflow-wrap: anywhere; text-overflow: clip;
}}
[data-testid="stMetricValue"] {{ font-size: clamp(1.25rem, 2.1vw, 2.1rem); line-height: 1.2; }}
[data-testid="stCheckbox"] [data-testid="stMarkdownContainer"],
[data-testid="stCheckbox"] [data-testid="stMarkdownContainer"] p {{
  white-space: normal !important; text-overflow: clip;
}}
.st-key-{LIVE_TOTAL_KEY} {{ display: none; }}
[data-testid="stLayoutWrapper"]:has(> .st-key-{HEADLINE_KEY}) {{
  position: sticky; top: 3.5rem; z-index: 990; background: var(--st-background-color, #ffffff);
  padding: 0.35rem 0 0.25rem 0; border-bottom: 1px solid rgba(49, 51, 63, 0.15);
}}
"""
#: Presentation mode: larger type everywhere (metric values included, still wrapping).
PRESENT_CSS = """
html { font-size: 19px; }
[data-testid="stMetricValue"] { font-size: clamp(1.4rem, 2.6vw, 2.6rem); }
[data-testid="stCaptionContainer"] { font-size: 0.95rem; }
"""


def presentation_toggle() -> bool:
    """The sidebar toggle; returns whether presentation mode is on."""
    share.shared(PRESENT_KEY, share.BOOL, False)
    return st.toggle(
        "Presentation mode",
        key=PRESENT_KEY,
        help="Larger type for a projector; notes and tables fold away. Kept in the link.",
    )


def presenting() -> bool:
    return bool(st.session_state.get(PRESENT_KEY, False))


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
    screen by then, written in the browser as the slider moved: :mod:`dashboard.live_total`; the
    headline's change colour, caption and baseline come with this rerun.) The dashboard benchmark
    (``benchmarks/bench_dashboard.py``) measures the effect: key press to the server's redrawn headline.
    """
    time.sleep(HEADLINE_LEAD_S)
