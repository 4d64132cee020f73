"""Class 2, one boundary: anything that goes wrong is one stderr line and a non-zero status.

Errors the user can fix exit 1 with their message; a bug exits 3 with "internal error" and the
traceback only under --debug; a reader that goes away (``| head``) ends the program quietly.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import assert_one_line_error, cli, run_cli
from tiny_models import MakeCheckpoint

import specbound.cli
import specbound.cli.analyze


def _config(directory: Path, text: str) -> None:
    (directory / "config.json").write_text(text)


@pytest.mark.parametrize(
    "text, words",
    [
        ("[" * 100_000, "config.json in"),
        ('{"a":' * 100_000, "nested too deeply"),
        ('{"model_type": "bert", "x": ' + "[" * 50_000 + "]" * 50_000 + "}", "nested too deeply"),
        ("\xff\xfe not utf-8", "is not valid JSON"),
        ('{"model_type": ["bert"]}', "is not supported"),
        ('{"model_type": "bert\\n\\u001b[31mred", "hidden_size": 32}', "is not supported"),
    ],
)
def test_a_hostile_config_is_one_line(make_checkpoint: MakeCheckpoint, text: str, words: str) -> None:
    directory = make_checkpoint()
    if text.startswith("\xff"):
        (directory / "config.json").write_bytes(b"\xff\xfe not utf-8")
    else:
        _config(directory, text)
    line = assert_one_line_error(cli("analyze", str(directory)), words)
    assert "\x1b" not in line


@pytest.mark.parametrize("scale, where", [(1e299, None), (1e150, None), (-1e200, (0, 0)), (1e101, (3, 4))])
def test_finite_but_huge_weights_are_too_large_to_analyse(
    make_checkpoint: MakeCheckpoint, scale: float, where: tuple[int, int] | None
) -> None:
    from safetensors.torch import load_file, save_file

    directory = make_checkpoint()
    path = directory / "model.safetensors"
    state = {k: v.double() for k, v in load_file(str(path)).items()}
    name = "encoder.layer.1.intermediate.dense.weight"
    if where is None:
        state[name] *= scale
    else:
        state[name][where] = scale
    save_file(state, str(path))
    assert_one_line_error(
        cli("analyze", str(directory), "--no-cache"),
        "'encoder.layer.1.intermediate.dense.weight'",
        "too large to analyse",
    )


@pytest.mark.parametrize("shard", [5, None, ["a"], {"x": 1}, True, 1.5])
def test_a_shard_index_with_a_non_string_file_name(make_checkpoint: MakeCheckpoint, shard: object) -> None:
    directory = make_checkpoint()
    (directory / "model.safetensors").unlink()
    index = {"metadata": {}, "weight_map": {"encoder.layer.0.attention.self.query.weight": shard}}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    assert_one_line_error(cli("analyze", str(directory)), "model.safetensors.index.json", "not a file name")


@pytest.mark.parametrize("index", ['{"weight_map": ' + "[" * 100_000, '{"weight_map": 7}', "[]", "null"])
def test_a_malformed_shard_index(make_checkpoint: MakeCheckpoint, index: str) -> None:
    directory = make_checkpoint()
    (directory / "model.safetensors").unlink()
    (directory / "model.safetensors.index.json").write_text(index)
    assert_one_line_error(cli("analyze", str(directory)), "shard index model.safetensors.index.json")


@pytest.mark.parametrize("name", ["a/b--c", "owner/" + "x" * 97, "a/b.git", "a/..b", "owner/-x", "o/x.", "o/" + "é"])
def test_invalid_hub_ids_are_refused_without_a_request(name: str, tmp_path: Path) -> None:
    # an endpoint where nothing listens: an attempt to reach it would be an offline error instead
    result = run_cli("analyze", name, env={"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path)}, cwd=tmp_path)
    line = assert_one_line_error(result)
    assert ("not a valid Hub repository id" in line) or ("is neither a local directory" in line), line


@pytest.mark.parametrize("name", ["x" * 300, "dir/" + "y" * 300, "/" + "z" * 5000, "a" * 10_000])
def test_names_too_long_for_the_file_system(name: str, tmp_path: Path) -> None:
    result = cli("analyze", str(tmp_path / name) if not name.startswith("/") else name)
    assert_one_line_error(result, "...")


def test_a_closed_pipe_ends_quietly(make_checkpoint: MakeCheckpoint) -> None:
    """`specbound analyze ... | head -c 0`: the reader is gone before the first byte."""
    directory = make_checkpoint()
    cli("analyze", str(directory))  # fill the profile cache, so the child only writes
    process = subprocess.Popen(
        [sys.executable, "-m", "specbound.cli", "analyze", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None  # piped
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) in (0, 1)
    assert stderr == ""


@pytest.mark.parametrize("args", [["analyze", "--json"], ["analyze"], ["models"]])
def test_a_full_disk_on_stdout_is_one_line(make_checkpoint: MakeCheckpoint, args: list[str]) -> None:
    directory = make_checkpoint()
    argv = [*args, str(directory)] if args[0] == "analyze" else args
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "specbound.cli", *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert result.returncode == 1
    assert result.stderr == "specbound: error: no space left on the device\n"


def test_a_bug_is_one_line_and_its_traceback_needs_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(specbound.cli.analyze, "_cmd_models", broken)
    assert specbound.cli.main(["models"]) == specbound.cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err == (
        "specbound: internal error: RuntimeError: something unexpected; run with --debug for the traceback\n"
    )
    for argv in (["--debug", "models"], ["models", "--debug"]):
        assert specbound.cli.main(argv) == specbound.cli.EXIT_INTERNAL
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err and err.endswith("run with --debug for the traceback\n")


@pytest.mark.parametrize(
    "exc, words, status",
    [
        (MemoryError(), "out of memory", 1),
        (OSError(28, "No space left on device", "/secret/server/path"), "no space left on the device", 1),
        (OSError(36, "File name too long", "/secret/" + "x" * 300), "a file name is too long", 1),
        (KeyboardInterrupt(), "interrupted", 130),
        (RecursionError("maximum recursion depth exceeded"), "internal error: RecursionError", 3),
        (TypeError("unhashable type: 'list'"), "internal error: TypeError", 3),
    ],
)
def test_every_kind_of_failure_has_its_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: BaseException, words: str, status: int
) -> None:
    def failing(args: argparse.Namespace) -> int:
        raise exc

    monkeypatch.setattr(specbound.cli.analyze, "_cmd_models", failing)
    assert specbound.cli.main(["models"]) == status
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and words in err and "/secret" not in err and "Traceback" not in err
