"""Files written whole or not at all, and errors that name the file the caller asked for."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from specbound.io.files import atomic_write, describe_os_error, write_text_atomic


def test_a_failed_atomic_write_is_the_target_s_error_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "table.csv"
    target.mkdir()  # a directory where the file should go: the final rename fails
    with pytest.raises(IsADirectoryError) as caught:
        write_text_atomic(target, "a,b\n")
    assert caught.value.filename == str(target) and caught.value.errno == errno.EISDIR
    assert describe_os_error(caught.value) == "Is a directory"
    assert describe_os_error(caught.value, name_file=True) == "table.csv: Is a directory"
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_an_error_of_another_file_inside_the_block_keeps_its_own_name(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught, atomic_write(tmp_path / "out.bin") as f:
        f.write(b"x")
        (tmp_path / "missing.txt").read_bytes()
    assert Path(caught.value.filename).name == "missing.txt"
    assert not (tmp_path / "out.bin").exists() and list(tmp_path.iterdir()) == []


def test_describe_os_error_keeps_its_plain_reasons() -> None:
    assert describe_os_error(OSError(errno.ENOSPC, "No space left", "/x/y.csv")) == "no space left on the device"
    assert describe_os_error(OSError(errno.ENOSPC, "No space left", "/x/y.csv"), name_file=True) == (
        "y.csv: no space left on the device"
    )
    assert describe_os_error(OSError(errno.EACCES, "Permission denied"), name_file=True) == "Permission denied"
