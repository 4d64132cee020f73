"""Models that are not cached, with the Hub switched off or out of reach: one clear message, no wait."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli

from specbound import load_profile
from specbound.core.errors import ModelNotFoundError, OfflineError


def test_uncached_hub_id_in_offline_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError) as info:
        load_profile("someone/never-downloaded-encoder")
    assert str(info.value) == (
        "model 'someone/never-downloaded-encoder' is not in the local Hugging Face cache and offline mode "
        "is on (HF_HUB_OFFLINE); connect to the internet and retry to download it once, or pass a local "
        "checkpoint directory"
    )


def test_uncached_miniature_in_offline_mode_names_the_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match=r"^model 'L12-H768' is not in the local Hugging Face cache"):
        load_profile("L12-H768")


def test_uncached_hub_id_without_network_is_an_offline_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """HF_HUB_OFFLINE unset: the download is attempted and fails (this machine has no route to the Hub)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises((OfflineError, ModelNotFoundError)) as info:
        load_profile("someone/never-downloaded-encoder")
    message = str(info.value)
    if isinstance(info.value, OfflineError):  # no network: the expected case here
        assert message.startswith(
            "model 'someone/never-downloaded-encoder' is not in the local Hugging Face cache and "
        )
        assert "connect to the internet" in message
    else:  # a network that reaches the Hub answers that the repository does not exist
        assert "there is no model 'someone/never-downloaded-encoder' on the Hugging Face Hub" in message


def test_cli_offline_error_is_one_line(tmp_path: Path) -> None:
    result = run_cli("analyze", "someone/never-downloaded-encoder", "--json", env={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith(
        "specbound: error: model 'someone/never-downloaded-encoder' is not in the "
        "local Hugging Face cache and offline mode is on (HF_HUB_OFFLINE)"
    )


def test_cli_without_network_is_one_line() -> None:
    result = run_cli("analyze", "someone/never-downloaded-encoder", unset=("HF_HUB_OFFLINE",))
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("specbound: error: ")
    assert "someone/never-downloaded-encoder" in lines[0]
