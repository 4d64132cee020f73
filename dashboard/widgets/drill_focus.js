// Bring the drill-down into view after a click on a chart cell or a table row (see drilldown.py, `focus`).
//
// data = {target: CSS selector of the drill-down's container, nonce: int, flash_ms: int}.
// Each new nonce scrolls the container to the top of the window once (below the sticky header: its
// scroll-margin-top) and outlines it for flash_ms, so the reader sees what the click opened far below.
// Streamlit calls this function again on every run; a nonce already handled does nothing.

export default function (component) {
  const { data } = component;
  const state = (window.__specboundFocus ??= { nonce: -1 });
  if (data.nonce === state.nonce) return;
  state.nonce = data.nonce;
  const started = performance.now();
  const tryFocus = () => {
    const target = document.querySelector(data.target);
    if (!target) {
      if (performance.now() - started < 3000) setTimeout(tryFocus, 50); // drawn a frame later
      return;
    }
    target.scrollIntoView({ behavior: "smooth", block: "start" });
    target.classList.add("specbound-focus");
    setTimeout(() => target.classList.remove("specbound-focus"), data.flash_ms);
  };
  requestAnimationFrame(tryFocus);
}
