"""tests/run_once.py: a folder built once per test run, rebuilt only after a failed build, and copies of
it that a test may write into without touching the shared one."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_once import FINISHED, built_once, copied_once, shared_root


def test_a_folder_is_built_once_then_read(tmp_path_factory: pytest.TempPathFactory) -> None:
    builds: list[Path] = []

    def build(folder: Path) -> None:
        builds.append(folder)
        assert list(folder.iterdir()) == []  # an empty folder to fill
        (folder / "data.txt").write_text("trained")

    first = built_once(tmp_path_factory, "once-test", build)
    second = built_once(tmp_path_factory, "once-test", build)
    assert first == second == builds[0] and len(builds) == 1
    assert (first / "data.txt").read_text() == "trained" and (first / FINISHED).is_file()
    assert first.parent == shared_root(tmp_path_factory)


def test_a_failed_build_is_built_again(tmp_path_factory: pytest.TempPathFactory) -> None:
    def fail(folder: Path) -> None:
        (folder / "half.txt").write_text("half")
        raise RuntimeError("the training failed")

    with pytest.raises(RuntimeError, match="the training failed"):
        built_once(tmp_path_factory, "once-failing", fail)

    def build(folder: Path) -> None:
        (folder / "whole.txt").write_text("whole")

    folder = built_once(tmp_path_factory, "once-failing", build)
    assert sorted(p.name for p in folder.iterdir()) == sorted([FINISHED, "whole.txt"])  # the half build is gone


def test_a_copy_is_the_session_s_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    def build(folder: Path) -> None:
        (folder / "runs").mkdir()
        (folder / "runs" / "record.json").write_text("{}")

    own = copied_once(tmp_path_factory, "once-copied", build)
    shared = built_once(tmp_path_factory, "once-copied", build)
    assert own != shared and sorted(p.name for p in own.iterdir()) == ["runs"]  # no finished mark copied
    source, copy = shared / "runs" / "record.json", own / "runs" / "record.json"
    assert copy.read_text() == "{}" and copy.stat().st_mtime_ns == source.stat().st_mtime_ns  # times kept
    copy.write_text('{"changed": true}')
    assert source.read_text() == "{}"
