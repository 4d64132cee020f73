"""Start the dashboard: ``streamlit run app.py`` with the landing page's modules imported while the browser loads.

``make run`` calls ``python -m dashboard.serve [streamlit options]``; ``streamlit run app.py`` works
too. The difference is when the dashboard's own modules are imported. Streamlit runs ``app.py`` only
once a browser has connected, so a plain start imports numpy, specbound and the dashboard (0.15 s
on an idle core, up to 0.6 s beside a loading browser on two cores) during the first page's run,
while the visitor waits and the same process is sending the browser Streamlit's scripts. Here a
background thread imports them as soon as the server is up, while the browser is still loading and
parsing Streamlit's own JavaScript (0.7-0.9 s), so the first run finds them in place.

The thread waits for the server to be running because Streamlit's caches warn when their
decorators are applied with no runtime yet, and because importing during the server's start would
only delay it.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app.py"

#: What the first run of ``app.py`` on the Overview imports beyond Streamlit itself (a test keeps
#: this list complete: after importing it, that first run imports no module of numpy, specbound or
#: the dashboard).
LANDING_MODULES: tuple[str, ...] = (
    "numpy",
    "PIL.Image",  # st.set_page_config reads the favicon through these two
    "PIL.ImageFile",
    "specbound",
    "specbound.present.explain",
    "specbound.studies.compare",
    "specbound.present.numbers",
    "dashboard.state.atlas",
    "dashboard.widgets.atlas_files",
    "dashboard.state.data",
    "dashboard.widgets.export",
    "dashboard.widgets.headline",
    "dashboard.widgets.link_guard",
    "dashboard.wording.numbers",
    "dashboard.widgets.presentation",
    "dashboard.routing",
    "dashboard.safety",
    "dashboard.state.share",
    "dashboard.widgets.sidebar",
    "dashboard.wording.text",
    "dashboard.wording.totals",
    "dashboard.state.upload_store",
    "dashboard.wording.vocabulary",
)
#: How often the warm-up thread looks whether the server has started.
POLL_S = 0.02
#: It gives up after this long (a server that never starts has other problems to report).
GIVE_UP_S = 60.0


def preload(modules: Iterable[str] = LANDING_MODULES) -> None:
    """Import ``modules`` (already imported ones cost nothing)."""
    for name in modules:
        importlib.import_module(name)


def server_running() -> bool:
    """True once Streamlit's runtime has started serving (sessions can connect)."""
    from streamlit.runtime import Runtime, RuntimeState

    return Runtime.exists() and Runtime.instance().state not in (RuntimeState.INITIAL, RuntimeState.STOPPED)


def preload_when_running(modules: Iterable[str] = LANDING_MODULES) -> None:
    """Wait for the server to run, then import ``modules`` (the body of the warm-up thread)."""
    deadline = time.monotonic() + GIVE_UP_S
    while not server_running():
        if time.monotonic() > deadline:
            return
        time.sleep(POLL_S)
    preload(modules)


def main(argv: list[str] | None = None) -> None:
    """``streamlit run app.py`` with ``argv`` (Streamlit's options), warming the landing page's imports."""
    from streamlit.web import cli

    threading.Thread(target=preload_when_running, name="specbound-preload", daemon=True).start()
    args = sys.argv[1:] if argv is None else argv
    cli.main(["run", str(APP), *args], prog_name="streamlit")


if __name__ == "__main__":
    main()
