"""The edges every page shares: one upload check, one offline check, one way to cut advice a visitor cannot follow."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from dashboard import safety
from dashboard.safety import SERVER_PATHS_ENV
from dashboard.widgets import sidebar
from dashboard.wording.text import plain
from specbound.core.errors import OfflineError
from specbound.io.checkpoints import LOCAL_DIRECTORY_ADVICE, fetch
from specbound.io.models import parse_name


def test_an_upload_over_the_cap_is_refused_in_the_package_s_megabytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safety, "max_upload_bytes", lambda: 50 * 2**20)  # Streamlit's 50 "MB" are MiB
    assert safety.upload_refusal("atlas.npz", 50 * 2**20) is None  # at the cap: accepted
    refused = safety.upload_refusal("big_atlas*.npz", 60_000_000)
    assert refused == f"{plain('big_atlas*.npz')} is 60.0 MB, more than the 52 MB an upload may have."


def test_the_sidebar_asks_the_package_whether_it_is_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_socket(*args: object, **kwargs: object) -> socket.socket:
        raise AssertionError("an offline server must not try the network")

    monkeypatch.setattr(socket, "create_connection", no_socket)
    for value, offline in (("1", True), ("ON", True), (" yes ", True), ("0", False)):
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
        sidebar.hub_reachable.clear()
        if offline:
            assert sidebar.hub_reachable() is False
        else:
            with pytest.raises(AssertionError, match="must not try the network"):
                sidebar.hub_reachable()
    sidebar.hub_reachable.clear()


def test_a_visitor_s_message_loses_the_package_s_own_advice_about_local_folders(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache: nothing of the model is here
    monkeypatch.delenv(SERVER_PATHS_ENV, raising=False)
    ref = parse_name("google/bert_uncased_L-2_H-128_A-2")
    assert ref is not None
    with pytest.raises(OfflineError) as raised:
        fetch(ref)
    message = str(raised.value)
    assert message.endswith(LOCAL_DIRECTORY_ADVICE)
    for shown in (message, plain(message)):
        told = sidebar.visitor_advice(shown)
        assert "local checkpoint directory" not in told and told.endswith("download it once")
    monkeypatch.setenv(SERVER_PATHS_ENV, "1")  # an operator can name a folder: the advice stays
    assert sidebar.visitor_advice(message) == message
