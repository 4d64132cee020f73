"""Hostile input: Dask addresses, a read-only cache, p = NaN in the notebook API, and
values given as strings in a config.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import run_cli
from tiny_models import save_tiny

import specbound
from specbound.core.bounds import PAssignment
from specbound.core.errors import SpecboundError
from specbound.io.cache import ProfileCache
from specbound.studies.parallel import Executor, check_dask_address, redacted

# --- --dask addresses: one line, the secret never shown ----------------------------------------------


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("tcp://alice:s3cret@10.0.0.1:8786", "holds no user name or password"),
        ("alice:s3cret@10.0.0.1:8786", "holds no user name or password"),
        ("tcp://alice:pa/s3cret@host:8786", "holds no user name or password"),
        ("http://10.0.0.1:8786", "'http' is not a scheme Dask speaks"),
        ("tcp://10.0.0.1:87x6", "the port '87x6' is not a number from 1 to 65535"),
        ("tcp://10.0.0.1:99999", "the port '99999' is not a number"),
        ("tcp://10.0.0.1:" + "9" * 5000, "is not a number from 1 to 65535"),
        ("tcp://10.0.0.1:", "the port '' is not a number"),
        ("tcp://:8786", "no host name before the port"),
        ("   ", "needs the address of a Dask scheduler"),
    ],
)
def test_a_bad_dask_address_is_one_line_without_its_secret(address: str, words: str) -> None:
    with pytest.raises(SpecboundError) as caught:
        Executor(dask=address)
    message = str(caught.value)
    assert words in message and "s3cret" not in message and "\n" not in message


@pytest.mark.parametrize(
    "address", ["tcp://127.0.0.1:8786", "127.0.0.1:8786", "tls://sched.example.org:8786", "tcp://[::1]:8786"]
)
def test_a_good_dask_address_is_taken_as_it_is(address: str) -> None:
    assert check_dask_address(address) == address


def test_redaction_hides_everything_up_to_the_last_at_sign() -> None:
    assert redacted("tcp://a:b@c@host:1") == "tcp://***@host:1"
    assert redacted("tcp://host:1") == "tcp://host:1"


@pytest.mark.parametrize("command", [["grid"], ["lab", "sweep", "--preset", "smoke"]])
def test_the_command_line_refuses_a_secret_address_before_any_work(command: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli(*command, "--dask", "tcp://alice:s3cret@10.0.0.1:8786", "--out", str(out))
    assert result.returncode == 1
    assert "s3cret" not in result.stderr + result.stdout
    assert result.stderr.count("\n") == 1 and "tcp://***@10.0.0.1:8786" in result.stderr
    assert "internal error" not in result.stderr


def test_an_address_dask_itself_cannot_parse_is_one_line(tmp_path: Path) -> None:
    result = run_cli("grid", "--dask", "tcp://[::1", "--out", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    assert "cannot reach the Dask scheduler at tcp://[::1" in result.stderr and "internal error" not in result.stderr


# --- a read-only cache only costs speed ---------------------------------------------------------------


@contextlib.contextmanager
def _read_only(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The cache directory made unwritable: by its mode for an ordinary user; as root (whom modes do
    not stop) every removal and creation of a file in it fails as the kernel fails it, EACCES."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    import errno
    import tempfile

    def refuse(path: str | os.PathLike[str]) -> bool:
        return Path(path).resolve().parent == directory.resolve()

    real_unlink, real_mkstemp = Path.unlink, tempfile.mkstemp

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if refuse(self):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    def mkstemp(
        suffix: str | None = None, prefix: str | None = None, dir: str | Path | None = None, text: bool = False
    ) -> tuple[int, str]:
        if dir is not None and Path(dir).resolve() == directory.resolve():
            raise PermissionError(errno.EACCES, "Permission denied", str(dir))
        return real_mkstemp(suffix, prefix, dir, text)

    monkeypatch.setattr(Path, "unlink", unlink)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    yield


def test_a_damaged_entry_in_a_read_only_cache_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("SPECBOUND_CACHE", str(cache_dir))
    good = specbound.analyze("minilm-l6")
    (entry,) = cache_dir.glob("*.npz")
    damaged = entry.read_bytes()[:-100]
    entry.write_bytes(damaged)  # a truncated entry
    with _read_only(cache_dir, monkeypatch):
        again = specbound.analyze("minilm-l6")
        assert again.to_json() == good.to_json()  # recomputed: only the time was lost
        assert entry.read_bytes() == damaged  # left as it was: the cache cannot be written
        assert ProfileCache(cache_dir).load(good.model, good.profile.revision) is None
    shutil.rmtree(cache_dir)


def test_the_command_line_with_a_read_only_damaged_cache_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() == 0:
        pytest.skip("file modes do not stop root; the simulated case is the test above")
    cache_dir = tmp_path / "cache"
    env = {"SPECBOUND_CACHE": str(cache_dir)}
    assert run_cli("analyze", "minilm-l6", "--json", env=env).returncode == 0
    (entry,) = cache_dir.glob("*.npz")
    entry.write_bytes(entry.read_bytes()[:-100])
    with _read_only(cache_dir, monkeypatch):
        result = run_cli("analyze", "minilm-l6", "--json", env=env)
    assert result.returncode == 0, result.stderr


# --- the notebook API refuses p = NaN as the command line does ---------------------------------------


@pytest.mark.parametrize("p", [float("nan"), float("inf"), -0.5, 2.5])
def test_the_notebook_api_refuses_an_index_outside_zero_to_two(p: float) -> None:
    with pytest.raises(ValueError, match=r"Schatten indices must lie in \[0, 2\], got"):
        specbound.analyze("minilm-l6", p=p)
    result = specbound.analyze("minilm-l6")
    with pytest.raises(ValueError, match="must lie in"):
        result.at(p)
    with pytest.raises(ValueError, match="must lie in"):
        result.at(PAssignment(by_kind={specbound.Kind.QK: p}))
    with pytest.raises(ValueError, match="must lie in"):
        result.bounds.evaluate(p)


def test_the_bounds_of_the_range_are_taken() -> None:
    result = specbound.analyze("minilm-l6")
    assert result.at(0.0).at_p is not None and result.at(2.0).at_p is not None


# --- a value given as a string is called one -----------------------------------------------------------


def _neox(tmp_path: Path, **overrides: object) -> Path:
    directory = save_tiny(tmp_path / "neox", "gpt_neox", layers=1, hidden=16, heads=2, ffn=32)
    values = json.loads((directory / "config.json").read_text())
    values.update(overrides)
    (directory / "config.json").write_text(json.dumps(values))
    return directory


def _rotary(value: object) -> dict[str, object]:
    return {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": value}}


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ({"use_parallel_residual": "false"}, "gives 'use_parallel_residual' as the string 'false', not true or false"),
        ({"use_parallel_residual": 0}, "gives 'use_parallel_residual' as 0, not true or false"),
        (_rotary("0.25"), "gives 'partial_rotary_factor' as the string '0.25', not a number between 0 and 1"),
        (_rotary(True), "gives 'partial_rotary_factor' as true, not a number between 0 and 1"),
        ({"num_attention_heads": "2"}, "gives 'num_attention_heads' as the string '2', not a positive integer"),
        ({"num_attention_heads": None}, "lacks a positive integer 'num_attention_heads'"),
    ],
)
def test_a_config_value_of_the_wrong_type_is_named_by_its_type(
    tmp_path: Path, override: dict[str, object], words: str
) -> None:
    result = run_cli("analyze", str(_neox(tmp_path, **override)), env={"SPECBOUND_CACHE": str(tmp_path / "c")})
    assert result.returncode == 1
    assert words in result.stderr, result.stderr
