"""Hostile visitors, the dashboard in AppTest: a '#' in an atlas model's name (class 4), uploads that
a library cannot read never stay in the store (class 7), and one redaction of server paths for
every message, with spaces and accents in the paths (class 8)."""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path

import pytest
from app_harness import APP, TIMEOUT_S, run_clean, unescaped
from streamlit.testing.v1 import AppTest

from dashboard import safety
from dashboard.state import atlas
from dashboard.widgets.lab import OPEN_ERROR_KEY
from specbound.io import atlas as sb_atlas
from specbound.io.atlas import save_atlas
from specbound.io.loading import load_profile

#: A profile cache (and so an upload store) under directories whose names hold spaces and accents.
ODD_CACHE = ("mes données", "cache x")


@pytest.fixture(autouse=True)
def visitor_defaults(monkeypatch, tmp_path):
    """Server paths off, and a profile cache whose path a space would have cut short."""
    monkeypatch.delenv(safety.SERVER_PATHS_ENV, raising=False)
    cache = tmp_path.joinpath(*ODD_CACHE)
    cache.mkdir(parents=True)
    monkeypatch.setenv("SPECBOUND_CACHE", str(cache))
    return cache


def _atlas_bytes(make_checkpoint, tmp_path: Path, member: str) -> bytes:
    profile = load_profile(str(make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)), use_cache=False)
    return save_atlas([dataclasses.replace(profile, model=member)], tmp_path / "upload.npz").read_bytes()


def _upload(at: AppTest, name: str, content: bytes) -> AppTest:
    at.radio(key="model_source").set_value("Atlas file")
    run_clean(at)
    at.file_uploader(key="atlas_upload").set_value((name, content, "application/zip"))
    return run_clean(at)


def _all_text(at: AppTest) -> str:
    parts = [e.value for e in (*at.error, *at.warning, *at.info, *at.caption, *at.markdown)]
    parts += [e.value for e in (*at.sidebar.error, *at.sidebar.caption, *at.sidebar.markdown)]
    return unescaped(" ".join(str(p) for p in parts))


def _assert_no_store_path(text: str, cache: Path) -> None:
    for part in (str(cache), *ODD_CACHE, str(cache.parent), "données"):
        assert part not in text, text


# --- class 4: a '#' in a model name ---------------------------------------------------------------------


def test_an_atlas_model_with_a_hash_in_its_name_opens_and_its_link_reopens_it(
    make_checkpoint, tmp_path, visitor_defaults
):
    at = run_clean(AppTest.from_file(str(APP), default_timeout=TIMEOUT_S))
    _upload(at, "runs.npz", _atlas_bytes(make_checkpoint, tmp_path, "run#3 step#250"))
    assert not at.error, [e.value for e in at.error]
    at.button(key="open_model").click()
    run_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["model"].endswith("#run#3 step#250")
    link = at.query_params["model"]
    assert link.startswith("atlas:@") and link.endswith("#run#3 step#250")
    again = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    again.query_params["model"] = link
    run_clean(again)
    assert not again.error, [e.value for e in again.error]
    assert again.session_state["model"] == at.session_state["model"]
    _assert_no_store_path(_all_text(again), visitor_defaults)


# --- class 7: refused uploads never stay ----------------------------------------------------------------


def _encrypted(content: bytes, tmp_path: Path) -> bytes:
    """The same archive with every member flagged as encrypted (zipfile then refuses to read it)."""
    raw = bytearray(content)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (at := raw.find(signature, start)) >= 0:
            raw[at + offset] |= 0x1
            start = at + 4
    path = tmp_path / "check.npz"
    path.write_bytes(bytes(raw))
    with zipfile.ZipFile(path) as z:
        assert all(info.flag_bits & 0x1 for info in z.infolist())
    return bytes(raw)


def _stored() -> list[str]:
    return sorted(p.name for p in atlas.upload_dir().glob("*")) if atlas.upload_dir().is_dir() else []


def test_an_encrypted_upload_is_one_error_and_is_not_kept(make_checkpoint, tmp_path, visitor_defaults):
    at = run_clean(AppTest.from_file(str(APP), default_timeout=TIMEOUT_S))
    content = _encrypted(_atlas_bytes(make_checkpoint, tmp_path, "x"), tmp_path)
    _upload(at, "locked.npz", content)
    (error,) = [e.value for e in at.sidebar.error] or [e.value for e in at.error]
    assert "encrypted" in unescaped(error)
    assert _stored() == []
    _assert_no_store_path(unescaped(error), visitor_defaults)


def test_an_upload_refused_by_an_unexpected_error_is_not_kept(monkeypatch, make_checkpoint, tmp_path):
    def broken(path):
        raise ZeroDivisionError("a bug in a reader")

    monkeypatch.setattr(sb_atlas, "load_atlas", broken)
    at = run_clean(AppTest.from_file(str(APP), default_timeout=TIMEOUT_S))
    _upload(at, "fine.npz", _atlas_bytes(make_checkpoint, tmp_path, "y"))
    errors = [e.value for e in at.error]  # the sidebar's included
    assert len(errors) == 1 and safety.UNEXPECTED in unescaped(errors[0])
    assert _stored() == []


# --- class 8: one redaction, spaces and accents included ---------------------------------------------------


def test_a_link_to_a_missing_upload_names_no_store_path_with_spaces(visitor_defaults):
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params["model"] = "atlas:@0123456789abcdef#x"
    run_clean(at)
    (error,) = [e.value for e in at.error]
    assert "…/0123456789abcdef.npz" in unescaped(error)
    _assert_no_store_path(unescaped(error), visitor_defaults)


@pytest.mark.parametrize(
    "template",
    [
        "cannot read {p}/atlases/abc.npz: gone",
        "[Errno 13] Permission denied: '{p}/lab/runs/x/trajectory.json'",
        'no atlas file at "{p}"',
        "{p}",
        "first {p}/a b, then {p}/ç d.npz#m",
    ],
)
def test_redaction_cuts_server_directories_whatever_their_names_hold(visitor_defaults, template):
    message = template.format(p=visitor_defaults)
    shown = safety.redact_paths(message)
    _assert_no_store_path(shown, visitor_defaults)
    assert "…" in shown


def test_redaction_keeps_words_that_are_not_paths(visitor_defaults):
    text = "model L2-H128 at p = 1/2 (and/or) is 3.5 GB"
    assert safety.redact_paths(text) == text


def test_the_labs_open_as_a_model_error_shows_no_os_path(monkeypatch, visitor_defaults):
    target = visitor_defaults / "atlases" / "0123456789abcdef.npz"

    def denied(file_name, content):
        raise PermissionError(13, "Permission denied", str(target))

    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/lab.py")
    run_clean(at)
    monkeypatch.setattr(atlas, "store_upload", denied)
    at.button(key="lab_open").click()
    run_clean(at)
    shown = " ".join(unescaped(e.value) for e in at.error)
    assert "Could not open" in shown and "Permission denied" in shown
    _assert_no_store_path(shown, visitor_defaults)
    assert str(target) not in shown and OPEN_ERROR_KEY not in at.session_state
