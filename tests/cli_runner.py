"""Running the command line in tests: in this process (fast) or as a user would, in a subprocess.

Every test folder imports these (``tests/`` is on the import path through its conftest).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

from specbound.cli import main

#: A wrapper process whose only child is the command: its RUSAGE_CHILDREN peak is the command's.
_MEASURE = """
import resource, subprocess, sys
result = subprocess.run(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(result.returncode)
"""


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
    unset: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``specbound ARGS`` in a subprocess, as a user runs it: ``env`` added to this environment, ``unset`` removed."""
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, "-m", "specbound.cli", *args],
        capture_output=True,
        text=True,
        env={**environment, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def run_cli_measured(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the CLI and return its result and its peak resident memory in MB."""
    report = tmp_path / "peak-rss.txt"
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(report), sys.executable, "-m", "specbound.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    return result, int(report.read_text()) / 1024


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (fast): its status and what it wrote, as run_cli reports them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            status = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1  # as Python exits
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


def run_main(*argv: str) -> str:
    """Standard output of a CLI call in this process that must succeed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str, status: int = 1) -> str:
    """Exit status, empty stdout, exactly one stderr line without a traceback, containing ``words``."""
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("specbound")
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity, as RFC 8259 parsers do."""

    def refuse(constant: str) -> NoReturn:
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)
