"""``share.shared_choice``: a shared widget keeps a value it offers, from the session or a link, and
falls back to its default for one it does not offer (a link or a model opened before left it)."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import share


def _page() -> None:
    import streamlit as st

    from dashboard.state import share

    codec = share.choice_codec({"QK": "qk", "V": "v", "QK_x": "qk_x"})
    offered = ["QK", "V"]  # an encoder: no cross-attention heads
    held = share.shared_choice("kind", codec, offered, "QK")
    st.radio("Heads of", offered, key="kind")
    st.write(f"held {held}")


@pytest.mark.parametrize(
    ("session", "link", "shown"),
    [
        ({}, {}, "QK"),  # first visit: the default
        ({"kind": "V"}, {}, "V"),  # the session's own offered choice is kept
        ({"kind": "QK_x"}, {}, "QK"),  # left by an encoder-decoder opened before: not offered here
        ({}, {"kind": "v"}, "V"),  # a link's offered value
        ({}, {"kind": "qk_x"}, "QK"),  # a link made on an encoder-decoder
        ({}, {"kind": "junk"}, "QK"),  # a hand-edited link
    ],
)
def test_a_shared_choice_keeps_only_what_is_offered(session: dict[str, Any], link: dict[str, str], shown: str) -> None:
    at = AppTest.from_function(_page)
    for key, value in session.items():
        at.session_state[key] = value
    if link:
        at.session_state[share._LINK_KEY] = dict(link)
    at.run()
    assert not at.exception
    assert at.radio(key="kind").value == shown
    assert at.markdown[0].value == f"held {shown}"
