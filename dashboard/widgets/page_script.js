// How the sidebar behaves on a projector and on a phone (see presentation.py, `page_script`).
//
// data = {presenting: bool, narrow_px: int, headline_key: str}.
// * Presentation mode collapses the sidebar once, when it turns on (or a link opens with it on), so the
//   content gets the whole width of a projector; the chevron at the top left opens it again.
// * On a narrow screen (a phone: the sidebar then lies over the page), and in presentation mode
//   (the projector's width belongs to the page), choosing a page in the navigation closes the
//   sidebar, as a menu does.
// * On a narrow screen, once the page scrolls far enough that the sticky headline sticks under the
//   header, it folds to its first metric (the total and its change): `data-stuck` on its wrapper, which
//   the style sheet reads (presentation.py). Scrolled back, it unfolds.
// Streamlit calls this function again on every run; one set of listeners lives per document.

function sidebarOpen() {
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  return sidebar !== null && sidebar.getAttribute("data-collapsed") === "false";
}

function collapse() {
  const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
  if (button && sidebarOpen()) button.click();
}

function markStuck() {
  const wrapper = document.querySelector(`[data-testid="stLayoutWrapper"]:has(> .st-key-${state().headline})`);
  if (!wrapper) return;
  const top = parseFloat(getComputedStyle(wrapper).top) || 0;
  const stuck = window.innerWidth < state().narrow && wrapper.getBoundingClientRect().top <= top + 1;
  if (stuck) wrapper.setAttribute("data-stuck", "");
  else wrapper.removeAttribute("data-stuck");
}

function state() {
  return (window.__specboundPage ??= { presenting: false, listening: false, narrow: 640, headline: "headline" });
}

export default function (component) {
  const { data } = component;
  const page = state();
  page.narrow = data.narrow_px;
  page.headline = data.headline_key;
  if (data.presenting && !page.presenting) {
    // the sidebar may be drawn a frame after this runs
    requestAnimationFrame(() => setTimeout(collapse, 50));
  }
  page.presenting = data.presenting;
  requestAnimationFrame(markStuck);
  if (!page.listening) {
    page.listening = true;
    // scroll events do not bubble: caught on the way down, from whichever element scrolls the page
    document.addEventListener("scroll", () => requestAnimationFrame(markStuck), { capture: true, passive: true });
    window.addEventListener("resize", () => requestAnimationFrame(markStuck), { passive: true });
    document.addEventListener(
      "click",
      (event) => {
        const link = event.target instanceof Element && event.target.closest('[data-testid="stSidebarNavLink"]');
        if (link && (window.innerWidth < page.narrow || page.presenting)) setTimeout(collapse, 0);
      },
      true,
    );
  }
}
