// Bring the drill-down into view after a click on a chart cell or a table row, or when a shared link
// names the matrix (see drilldown.py, `focus`).
//
// data = {target: CSS selector of the drill-down's container, nonce: int, flash_ms: int, settle_ms: int,
//         gap_px: int, headline: key of the page's sticky headline container}.
// Each new nonce scrolls the container to the top of the window once and outlines it for flash_ms, so
// the reader sees what the click opened far below. Its heading must land below the sticky band: the
// toolbar, and the page's headline where it has one, whose height depends on the window (its metrics
// wrap onto two rows on a phone, and fold to one once it sticks). So the band is measured, not assumed:
// once the scroll has ended, the container is moved to gap_px under the band's bottom. For settle_ms
// after that, while the charts above it are still being drawn and grow (a page opened from a link draws
// them after the detail's place is known) or the band changes height, it is put back there whenever it
// has moved; the reader's own wheel, touch, key or mouse press ends this at once.
// Streamlit calls this function again on every run; a nonce already handled does nothing.

const READER_EVENTS = ["wheel", "touchstart", "keydown", "mousedown"];

// The bottom edge of what stays on top of the page while it scrolls: the toolbar, and the sticky
// headline's band when it is stuck under it (a band still in the flow of the page scrolls away).
function bandBottom(headline) {
  const header = document.querySelector('[data-testid="stHeader"]');
  let bottom = header ? header.getBoundingClientRect().bottom : 0;
  const band = document.querySelector(`[data-testid="stLayoutWrapper"]:has(> .st-key-${headline})`);
  if (band) {
    const stuckAt = parseFloat(getComputedStyle(band).top) || 0;
    const box = band.getBoundingClientRect();
    if (box.top <= stuckAt + 1) bottom = Math.max(bottom, box.bottom);
  }
  return bottom;
}

// The element whose scrolling moves the page (Streamlit's main area, else the document).
function scroller(element) {
  for (let e = element.parentElement; e; e = e.parentElement) {
    const overflow = getComputedStyle(e).overflowY;
    if ((overflow === "auto" || overflow === "scroll") && e.scrollHeight > e.clientHeight) return e;
  }
  return document.scrollingElement;
}

export default function (component) {
  const { data } = component;
  const state = (window.__specboundFocus ??= { nonce: -1 });
  if (data.nonce === state.nonce) return;
  state.nonce = data.nonce;
  const started = performance.now();
  let settled = null;
  const stop = () => {
    if (settled !== null) clearInterval(settled);
    settled = null;
    READER_EVENTS.forEach((name) => document.removeEventListener(name, stop, true));
  };
  // how far the container's top is from where it belongs, gap_px under the band (positive: too low)
  const offset = (shown) => shown.getBoundingClientRect().top - (bandBottom(data.headline) + data.gap_px);
  const tryFocus = () => {
    const target = document.querySelector(data.target);
    if (!target) {
      if (performance.now() - started < 3000) setTimeout(tryFocus, 50); // drawn a frame later
      return;
    }
    target.scrollIntoView({ behavior: "smooth", block: "start" });
    target.classList.add("specbound-focus");
    setTimeout(() => target.classList.remove("specbound-focus"), data.flash_ms);
    READER_EVENTS.forEach((name) => document.addEventListener(name, stop, { capture: true, passive: true }));
    let ended = false; // the smooth scroll is over
    let last = null;
    settled = setInterval(() => {
      const shown = document.querySelector(data.target);
      if (!shown || performance.now() - started > data.settle_ms) return stop();
      const top = shown.getBoundingClientRect().top;
      if (!ended) {
        ended = last !== null && Math.abs(top - last) < 1;
        last = top;
        if (!ended) return;
      }
      const off = offset(shown);
      if (Math.abs(off) > 2) scroller(shown).scrollBy({ top: off, behavior: "instant" });
    }, 150);
  };
  requestAnimationFrame(tryFocus);
}
