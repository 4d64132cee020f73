"""``dashboard.state.choices``, the one writer of the pages' own session state: a kept choice survives a run
that does not draw its widget, a trimmed multiselect keeps only what is offered (or its fallback), a
settled selectbox falls back to its default, and a message is taken once."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from dashboard.state import choices

    choices.keep(["kept"])
    layers = choices.trimmed("layers", st.session_state.get("layers", [0, 1, 5]), range(3), fallback=[2])
    st.multiselect("Layers", [0, 1, 2], key="layers")
    matrix = choices.settled("matrix", range(4), 3)
    st.selectbox("Matrix", range(4), key="matrix")
    if st.session_state.get("draw_kept", True):
        st.radio("Kept", ["a", "b"], key="kept")
    if message := choices.take("message"):
        st.error(message)

    def choose() -> None:  # a callback runs before the widgets are drawn, as a finished job's choice does
        choices.choose({"kept": "b"})
        choices.hold("message", "shown once")

    st.button("Choose", key="choose", on_click=choose)
    st.write(f"layers {layers} matrix {matrix}")


@pytest.mark.parametrize(
    ("state", "layers", "matrix"),
    [
        ({}, [0, 1], 3),  # a link made on a larger model: layer 5 is not here; no matrix yet: the default
        ({"layers": [7], "matrix": 9}, [2], 3),  # nothing left of the layers: the fallback; 9 is not offered
        ({"layers": [2, 0], "matrix": 1}, [2, 0], 1),  # offered values kept as they are, in their order
    ],
)
def test_a_choice_is_cut_to_what_is_offered(state: dict[str, object], layers: list[int], matrix: int) -> None:
    at = AppTest.from_function(_page)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    assert at.multiselect(key="layers").value == layers and at.selectbox(key="matrix").value == matrix
    assert at.markdown[0].value == f"layers {layers} matrix {matrix}"


def test_a_kept_choice_survives_a_run_without_its_widget_and_a_message_shows_once() -> None:
    at = AppTest.from_function(_page)
    at.run()
    at.radio(key="kept").set_value("b")
    at.session_state["draw_kept"] = False
    at.run()  # the radio is not drawn: Streamlit would drop its value, choices.keep holds it
    at.session_state["draw_kept"] = True
    at.run()
    assert at.radio(key="kept").value == "b"
    at.radio(key="kept").set_value("a")
    at.run()
    at.button(key="choose").click()
    at.run()  # the callback sets the choice and leaves the message, shown on this run
    assert at.radio(key="kept").value == "b" and [e.value for e in at.error] == ["shown once"]
    at.run()
    assert not at.error  # taken: shown once
