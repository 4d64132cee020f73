"""A lab run opened as a model is named by its run's words on every page, never by its run id: the
current-model line, figure subtitles (so PNG exports), the saved images' and CSV downloads' file names,
buttons, pickers and legends (issue 57)."""

from __future__ import annotations

import pytest
from app_harness import APP, TIMEOUT_S, run_clean
from google.protobuf.message import Message
from streamlit.testing.v1 import AppTest

from dashboard.wording.vocabulary import run_name

#: a run id anywhere in a text (``lab-gpt2-markov-L2-N64-H2-n64-q0-s2-t500``), whatever it is written in
RUN_ID_IN_TEXT = r"lab-(?:[a-z0-9]+-)*L\d+-N\d+-H\d+"


def _texts(message: Message) -> list[str]:
    """Every string of an element's message (labels, options, help, Plotly specs and configs), nested too."""
    texts: list[str] = []
    for _field, value in message.ListFields():
        values = value if not isinstance(value, str | Message) and hasattr(value, "__len__") else [value]
        for item in values:
            if isinstance(item, Message):
                texts += _texts(item)
            elif isinstance(item, str):
                texts.append(item)
    return texts


def _shown(at: AppTest) -> list[str]:
    def nodes(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from nodes(child)

    return [
        text
        for root in (at.main, at.sidebar)
        for n in nodes(root)
        if (p := getattr(n, "proto", None)) is not None
        for text in _texts(p)
    ]


@pytest.fixture(scope="module")
def lab_model_app() -> AppTest:
    """The shipped lab run whose p* vary, opened from the Why page's button, as a visitor does."""
    from dashboard.routing import guard_apptest_runs

    undo = guard_apptest_runs()
    at = run_clean(AppTest.from_file(str(APP), default_timeout=TIMEOUT_S))
    at.switch_page("pages/why.py")
    run_clean(at)
    at.button(key="why_open_varied").click()
    run_clean(at)
    yield at
    undo()


@pytest.mark.parametrize("page", ["why", "bounds", "spectra", "compare", "runs"])
def test_no_run_id_where_the_run_has_words(lab_model_app: AppTest, page: str) -> None:
    import re

    from dashboard.services import lab

    at = lab_model_app
    key, step = lab.varied_p_star_run()
    run = lab.available_runs()[key]
    assert re.search(RUN_ID_IN_TEXT, at.session_state["model"])  # the model is named by its run id underneath
    at.switch_page(f"pages/{page}.py")
    run_clean(at)
    texts = _shown(at)
    assert texts and not [t[:160] for t in texts if re.search(RUN_ID_IN_TEXT, t)]
    words = run_name(run.spec, step) if page != "runs" else run_name(run.spec)
    assert any(words in t for t in texts), words  # named by its words instead
