"""What a first-time visitor meets, in Streamlit's AppTest: the sidebar says the server is offline before a
click and how to bring one's own model, controls show the p in use, the explorer's sentence follows p,
the explorer's report holds its totals and the depth factors, and no number on a page is in E-notation."""

from __future__ import annotations

import re

import pytest
from app_harness import run_clean

from dashboard.safety import SERVER_PATHS_ENV
from dashboard.widgets import sidebar
from dashboard.widgets.sidebar import OFFLINE_NOTE, visitor_advice
from dashboard.wording.text import plain


@pytest.fixture
def offline(monkeypatch):
    sidebar.hub_reachable.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(SERVER_PATHS_ENV, raising=False)  # a visitor's view
    yield
    sidebar.hub_reachable.clear()


def _texts(at) -> list[str]:
    return [e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind)] + [
        m.value for m in at.metric
    ]


def test_the_sidebar_says_it_is_offline_before_any_click(landing_app, rerun, offline) -> None:
    at = landing_app
    at.radio(key="model_source").set_value("BERT Miniature")
    rerun(at)
    at.selectbox(key="miniature_layers").set_value(12)
    at.selectbox(key="miniature_width").set_value(768)  # not in the test's Hub cache
    rerun(at)
    assert [w.value for w in at.sidebar.warning] == [OFFLINE_NOTE]
    assert "Width N" in [s.label for s in at.sidebar.selectbox]  # N is the width everywhere, H the heads
    help_text = next(e for e in at.sidebar.expander if e.label == "Bring your own model")
    shown = " ".join(m.value for m in help_text.markdown)
    assert "Upload an atlas file" in shown and "specbound atlas export" in shown
    assert "SPECBOUND_ALLOW_SERVER_PATHS=1 make run" in shown  # what the operator can do, not the visitor
    assert "cannot reach the Hub" in shown


def test_an_error_goes_with_its_source_and_asks_only_what_a_visitor_can_do(landing_app, rerun, monkeypatch) -> None:
    monkeypatch.delenv(SERVER_PATHS_ENV, raising=False)
    message = plain("could not download it: no internet, or pass a local checkpoint directory")
    assert "local checkpoint directory" not in visitor_advice(message)
    at = landing_app
    at.session_state["model_error"] = "Could not open L12-H768: offline."
    at.radio(key="model_source").set_value("BERT Miniature")
    rerun(at)
    assert not at.sidebar.error  # switching the source drops the last source's error


def test_disabled_sliders_show_the_p_in_use(bounds_app, rerun) -> None:
    at = bounds_app
    (slider,) = [s for s in at.slider if s.key == "p_global"]
    assert slider.disabled and slider.proto.format == "p* for every matrix"  # not the 1.000 it holds
    at.toggle(key="p_optimal").set_value(False)
    at.toggle(key="p_kinds").set_value(True)
    rerun(at)
    qk = next(s for s in at.slider if s.key == "p_kind_QK")
    assert qk.disabled and qk.proto.format == "p = 1.000 (the default)"
    assert any("Ours at the chosen p is" in c.value for c in at.caption)  # the sentence follows p


def test_no_page_writes_e_notation_or_carets(landing_app, rerun) -> None:
    at = landing_app
    for page in ("pages/overview.py", "pages/bounds.py", "pages/why.py", "pages/spectra.py", "pages/theory.py"):
        at.switch_page(page)
        run_clean(at)
        for text in _texts(at):
            assert not re.search(r"\d[eE][+-]?\d", text) and "10^" not in text, (page, text)


def test_a_link_carries_only_the_parameters_of_its_own_page(landing_app, rerun) -> None:
    """Settings of a page visited before stay in the session, not in the next page's link."""
    at = landing_app
    at.switch_page("pages/scaling.py")
    run_clean(at)
    assert "scaling_family" in at.query_params  # the Scaling page names its family (it depends on the server)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    at.toggle(key="p_optimal").set_value(False)
    rerun(at)
    assert at.query_params.get("p_optimal") == "0"
    at.switch_page("pages/theory.py")
    run_clean(at)
    left = {key for key in at.query_params if key.startswith(("scaling_", "p_"))}
    assert left == set(), dict(at.query_params)
    at.switch_page("pages/scaling.py")
    run_clean(at)
    assert "scaling_family" in at.query_params and "p_optimal" not in at.query_params  # back: its own again
