"""A LoRA adapter opened in the dashboard as a researcher brings it (issue 56), with Streamlit's AppTest.

The adapter is written by peft's own ``save_pretrained`` and records its base relative to the
project (``models/my-base``); the server runs from another folder. It opens from the sidebar with the
numbers of the API; an adapter whose base is nowhere says why in the main area (the page stays
usable, the open model stays), and opens once its base is typed in the sidebar's base field or the
pinned baseline is taken as its base, which the Bound explorer can then centre at.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from app_harness import APP, TIMEOUT_S, open_directory, run_clean, unescaped
from peft_projects import ADAPTER, BASE, make_project
from streamlit.testing.v1 import AppTest

import specbound
from dashboard.state.adapters import with_base
from dashboard.widgets.sidebar import ADAPTER_BASE_KEY, ADAPTER_PINNED_KEY
from dashboard.wording.text import OPTIMAL_LABEL, with_centring
from specbound.core.defaults import DEFAULT_MODEL
from specbound.present.numbers import format_log
from specbound.present.report import centred_label

pytest.importorskip("peft")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("project"))


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """The server's working directory: neither the project nor anywhere near it."""
    folder = tmp_path / "server"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return folder


def _ours(at: AppTest) -> str:
    return {m.label: m.value for m in at.metric}[OPTIMAL_LABEL]


def _shown(analysis: specbound.Analysis, *, centred: bool = False) -> str:
    """Ours at p* as the headline writes it."""
    terms = analysis.centred.optimal if centred and analysis.centred is not None else analysis.optimal_terms
    return format_log(terms.log_total)


def _bounds(at: AppTest) -> AppTest:
    at.switch_page("pages/bounds.py")
    return run_clean(at)


def test_an_adapter_with_a_relative_base_opens_from_another_working_directory(project, elsewhere) -> None:
    adapter = project / ADAPTER
    at = run_clean(AppTest.from_file(str(APP), default_timeout=TIMEOUT_S))
    open_directory(at, adapter)
    assert not at.error, [e.value for e in at.error]
    expected = specbound.analyze(str(adapter), use_cache=False)
    assert at.session_state["model"] == str(adapter)
    assert _ours(_bounds(at)) == _shown(expected)


def test_a_base_found_nowhere_is_said_in_the_main_area_and_the_base_field_opens_it(project, elsewhere) -> None:
    lone = elsewhere / "my-lora"
    shutil.copytree(project / ADAPTER, lone)
    at = run_clean(AppTest.from_file(str(APP), default_timeout=TIMEOUT_S))
    open_directory(at, lone)
    (error,) = [unescaped(e.value) for e in at.main.error]
    assert "the base of the adapter my-lora" in error and "models/my-base" in error and "base field" in error
    assert "could not be opened" in " ".join(c.value for c in at.sidebar.caption)
    assert "model" not in at.session_state or at.session_state["model"] == DEFAULT_MODEL  # the open model stays
    assert _ours(_bounds(at)) == _shown(specbound.analyze(DEFAULT_MODEL))
    # the base, typed into the field the sidebar now offers for an adapter
    at.text_input(key=ADAPTER_BASE_KEY).input(str(project / BASE))
    run_clean(at)
    at.button(key="open_model").click()
    run_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["model"] == with_base(str(lone), str(project / BASE))
    expected = specbound.analyze(str(lone), base=str(project / BASE), use_cache=False)
    assert _ours(at) == _shown(expected)


def test_the_pinned_baseline_is_the_adapters_base_and_its_reference(project, elsewhere) -> None:
    lone = elsewhere / "my-lora"
    shutil.copytree(project / ADAPTER, lone)
    base = str(project / BASE)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"baseline": base})
    run_clean(at)
    at.radio(key="model_source").set_value("Hub id or local directory")
    run_clean(at)
    at.text_input(key="model_custom").input(str(lone))
    run_clean(at)
    pinned = at.checkbox(key=ADAPTER_PINNED_KEY)
    assert not pinned.disabled and unescaped(pinned.label) == "Use the pinned baseline as its base (my-base)"
    pinned.check()
    run_clean(at)
    at.button(key="open_model").click()
    run_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["model"] == with_base(str(lone), base)
    at.query_params["centred"] = "1"
    at.session_state["centred"] = True
    _bounds(at)
    expected = specbound.analyze(str(lone), base=base, use_cache=False)
    label = with_centring(OPTIMAL_LABEL, centred_label(base))
    assert {m.label: m.value for m in at.metric}[label] == _shown(expected, centred=True)
