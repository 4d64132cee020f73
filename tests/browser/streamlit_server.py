"""Serve the dashboard as ``make run`` does (a real Streamlit server) on a free local port; start Debian's Chromium.

Shared by the browser tests (``conftest.py``) and the dashboard benchmark. The server gets its own
profile cache, and is always stopped when the ``with`` block ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dashboard.safety import SERVER_PATHS_ENV

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright


ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
STARTUP_TIMEOUT_S = 90
#: How often the health endpoint is asked while the server starts (the benchmark times the start with it).
HEALTH_POLL_S = 0.05


@dataclass(frozen=True)
class Server:
    url: str
    pid: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]  # (host, port) of an AF_INET socket
        return port


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(HEALTH_POLL_S)
    raise RuntimeError(f"streamlit did not become healthy in {STARTUP_TIMEOUT_S} s:\n{log.read_text()}")


@contextmanager
def serve_dashboard(
    scratch: Path, extra_env: dict[str, str] | None = None, script: str | None = None, port: int | None = None
) -> Iterator[Server]:
    """The dashboard as ``make run`` starts it, or ``streamlit run script``, on ``port`` or a free local port.

    The profile cache and the server's log go under ``scratch``.
    """
    port = port or free_port()
    log = scratch / "streamlit.log"
    env = dict(os.environ, SPECBOUND_CACHE=str(scratch / "profiles"), **(extra_env or {}))
    launcher = ["-m", "dashboard.serve"] if script is None else ["-m", "streamlit", "run", script]
    options = ["--server.port", str(port), "--server.headless", "true", "--server.address", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, *launcher, *options], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, process, log)
        yield Server(url, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def launch_chromium(playwright: Playwright) -> Browser:
    """Debian's Chromium, headless, through Playwright (never a browser download of its own)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


@dataclass(frozen=True)
class ModuleServer:
    url: str
    log: Path


@contextmanager
def dashboard_server(scratch: Path) -> Iterator[ModuleServer]:
    """The dashboard served from ``scratch``; always stopped, even when a test fails.

    Its operator lets visitors name server paths: the tests open atlases from temporary folders.
    The default settings are tested in test_visitors.py.
    """
    with serve_dashboard(scratch, {SERVER_PATHS_ENV: "1"}) as running:
        yield ModuleServer(running.url, scratch / "streamlit.log")


@contextmanager
def headless_chromium() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright (the test is skipped when either is missing)."""
    import pytest

    if not CHROMIUM.is_file():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            browser.close()
