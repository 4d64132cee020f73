"""AppTest fixtures: the dashboard run in-process on the bundled model, and Plotly specs as arrays.

Plain helpers that test modules import live in ``app_harness.py`` beside this file.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from app_harness import APP, TIMEOUT_S, decode_arrays, run_clean
from miniature_family import family_atlas
from streamlit.testing.v1 import AppTest

from dashboard.routing import guard_apptest_runs
from dashboard.safety import SERVER_PATHS_ENV


@pytest.fixture(autouse=True)
def navigation_apps_rerun_their_entry_point():
    """Make every AppTest run execute app.py, as the server does (see dashboard/routing.py for why)."""
    undo = guard_apptest_runs()
    yield
    undo()


@pytest.fixture(autouse=True)
def operator_allows_server_paths(monkeypatch):
    """These tests open checkpoints and atlases from temporary folders, as the operator of a server may.

    Visitors' limits (server paths off, the default) are tested in test_visitors.py, which clears this.
    """
    monkeypatch.setenv(SERVER_PATHS_ENV, "1")


@pytest.fixture
def plotly_specs():
    """figures(at) -> list of the page's Plotly figures as dicts, arrays decoded, in page order."""

    def figures(at: AppTest) -> list[dict[str, Any]]:
        return [decode_arrays(json.loads(chart.proto.spec)) for chart in at.get("plotly_chart")]

    return figures


@pytest.fixture
def figure_titled(plotly_specs):
    """figure(at, words) -> the one figure whose title contains ``words``."""

    def figure(at: AppTest, words: str) -> dict[str, Any]:
        found = [f for f in plotly_specs(at) if words in f["layout"].get("title", {}).get("text", "")]
        assert len(found) == 1, f"expected one figure titled '{words}', found {len(found)}"
        return found[0]

    return figure


@pytest.fixture
def landing_app() -> AppTest:
    """The dashboard as "/" opens it (the Overview) with the bundled model."""
    return run_clean(AppTest.from_file(str(APP), default_timeout=TIMEOUT_S))


@pytest.fixture
def app(landing_app: AppTest) -> AppTest:
    """The dashboard on the Spectra page with the bundled model."""
    landing_app.switch_page("pages/spectra.py")
    return run_clean(landing_app)


@pytest.fixture
def bounds_app(landing_app: AppTest) -> AppTest:
    """The dashboard on the Bound explorer page (it opens at p*)."""
    landing_app.switch_page("pages/bounds.py")
    return run_clean(landing_app)


@pytest.fixture
def free_p_app(bounds_app: AppTest) -> AppTest:
    """The Bound explorer with the "optimal p*" default switched off, so the sliders set p."""
    bounds_app.toggle(key="p_optimal").set_value(False)
    return run_clean(bounds_app)


@pytest.fixture
def rerun():
    """rerun(at) -> at after one more run, requiring that nothing raised."""
    return run_clean


@pytest.fixture
def family(make_checkpoint, tmp_path):
    """(atlas path, profiles) of the miniature-shaped family of tiny checkpoints (tests/miniature_family.py)."""
    return family_atlas(make_checkpoint, tmp_path)
