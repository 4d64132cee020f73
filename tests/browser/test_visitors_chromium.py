"""A page visitor in a real Chromium, on a server with the default settings: markup in a link or an
uploaded file name shows as text, no request leaves for another host, server paths are refused with
one message, and an error is one box without a traceback while the sidebar stays."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

import pytest
from streamlit_page import screenshot, wait_idle
from streamlit_server import serve_dashboard
from tiny_models import MakeCheckpoint

from dashboard.safety import PATHS_OFF, SERVER_PATHS_ENV
from dashboard.wording.text import WORD_JOINER
from specbound.io.atlas import save_atlas
from specbound.io.loading import load_profile

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

#: Markup a visitor might put in a link (class 5): a fake link, a remote image, HTML, LaTeX, autolinks.
INJECTIONS = (
    "[Session expired](http://evil.example/login) ![t](http://198.51.100.7/t.png)",
    "<img src=http://198.51.100.7/i.png> $x^2$ **bold** `code` :red[alert]",
    "http://evil.example/login www.evil.example mail@evil.example <http://evil.example/a>",
)
ERROR_BOX = '[data-testid="stAlertContentError"]'
SIDEBAR_SHAPE = "L = 6 layers · N = 384"


@pytest.fixture(scope="module")
def visitor_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A dashboard with the settings a server starts with (server paths off), for this module's tests."""
    with serve_dashboard(tmp_path_factory.mktemp("visitors"), {SERVER_PATHS_ENV: ""}) as running:
        yield running.url


@pytest.fixture
def requests_seen(browser_page: Page) -> list[str]:
    seen: list[str] = []
    browser_page.on("request", lambda request: seen.append(request.url))
    return seen


def _assert_nothing_rendered(page: Page) -> None:
    """No link or image to another host, no LaTeX, no traceback anywhere on the page."""
    for link in page.locator("a[href]").all():
        href = link.get_attribute("href") or ""
        assert "evil.example" not in href and "198.51.100.7" not in href, href
    for image in page.locator("img[src]").all():
        source = image.get_attribute("src") or ""
        assert urlsplit(source).hostname in (None, "127.0.0.1"), source
    assert page.locator(f"{ERROR_BOX} .katex").count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "Traceback" not in page.locator("body").inner_text()


def _error_after(page: Page, url: str) -> str:
    page.goto(url)
    page.locator(ERROR_BOX).first.wait_for()
    page.get_by_text(SIDEBAR_SHAPE).wait_for()  # the sidebar is there, on the previous model
    wait_idle(page)
    page.wait_for_url(lambda address: "model=" not in address)  # a reload does not repeat the error
    boxes = page.locator(ERROR_BOX).all_inner_texts()
    assert len(boxes) == 1, boxes
    return " ".join(boxes[0].replace(WORD_JOINER, "").split())


def test_a_hostile_link_is_shown_as_text_and_fetches_nothing(
    visitor_server: str, browser_page: Page, requests_seen: list[str]
) -> None:
    page = browser_page
    for injection in INJECTIONS:
        text = _error_after(page, f"{visitor_server}/?{urlencode({'model': injection})}")
        assert f"The link names {injection}, which cannot be opened here" in text
        _assert_nothing_rendered(page)
    screenshot(page, "visitor-injection")
    for path in ("/etc", "~", "atlas:/etc/shadow#x", "../.."):
        text = _error_after(page, f"{visitor_server}/?{urlencode({'model': path})}")
        assert text == f"The link names {path}, which cannot be opened here: {PATHS_OFF}. Showing minilm-l6."
    hosts = {urlsplit(url).hostname for url in requests_seen if urlsplit(url).scheme in ("http", "https", "ws")}
    assert hosts == {"127.0.0.1"}, hosts


def test_an_uploaded_file_name_with_markup_is_text(
    visitor_server: str, browser_page: Page, requests_seen: list[str], make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    page = browser_page
    profile = load_profile(str(make_checkpoint(layers=2, hidden=32, heads=4, ffn=48)), use_cache=False)
    member = "[Session expired](http://evil.example/login) $y$ **m**"
    content = save_atlas([dataclasses.replace(profile, model=member)], tmp_path / "tiny.npz").read_bytes()
    name = "[Session expired](http:evil.example) ![t](http:198.51.100.7) $x$ <img src=x> `c`.npz"  # no "/" in it
    page.goto(visitor_server)
    page.get_by_text(SIDEBAR_SHAPE).wait_for()
    wait_idle(page)
    page.locator(".st-key-model_source").get_by_text("Atlas file").click()
    wait_idle(page)
    assert page.get_by_placeholder("atlas.npz").count() == 0  # no path on the server to type
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        {"name": name, "mimeType": "application/octet-stream", "buffer": content}
    )
    page.get_by_text("1 model, opened from the stored spectra").wait_for()
    wait_idle(page)
    page.locator(".st-key-open_model button").click()
    page.get_by_text("L = 2 layers · N = 32").wait_for()
    page.locator('[data-testid="stSidebar"] code', has_text=f"{member} (atlas {name})").wait_for()
    wait_idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text().replace(WORD_JOINER, "")
    assert f"{name}: 1 model," in sidebar and f"{member} (atlas {name})" in sidebar
    assert page.locator(ERROR_BOX).count() == 0
    _assert_nothing_rendered(page)
    # the page's own maths renders (the Overview writes S_p, P_m as formulas); the visitor's $x$ and $y$ never do
    assert page.locator('[data-testid="stSidebar"] .katex').count() == 0
    assert not [t for t in page.locator(".katex").all_inner_texts() if t.split()[:1] in (["x"], ["y"])]
    page.locator('[data-testid="stSidebarNavLink"]', has_text="Spectra").click()
    page.locator(".st-key-sv_profiles_0 .js-plotly-plot").wait_for()  # the profiles, one chart per kind
    wait_idle(page)
    _assert_nothing_rendered(page)
    assert page.get_by_text(f"{member} (atlas {name})").count() >= 2  # the sidebar and the Spectra caption
    screenshot(page, "visitor-upload")
    hosts = {urlsplit(url).hostname for url in requests_seen if urlsplit(url).scheme in ("http", "https", "ws")}
    assert hosts == {"127.0.0.1"}, hosts
