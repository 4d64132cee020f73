"""Shared set-up of the browser tests: a real ``streamlit run`` server on a free local port with a
fresh profile cache, Debian's headless Chromium through Playwright, and small page helpers.

When Chromium is missing the tests are skipped with that reason (CI installs it). Helpers that read a
page live in ``streamlit_page.py`` beside this file.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
STARTUP_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"streamlit did not become healthy in {STARTUP_TIMEOUT_S} s:\n{log.read_text()}")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A dashboard served on a free port; always stopped, even when the test fails."""
    port = _free_port()
    log = tmp_path / "streamlit.log"
    env = dict(os.environ, SPECBOUND_CACHE=str(tmp_path / "profiles"))
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.headless", "true", "--server.address", "127.0.0.1"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def browser_page():
    if not CHROMIUM.is_file():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(60_000)
            yield page
        finally:
            browser.close()
