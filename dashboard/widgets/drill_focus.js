// Bring the drill-down into view after a click on a chart cell or a table row, or when a shared link
// names the matrix (see drilldown.py, `focus`).
//
// data = {target: CSS selector of the drill-down's container, nonce: int, flash_ms: int, settle_ms: int}.
// Each new nonce scrolls the container to the top of the window once (below the sticky header: its
// scroll-margin-top) and outlines it for flash_ms, so the reader sees what the click opened far below.
// For settle_ms after that, while the charts above it are still being drawn and grow (a page opened
// from a link draws them after the detail's place is known), the container is put back at the top
// whenever it has moved; the reader's own wheel, touch, key or mouse press ends this at once.
// Streamlit calls this function again on every run; a nonce already handled does nothing.

const READER_EVENTS = ["wheel", "touchstart", "keydown", "mousedown"];

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
    let wanted = null; // where the container's top sits once the smooth scroll is over
    let last = null;
    settled = setInterval(() => {
      const shown = document.querySelector(data.target);
      if (!shown || performance.now() - started > data.settle_ms) return stop();
      const top = shown.getBoundingClientRect().top;
      if (wanted === null) {
        if (last !== null && Math.abs(top - last) < 1) wanted = top; // the smooth scroll has ended
        last = top;
      } else if (Math.abs(top - wanted) > 2) {
        shown.scrollIntoView({ behavior: "instant", block: "start" });
        wanted = shown.getBoundingClientRect().top;
      }
    }, 150);
  };
  requestAnimationFrame(tryFocus);
}
