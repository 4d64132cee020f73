"""Page visitors stay visitors (SPEC §9): what they type or put in a link is shown as text, server paths
are refused unless the operator allows them, anything unexpected is one error box with the sidebar still
there, uploads are capped before they are read, and links keep only what reproduces the view.

Every test here runs with the default settings (server paths off) unless it turns the operator's
setting on itself.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import tomllib
from pathlib import Path

import pytest
from app_harness import APP, TIMEOUT_S, run_clean, unescaped
from streamlit.testing.v1 import AppTest

from dashboard import safety
from dashboard.state import atlas
from dashboard.wording.text import plain
from specbound.io.atlas import save_atlas
from specbound.io.loading import load_profile

ROOT = APP.parent

#: Markdown, HTML and LaTeX a visitor might put in a model name (class 5: markdown injection).
INJECTIONS = (
    "[Session expired](http://evil.example/login) ![t](http://198.51.100.7/t.png)",
    "atlas:[Session expired](http://evil.example/login)#![t](http://198.51.100.7/t.png)",
    "$x^2$ and $$\\int f$$",
    "<img src=x onerror=alert(1)> <a href='http://evil.example'>here</a>",
    "**bold** _italic_ ~~struck~~",
    "`code` and ```fence```",
    "http://evil.example/login www.evil.example mail@evil.example",
    ":red[alert] :material/warning: :smile:",
    "line one\n# a heading\n> quoted | table |",
    "<http://evil.example> [ref]: http://evil.example",
)
#: Names that are, or might be, paths on the server: one message for all (class 5: reading the server).
SERVER_PATHS = (
    "~",
    ".",
    "/etc",
    "atlas:/etc/shadow#x",
    "../..",
    "/etc/passwd",
    "/no/such/directory",
    "atlas:/no/such/atlas.npz#x",
    "atlas:~/.ssh/id_rsa",
    "./tests",
    "~root",
    "/proc/self/environ",
)
#: Hub ids that are also relative paths on the server: opened as Hub ids, the disk is not looked at.
HUB_SHAPED_PATHS = ("tests/app", "dashboard/safety.py", "owner/surely-absent-model")
#: Every ASCII punctuation character, each of which may start markup: escaped means preceded by "\".
_PUNCTUATION = r"[!-/:-@\[-`{-~]"


@pytest.fixture(autouse=True)
def visitor_defaults(monkeypatch):
    """The settings a server starts with: server paths off (tests/app/conftest.py turns them on)."""
    monkeypatch.delenv(safety.SERVER_PATHS_ENV, raising=False)


def _linked(**params: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update(params)
    return run_clean(at)


def _reload(at: AppTest) -> AppTest:
    """A new session opened from the link the address bar now shows."""
    return _linked(**{key: at.query_params[key] for key in at.query_params})


def _one_error(at: AppTest) -> str:
    (error,) = at.error
    return error.value


def _assert_sidebar_and_model(at: AppTest, shape: str = "L = 6 layers · N = 384") -> None:
    assert [h.value for h in at.sidebar.header] == ["Model"]
    assert any(c.value.startswith(shape) for c in at.sidebar.caption)


def _assert_no_server_detail(text: str) -> None:
    assert "Traceback" not in text and 'File "' not in text
    for path in {str(ROOT), os.getcwd(), str(Path.home()), str(atlas.upload_dir()), str(Path(os.__file__).parent)}:
        assert path not in unescaped(text)


def _all_escaped(markdown: str) -> bool:
    """True if every punctuation character of ``markdown`` is escaped (no markup can come out of it)."""
    return re.fullmatch(rf"(?:\\{_PUNCTUATION}|[^\\!-/:-@\[-`{{-~])*", markdown) is not None


def _tiny_atlas(make_checkpoint, tmp_path: Path, member: str = "L2-H32") -> bytes:
    profile = load_profile(str(make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)), use_cache=False)
    path = save_atlas([dataclasses.replace(profile, model=member)], tmp_path / "tiny.npz")
    return path.read_bytes()


# --- text stays text ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", INJECTIONS)
def test_plain_escapes_every_markup_character(text: str) -> None:
    escaped = plain(text)
    assert _all_escaped(escaped) and "\n" not in escaped
    assert re.search(r"://|www\.|@\w", escaped.replace("\\", ""), re.IGNORECASE) is None  # no bare URL left
    assert unescaped(escaped) == " ".join(text.split("\n"))


@pytest.mark.parametrize("name", INJECTIONS)
def test_a_link_with_markup_shows_it_as_text(name: str) -> None:
    at = _linked(model=name)
    error = _one_error(at)
    assert plain(name) in error  # the literal characters, every one escaped: no link, image or HTML
    assert re.search(r"(?<!\\)[\[\]!<>$`*_~|#]", error) is None
    _assert_sidebar_and_model(at)


def test_markup_typed_in_the_sidebar_shows_as_text() -> None:
    at = _linked()
    at.radio(key="model_source").set_value("Hub id or local directory")
    run_clean(at)
    at.text_input(key="model_custom").input(INJECTIONS[0])
    run_clean(at)
    at.button(key="open_model").click()
    run_clean(at)
    assert plain(INJECTIONS[0]) in _one_error(at)
    _assert_sidebar_and_model(at)


def test_an_uploaded_file_name_with_markup_shows_as_text(make_checkpoint, tmp_path) -> None:
    at = _linked()
    at.radio(key="model_source").set_value("Atlas file")
    run_clean(at)
    name = "[Session expired](javascript:alert(1)) ![t](data:,x) $x$ <img src=x> **b** `c`.npz"  # no '/' in a file name
    at.file_uploader(key="atlas_upload").set_value((name, _tiny_atlas(make_checkpoint, tmp_path), "application/zip"))
    run_clean(at)
    assert not at.error
    (caption,) = [c.value for c in at.sidebar.caption if "opened from the stored spectra" in c.value]
    assert caption.startswith(plain(name) + ": 1 model, opened")  # one model, not "1 models"
    at.button(key="open_model").click()
    run_clean(at)
    current = next(m.value for m in at.sidebar.markdown if m.value.startswith("**Current model:**"))
    assert current == f"**Current model:** ``L2-H32 (atlas {name})``"  # one code span, longer than `c`: literal


# --- visitors stay visitors -----------------------------------------------------------------------


def test_server_paths_all_get_the_same_message_that_reveals_nothing(tmp_path, make_checkpoint) -> None:
    real_checkpoint = str(make_checkpoint(layers=2, hidden=32, heads=4, ffn=48))
    messages = set()
    for name in (*SERVER_PATHS, real_checkpoint, f"atlas:{tmp_path}/missing.npz#x"):
        at = _linked(model=name)
        error = unescaped(_one_error(at))
        assert error.startswith(f"The link names {' '.join(name.split())}, which cannot be opened here: ")
        messages.add(error.replace(" ".join(name.split()), "NAME", 1))
        _assert_sidebar_and_model(at)
        assert "model" not in at.query_params  # the link no longer names it: a reload does not repeat it
    assert messages == {f"The link names NAME, which cannot be opened here: {safety.PATHS_OFF}. Showing minilm-l6."}


def test_hub_ids_that_are_also_server_paths_are_only_hub_ids(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    messages = set()
    for name in HUB_SHAPED_PATHS:
        error = unescaped(_one_error(_linked(model=name)))
        assert "not in the local Hugging Face cache" in error
        messages.add(error.replace(name, "NAME"))
    assert len(messages) == 1  # an existing directory, an existing file and an absent name: one answer


@pytest.mark.parametrize("name", ["a/b--c", "owner/" + "x" * 120, "-owner/name"])
def test_invalid_hub_ids_are_one_line(name: str) -> None:
    error = unescaped(_one_error(_linked(model=name)))
    assert "not a valid Hub repository id" in error or safety.PATHS_OFF in error
    assert safety.UNEXPECTED not in error
    _assert_sidebar_and_model(_linked(model=name))


def test_the_sidebar_refuses_local_directories_and_hides_the_atlas_path(make_checkpoint) -> None:
    directory = str(make_checkpoint(layers=2, hidden=32, heads=4, ffn=48))
    at = _linked()
    at.radio(key="model_source").set_value("Hub id or local directory")
    run_clean(at)
    assert at.text_input(key="model_custom").label == "Hub id"
    at.text_input(key="model_custom").input(directory)
    run_clean(at)
    at.button(key="open_model").click()
    run_clean(at)
    assert unescaped(_one_error(at)) == f"Could not open {directory}: {safety.PATHS_OFF}. Still showing minilm-l6."
    _assert_sidebar_and_model(at)
    at.radio(key="model_source").set_value("Atlas file")
    run_clean(at)
    assert "atlas_path_input" not in [t.key for t in at.text_input]
    assert "atlas_read" not in [b.key for b in at.button]


def test_the_operator_setting_turns_server_paths_on(monkeypatch, make_checkpoint) -> None:
    directory = str(make_checkpoint(layers=2, hidden=32, heads=4, ffn=48))
    monkeypatch.setenv(safety.SERVER_PATHS_ENV, "1")
    at = _linked(model=directory)
    assert not at.error
    _assert_sidebar_and_model(at, "L = 2 layers · N = 32")
    at.radio(key="model_source").set_value("Atlas file")
    run_clean(at)
    assert "atlas_path_input" in [t.key for t in at.text_input]


@pytest.mark.parametrize("value", ["0", "", "no", "yes please"])
def test_only_an_explicit_yes_turns_server_paths_on(monkeypatch, value: str) -> None:
    monkeypatch.setenv(safety.SERVER_PATHS_ENV, value)
    assert not safety.server_paths_allowed()


def test_catalog_hub_ids_and_uploads_still_open(monkeypatch, make_checkpoint, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("L4-H256", "someone/some-encoder"):  # not cached here: the Hub is asked, no path refusal
        error = unescaped(_one_error(_linked(model=name)))
        assert "not in the local Hugging Face cache" in error and safety.PATHS_OFF not in error
    stored = atlas.store_upload("tiny.npz", _tiny_atlas(make_checkpoint, tmp_path))
    at = _linked(model=f"atlas:@{stored.stem}#L2-H32")
    assert not at.error
    _assert_sidebar_and_model(at, "L = 2 layers · N = 32")
    assert at.query_params["model"] == f"atlas:@{stored.stem}#L2-H32"  # the link names it by digest
    at = _linked(model="minilm-l6")
    assert not at.error and "model" not in at.query_params


def test_atlas_members_and_uploads_are_named_as_their_owner_named_them(make_checkpoint, tmp_path) -> None:
    """A member exported from a directory is stored under the exporting machine's full path: the picker and
    every title show its last component; an upload opened from a link (another session, no label of its
    own) is called by the file name it was uploaded under, not by its digest."""
    assert atlas.member_label("/home/ada/models/my-encoder") == "my-encoder"
    assert atlas.member_label("C:\\Users\\ada\\my-encoder") == "my-encoder"
    assert atlas.member_label("./my-encoder") == "my-encoder"
    assert atlas.member_label("google/bert_uncased_L-2_H-128_A-2") == "google/bert_uncased_L-2_H-128_A-2"
    member = "/home/ada/models/my-encoder"
    stored = atlas.store_upload("ada-models.npz", _tiny_atlas(make_checkpoint, tmp_path, member))
    assert atlas.upload_label(stored) == "ada-models.npz"
    elsewhere = tmp_path / "server" / "models.npz"  # an atlas on the server: a file beside it is never read
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(stored.read_bytes())
    elsewhere.with_suffix(".name").write_text("secret")
    assert atlas.upload_label(elsewhere) is None
    at = _linked(model=f"atlas:@{stored.stem}#{member}")
    assert not at.error
    (picked,) = at.sidebar.selectbox(key=atlas.MODEL_PICK_KEY).options
    assert picked.startswith("my-encoder (L = 2") and "/home/ada" not in picked
    assert at.query_params["model"] == f"atlas:@{stored.stem}#my-encoder"  # the link does not carry the folders
    again = _linked(model=f"atlas:@{stored.stem}#my-encoder")  # and opens the same member
    assert not again.error and again.query_params["model"] == f"atlas:@{stored.stem}#my-encoder"
    assert atlas.from_link(f"atlas:@{stored.stem}#my-encoder") == atlas.model_name(stored, member)
    at.switch_page("pages/spectra.py")
    run_clean(at)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert sum("my-encoder (atlas ada-models.npz)" in spec for spec in specs) >= 4  # the charts' sources
    assert not any("/home/ada" in spec or stored.stem in spec for spec in specs)


def test_a_server_atlas_link_carries_its_members_short_names(monkeypatch, make_checkpoint, tmp_path) -> None:
    """With server paths allowed, an atlas on the server travels by its path (the operator's own), but its
    member by the name the screen shows: the exporting machine's folders stay out of the link, and the
    link opens the same member again; two members ending in the same folder name keep their whole names."""
    monkeypatch.setenv(safety.SERVER_PATHS_ENV, "1")
    profile = load_profile(str(make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)), use_cache=False)
    members = ["/home/ada/models/my-encoder", "/home/ada/a/twin", "/home/ada/b/twin"]
    path = save_atlas([dataclasses.replace(profile, model=m) for m in members], tmp_path / "server.npz").resolve()
    at = _linked(model=atlas.model_name(path, members[0]))
    assert at.query_params["model"] == f"atlas:{path}#my-encoder"
    again = _linked(model=f"atlas:{path}#my-encoder")
    assert not again.error and again.query_params["model"] == f"atlas:{path}#my-encoder"
    assert atlas.from_link(f"atlas:{path}#my-encoder") == atlas.model_name(path, members[0])
    twin = _linked(model=atlas.model_name(path, members[1]))
    assert twin.query_params["model"] == atlas.model_name(path, members[1])  # not unique: the whole name
    assert atlas.from_link(atlas.model_name(path, members[2])) == atlas.model_name(path, members[2])


@pytest.mark.parametrize("name", ["atlas:@0123456789abcdef#x", "atlas:@0123456789abcdef"])
def test_messages_never_show_server_paths(name: str) -> None:
    # the package names the upload store's file in its message: the visitor sees its last part only
    at = _linked(model=name)
    error = _one_error(at)
    assert "no atlas file at …/0123456789" in unescaped(error)
    _assert_no_server_detail(error)
    assert "/profiles" not in unescaped(error) and "/tmp" not in unescaped(error)


# --- one boundary -----------------------------------------------------------------------------------


def _failing(original, when: str, message: str):
    def replacement(profile, *args, **kwargs):
        if profile.model == when:
            raise RuntimeError(message)
        return original(profile, *args, **kwargs)

    return replacement


def test_a_page_that_raises_is_one_error_box(monkeypatch, make_checkpoint, tmp_path, caplog) -> None:
    import specbound.present.figures.spectra

    stored = atlas.store_upload("tiny.npz", _tiny_atlas(make_checkpoint, tmp_path))
    secret = f"{tmp_path}/secret/internal-state.bin"
    monkeypatch.setattr(
        specbound.present.figures.spectra,
        "singular_value_profiles",
        _failing(specbound.present.figures.spectra.singular_value_profiles, "L2-H32", f"boom in {secret}"),
    )
    with caplog.at_level(logging.ERROR, logger="specbound.dashboard"):
        at = _linked(model=f"atlas:@{stored.stem}#L2-H32", p_global="0.5")
        at.switch_page("pages/spectra.py")  # the page that draws the singular-value table
        run_clean(at)
    error = _one_error(at)
    assert error.startswith("This page could not be drawn for") and "unexpected error" in error
    assert "boom" not in error and "RuntimeError" not in error
    _assert_no_server_detail(error)
    _assert_sidebar_and_model(at, "L = 2 layers · N = 32")
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)  # the log has it all
    assert "model" not in at.query_params  # the link drops the model the page failed on
    again = _reload(at)
    assert not again.error  # reloading does not repeat the failure


@pytest.mark.parametrize("how", ["link", "sidebar"])
def test_an_unexpected_error_while_opening_keeps_the_previous_model(monkeypatch, tmp_path, how: str) -> None:
    import specbound.io.loading

    original = specbound.io.loading.load_profile

    def load_profile(ref, *args, **kwargs):
        if getattr(ref, "name", ref) == "owner/boom":
            raise RecursionError(f"maximum recursion depth exceeded in {tmp_path}/config.json")
        return original(ref, *args, **kwargs)

    monkeypatch.setattr(specbound.io.loading, "load_profile", load_profile)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no download to size first: straight to opening
    if how == "link":
        at = _linked(model="owner/boom")
    else:
        at = _linked()
        at.radio(key="model_source").set_value("Hub id or local directory")
        run_clean(at)
        at.text_input(key="model_custom").input("owner/boom")
        run_clean(at)
        at.button(key="open_model").click()
        run_clean(at)
    error = unescaped(_one_error(at))
    assert "owner/boom" in error and safety.UNEXPECTED in error and "minilm-l6" in error
    _assert_no_server_detail(error)
    assert str(tmp_path) not in error and "Recursion" not in error
    _assert_sidebar_and_model(at)
    assert "model" not in at.query_params
    assert not _reload(at).error


def test_a_source_that_raises_leaves_the_sidebar_standing(monkeypatch) -> None:
    from dashboard.state import data

    def broken():
        raise OSError(13, "Permission denied", "/root/.cache/huggingface/hub")

    monkeypatch.setattr(data, "catalog_entries", broken)
    at = _linked()
    at.radio(key="model_source").set_value("BERT Miniature")
    run_clean(at)
    error = _one_error(at)
    assert unescaped(error) == "This source cannot be used now: Permission denied"
    _assert_sidebar_and_model(at)
    assert [t.value for t in at.title] == ["specbound"]  # the page is drawn too


def test_a_config_of_nested_brackets_is_one_error_box(monkeypatch, make_checkpoint) -> None:
    monkeypatch.setenv(safety.SERVER_PATHS_ENV, "1")  # only the operator may name a directory
    directory = make_checkpoint(layers=2, hidden=32, heads=4, ffn=48, name="deep-config")
    (directory / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    at = _linked(model=str(directory))
    error = _one_error(at)
    assert "Traceback" not in error and "RecursionError" not in error
    _assert_sidebar_and_model(at)
    assert "model" not in at.query_params
    assert not _reload(at).error


# --- downloads show their size first and stay under the cap -------------------------------------------


@pytest.fixture
def hub_sizes(monkeypatch):
    """A Hub whose models weigh what the test says (sizes from metadata only) and a record of opens."""
    import specbound.core.limits
    import specbound.io.checkpoints
    import specbound.io.loading

    sizes: dict[str, int] = {}
    opened: list[str] = []
    original = specbound.io.loading.load_profile

    def plan(ref, progress=None):
        return specbound.io.checkpoints.DownloadPlan(
            ref.repo_id,
            None,
            Path("/nowhere"),
            (("model.safetensors", sizes[ref.repo_id]),),
            specbound.core.limits.max_download_bytes(),
        )

    def load_profile(ref, *args, **kwargs):
        if getattr(ref, "repo_id", None) in sizes:
            opened.append(ref.repo_id)
            return dataclasses.replace(original("minilm-l6"), model=ref.name)
        return original(ref, *args, **kwargs)

    monkeypatch.setattr(specbound.io.checkpoints, "download_plan", plan)
    monkeypatch.setattr(specbound.io.checkpoints, "is_cached", lambda repo_id, revision=None: False)
    monkeypatch.setattr(specbound.io.loading, "load_profile", load_profile)
    monkeypatch.setenv("SPECBOUND_MAX_DOWNLOAD_MB", "100")
    return sizes, opened


@pytest.mark.parametrize("how", ["link", "sidebar"])
def test_a_download_shows_its_size_and_waits_for_a_click(hub_sizes, how: str) -> None:
    sizes, opened = hub_sizes
    sizes["owner/small-encoder"] = 12_345_678
    if how == "link":
        at = _linked(model="owner/small-encoder")
    else:
        at = _linked()
        at.radio(key="model_source").set_value("Hub id or local directory")
        run_clean(at)
        at.text_input(key="model_custom").input("owner/small-encoder")
        run_clean(at)
        at.button(key="open_model").click()
        run_clean(at)
    assert not at.error and opened == []  # nothing downloaded yet
    (info,) = [unescaped(i.value) for i in at.sidebar.info]
    assert "downloads 12.3 MB of weights" in info and "at most 100.0 MB" in info
    assert at.button(key="confirm_download").label == "Download 12.3 MB and open"
    _assert_sidebar_and_model(at)
    at.button(key="confirm_download").click()
    run_clean(at)
    assert opened == ["owner/small-encoder"] and not at.error and not at.sidebar.info
    assert at.session_state["model"] == "owner/small-encoder"


def test_a_download_above_the_cap_is_refused(hub_sizes) -> None:
    sizes, opened = hub_sizes
    sizes["owner/huge-encoder"] = 5_000_000_000
    at = _linked(model="owner/huge-encoder")
    error = unescaped(_one_error(at))
    assert "needs 5,000 MB of weights, more than the download cap of 100 MB" in error
    assert "SPECBOUND_MAX_DOWNLOAD_MB" in error and opened == [] and not at.sidebar.info
    _assert_sidebar_and_model(at)


# --- uploads are capped before they are read --------------------------------------------------------


def test_an_upload_above_the_cap_is_refused_before_it_is_read(monkeypatch) -> None:
    monkeypatch.setattr(safety, "max_upload_bytes", lambda: 1000)

    def never(*args, **kwargs):
        raise AssertionError("the upload was read")

    monkeypatch.setattr(atlas, "use_upload", never)
    at = _linked()
    at.radio(key="model_source").set_value("Atlas file")
    run_clean(at)
    at.file_uploader(key="atlas_upload").set_value(("big.npz", b"\0" * 5000, "application/zip"))
    run_clean(at)
    assert "more than the" in _one_error(at) and "an upload may have" in _one_error(at)
    _assert_sidebar_and_model(at)


def test_the_settings_bind_locally_and_cap_uploads() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert 0 < config["server"]["maxUploadSize"] <= 50
    assert config["client"]["showErrorDetails"] == "none"
    makefile = (ROOT / "Makefile").read_text()
    assert "HOST   ?= 127.0.0.1" in makefile and "--server.address $(HOST)" in makefile


# --- links keep only what reproduces the view ---------------------------------------------------------


def test_junk_parameters_leave_the_address_bar() -> None:
    at = _linked(
        p_layer_999_mode="own",
        foo="bar",
        p_global="not a number",
        p_kind_XX_mode="own",
        model_source="Atlas file",
        p_snap="maybe",
    )
    at.switch_page("pages/bounds.py")
    run_clean(at)
    assert not dict(at.query_params)
    assert at.slider(key="p_global").value == 1.0


@pytest.mark.parametrize(("given", "shown"), [("0.3", 1 / 3), ("0.31", 1 / 3), ("1.96", 2.0), ("0.04", 0.0)])
def test_a_p_off_the_grid_is_normalised_in_the_link(given: str, shown: float) -> None:
    at = _linked(p_global=given)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    assert at.slider(key="p_global").value == pytest.approx(shown)  # the bundled model's grid: m = 12
    expected = f"{shown:.6g}"
    if shown == 1.0:
        assert "p_global" not in at.query_params
    else:
        assert at.query_params["p_global"] == expected


@pytest.mark.parametrize("given", ["-1", "2.5", "nan", "inf", "1e308"])
def test_a_p_out_of_range_falls_back_to_the_default(given: str) -> None:
    at = _linked(p_global=given)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    assert at.slider(key="p_global").value == 1.0 and "p_global" not in at.query_params
