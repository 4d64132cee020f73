// How the sidebar behaves on a projector and on a phone (see presentation.py, `page_script`).
//
// data = {presenting: bool, narrow_px: int}.
// * Presentation mode collapses the sidebar once, when it turns on (or a link opens with it on), so the
//   content gets the whole width of a projector; the chevron at the top left opens it again.
// * On a narrow screen (a phone: the sidebar then lies over the page), and in presentation mode
//   (the projector's width belongs to the page), choosing a page in the navigation closes the
//   sidebar, as a menu does.
// Streamlit calls this function again on every run; one listener lives per document.

function sidebarOpen() {
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  return sidebar !== null && sidebar.getAttribute("data-collapsed") === "false";
}

function collapse() {
  const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
  if (button && sidebarOpen()) button.click();
}

export default function (component) {
  const { data } = component;
  const state = (window.__specboundPage ??= { presenting: false, listening: false, narrow: 640 });
  state.narrow = data.narrow_px;
  if (data.presenting && !state.presenting) {
    // the sidebar may be drawn a frame after this runs
    requestAnimationFrame(() => setTimeout(collapse, 50));
  }
  state.presenting = data.presenting;
  if (!state.listening) {
    state.listening = true;
    document.addEventListener(
      "click",
      (event) => {
        const link = event.target instanceof Element && event.target.closest('[data-testid="stSidebarNavLink"]');
        if (link && (window.innerWidth < state.narrow || state.presenting)) setTimeout(collapse, 0);
      },
      true,
    );
  }
}
