"""Hostile terminals, the command line: closed, full and broken standard streams (class 5) and untrusted
text reaching the terminal (class 6). Every stream case runs in a real process whose descriptor is
really closed (``>&-``, ``2>&-``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import assert_one_line_error, cli, run_cli, strict_json
from hostile_helpers import hand_profile
from tiny_models import MakeCheckpoint

from specbound.io.atlas import load_atlas, save_atlas

#: Raw bytes a terminal acts on: ESC (sequences), BEL, CSI (U+009B), a bidirectional override.
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def _with_closed(streams: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``specbound ARGS`` with the shell's redirections ``streams`` (e.g. ``>&-``) applied first."""
    script = f'exec "$0" -m specbound.cli "$@" {streams}'
    return subprocess.run(
        ["/bin/sh", "-c", script, sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


# --- class 5: standard streams -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["analyze", "{ckpt}", "--json"], ["analyze", "{ckpt}"], ["models"], ["atlas", "show", "{atlas}"], ["lab", "show"]],
    ids=["analyze --json", "analyze", "models", "atlas show", "lab show"],
)
def test_a_command_whose_result_is_its_output_stops_when_stdout_is_closed(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, args: list[str]
) -> None:
    atlas = save_atlas([hand_profile()], tmp_path / "a.npz")
    argv = [a.format(ckpt=make_checkpoint(), atlas=atlas) for a in args]
    result = _with_closed(">&-", *argv)
    assert result.returncode == 1
    command = " ".join(args[:2] if args[0] in ("atlas", "lab") else args[:1])
    assert result.stderr.splitlines() == [
        f"specbound: error: standard output is closed, and the result of '{command}' is what it prints"
    ]


def test_commands_whose_result_is_files_write_them_with_stdout_closed(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    checkpoint = make_checkpoint()
    result = _with_closed(">&-", "export", str(checkpoint), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["num_layers"] == 2
    atlas = tmp_path / "class.npz"
    result = _with_closed(">&-", "atlas", "export", "--models", str(checkpoint), "--out", str(atlas))
    assert result.returncode == 0, result.stderr
    assert [p.model for p in load_atlas(atlas)] == [checkpoint.name]  # by folder name; no stray bytes in fd 1


def test_with_stderr_closed_an_error_never_goes_to_stdout(tmp_path: Path) -> None:
    for args, status in ((["analyze", str(tmp_path / "absent"), "--json"], 1), (["analyze", "--p", "9"], 2)):
        result = _with_closed("2>&-", *args)
        assert result.returncode == status
        assert result.stdout == ""


def test_with_stderr_closed_the_result_is_still_written(make_checkpoint: MakeCheckpoint) -> None:
    result = _with_closed("2>&-", "analyze", str(make_checkpoint()), "--json")
    assert result.returncode == 0
    assert strict_json(result.stdout)["num_heads"] == 4


def test_with_both_streams_closed_only_the_status_speaks(tmp_path: Path) -> None:
    result = _with_closed(">&- 2>&-", "analyze", str(tmp_path / "absent"))
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "")


def test_a_stdout_that_is_full_or_gone(make_checkpoint: MakeCheckpoint) -> None:
    directory = make_checkpoint()
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "specbound.cli",
                "atlas",
                "export",
                "--models",
                str(directory),
                "--out",
                "/dev/null/x",
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    reader = subprocess.Popen(
        [sys.executable, "-m", "specbound.cli", "analyze", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None  # piped
    reader.stdout.close()  # the reader went away before the first byte
    assert reader.wait(timeout=120) == 1
    assert reader.stderr.read() == b""


# --- class 6: untrusted text reaching the terminal ------------------------------------------------------


def _assert_no_raw_controls(text: str) -> None:
    for control in RAW_CONTROLS:
        assert control not in text, repr(text)


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "a", "b\x1b[31mred\x07\nnext line"],
        ["export", "x", "--out", "o", "--format", "\x1b]0;title\x07"],
        ["analyze", "--p", "\x1b[2J" + "9" * 5000],
        ["lab", "sweep", "--out", "o", "--layers", "\x9b31m", "\u202eevil"],
        ["grid", "--out", "o", "--widths", "1" * 5000],
        ["analyze", "--no-such-option=" + "\x1b" * 3000],
    ],
    ids=["unrecognized", "invalid choice", "long bad number", "lab C1 and bidi", "long choice", "long unknown option"],
)
def test_usage_errors_echo_input_escaped_and_shortened(args: list[str]) -> None:
    result = run_cli(*args)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    _assert_no_raw_controls(lines[0])
    assert len(lines[0]) < 1000
    assert lines[0].endswith("--help)")


def test_a_model_name_from_an_atlas_is_escaped_on_stdout(tmp_path: Path) -> None:
    name = "evil\x1b[2J\x1b]0;owned\x07\u202egnp.exe\x9b31m"
    path = save_atlas([hand_profile(name=name)], tmp_path / "evil.npz")
    result = cli("analyze", f"atlas:{path}")
    assert result.returncode == 0, result.stderr
    _assert_no_raw_controls(result.stdout)
    assert result.stdout.splitlines()[0].startswith("evil\\x1b[2J\\x1b]0;owned\\x07\\u202egnp.exe\\x9b31m: bert, L=1")
    as_json = cli("analyze", f"atlas:{path}", "--json")
    _assert_no_raw_controls(as_json.stdout)
    assert strict_json(as_json.stdout)["model"] == name  # JSON carries it exactly, escaped by JSON
    shown = cli("atlas", "show", str(path))
    _assert_no_raw_controls(shown.stdout)


def test_report_lines_of_batch_commands_are_escaped(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    bad = "no-such\x1b[31m-model\x07"
    result = cli("grid", "--models", str(make_checkpoint()), bad, "--out", str(tmp_path / "study"))
    assert result.returncode == 0, result.stderr
    _assert_no_raw_controls(result.stdout)
    assert "no-such\\x1b[31m-model\\x07" in result.stdout
    result = cli(
        "atlas", "export", "--models", bad, str(make_checkpoint(name="other")), "--out", str(tmp_path / "a.npz")
    )
    assert result.returncode == 0
    _assert_no_raw_controls(result.stdout)


def test_error_lines_are_escaped_and_shortened(tmp_path: Path) -> None:
    result = run_cli("analyze", str(tmp_path / ("\x1b[5m" + "d" * 3000)))
    line = assert_one_line_error(result)
    _assert_no_raw_controls(line)
    assert len(line) < 1000
