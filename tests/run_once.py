"""Expensive test data built once per test run, however many pytest-xdist workers share the run.

A session-scoped fixture runs once per *session*, and every xdist worker is a session of its own: on two
workers a sweep trained by a session fixture is trained twice, each on one of two cores. The folder that
:func:`built_once` returns is built by the first worker to ask for it, under a lock, in the directory the
workers' temporary directories share (``pytest-of-<user>/pytest-<N>``: new for every run, so nothing is
kept from one run to the next); the others wait for it and read it. Without xdist it is built in the
session's own temporary directory.

Example::

    @pytest.fixture(scope="session")
    def sweep(tmp_path_factory):
        return built_once(tmp_path_factory, "sweep", lambda out: train(out))
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: Written last into a finished folder: a folder without it (a build that failed) is built again.
FINISHED = ".built"


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """The temporary directory every worker of this test run sees (the session's own without xdist)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` filled by ``build(folder)``, built once per test run and then only read.

    ``build`` gets an empty folder; the folder is returned once it has finished. A build that raises
    leaves no finished folder (the next caller builds again) and its error fails the caller's test.
    """
    root = shared_root(factory)
    folder = root / f"once-{name}"
    with _locked(root / f"once-{name}.lock"):
        if not (folder / FINISHED).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            (folder / FINISHED).touch()
    return folder


def copied_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """:func:`built_once`'s folder copied into this session's own temporary directory (file times kept),
    for tests that write into it: the shared folder stays as it was built."""
    shared = built_once(factory, name, build)
    own = factory.mktemp(name) / name
    shutil.copytree(shared, own, ignore=shutil.ignore_patterns(FINISHED))
    return own
