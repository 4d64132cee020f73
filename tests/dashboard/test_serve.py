"""The launcher behind ``make run``: what it imports ahead of the first page, and when."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard import serve
from specbound.core.bounds import BoundAnalysis

ROOT = Path(__file__).resolve().parents[2]

#: The first run of app.py on the Overview, in a fresh process after ``serve.preload()``; prints the
#: modules of numpy, PIL, specbound and the dashboard that the run still had to import.
FIRST_RUN = """
import json, sys
from streamlit.testing.v1 import AppTest
from dashboard import serve
from dashboard.routing import guard_apptest_runs
serve.preload()
guard_apptest_runs()
watched = ("numpy", "PIL", "specbound", "dashboard")
before = set(sys.modules)
at = AppTest.from_file("app.py", default_timeout=120)
at.run()
late = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in watched)
print(json.dumps({"late": late, "errors": [str(e.value) for e in at.exception], "title": at.title[0].value}))
"""


def test_the_landing_page_imports_nothing_the_launcher_did_not_preload(minilm: BoundAnalysis) -> None:
    """LANDING_MODULES is complete: the Overview's first run (warm profile cache) imports none of ours."""
    assert minilm.profile.shape.num_layers == 6  # the session's profile cache now holds the bundled model
    done = subprocess.run(
        [sys.executable, "-c", FIRST_RUN], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["errors"] == [] and result["title"] == "specbound"
    assert result["late"] == []


def test_the_preload_waits_for_the_server_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([False, False, True])
    calls: list[bool] = []

    def running() -> bool:
        calls.append(answer := next(answers))
        return answer

    imported: list[str] = []
    monkeypatch.setattr(serve, "server_running", running)
    monkeypatch.setattr(serve, "POLL_S", 0.0)
    monkeypatch.setattr(serve, "preload", lambda modules: imported.extend(modules))
    serve.preload_when_running(("json", "csv"))
    assert calls == [False, False, True] and imported == ["json", "csv"]


def test_the_preload_gives_up_on_a_server_that_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []
    imported: list[str] = []

    def never_running() -> bool:
        asked.append(False)
        return False

    monkeypatch.setattr(serve, "server_running", never_running)
    monkeypatch.setattr(serve, "POLL_S", 0.0)
    monkeypatch.setattr(serve, "GIVE_UP_S", 0.05)
    monkeypatch.setattr(serve, "preload", lambda modules: imported.extend(modules))
    serve.preload_when_running(("json",))
    assert len(asked) >= 2 and imported == []  # it kept asking, then stopped without importing


def test_no_server_runs_in_a_plain_process() -> None:
    assert serve.server_running() is False


def test_the_launcher_runs_streamlit_on_app_py_with_the_options_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.web import cli

    seen: dict[str, object] = {}
    monkeypatch.setattr(cli, "main", lambda args, prog_name: seen.update(args=args, prog=prog_name))
    monkeypatch.setattr(serve, "preload_when_running", lambda: None)  # the thread has nothing to wait for
    serve.main(["--server.port", "8600"])
    assert seen == {"args": ["run", str(ROOT / "app.py"), "--server.port", "8600"], "prog": "streamlit"}
